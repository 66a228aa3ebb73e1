"""The ledger through the command line, as separate processes on SQLite and PostgreSQL:
``ledger init`` / ``ledger show`` / ``replay --ledger``, sequential and concurrent budgets,
and a process killed between the charge and the written release."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from fdp_core.publish import export
from fdp_core.budget.accounting import Ledger
from fdp_core.cli import main
from fdp_core.data.loading import load_curves
from fdp_core.data.fingerprint import fingerprint
from fdp_core.releases.mean import MeanSettings

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "data" / "example_curves.csv"
FRL_EPS1 = MeanSettings(mechanism="frl", epsilon=1.0, tau=1.0, M=8)
GAUSSIAN = MeanSettings(mechanism="gaussian", epsilon=1.0, delta=1e-5, tau=1.0, phi=1e-2)


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'cli' / 'ledger.sqlite3'}"
    return request.getfixturevalue("postgres_url")


def write_config(tmp_path, settings=FRL_EPS1, budget=(3.0, 1e-5)) -> Path:
    release = export.commit_mean(Ledger(*budget), load_curves(EXAMPLE), settings, data_label="example_curves.csv")
    path = tmp_path / "config.yaml"
    path.write_text(export.config_yaml(release.config))
    return path


def cli(*args, env=None, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "fdp_core", *map(str, args)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})}, **kwargs)


def run_cli(*args, **kwargs) -> tuple[int, str, str]:
    proc = cli(*args, **kwargs)
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out, err


def show(url: str) -> dict:
    code, out, err = run_cli("ledger", "show", "--ledger", url, "--data", EXAMPLE)
    assert code == 0, err
    return json.loads(out)


def test_sequential_budget_two_releases_land_the_third_is_refused(ledger_url, tmp_path):
    config = write_config(tmp_path)
    code, out, err = run_cli("ledger", "init", "--ledger", ledger_url, "--data", EXAMPLE, "--epsilon", 2.5,
                             "--delta", 1e-5)
    assert code == 0 and out.startswith("created budget 'default' (epsilon 2.5, delta 1e-05, basic filter)"), err
    for i in (1, 2):
        code, out, err = run_cli("replay", config, "--data", EXAMPLE, "--ledger", ledger_url, "--out", tmp_path / f"r{i}")
        assert code == 0, err
        assert f"budget 'default': spent epsilon {i:.4g} of 2.5" in out
        record = json.loads((tmp_path / f"r{i}" / "release.json").read_text())
        assert record["ledger_at_commit"]["store"] == {"persistent": True, "budget_name": "default",
                                                      "created_utc": show(ledger_url)["budget"]["created_utc"],
                                                      "dataset": "example_curves"}
    code, out, err = run_cli("replay", config, "--data", EXAMPLE, "--ledger", ledger_url, "--out", tmp_path / "r3")
    assert code == 2 and out == ""
    assert err.startswith("error: release refused, nothing recorded") and err.count("\n") == 1, err
    assert not (tmp_path / "r3").exists()
    shown = show(ledger_url)
    # OpenDP's privacy map for the FRL's discrete Laplace gives epsilon a hair below 1.
    assert shown["spent"]["epsilon"] == pytest.approx(2.0, rel=1e-9) and len(shown["entries"]) == 2
    assert [e["status"] for e in shown["entries"]] == ["complete", "complete"]
    assert {e["source"] for e in shown["entries"]} == {"cli"}
    # The fingerprint is a hash of the raw data: it never leaves the ledger database.
    fp = fingerprint(load_curves(EXAMPLE))
    assert shown["budget"]["fingerprint"] == fp
    for path in (tmp_path / "r1").iterdir():
        assert fp not in path.read_text() and fp[:16] not in path.read_text(), path.name
    ledger_json = json.loads((tmp_path / "r2" / "ledger.json").read_text())
    assert ledger_json["budget_name"] == "default" and len(ledger_json["entries"]) == 2
    # A budget is created once: init again is refused, another name is a new budget.
    code, _, err = run_cli("ledger", "init", "--ledger", ledger_url, "--data", EXAMPLE, "--epsilon", 100, "--delta",
                           0.1)
    assert code == 2 and "already exists" in err and err.count("\n") == 1
    code, out, err = run_cli("ledger", "init", "--ledger", ledger_url, "--data", EXAMPLE, "--epsilon", 1.5, "--delta",
                             0, "--name", "second look", "--filter", "basic")
    assert code == 0, err
    code, out, err = run_cli("replay", config, "--data", EXAMPLE, "--ledger", ledger_url, "--budget-name",
                             "second look", "--out", tmp_path / "r4")
    assert code == 0, err
    record = json.loads((tmp_path / "r4" / "release.json").read_text())
    assert record["ledger_at_commit"]["store"]["budget_name"] == "second look"
    assert "name: second look" in (tmp_path / "r4" / "config.yaml").read_text()


def test_concurrent_replays_exactly_three_of_six_land(ledger_url, tmp_path):
    config = write_config(tmp_path)
    assert main(["ledger", "init", "--ledger", ledger_url, "--data", str(EXAMPLE), "--epsilon", "3.5", "--delta",
                 "1e-5"]) == 0
    start = time.perf_counter()
    procs = [cli("replay", config, "--data", EXAMPLE, "--ledger", ledger_url, "--out", tmp_path / f"out{i}")
             for i in range(6)]
    results = [(p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in procs]
    elapsed = time.perf_counter() - start
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 0, 0, 2, 2, 2], results
    for code, _, err in results:
        if code == 2:
            assert err.startswith("error: release refused, nothing recorded") and err.count("\n") == 1
    written = sorted(p.name for p in tmp_path.glob("out*") if (p / "release.json").exists())
    assert len(written) == 3 and len(list(tmp_path.glob("out*"))) == 3
    shown = show(ledger_url)
    assert len(shown["entries"]) == 3 and shown["spent"]["epsilon"] == pytest.approx(3.0, rel=1e-9)
    assert shown["spent"]["epsilon"] <= shown["budget"]["epsilon_total"]
    assert sorted(e["id"] for e in shown["entries"]) == sorted(
        json.loads((tmp_path / name / "release.json").read_text())["id"] for name in written)
    print(f"concurrent CLI on {ledger_url.split(':')[0]}: 6 replays in {elapsed:.1f} s, exit codes {codes}")


CRASH_DRIVER = """
import sys, time
from pathlib import Path
import fdp_core.publish.protocol as protocol
import fdp_core.commands.replay as replay_command
marker, checkpoint = Path(sys.argv[1]), sys.argv[2]

