"""The 'also found' items of issue 21 as regression tests: strict replay configs, refusals that write
nothing, another application's database, an empty person id. (PostgreSQL stopped between the
draw and 'complete': tests/test_ledger_transaction.py.)"""

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
import yaml

from fdp_core.publish import export
from fdp_core.budget.accounting import Ledger
from fdp_core.cli import main
from fdp_core.data.loading import load_curves
from fdp_core.releases.mean import MeanSettings

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "data" / "example_curves.csv"
FRL = MeanSettings(mechanism="frl", epsilon=1.0, tau=1.0, M=8)


def write_config(tmp_path, budget=None, **edits) -> Path:
    release = export.commit_mean(Ledger(3.0, 1e-5), load_curves(EXAMPLE), FRL, data_label="example_curves.csv")
    config = yaml.safe_load(export.config_yaml(release.config))
    config["settings"].update(edits)
    if budget is not None:
        config["budget"].update(epsilon_total=budget[0], delta_total=budget[1])
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("edit, message", [
    ({"tau_from_data": "no"}, "settings.tau_from_data must be a YAML boolean (true or false, unquoted), got 'no'"),
    ({"tau_from_data": True}, "replay refuses data-dependent settings (tau_from_data"),
    ({"epsilon": True}, "settings.epsilon must be a number, got True"),
    ({"M": 8.5}, "settings.M must be an integer, got 8.5"),
    ({"mechanism": 3}, "settings.mechanism must be text, got 3"),
])
def test_replay_reads_hand_edited_configs_strictly_and_writes_nothing(tmp_path, capsys, edit, message):
    config = write_config(tmp_path, **edit)
    ledger = tmp_path / "fresh" / "ledger.sqlite3"
    code = main(["replay", str(config), "--data", str(EXAMPLE), "--ledger", f"sqlite:///{ledger}", "--out",
                 str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists() and not (tmp_path / "fresh").exists()


def test_show_and_select_without_a_budget_create_nothing(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'not' / 'yet' / 'ledger.sqlite3'}"
    assert main(["ledger", "show", "--ledger", url, "--data", str(EXAMPLE)]) == 2
    assert capsys.readouterr().err.startswith("error: no budget 'default' for this data set")
    assert main(["select", "--data", str(EXAMPLE), "--epsilon", "1", "--tau", "1", "--penalties", "1e-3,1e-1",
                 "--rhos", "0.1,0.2", "--select-epsilon", "0.5", "--ledger", url, "--out", str(tmp_path / "sel")]) == 2
    assert "no stored budget for these data" in capsys.readouterr().err
    assert files_under(tmp_path) == []


def test_a_refused_replay_creates_no_budget_and_no_registration(tmp_path, capsys):
    config = write_config(tmp_path, budget=(0.5, 0.0))  # the config's budget cannot hold its own release
    ledger = tmp_path / "ledger.sqlite3"
    url = f"sqlite:///{ledger}"
    assert main(["replay", str(config), "--data", str(EXAMPLE), "--ledger", url, "--out", str(tmp_path / "o")]) == 2
    assert "release refused, nothing recorded" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    if ledger.exists():
        with sqlite3.connect(ledger) as conn:
            for table in ("fdp_budgets", "fdp_entries", "fdp_datasets", "fdp_versions"):
                assert conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == 0, table


@pytest.mark.parametrize("name", ["", "   ", "x" * 101, "bad\x01name"])
def test_ledger_init_validates_the_name_before_creating_the_file(tmp_path, capsys, name):
    url = f"sqlite:///{tmp_path / 'sub' / 'ledger.sqlite3'}"
    assert main(["ledger", "init", "--ledger", url, "--data", str(EXAMPLE), "--epsilon", "1", "--delta", "0",
                 "--name", name]) == 2
    assert "a budget name is 1 to 100 printable characters" in capsys.readouterr().err
    assert files_under(tmp_path) == []


def test_another_applications_database_is_refused_and_left_alone(tmp_path, capsys):
    other = tmp_path / "other_app.sqlite3"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO customers (name) VALUES ('Ada')")
    before = other.read_bytes()
    assert main(["ledger", "init", "--ledger", str(other), "--data", str(EXAMPLE), "--epsilon", "1", "--delta",
                 "0"]) == 2
    err = capsys.readouterr().err
    assert "holds other tables (customers) and no schema_version table: not an fdp ledger" in err
    assert err.count("\n") == 1
    config = write_config(tmp_path)
    assert main(["replay", str(config), "--data", str(EXAMPLE), "--ledger", str(other), "--out",
                 str(tmp_path / "o")]) == 2
    assert "not an fdp ledger" in capsys.readouterr().err and not (tmp_path / "o").exists()
    with sqlite3.connect(other) as conn:
        assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")] == ["customers"]
    assert other.read_bytes() == before


def test_an_empty_person_id_is_refused_by_ledger_init_as_by_release_mean(tmp_path, capsys):
    frame = pd.read_csv(EXAMPLE)
    frame.insert(0, "subject", [f"p{i // 2}" for i in range(len(frame))])
    frame.loc[3, "subject"] = " "
    data = tmp_path / "blank_id.csv"
    frame.to_csv(data, index=False)
    assert main(["release", "mean", "--preview", "--data", str(data), "--person-column", "subject", "--epsilon", "1",
                 "--tau", "1", "--kernel", "gaussian", "--rho", "0.1", "--out", str(tmp_path / "m")]) == 2
    release_error = capsys.readouterr().err
    url = f"sqlite:///{tmp_path / 'l.sqlite3'}"
    assert main(["ledger", "init", "--ledger", url, "--data", str(data), "--person-column", "subject",
                 "--epsilon", "1", "--delta", "0"]) == 2
    init_error = capsys.readouterr().err
    assert "person column 'subject' is empty in 1 row(s)" in init_error and "person column 'subject' is empty in 1 " \
        "row(s)" in release_error
    assert not (tmp_path / "l.sqlite3").exists()
