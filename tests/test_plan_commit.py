"""One commit for a release plan (issue 29): one check, one bundle with one report, one ledger entry per part."""

from __future__ import annotations

import json
import zipfile
import io

import pytest
import yaml

from fdp_core.budget.accounting import Ledger
from fdp_core.cli import main
from fdp_core.data.loading import load_curves
from fdp_core.errors import BudgetError
from fdp_core.explore.plan import make_plan
from fdp_core.publish.plan_commit import INDEX_FILE, PLAN_FILES, commit_plan, export_plan_zip, plan_bundle_files

DATA = "data/example_curves.csv"
MEAN = {"mechanism": "gaussian", "kernel": "matern52", "rho": 0.1}
STATS = [{"kind": "mean", "name": "mean curve", "settings": MEAN, "target": 0.3},
         {"kind": "kde", "name": "density of the norm", "feature": "l2norm", "settings": {"box": [[0, 2]]},
          "target": 2.0},
         {"kind": "pca", "name": "components", "settings": {"k": 2}, "epsilon": 0.5}]


def _mapping(statistics=STATS):
    return {"schema": "fdp.plan/1", "public": {"n": 60, "grid": 27, "value_range": [-0.5, 2.0]},
            "statistics": statistics}


def _write(tmp_path, statistics=STATS):
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(_mapping(statistics)))
    return path


def test_cli_commit_writes_one_bundle_with_one_report(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["plan", str(_write(tmp_path)), "--out", str(out), "--data", DATA, "--commit"]) == 0
    printed = capsys.readouterr().out
    assert "one bundle" in printed
    for name in PLAN_FILES:
        assert (out / name).is_file(), name
    folders = ["part-1-mean", "part-2-kde", "part-3-pca"]
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == folders  # no staging folder left behind
    for folder in folders:
        assert (out / folder / "release.json").is_file() and (out / folder / "report.html").is_file()
    assert not list(tmp_path.glob(".out.fdp-staging-*"))
    index = json.loads((out / INDEX_FILE).read_text())
    assert [p["folder"] for p in index["parts"]] == folders
    assert index["looked_at_before_commit"] == ["pre-registered: settings fixed before the data were loaded"]
    # The one report names every part, its charge and the plan's total.
    report = (out / "report.html").read_text()
    for part in index["parts"]:
        assert part["name"] in report and part["release_id"] in report
        assert f"{part['charged_epsilon']:.4g}" in report
    assert f"{index['charged_basic']['epsilon']:.4g}" in report
    assert "Part 3: components" in report and report.count("* plotly.js v") == 1  # plotly.js inlined once
    # One ledger entry per part, summing to the plan's charge.
    capsys.readouterr()
    assert main(["ledger", "show", "--data", DATA]) == 0
    entries = json.loads(capsys.readouterr().out)["entries"]
    assert sorted(e["id"] for e in entries) == sorted(p["release_id"] for p in index["parts"])
    assert sum(e["epsilon"] for e in entries) == pytest.approx(index["charged_basic"]["epsilon"], rel=1e-9)
    assert all(e.get("status", "complete") == "complete" for e in entries)
    # The plan as given is in the bundle: committing it again is one command.
    assert yaml.safe_load((out / "plan.yaml").read_text()) == _mapping()


def test_commit_in_memory_is_refused_whole_when_over_budget():
    fd = load_curves(DATA)
    plan = make_plan(_mapping())
    ledger = Ledger(plan.basic[0] * 0.99, 1e-3)  # every part fits alone, not all of them together
    with pytest.raises(BudgetError, match="nothing was committed"):
        commit_plan(plan, fd, ledger, data_label="example")
    assert ledger.entries == []


def test_zip_holds_the_same_bundle_without_analyst_views():
    fd = load_curves(DATA)
    plan = make_plan(_mapping(STATS[:2]))
    ledger = Ledger(10.0, 1e-3)
    committed = commit_plan(plan, fd, ledger, data_label="example", looked_at=["x"], mapping=_mapping(STATS[:2]))
    assert len(ledger.entries) == 2 and committed.entry_ids == [e.id for e in ledger.entries]
    names = zipfile.ZipFile(io.BytesIO(export_plan_zip(committed))).namelist()
    top = names[0].split("/")[0]
    assert top == f"fdp_plan_{committed.parts[0][1].id}"
    assert {n.split("/", 1)[1] for n in names} == set(plan_bundle_files(committed))
    assert not any(n.endswith("analyst_view.json") for n in names)
    assert "part-2-kde/release.csv" in plan_bundle_files(committed)
    assert committed.parts[0][1].record["looked_at_before_commit"] == ["x"]


