"""AppTest: the Data and Mean pages driven like a user (upload, simulation, every control)."""

import base64
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from test_data import BAD_FILES
from fdp_ui import intake
from chart_specs import chart_specs

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")


def _app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception
    return at


def _metric(at, label):
    return next(m.value for m in at.metric if m.label == label)


def _upload(at, name, raw):
    at.radio(key="data_source").set_value("upload a file").run()
    at.file_uploader(key="data_upload").set_value((name, raw, "text/csv")).run()
    assert not at.exception


def test_data_page_starts_on_the_built_in_example():
    at = _app()
    assert _metric(at, "curves n") == "60" and _metric(at, "grid points m") == "27"
    assert _metric(at, "grid") == "uneven"
    # curves + norms histogram, as SVG pictures: the first page waits for no chart library's script
    pictures = [img.proto.imgs[0].url for img in at.get("image")]
    assert len(pictures) == 2 and all(url.startswith("data:image/svg+xml;base64,") for url in pictures)
    assert not chart_specs(at) and not at.get("vega_lite_chart")
    curves_svg = base64.b64decode(pictures[0].split(",", 1)[1]).decode()
    assert ">t</text>" in curves_svg and ">value</text>" in curves_svg and "60 curves" in curves_svg
    assert not at.error


def test_upload_wide_long_and_missing_files():
    at = _app()
    _upload(at, "long.csv", (ROOT / "data" / "example_long.csv").read_bytes())
    assert _metric(at, "curves n") == "20"
    _upload(at, "missing.csv", (ROOT / "data" / "example_missing.csv").read_bytes())
    assert _metric(at, "curves n") == "27"
    assert "3 curve(s) with missing values dropped" in at.info[0].value
    at.radio(key="data_missing").set_value("interpolate").run()
    assert _metric(at, "curves n") == "29"
    assert "interior gaps filled" in at.info[0].value


@pytest.mark.parametrize("name,raw,fragment", BAD_FILES[:14], ids=[b[0] for b in BAD_FILES[:14]])
def test_bad_upload_shows_the_message_and_keeps_the_previous_data(name, raw, fragment):
    at = _app()
    _upload(at, "bad.csv", raw)
    if intake.diagnose(raw).kind in ("long", "transposed"):  # the mapping panel may load it: an instruction
        assert not at.error and any("bad.csv is not loaded yet" in i.value for i in at.info)
    else:
        assert any(fragment in e.value for e in at.error), [e.value for e in at.error]
        assert "previous data set is kept" in at.error[0].value
    assert _metric(at, "curves n") == "60"  # nothing lost


def test_simulation_and_its_parameters():
    at = _app()
    at.radio(key="data_source").set_value("simulate").run()
    assert _metric(at, "curves n") == "25" and _metric(at, "grid points m") == "100"
    at.number_input(key="sim_kl_n").set_value(40).run()
    assert _metric(at, "curves n") == "40"
    at.number_input(key="sim_kl_seed").set_value(7).run()
    assert not at.exception and _metric(at, "curves n") == "40"
    at.radio(key="data_source").set_value("built-in example").run()
    assert _metric(at, "curves n") == "60"


def test_tau_controls_clipping_count_and_data_dependent_flag():
    at = _app()
    at.number_input(key="g_tau").set_value(0.7).run()
    captions = [c.value for c in at.sidebar.caption] + [w.value for w in at.sidebar.warning]
    assert any("tau clips" in c for c in captions)
    at.checkbox(key="g_tau_from_data").check().run()
    assert any("NOT differentially private" in e.value for e in at.sidebar.error)


def _mean_page(at=None):
    at = at or _app()
    at.switch_page("pages/mean.py")
    at.run()
    assert not at.exception
    return at


def _sentence(at):
    # Plain text, not a green box: the colour is the verdict's (fdp_core/explore/verdict.py).
    return next(s.value for s in at.markdown if "With 95% probability" in s.value)


def test_mean_page_shows_release_analyst_view_and_accuracy():
    at = _mean_page()
    assert len(chart_specs(at)) >= 1
    assert "within **" in _sentence(at)
    assert not at.dataframe  # the tables are built only while their expander is open
    at.session_state["mean_tables_open"] = True
    at.run()
    assert len(at.dataframe) >= 2  # sensitivities and the sigma table


@pytest.mark.parametrize("key,value", [("g_epsilon", 0.1), ("g_epsilon", 10.0), ("g_delta", 0.1),
                                       ("g_kernel", "gaussian"), ("g_kernel", "exponential"),
                                       ("g_kernel", "matern"), ("g_rho", 0.5), ("g_eta", 2.0),
                                       ("g_log_phi", -1.0), ("g_seed_mode", "fresh randomness")])
def test_every_sidebar_control_updates_the_mean_page(key, value):
    at = _mean_page()
    before = _sentence(at)
    for accessor in (at.select_slider, at.selectbox, at.number_input, at.slider, at.radio):
        try:
            accessor(key=key).set_value(value)
            break
        except KeyError:
            continue
    at.run()
    # epsilon = 10 draws the sidebar's strong caution (an error box) on purpose; nothing else may.
    assert not at.exception and not [e.value for e in at.error if "very weak privacy" not in e.value]
    if key != "g_seed_mode":
        assert _sentence(at) != before


def test_mean_page_controls_bound_calibration_style_and_draws():
    at = _mean_page()
    at.radio(key="mean_bound").set_value("paper").run()
    at.radio(key="mean_calibration").set_value("classical").run()
    assert not at.error
    at.radio(key="mean_style").set_value("band").run()
    at.slider(key="mean_draws").set_value(50).run()
    assert not at.exception


def test_classical_calibration_with_large_epsilon_is_refused_in_the_app():
    at = _app()
    at.select_slider(key="g_epsilon").set_value(2.0).run()
    at = _mean_page(at)
    at.radio(key="mean_calibration").set_value("classical").run()
    assert any("only valid for epsilon <= 1" in e.value for e in at.error)
    assert not at.exception


def test_settings_survive_page_switches():
    at = _app()
    at.select_slider(key="g_epsilon").set_value(0.5).run()
    at = _mean_page(at)
    assert at.select_slider(key="g_epsilon").value == 0.5
    at.switch_page("pages/data.py").run()
    assert at.select_slider(key="g_epsilon").value == 0.5
