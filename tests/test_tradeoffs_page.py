"""AppTest: the Trade-offs page driven like a user (every parameter, the apply buttons, bad states)."""

from pathlib import Path

import numpy as np
import plotly.io as pio
import pytest
from streamlit.testing.v1 import AppTest

from fdp_core.explore import sweeps
from fdp_core.releases.mean import MECHANISM_LABELS
from fdp_ui.sidebar import EPSILON_CHOICES
from plotly_json import plotly_array
from chart_specs import chart_specs

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")


def _page(at=None) -> AppTest:
    if at is None:
        at = AppTest.from_file(APP, default_timeout=120)
        at.run()
    at.switch_page("pages/tradeoffs.py")
    at.run()
    assert not at.exception, at.exception
    return at


def _captions(at) -> list[str]:
    return [c.value for c in at.caption]


def test_page_shows_curves_heatmap_and_epsilon_table():
    at = _page()
    assert len(chart_specs(at)) >= 2  # trade-off curves + PCV heatmap
    assert any("data-dependent" in e.value and "not differentially private" in e.value for e in at.error)
    assert len(at.dataframe) >= 1  # smallest epsilon per mechanism


def _curves_figure(at):
    """The trade-off figure sent to the browser (the chart keyed to_curves), decoded by plotly."""
    charts = [spec for element_id, spec in chart_specs(at) if "to_curves" in element_id]
    assert charts, "no trade-off curves drawn"
    return pio.from_json(charts[0])


def _line(figure, mechanism_label: str) -> tuple[np.ndarray, np.ndarray]:
    trace = next(t for t in figure.data if t.name == mechanism_label and t.mode == "lines")
    return plotly_array(trace.x), plotly_array(trace.y)


# Closed-form noise variance decreases with epsilon, delta and n: a sweep plotting anything
# else (a wrong parameter, a stale cache, the wrong axis) breaks these monotonicities.
DECREASING = {"epsilon", "delta", "n"}


@pytest.mark.parametrize("param", ["delta", "phi", "rho", "eta", "n", "epsilon"])
def test_every_parameter_sweep_plots_that_parameter(param):
    at = _page()
    at.selectbox(key="to_param").set_value(param).run()
    assert not at.exception, at.exception
    figure = _curves_figure(at)
    assert sweeps.PARAM_LABELS[param] in figure.layout.title.text
    x, y = _line(figure, MECHANISM_LABELS["gaussian"])
    expected_x = sweeps.default_values(param, 60)  # the built-in example has 60 curves
    assert x.size >= 5 and np.all(np.diff(x) > 0)
    assert set(np.round(x, 12)) <= set(np.round(expected_x, 12))
    assert np.all(np.isfinite(y)) and np.all(y > 0)
    if param in DECREASING:
        assert np.all(np.diff(y) < 0), f"error must fall as {param} grows"


def test_apply_pcv_and_pss_set_the_global_settings():
    at = _page()
    before = {k: at.session_state[k] for k in ("g_log_phi", "g_rho", "g_eta")}
    at.button(key="to_apply_pcv").click().run()
    assert not at.exception
    assert (at.session_state["g_log_phi"], at.session_state["g_rho"]) != (before["g_log_phi"], before["g_rho"])
    # The sidebar widgets accepted the new values (on the slider's step, inside its range).
    assert at.slider(key="g_log_phi").value == at.session_state["g_log_phi"]
    assert at.number_input(key="g_rho").value == at.session_state["g_rho"]
    at.button(key="to_apply_pss").click().run()
    assert not at.exception
    assert at.session_state["g_eta"] != before["g_eta"]
    assert at.slider(key="g_eta").value == at.session_state["g_eta"]
    assert -8.0 <= at.session_state["g_log_phi"] <= 2.0


def test_target_accuracy_sets_a_snapped_epsilon():
    at = _page()
    before = at.session_state["g_epsilon"]
    # The target is entered as the 95% L2 radius, in the curves' units (not a squared figure).
    assert at.selectbox(key="to_metric").value == "l2_radius_95"
    assert "units of the curves" in at.number_input(key="to_target_l2_radius_95").label
    at.number_input(key="to_target_l2_radius_95").set_value(0.03).run()
    at.button(key="to_apply_epsilon").click().run()
    assert not at.exception
    eps = at.session_state["g_epsilon"]
    assert eps in EPSILON_CHOICES and eps != before
    for metric in ("expected_sq_l2", "pointwise_95"):
        at.selectbox(key="to_metric").set_value(metric).run()
        assert not at.exception


def _open(at, key: str) -> AppTest:
    """Open a lazy expander (fdp_ui/layout.py: its content runs only while it is open)."""
    at.session_state[key] = True
    at.run()
    assert not at.exception, at.exception
    return at


