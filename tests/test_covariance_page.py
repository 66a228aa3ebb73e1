"""AppTest: the Covariance & regression page shows both heatmaps, the two private-FPCA routes with their
variance ratios, and the regression coefficient functions with bands; numbers match fdp_core."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fdp_core.releases.covariance import CovarianceSettings, plan_covariance_release
from fdp_core.data.loading import load_curves
from fdp_core.releases.regression import RegressionSettings, plan_regression_release
from fdp_core.explore.verdict import covariance_verdict
from fdp_ui.state import EXAMPLE_FILE
from chart_specs import chart_specs

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
EXAMPLE = load_curves(EXAMPLE_FILE)
SIDEBAR = dict(kernel="matern52", rho=0.1, eta=1.5, phi=10**-2.0, epsilon=1.0, delta=1e-5, tau=1.0)


def _page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("pages/covariance.py")
    at.run()
    assert not at.exception, at.exception
    return at


def _metrics(at) -> dict:
    return {m.label: m.value for m in at.metric}


def _figures(at) -> dict:
    import json

    return {element_id: json.loads(spec) for element_id, spec in chart_specs(at)}


def test_page_shows_heatmaps_components_and_regression():
    at = _page()
    assert "Covariance & regression" in at.title[0].value
    figures = list(_figures(at).values())
    assert len(figures) == 3
    heat, components, regression = figures
    assert [t["type"] for t in heat["data"]] == ["heatmap", "heatmap"]
    names = {t.get("name") for t in components["data"]}
    assert {"eigenfunction of C~", "exponential mechanism"} <= names
    assert any("analyst view" in (n or "") for n in names)
    reg_names = {t.get("name") for t in regression["data"]}
    assert "private beta~" in reg_names and any("OLS" in (n or "") for n in reg_names)
    metrics = _metrics(at)
    plan = plan_covariance_release(EXAMPLE, CovarianceSettings(centre=0.5, centring="released-mean", gamma=0.2,
                                                               **SIDEBAR))
    assert float(metrics["sensitivity"]) == pytest.approx(plan.sensitivity, rel=1e-3)
    # The headline error is a radius (same units as the covariance) with a verdict against tau^2.
    radius = float(metrics["noise (95% radius, HS)"])
    assert radius == pytest.approx(plan.hs_error_radius(0.95), rel=1e-3)
    # Not the second moment's squared figure: the covariance's error includes the released mean's outer product.
    assert radius**2 > plan.expected_sq_hs_error
    verdict = covariance_verdict(radius, plan.tau)
    boxes = {"green": at.success, "amber": at.warning, "red": at.error}[verdict.level]
    assert any(b.value.startswith(verdict.headline) for b in boxes)
    assert any("Verdict rule" in c.value for c in at.caption)
    assert all("title" not in f["layout"] or not f["layout"]["title"].get("text") for f in figures)  # no overlap
    for label in ("variance ratio, eigenfunctions of C~ (analyst view)",
                  "variance ratio, exponential mechanism (analyst view)"):
        assert 0.0 <= float(metrics[label]) <= 1.0
    reg = plan_regression_release(EXAMPLE, RegressionSettings(covariates=("group=B",), bound_b=2.0, centre=0.5,
                                                              gamma=0.3, kappa=0.05, **SIDEBAR))
    assert float(metrics["T1 sigma"]) == pytest.approx(reg.t1_sigma, rel=1e-3)
    assert float(metrics["T2 sigma"]) == pytest.approx(reg.t2_sigma, rel=1e-3)


def test_switching_to_iclp_and_sqrt2_changes_the_numbers():
    at = _page()
    before = float(_metrics(at)["sensitivity"])
    at.radio(key="cov_bound").set_value("sqrt2").run()
    sqrt2 = float(_metrics(at)["sensitivity"])
    assert sqrt2 >= before * (1 - 1e-3)
    at.selectbox(key="cov_mechanism").set_value("iclp").run()
    assert not at.exception
    plan = plan_covariance_release(EXAMPLE, CovarianceSettings(mechanism="iclp", centre=0.5,
                                                               centring="released-mean", gamma=0.2, **SIDEBAR))
    assert float(_metrics(at)["sensitivity"]) == pytest.approx(plan.sensitivity, rel=1e-3)


def test_no_covariate_gives_a_message_not_a_crash():
    at = _page()
    at.multiselect(key="reg_covariates").set_value([]).run()
    assert not at.exception
    assert any("at least one covariate" in i.value for i in at.info)


def test_tradeoffs_page_private_selection_charges_the_ledger():
    from fdp_core.releases.mean import MeanSettings
    from fdp_core.explore.private_selection import pcv_private_scores, score_sensitivity, selection_probabilities
    from fdp_ui.private_selection import PENALTIES, RHOS

    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page("pages/tradeoffs.py")
    at.session_state["to_pcv_size"] = 8
    at.session_state["to_private_selection_open"] = True  # a lazy expander (fdp_ui/layout.py): built while open
    at.run()
    assert not at.exception, at.exception
    metrics = _metrics(at)
    s = MeanSettings(kernel="matern52", rho=0.1, eta=1.5, phi=10**-2.0, epsilon=1.0, delta=1e-5, tau=1.0)
    scores = pcv_private_scores(EXAMPLE, s, PENALTIES, RHOS, folds=10)
    probs = selection_probabilities(scores, 0.1, score_sensitivity(1.0, EXAMPLE.n // 10, 10, "range"))
    assert float(metrics["P(PCV-optimal grid point)"]) == pytest.approx(probs.max(), abs=1.5e-3)
    at.button(key="sel_commit").click().run()
    assert not at.exception, at.exception
    assert any("charged epsilon 0.1" in s.value for s in at.success)
    # Charged to the persistent ledger (this test's own SQLite file): a rerun reads it back from there.
    from fdp_core.budget.ledger_store import PersistentLedger
    from fdp_ui.ledger import LEDGER_KEY

    at.run()
    stored = at.session_state[LEDGER_KEY]
    assert isinstance(stored, PersistentLedger)
    assert [e.kind for e in stored.entries] == ["tuning"]


@pytest.mark.parametrize("kind,parts", [("covariance", 2), ("regression", 2)])
def test_commit_buttons_charge_the_persistent_ledger_and_list_the_release(kind, parts):
    from fdp_core.budget.ledger_store import PersistentLedger
    from fdp_ui.ledger import LEDGER_KEY, RELEASES_KEY

    at = _page()
    at.button(key=f"commit_{kind}").click().run()
    assert not at.exception, at.exception
    assert any("Committed" in s.value for s in at.success), [e.value for e in at.error]
    at.run()
    stored = at.session_state[LEDGER_KEY]
    assert isinstance(stored, PersistentLedger) and [e.kind for e in stored.entries] == [kind] * parts
    release = at.session_state[RELEASES_KEY][-1]
    assert release.kind == kind
    assert any("Covariance & regression page" in v for v in release.record["looked_at_before_commit"])


def test_committed_covariance_release_is_exported_from_the_release_page():
    from fdp_ui.ledger import RELEASES_KEY

    at = _page()
    at.button(key="commit_covariance").click().run()
    at.switch_page("pages/release.py")
    at.run()
    assert not at.exception, at.exception
    release = at.session_state[RELEASES_KEY][-1]
    assert release.kind == "covariance"
    chooser = at.selectbox(key="rel_export_choice")
    assert chooser.value == release.id
    assert len(at.get("download_button")) >= 1


def test_an_id_column_is_never_the_default_covariate(shared_data):
    """Safe default (issue 28): on DTI the regression pre-selects a describing column, not the id 'subject'."""
    from fdp_ui.state import Dataset

    fd = load_curves(shared_data / "dti_cca.csv")
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["dataset"] = Dataset(fd, "upload: dti_cca.csv", "upload")
    at.run()
    at.switch_page("pages/covariance.py").run()
    assert not at.exception, at.exception
    chosen = at.multiselect(key="reg_covariates").value
    assert chosen and not any(c.split("=")[0] == "subject" for c in chosen), chosen


def test_the_page_work_is_shared_between_sessions_and_keyed_by_curves_metadata_and_settings():
    """Issue 40: a second session on the same data and settings reuses the first one's plan and error
    radius (one object); other person codes, other curves or other settings are another entry."""
    from dataclasses import replace

    import numpy as np

    from fdp_core.data.loading import from_arrays
    from fdp_ui import covariance_cache

    settings = CovarianceSettings(centre=0.0, **SIDEBAR)
    plan, radius = covariance_cache.covariance_plan(EXAMPLE, settings)
    again = covariance_cache.covariance_plan(EXAMPLE, settings)
    assert again[0] is plan and again[1] == radius
    assert radius == pytest.approx(plan_covariance_release(EXAMPLE, settings).hs_error_radius(0.95), rel=1e-12)
    assert covariance_cache.covariance_plan(EXAMPLE, CovarianceSettings(centre=0.1, **SIDEBAR))[0] is not plan
    meta = EXAMPLE.metadata.copy()
    meta["person"] = np.arange(EXAMPLE.n) // 2  # same curves, another unit of privacy
    paired = from_arrays(EXAMPLE.grid_points, EXAMPLE.data_matrix, metadata=meta)
    # Same usable curves, but the file had one more (incomplete) curve: n, hence the noise, differs.
    with_dropped = replace(EXAMPLE, report=replace(EXAMPLE.report, n_read=EXAMPLE.n + 1, n_dropped=1,
                                                   dropped_rows=(EXAMPLE.n + 1,)))
    keys = {covariance_cache.data_key(fd) for fd in (EXAMPLE, paired, with_dropped, from_arrays(
        EXAMPLE.grid_points, EXAMPLE.data_matrix + 1e-9, metadata=EXAMPLE.metadata))}
    assert len(keys) == 4