def _private_copy(tmp_path):
    """A 'private' file with the example's design (60 persons, its grid) and other values."""
    import numpy as np
    import pandas as pd

    frame = pd.read_csv(DATA)
    values = frame.iloc[:, 2:].to_numpy() + np.random.default_rng(3).normal(0, 0.05, (len(frame), frame.shape[1] - 2))
    frame.iloc[:, 2:] = values
    path = tmp_path / "private.csv"
    frame.to_csv(path, index=False)
    return path


def _example_design_plan(tmp_path, stand_in=None):
    mapping = {"schema": "fdp.plan/1", "public": {"n": 60, "grid": 27, "value_range": [-0.5, 2.0]},
               "statistics": STATS[:2], "budget": {"epsilon": 20, "delta": 1e-3}}  # room for two commits
    if stand_in:
        mapping["data"] = {"stand_in": stand_in}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(mapping))
    return path


@pytest.mark.parametrize("how", ["flag-file", "yaml-simulated"])
def test_sealed_plan_states_the_stand_in_only_when_used(tmp_path, capsys, how):
    from fdp_core.data.stand_in import SEALED

    private = _private_copy(tmp_path)
    if how == "flag-file":  # the public example is the stand-in of the 'private' copy
        args = ["plan", str(_example_design_plan(tmp_path)), "--stand-in", DATA]
    else:
        args = ["plan", str(_example_design_plan(tmp_path, stand_in="simulated"))]
    out = tmp_path / "out"
    assert main(args + ["--out", str(out), "--data", str(private), "--commit"]) == 0
    assert "computed on" in capsys.readouterr().out
    index = json.loads((out / INDEX_FILE).read_text())
    assert index["looked_at_before_commit"] == [SEALED]
    for folder in ("part-1-mean", "part-2-kde"):
        assert json.loads((out / folder / "release.json").read_text())["looked_at_before_commit"] == [SEALED]
    assert "stand-in" in json.loads((out / "plan.json").read_text())["computed_on"]
    assert SEALED[0].upper() + SEALED[1:] in (out / "report.html").read_text()
    # Without a stand-in the same plan is pre-registered, never sealed.
    plain = tmp_path / "plain"
    assert main(["plan", str(_example_design_plan(tmp_path)), "--out", str(plain), "--data", str(private),
                 "--commit"]) == 0
    assert SEALED not in json.loads((plain / INDEX_FILE).read_text())["looked_at_before_commit"]


@pytest.mark.parametrize("stand_in, message", [
    ("SELF", "is the private --data file itself"),
    ("data/example_curves.csv:n", "not the declared n = 61"),
])
def test_a_stand_in_without_the_declared_design_is_refused(tmp_path, capsys, stand_in, message):
    path = _example_design_plan(tmp_path)
    if stand_in.endswith(":n"):
        mapping = yaml.safe_load(path.read_text())
        mapping["public"]["n"] = 61
        path.write_text(yaml.safe_dump(mapping))
        stand_in = DATA
    data = DATA if stand_in == "SELF" else str(_private_copy(tmp_path))
    out = tmp_path / "out"
    assert main(["plan", str(path), "--stand-in", DATA, "--out", str(out), "--data", data, "--commit"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_a_plan_commit_refuses_a_file_on_another_grid(tmp_path):
    """The plan's budgets and radii were computed on the declared grid: a file with another number
    of points is refused in one line, nothing charged, nothing written (issue 39: 60 vs 93 was committed)."""
    from pathlib import Path

    example = Path(__file__).resolve().parents[1] / "data" / "example_curves.csv"  # 60 curves on 27 points
    plan = tmp_path / "plan.yaml"
    plan.write_text("schema: fdp.plan/1\npublic: {n: 60, grid: 93, value_range: [-0.5, 2.0]}\nstatistics:\n"
                    "  - {name: m, kind: mean, settings: {kernel: matern52, rho: 0.1}, epsilon: 0.5}\n"
                    "budget: {epsilon: 2, delta: 1e-5}\n")
    ledger, out = tmp_path / "l.sqlite3", tmp_path / "out"
    code = main(["plan", str(plan), "--data", str(example), "--commit", "--ledger", f"sqlite:///{ledger}",
                 "--out", str(out)])
    assert code == 2 and not out.exists() and not ledger.exists()
