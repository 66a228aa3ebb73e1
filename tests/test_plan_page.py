"""AppTest: the Plan page computes budgets from public inputs and offers the plan's download."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

from fdp_ui import state

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def _plan_page(declare_range: bool) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    if declare_range:
        at.session_state[state.RANGE_LO_KEY] = -0.5
        at.session_state[state.RANGE_HI_KEY] = 2.0
        at.session_state[state.RANGE_DECLARED_KEY] = True
    at.switch_page("pages/plan.py")
    at.run()
    assert not at.exception, at.exception
    return at


def test_plan_page_gives_each_statistic_its_budget():
    at = _plan_page(True)
    table = at.dataframe[-1].value
    assert list(table["kind"]) == ["mean", "pca", "kde"]
    assert (table["charged epsilon"] > 0).all()
    # The default targets are in the data's units (issue 38): the mean's 5% of the range's width 2.5.
    assert abs(table["95% radius"].iloc[0] - 0.125) < 1e-6  # the mean's target is met exactly
    assert any("total epsilon" in m.label for m in at.metric)
    assert not at.error


def test_plan_defaults_follow_the_declared_range():
    """Berkeley-like units (a range of 60..200): the starting targets scale with the declared range, so the
    default plan is reachable (issue 38: DTI's 0.05 was the default for any data)."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.session_state[state.RANGE_LO_KEY], at.session_state[state.RANGE_HI_KEY] = 60.0, 200.0
    at.session_state[state.RANGE_DECLARED_KEY] = True
    at.switch_page("pages/plan.py").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    table = at.dataframe[-1].value
    assert abs(table["95% radius"].iloc[0] - 7.0) < 1e-6  # 5% of the width 140


def test_plan_page_asks_for_the_range_first():
    at = _plan_page(False)
    assert any("Declare the range before committing" in w.value for w in at.warning)
    assert not at.error  # the sidebar's tau stands in until the range is declared


def test_plan_page_commits_the_whole_plan_as_one_bundle():
    import io
    import zipfile

    from fdp_core.budget.accounting import Ledger

    at = _plan_page(True)
    at.session_state["fdp_ledger_draft"] = Ledger(100.0, 1e-3)  # the budget the first commit stores
    at.run()
    button = at.button(key="plan_commit")
    assert not button.disabled and "3 ledger entries" in button.label
    button.click().run()
    assert not at.exception, at.exception
    assert any("Committed the plan: 3 parts" in s.value for s in at.success), [e.value for e in at.error]
    committed, zip_bytes = at.session_state["plan_committed"]
    assert [r.kind for _, r in committed.parts] == ["mean", "pca", "kde"]
    assert len(at.session_state["fdp_releases"]) == 3  # the Release page's export list shows every part
    names = zipfile.ZipFile(io.BytesIO(zip_bytes)).namelist()
    assert any(n.endswith("/report.html") and n.count("/") == 1 for n in names)
    assert any(n.endswith("part-3-kde/release.csv") for n in names)
    # One ledger entry per part, all complete; a second commit of the same plan is checked as a whole again.
    from fdp_core.budget.datasets import open_budget
    from fdp_core.data.loading import load_curves

    stored = open_budget(None, load_curves(Path(APP).parent / "data" / "example_curves.csv"), unit=None,
                         source="test").ledger()
    assert sorted(e.id for e in stored.entries) == sorted(committed.entry_ids)


def test_plan_page_refuses_a_plan_over_the_budget_left():
    at = _plan_page(True)
    from fdp_core.budget.accounting import Ledger

    at.session_state["fdp_ledger_draft"] = Ledger(0.5, 1e-4)
    at.run()
    button = at.button(key="plan_commit")
    assert button.disabled
    assert any("over budget (the plan's parts together)" in w.value for w in at.warning)
