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
    assert abs(table["95% radius"].iloc[0] - 0.05) < 1e-6  # the mean's target is met exactly
    assert any("total epsilon" in m.label for m in at.metric)
    assert not at.error


def test_plan_page_asks_for_the_range_first():
    at = _plan_page(False)
    assert any("Declare the range before committing" in w.value for w in at.warning)
    assert not at.error  # the sidebar's tau stands in until the range is declared
