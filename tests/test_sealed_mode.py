"""Sealed mode (issue 29): explore on a public stand-in, read the private file once, at commit."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

from fdp_core.publish import export
from fdp_core.data.stand_in import SEALED, STAND_IN_PREFIX
from test_release_flow import commit

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
EXAMPLE_POINTS = len((ROOT / "data" / "example_curves.csv").read_text().splitlines()[0].split(",")) - 2


def _sealed_session(monkeypatch, n: int = 60, own_data_shown: bool = False) -> AppTest:
    monkeypatch.setenv("FDP_DATA_DIR", str(ROOT / "data"))
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    if own_data_shown:  # as after an upload or a server file earlier in the session
        at.session_state["session_loaded_own_data"] = True
    return _declare_and_start(at, "example_curves.csv", n)


def _declare_and_start(at: AppTest, private: str, n: int, stand_in: str | None = None) -> AppTest:
    """On the Data page: the private file, the public stand-in (if a file), n, grid and range; start."""
    at.switch_page("pages/data.py").run()
    at.selectbox(key="sealed_file").set_value(private)
    if stand_in is not None:
        at.selectbox(key="sealed_stand_in").set_value(stand_in)
    at.number_input(key="sealed_n").set_value(n)
    at.number_input(key="sealed_points").set_value(EXAMPLE_POINTS)
    at.number_input(key="sealed_lo").set_value(-1.5)
    at.number_input(key="sealed_hi").set_value(1.5)
    at.button(key="sealed_start").click().run()
    assert not at.exception
    return at


def test_sealed_flow_reads_the_private_file_only_at_commit(monkeypatch):
    at = _sealed_session(monkeypatch)
    assert at.session_state["dataset"].kind == "stand-in"
    assert any("private file read: never" in m.value for m in at.markdown)
    at.switch_page("pages/mean.py").run()
    assert not at.exception
    seen = list(at.session_state["session_looked_at"])
    assert seen and all(v.startswith(STAND_IN_PREFIX) for v in seen)
    assert at.session_state["sealed_private_reads"] == 0
    at.switch_page("pages/release.py").run()
    assert at.session_state["sealed_private_reads"] == 0
    commit(at)
    assert not at.exception
    assert at.session_state["sealed_private_reads"] == 1
    release = at.session_state["fdp_releases"][0]
    assert release.record["looked_at_before_commit"] == [SEALED]
    assert release.analyst["n_curves"] == 60  # the private file's curves, not the stand-in's
    assert SEALED in export.report_html(release)
    # The charge belongs to the private data's registered data set, never to the stand-in's.
    from fdp_core.data.loading import load_curves
    from fdp_core.budget.datasets import open_budget

    private = open_budget(None, load_curves(ROOT / "data" / "example_curves.csv"), unit=None, source="test")
    assert [e.id for e in private.ledger().entries] == [release.id]


def test_sealed_commit_refused_when_the_private_persons_differ(monkeypatch):
    at = _sealed_session(monkeypatch, n=61)
    at.switch_page("pages/release.py").run()
    commit(at)
    assert not at.exception
    assert any("not the declared n = 61" in e.value for e in at.error)
    assert "fdp_releases" not in at.session_state or not at.session_state["fdp_releases"]



def test_no_sealed_statement_once_an_own_file_was_shown(monkeypatch):
    at = _sealed_session(monkeypatch, own_data_shown=True)
    at.switch_page("pages/release.py").run()
    commit(at)
    assert not at.exception
    seen = at.session_state["fdp_releases"][0].record["looked_at_before_commit"]
    assert SEALED not in seen and export.NONPRIVATE_VIEWS["curves"] in seen


def _two_files(tmp_path):
    """A server folder with a 'private' file and a public stand-in of the same design (other values)."""
    import numpy as np
    import pandas as pd

    frame = pd.read_csv(ROOT / "data" / "example_curves.csv")
    frame.to_csv(tmp_path / "private.csv", index=False)
    rng = np.random.default_rng(5)
    frame.iloc[:, 2:] = frame.iloc[:, 2:].to_numpy() + rng.normal(0, 0.05, (len(frame), frame.shape[1] - 2))
    frame.to_csv(tmp_path / "public_stand_in.csv", index=False)
    return tmp_path


def _start_with_public_stand_in(monkeypatch, tmp_path, n: int = 60) -> AppTest:
    monkeypatch.setenv("FDP_DATA_DIR", str(_two_files(tmp_path)))
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    return _declare_and_start(at, "private.csv", n, stand_in="public_stand_in.csv")


def test_a_public_file_is_a_stand_in_and_the_plan_commits_sealed(monkeypatch, tmp_path):
    import numpy as np

    from fdp_core.budget.accounting import Ledger
    from fdp_core.data.loading import load_curves

    at = _start_with_public_stand_in(monkeypatch, tmp_path)
    ds = at.session_state["dataset"]
    assert ds.kind == "stand-in" and "public_stand_in.csv" in ds.label
    public = load_curves(tmp_path / "public_stand_in.csv")
    assert np.array_equal(ds.fd.data_matrix, public.data_matrix)  # the public file's curves, not simulated ones
    at.session_state["fdp_ledger_draft"] = Ledger(100.0, 1e-3)
    at.switch_page("pages/plan.py").run()
    assert not at.exception, at.exception
    assert at.session_state["sealed_private_reads"] == 0
    at.button(key="plan_commit").click().run()
    assert not at.exception, at.exception
    assert at.session_state["sealed_private_reads"] == 1
    committed, _ = at.session_state["plan_committed"]
    assert committed.looked_at == (SEALED,)
    assert committed.plan.computed_on == ds.label  # every number of the plan was computed on the stand-in
    assert all(r.record["looked_at_before_commit"] == [SEALED] for _, r in committed.parts)
    assert committed.data_label.startswith("server file: private.csv")


def test_the_private_file_is_never_its_own_stand_in(monkeypatch, tmp_path):
    monkeypatch.setenv("FDP_DATA_DIR", str(_two_files(tmp_path)))
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    at.switch_page("pages/data.py").run()
    at.selectbox(key="sealed_file").set_value("private.csv")
    at.selectbox(key="sealed_stand_in").set_value("private.csv")
    at.button(key="sealed_start").click().run()
    assert any("the private file itself" in e.value for e in at.error)
    assert at.session_state["dataset"].kind != "stand-in"


def test_a_sealed_plan_over_the_private_budget_is_refused_whole_at_the_click(monkeypatch, tmp_path):
    from fdp_core.budget.accounting import Ledger
    from fdp_core.budget.datasets import open_budget
    from fdp_core.budget.ledger_store import BudgetSpec
    from fdp_core.data.loading import load_curves

    at = _start_with_public_stand_in(monkeypatch, tmp_path)
    private = open_budget(None, load_curves(tmp_path / "private.csv"), unit=None, source="test")
    private.ensure(BudgetSpec.of(Ledger(0.3, 1e-4)))  # the private data set's stored budget: too small
    at.session_state["fdp_ledger_draft"] = Ledger(100.0, 1e-3)  # the stand-in's draft would let it through
    at.switch_page("pages/plan.py").run()
    at.button(key="plan_commit").click().run()
    assert not at.exception, at.exception
    assert any("nothing was committed" in e.value for e in at.error), [e.value for e in at.error]
    assert at.session_state["sealed_private_reads"] == 1
    assert "plan_committed" not in at.session_state
    assert private.ledger().entries == []


def test_the_meter_shows_the_registered_budget_before_the_private_file_is_read(monkeypatch):
    """Issue 38: a data set with an earlier commit; a sealed session shows its real spending (by the declared
    file name, nothing read), the button's 'leaves' counts it, and the bundle's ledger lists every entry."""
    at = _sealed_session(monkeypatch)
    at.switch_page("pages/release.py").run()
    commit(at)
    first = at.session_state["fdp_releases"][0]
    again = _sealed_session(monkeypatch)  # a new session: nothing of the first one but the ledger database
    again.switch_page("pages/release.py").run()
    assert again.session_state["sealed_private_reads"] == 0
    meter = next(c.value for c in again.sidebar.caption if c.value.startswith("Budget: spent"))
    assert f"spent epsilon {first.entry.epsilon:.3g}" in meter, meter
    left = 4 - 2 * first.entry.epsilon  # the default budget of 4, minus this commit and the one before it
    assert f"leaves epsilon {left:.3g}" in again.button(key="rel_commit").label
    commit(again)
    assert not again.exception and again.session_state["sealed_private_reads"] == 1
    release = again.session_state["fdp_releases"][0]
    files = export.bundle_files(release, again.session_state["fdp_ledger"])
    import json

    ids = [e["id"] for e in json.loads(files["ledger.json"])["entries"]]
    assert ids == [first.id, release.id]
    assert "2 release(s)" in files["report.html"].decode() or all(i in files["report.html"].decode() for i in ids)