def stop_here(*args, **kwargs):
    marker.write_text(checkpoint)
    time.sleep(600)

if checkpoint == "before-draw":
    protocol.draw = stop_here
else:
    replay_command.export_folder = stop_here
from fdp_core.cli import main
sys.exit(main(sys.argv[3:]))
"""


@pytest.mark.parametrize("checkpoint", ["before-draw", "before-write"])
def test_killed_between_charge_and_write_keeps_the_charge_and_writes_nothing(ledger_url, tmp_path, checkpoint):
    config = write_config(tmp_path)
    assert main(["ledger", "init", "--ledger", ledger_url, "--data", str(EXAMPLE), "--epsilon", "1.5", "--delta",
                 "0"]) == 0
    marker, out = tmp_path / "reached", tmp_path / "crashed"
    proc = subprocess.Popen([sys.executable, "-c", CRASH_DRIVER, str(marker), checkpoint, "replay", str(config), "--data",
                             str(EXAMPLE), "--ledger", ledger_url, "--out", str(out)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the replay never reached the checkpoint"
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert not out.exists() or not any(out.iterdir())
    shown = show(ledger_url)
    assert [e["status"] for e in shown["entries"]] == ["reserved"]
    assert shown["spent"]["epsilon"] == pytest.approx(1.0, rel=1e-9) and shown["spent"]["n_reserved"] == 1
    # The lost charge still counts: a second eps-1 release no longer fits 1.5.
    code, _, err = run_cli("replay", config, "--data", EXAMPLE, "--ledger", ledger_url, "--out", tmp_path / "again")
    assert code == 2 and "release refused" in err and not (tmp_path / "again").exists()


def test_replay_defaults_to_the_environment_ledger_and_no_ledger_is_said_out_loud(tmp_path, capsys):
    """The issue's case: a Gaussian mean spends the whole delta; replaying it again on the same data (under
    another file name) is refused, because replay now charges the persistent ledger by default."""
    config = write_config(tmp_path, GAUSSIAN, budget=(3.0, 1e-5))
    copy = tmp_path / "same data, other name.csv"
    copy.write_bytes(EXAMPLE.read_bytes())
    assert main(["replay", str(config), "--data", str(EXAMPLE), "--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert "note: created budget 'default' for these data from the config (epsilon 3, delta 1e-05" in out
    assert os.environ["FDP_LEDGER_URL"].split("///")[1] in out  # the output says where the ledger lives
    assert main(["replay", str(config), "--data", str(copy), "--out", str(tmp_path / "b")]) == 2
    assert "delta" in capsys.readouterr().err and not (tmp_path / "b").exists()
    # --no-ledger: today's behaviour (a fresh in-memory ledger), said in the output and the record.
    assert main(["replay", str(config), "--data", str(copy), "--out", str(tmp_path / "c"), "--no-ledger"]) == 0
    assert "note: no persistent ledger was used (--no-ledger)" in capsys.readouterr().out
    record = json.loads((tmp_path / "c" / "release.json").read_text())
    assert record["ledger_at_commit"]["store"]["persistent"] is False
    assert "not counted" in record["ledger_at_commit"]["store"]["note"]


def test_show_and_init_errors_are_one_line(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'x.sqlite3'}"
    assert main(["ledger", "show", "--ledger", url, "--data", str(EXAMPLE)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no budget 'default' for this data set") and err.count("\n") == 1
    assert main(["ledger", "init", "--ledger", url, "--data", str(EXAMPLE), "--epsilon", "-1", "--delta", "0"]) == 2
    assert "epsilon_total must be > 0" in capsys.readouterr().err
    assert main(["ledger", "init", "--ledger", url, "--data", str(EXAMPLE), "--epsilon", "1", "--delta", "0",
                 "--split", "mean=1,foo=2"]) == 2
    assert "--split takes KIND=WEIGHT" in capsys.readouterr().err
    assert main(["ledger", "init", "--ledger", "mysql://h/db", "--data", str(EXAMPLE), "--epsilon", "1", "--delta",
                 "0"]) == 2
    assert "unsupported ledger URL" in capsys.readouterr().err
    assert main(["ledger", "init", "--ledger", url, "--data", str(EXAMPLE), "--epsilon", "2", "--delta", "1e-6",
                 "--filter", "zcdp", "--split", "mean=3,kde=1"]) == 0
    shown = json.loads((capsys.readouterr(), main(["ledger", "show", "--ledger", url, "--data", str(EXAMPLE)]))
                       and capsys.readouterr().out)
    assert shown["budget"]["filter"] == "zcdp" and {k: w for k, w in shown["budget"]["split"].items() if w} == {"mean": 0.75, "kde": 0.25}
    assert shown["entries"] == [] and shown["spent"]["epsilon"] == 0


# --------------------------------------------------------------------------- composites: one act (METHODS.md 23)

PLAN = {"schema": "fdp.plan/1", "public": {"n": 60, "grid": 27, "value_range": [-0.5, 2.0]},
        "budget": {"epsilon": 1.0, "delta": 1e-5},
        "statistics": [{"kind": "mean", "name": "mean one", "settings": {"mechanism": "frl", "tau": 1.0, "M": 8},
                        "epsilon": 0.5},
                       {"kind": "mean", "name": "mean two", "settings": {"mechanism": "frl", "tau": 1.0, "M": 8},
                        "epsilon": 0.5}]}


def write_plan(tmp_path) -> Path:
    import yaml

    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(PLAN))
    return path


def test_concurrent_plans_land_whole_or_not_at_all(ledger_url, tmp_path):
    """10 plans of 2 parts against a budget for exactly 2 plans: 2 land (4 complete entries), 8 are refused
    with nothing recorded, whichever order the processes reach the ledger in."""
    plan = write_plan(tmp_path)
    assert main(["ledger", "init", "--ledger", ledger_url, "--data", str(EXAMPLE), "--epsilon", "2.5", "--delta",
                 "1e-5"]) == 0
    procs = [cli("plan", plan, "--data", EXAMPLE, "--commit", "--ledger", ledger_url, "--out", tmp_path / f"plan{i}")
             for i in range(10)]
    results = [(p.wait(timeout=600), p.stdout.read(), p.stderr.read()) for p in procs]
    assert sorted(code for code, _, _ in results) == [0] * 2 + [2] * 8, results
    for code, _, err in results:
        if code == 2:
            assert "nothing was" in err and err.count("\n") == 1, err
    landed = [p for p in tmp_path.glob("plan*") if p.is_dir()]
    assert len(landed) == 2 and all((p / "plan_release.json").is_file() for p in landed)
    assert not list(tmp_path.glob(".plan*"))  # no staging folder left behind
    shown = show(ledger_url)
    assert [e["status"] for e in shown["entries"]] == ["complete"] * 4
    # One release id per plan, shared by its two parts.
    assert sorted(Counter(e["release_id"] for e in shown["entries"]).values()) == [2, 2]


PLAN_CRASH_DRIVER = """
import sys, time
from pathlib import Path
import fdp_core.publish.protocol as protocol
marker = Path(sys.argv[1])

