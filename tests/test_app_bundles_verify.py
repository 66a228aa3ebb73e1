"""AppTest: composite releases committed from the app verify from their own bundles (issue 36, item 5).

A sparse mean (A and b), a plan (three parts) and, in sealed mode, a plan and a mean with its bands
(mean and second moment) are committed from the app's pages; the bundle the app offers for download
is unpacked and every part's own ``release.py`` (the verifier shipped in the bundle, run as a
stakeholder would, in a fresh process) must print "verified". The total quoted on the button before
the click is the ledger's charge for that release (the sum of its stored entries, all complete)
and release.json's ``charged_total`` (plan_release.json's ``charged_basic`` for a plan).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fdp_core.budget.accounting import Ledger
from fdp_core.budget.datasets import open_budget
from fdp_core.budget.ledger_store import resolve_url
from fdp_core.data.loading import load_curves
from fdp_core.data.sparse_data import SPARSE_UNIT, ledger_view, read_long
from fdp_ui import state

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
EXAMPLE = ROOT / "data" / "example_curves.csv"
SPARSE = ROOT / "data" / "example_sparse.csv"
EXAMPLE_POINTS = len(EXAMPLE.read_text().splitlines()[0].split(",")) - 2


def _unzip(zip_bytes: bytes, into: Path) -> Path:
    zipfile.ZipFile(io.BytesIO(zip_bytes)).extractall(into)
    (top,) = [p for p in into.iterdir() if p.is_dir()]
    return top


def _verified(folders, data: Path) -> None:
    """Run each bundle folder's own release.py on ``data`` as a stakeholder would (side by side, each in a
    fresh interpreter); every one must exit 0 with "verified" as its last line."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs = [(folder, subprocess.Popen([sys.executable, str(folder / "release.py"), str(data)], cwd=folder, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
            for folder in folders]
    try:
        for folder, run in runs:
            out, err = run.communicate(timeout=300)
            assert run.returncode == 0 and out.strip().splitlines()[-1] == "verified", (folder, out, err)
    finally:  # never leave a verifier behind (a failed assertion or a timeout above)
        for _, run in runs:
            if run.poll() is None:
                run.kill()
                run.communicate()


def _stored(budget, ids) -> list[dict]:
    """The ledger's stored entries ``ids`` (every one complete)."""
    entries = {e["id"]: e for e in budget.store.show(budget.fingerprint, budget.name)["entries"]}
    assert set(ids) <= set(entries), (ids, list(entries))
    found = [entries[i] for i in ids]
    assert {e["status"] for e in found} == {"complete"}
    return found


def _total(entries) -> tuple[float, float]:
    return sum(e["epsilon"] for e in entries), sum(e["delta"] for e in entries)


def _commit_plan(at: AppTest) -> tuple[object, bytes, str]:
    """Click the Plan page's commit; (the committed plan, its zip, the button's label before the click)."""
    at.switch_page("pages/plan.py").run()
    assert not at.exception, at.exception
    button = at.button(key="plan_commit")
    assert not button.disabled, button.help
    label = button.label
    button.click().run()
    assert not at.exception, at.exception
    assert any("Committed the plan" in s.value for s in at.success), [e.value for e in at.error]
    committed, zip_bytes = at.session_state["plan_committed"]
    return committed, zip_bytes, label


def _check_plan(committed, zip_bytes: bytes, label: str, budget, data: Path, tmp_path: Path) -> None:
    top = _unzip(zip_bytes, tmp_path)
    index = json.loads((top / "plan_release.json").read_text())
    stored = _stored(budget, committed.entry_ids)
    eps, delta = _total(stored)
    assert index["charged_basic"]["epsilon"] == pytest.approx(eps, rel=1e-12)
    assert index["charged_basic"]["delta"] == pytest.approx(delta, rel=1e-12, abs=1e-300)
    assert f"costs epsilon {eps:.3g}, delta {delta:.2g} in {len(committed.parts)} ledger entries" in label, label
    _verified([top / part["folder"] for part in index["parts"]], data)  # every part verifies on the data
    for part in index["parts"]:  # and its charge is its entries'
        folder = top / part["folder"]
        record = json.loads((folder / "release.json").read_text())
        mine = [e for e in stored if e["id"] in part["entry_ids"]]
        assert part["charged_epsilon"] == pytest.approx(_total(mine)[0], rel=1e-12)
        if record.get("charged_total") is not None:
            assert record["charged_total"]["epsilon"] == pytest.approx(_total(mine)[0], rel=1e-12)