def test_closed_expanders_build_nothing_and_keep_the_shared_options():
    at = _page()
    assert "mean_lo" not in [w.key for w in at.number_input]  # mechanism options closed: not drawn
    tables = len(at.dataframe)
    _open(at, "to_options_open")
    at.number_input(key="mean_K").set_value(12).run()
    at.radio(key="mean_bound").set_value("paper").run()
    _open(at, "to_table_open")
    assert len(at.dataframe) == tables + 1  # the curves' table
    at.session_state["to_options_open"] = False
    at.run()
    # Closed again: the options are not drawn, their values still hold (here and on the Mean page).
    assert "mean_K" not in [w.key for w in at.number_input]
    assert at.session_state["mean_K"] == 12 and at.session_state["mean_bound"] == "paper"
    at.select_slider(key="g_epsilon").set_value(2.0).run()
    assert at.session_state["mean_K"] == 12 and at.session_state["mean_bound"] == "paper"
    at.switch_page("pages/mean.py")
    at.run()
    assert not at.exception, at.exception
    assert at.radio(key="mean_bound").value == "paper"


def test_bad_mechanism_state_is_a_caption_not_a_crash():
    at = _open(_page(), "to_options_open")
    at.number_input(key="mean_lo").set_value(2.0).run()  # lo >= hi: Bernstein cannot run
    assert not at.exception
    assert any("not shown" in c and "lo < hi" in c for c in _captions(at))
    at.select_slider(key="g_epsilon").set_value(5.0).run()
    at.radio(key="mean_calibration").set_value("classical").run()  # invalid at epsilon > 1
    assert not at.exception
    at.selectbox(key="to_pcv_mechanism").set_value("gaussian").run()
    assert any("PCV cannot run" in w.value for w in at.warning)


def test_simulation_adds_error_against_the_truth():
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.radio(key="data_source").set_value("simulate").run()
    at = _page(at)
    assert at.toggle(key="to_truth").value
    assert any("true mean" in c for c in _captions(at))
    at.selectbox(key="to_param").set_value("n").run()
    assert not at.exception


def test_tiny_upload_runs():
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.radio(key="data_source").set_value("upload a file").run()
    raw = b"id,0,0.5,1\na,0.1,0.2,0.3\nb,0.2,0.1,0.0\nc,0.3,0.3,0.2\n"
    at.file_uploader(key="data_upload").set_value(("tiny.csv", raw, "text/csv")).run()
    at = _page(at)
    assert at.number_input(key="to_pcv_folds").value == 3
    for param in ("rho", "n"):
        at.selectbox(key="to_param").set_value(param).run()
        assert not at.exception
        x, y = _line(_curves_figure(at), MECHANISM_LABELS["gaussian"])
        assert np.all(np.isfinite(y)) and np.all(y > 0)
        if param == "n":  # the public-n sweep of a 3-curve data set: 10 .. 10 n_data persons
            np.testing.assert_array_equal(x, sweeps.default_values("n", 3))
            assert np.all(np.diff(y) < 0)


def test_pca_variance_ratio_section():
    pytest.importorskip("fdp_core.releases.pca")
    at = _page()
    charts = len(chart_specs(at))
    at.select_slider(key="to_pca_draws").set_value(20).run()
    at.toggle(key="to_pca").set_value(True).run()
    assert not at.exception
    assert len(chart_specs(at)) == charts + 1
    assert any("not differentially private" in c and "variance ratio" in c for c in _captions(at))


def test_private_selection_is_built_only_while_open_and_keeps_its_choices():
    at = _page()
    assert at.session_state["to_private_selection_open"] is False  # closed by default: nothing of it is sent
    assert "sel_commit" not in [b.key for b in at.button]
    assert not any(m.label == "P(PCV-optimal grid point)" for m in at.metric)
    _open(at, "to_private_selection_open")
    assert "sel_commit" in [b.key for b in at.button]
    assert any(m.label == "P(PCV-optimal grid point)" for m in at.metric)
    at.select_slider(key="sel_epsilon").set_value(0.5).run()
    at.radio(key="sel_bound").set_value("linear").run()
    assert not at.exception, at.exception
    # Closed: the selection's widgets are not drawn, their values still hold across reruns.
    at.session_state["to_private_selection_open"] = False
    at.run()
    assert "sel_epsilon" not in [w.key for w in at.select_slider]
    at.select_slider(key="g_epsilon").set_value(2.0).run()
    assert not at.exception, at.exception
    assert at.session_state["sel_epsilon"] == 0.5 and at.session_state["sel_bound"] == "linear"
    _open(at, "to_private_selection_open")
    assert at.select_slider(key="sel_epsilon").value == 0.5 and at.radio(key="sel_bound").value == "linear"