def stop_here(*args, **kwargs):
    marker.write_text("drawing")
    time.sleep(600)

protocol.draw = stop_here
from fdp_core.cli import main
sys.exit(main(sys.argv[2:]))
"""


def test_a_plan_killed_after_its_reservation_holds_every_part_and_completes_as_one(ledger_url, tmp_path):
    plan = write_plan(tmp_path)
    assert main(["ledger", "init", "--ledger", ledger_url, "--data", str(EXAMPLE), "--epsilon", "1.5", "--delta",
                 "1e-5"]) == 0
    marker, out = tmp_path / "reached", tmp_path / "crashed"
    proc = subprocess.Popen([sys.executable, "-c", PLAN_CRASH_DRIVER, str(marker), "plan", str(plan), "--data",
                             str(EXAMPLE), "--commit", "--ledger", ledger_url, "--out", str(out)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the plan never reached its first draw"
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert not out.exists()
    shown = show(ledger_url)
    # Killed at the first part's draw: BOTH parts are reserved (one transaction), counted as spent.
    assert [e["status"] for e in shown["entries"]] == ["reserved", "reserved"]
    assert shown["spent"]["n_reserved"] == 2
    release_id = shown["entries"][0]["release_id"]
    assert shown["entries"][1]["release_id"] == release_id
    code, stdout, err = run_cli("ledger", "complete", "--release", release_id, "--ledger", ledger_url)
    assert code == 0 and stdout.startswith("completed 2 entries"), err
    assert [e["status"] for e in show(ledger_url)["entries"]] == ["complete", "complete"]
    code, _, err = run_cli("ledger", "complete", "--release", release_id, "--ledger", ledger_url)
    assert code == 2 and "every part is complete already" in err and err.count("\n") == 1


def test_plans_killed_at_random_moments_leave_none_or_all_of_their_parts(ledger_url, tmp_path):
    plan = write_plan(tmp_path)
    assert main(["ledger", "init", "--ledger", ledger_url, "--data", str(EXAMPLE), "--epsilon", "20", "--delta",
                 "1e-5"]) == 0
    rng = random.Random()
    for i in range(3):
        proc = cli("plan", plan, "--data", EXAMPLE, "--commit", "--ledger", ledger_url, "--out", tmp_path / f"k{i}")
        time.sleep(rng.uniform(1.0, 6.0))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    entries = show(ledger_url)["entries"]
    by_release = Counter(e["release_id"] for e in entries)
    assert all(count == 2 for count in by_release.values()), entries


def test_an_out_that_cannot_be_a_folder_is_refused_before_any_charge(tmp_path, capsys):
    """--out is checked before anything is reserved (the refusal needs no database: SQLite stands for both)."""
    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    config, plan = write_config(tmp_path), write_plan(tmp_path)
    assert main(["ledger", "init", "--ledger", url, "--data", str(EXAMPLE), "--epsilon", "3", "--delta", "1e-5"]) == 0
    (tmp_path / "a-file").write_text("keep me")
    os.mkfifo(tmp_path / "a-fifo")
    targets = [tmp_path / "a-file", tmp_path / "a-fifo", tmp_path / "a-file" / "below", Path(os.devnull),
               Path("/proc/self/fdp-out")]
    for target in targets:
        for args in (["replay", str(config), "--data", str(EXAMPLE)],
                     ["plan", str(plan), "--data", str(EXAMPLE), "--commit"]):
            capsys.readouterr()
            assert main([*args, "--ledger", url, "--out", str(target)]) == 2, (args[0], target)
            captured = capsys.readouterr()
            assert captured.err.count("\n") == 1 and captured.err.startswith("error: --out"), (args[0], captured.err)
            assert "wrote" not in captured.out and "committed" not in captured.out
    assert show(url)["entries"] == []
    assert not list(tmp_path.glob(".*fdp-staging*"))
    assert (tmp_path / "a-file").read_text() == "keep me"