def test_an_app_committed_sparse_mean_verifies_from_its_bundle(tmp_path):
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.button(key="sparse_example_button").click().run()
    at.checkbox(key="sparse_domain_declared").check().run()
    at.number_input(key="data_range_lo_input").set_value(-1.0).run()
    at.number_input(key="data_range_hi_input").set_value(2.0).run()
    at.checkbox(key="data_range_declared_input").check().run()
    at.switch_page("pages/release.py").run()
    assert at.radio(key="rel_kind").value == "sparse"
    button = at.button(key="rel_commit")
    assert not button.disabled, button.help
    label = button.label
    button.click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    release = at.session_state["fdp_releases"][-1]
    budget = open_budget(resolve_url(), ledger_view(read_long(SPARSE)), unit=SPARSE_UNIT)
    stored = _stored(budget, release.record["part_entry_ids"])
    eps, delta = _total(stored)
    assert len(stored) == 2 and f"(epsilon {eps:.4g}, delta {delta:.3g} in 2 ledger entries (A and b))" in label
    zip_bytes, _ = next(iter(at.session_state["rel_export_cache"].values()))
    top = _unzip(zip_bytes, tmp_path)
    record = json.loads((top / "release.json").read_text())
    assert record["charged_total"]["epsilon"] == pytest.approx(eps, rel=1e-12)
    assert record["charged_total"]["delta"] == pytest.approx(delta, rel=1e-12)
    _verified([top], SPARSE)
    # The check can fail: the same bundle with a total that is not what the parts charged does not verify.
    from fdp_core.publish.verify import verify_release

    record["charged_total"]["epsilon"] *= 1.01
    assert not verify_release(top / "config.yaml", SPARSE, record).verified


def test_an_app_committed_plan_verifies_part_by_part_from_its_bundle(tmp_path):
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.session_state[state.RANGE_LO_KEY], at.session_state[state.RANGE_HI_KEY] = -0.5, 2.0
    at.session_state[state.RANGE_DECLARED_KEY] = True
    at.session_state["fdp_ledger_draft"] = Ledger(100.0, 1e-3)  # the budget the first commit stores
    committed, zip_bytes, label = _commit_plan(at)
    assert len(committed.parts) == 3
    budget = open_budget(None, load_curves(EXAMPLE), unit=None, source="test")
    _check_plan(committed, zip_bytes, label, budget, EXAMPLE, tmp_path)


def test_sealed_commits_of_a_plan_and_a_band_verify_from_their_bundles(monkeypatch, tmp_path):
    """Sealed mode: explored on the simulated stand-in, each commit reads the private file once; the
    bundles verify on the private file and charge its registered data set."""
    monkeypatch.setenv("FDP_DATA_DIR", str(ROOT / "data"))
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("pages/data.py").run()
    at.selectbox(key="sealed_file").set_value(EXAMPLE.name)
    at.number_input(key="sealed_n").set_value(60)
    at.number_input(key="sealed_points").set_value(EXAMPLE_POINTS)
    at.number_input(key="sealed_lo").set_value(-1.5)
    at.number_input(key="sealed_hi").set_value(1.5)
    at.button(key="sealed_start").click().run()
    assert not at.exception and at.session_state["dataset"].kind == "stand-in"
    at.session_state["fdp_ledger_draft"] = Ledger(100.0, 1e-3)
    budget = open_budget(None, load_curves(EXAMPLE), unit=None, source="test")  # the private file's data set
    committed, zip_bytes, label = _commit_plan(at)
    assert at.session_state["sealed_private_reads"] == 1
    _check_plan(committed, zip_bytes, label, budget, EXAMPLE, tmp_path / "plan")
    # The mean with its privacy and confidence bands: two parts, one quote.
    at.switch_page("pages/release.py").run()
    at.radio(key="rel_kind").set_value("mean").run()
    at.toggle(key="rel_band_on").set_value(True).run()
    for box in at.checkbox:
        if box.label.startswith("I publish") and not box.value:
            box.check()
    at.run()
    button = at.button(key="rel_commit")
    assert not button.disabled, button.help
    label = button.label
    button.click().run()
    assert not at.exception, at.exception
    assert any(s.value.startswith("Committed mean") for s in at.success), [e.value for e in at.error]
    assert at.session_state["sealed_private_reads"] == 2
    release = at.session_state["fdp_releases"][-1]
    ids = release.record["part_entry_ids"]
    stored = _stored(budget, ids)
    eps, delta = _total(stored)
    parts = " + ".join(f"{e['epsilon']:.3g}" for e in stored)
    assert len(stored) == 2 and f"costs epsilon {eps:.3g}, delta {delta:.2g} (2 parts: {parts})" in label, label
    (key, (zip_bytes, _)), = at.session_state["rel_export_cache"].items()  # the release just committed
    assert key[0] == release.id
    top = _unzip(zip_bytes, tmp_path / "band")
    record = json.loads((top / "release.json").read_text())
    assert record["charged_total"]["epsilon"] == pytest.approx(eps, rel=1e-12)
    assert record["charged_total"]["delta"] == pytest.approx(delta, rel=1e-12)
    _verified([top], EXAMPLE)
