"""AppTest: the Density page driven like a user (every input mode, both mechanisms and the
comparison, every control, bad input), with the numbers on screen checked against fdp_core."""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from fdp_core.data.loading import from_arrays, load_curves
from fdp_core.data.features import extract_features
from fdp_core.releases.kde import KdeSettings, plan_kde_release
from fdp_core.sensitivity import KDE_BOUNDS
from fdp_core.data.simulate import hall_mixture_points
from fdp_ui import density_defaults
from fdp_ui.state import EXAMPLE_FILE, Dataset
from chart_specs import chart_figures

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")


def hall_kde(points, box, **options):
    return plan_kde_release(points, KdeSettings(mechanism="gaussian", box=box, **options))


def iclp_kde(points, box, **options):
    return plan_kde_release(points, KdeSettings(mechanism="iclp", box=box, **options))


def _page(dataset: Dataset | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    if dataset is not None:
        at.session_state["dataset"] = dataset
    at.run()
    at.switch_page("pages/density.py")
    at.run()
    _ok(at)
    return at


def _ok(at) -> None:
    assert not at.exception, at.exception


def _charts(at) -> list[dict]:
    return chart_figures(at)


def _errors(at) -> str:
    return " | ".join(e.value for e in _problems(at))


def _problems(at) -> list:
    """Error boxes other than a red accuracy verdict (fdp_core/explore/verdict.py colours those)."""
    return [e for e in at.error if not e.value.startswith("Not useful at this epsilon")]


def _successes(at) -> list[str]:
    """The accuracy sentences (plain text: the box colour is the verdict's)."""
    return [s.value for s in at.markdown if "with 95% probability the sanitized density" in s.value]


def _table_with(at, column: str) -> pd.DataFrame:
    tables = [d.value for d in at.dataframe if column in d.value.columns]
    assert len(tables) == 1, [list(d.value.columns) for d in at.dataframe]
    return tables[0]


def _bold_numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"\*\*([-+0-9.e]+)\*\*", text)]


def _expected_error(text: str) -> float:
    return float(re.search(r"Expected squared L2 error, for formulas: ([-+0-9.e]+)\.", text).group(1))


def _set(at, kind: str, key: str, value):
    getattr(at, kind)(key=key).set_value(value)
    at.run()
    _ok(at)
    return at


def _curves_page(lo: float = 0.0, hi: float = 2.0, dataset: Dataset | None = None, grid: int = 64) -> AppTest:
    at = _page(dataset)
    _set(at, "radio", "density_source", "curves")
    at.session_state["density_grid_1d"] = grid  # the slider appears once the box is typed
    at.number_input(key="density_lo1").set_value(lo)
    at.number_input(key="density_hi1").set_value(hi)
    at.run()
    _ok(at)
    return at


def _metadata_dataset(n: int = 80) -> Dataset:
    rng = np.random.default_rng(3)
    t = np.linspace(0.0, 1.0, 21)
    meta = pd.DataFrame({"id": [f"s{i}" for i in range(n)], "age": rng.uniform(20.0, 60.0, n)})
    fd = from_arrays(t, 0.5 + 0.1 * rng.normal(size=(n, t.size)), name="meta", metadata=meta)
    return Dataset(fd, "upload: meta.csv", "upload")


# --------------------------------------------------------------------------- built-in examples

def test_hall_example_shows_draws_truth_accuracy_and_guarantee():
    at = _page()
    assert at.radio(key="density_source").value == "hall"
    # The literature's bandwidth and grid, not the oversmoothing default rule.
    assert at.number_input(key="density_bandwidth").value == 0.1
    assert at.slider(key="density_grid_1d").value == 1000
    (fig,) = _charts(at)
    names = [t.get("name", "") for t in fig["data"]]
    assert any("analyst view: do not publish" in n for n in names)
    assert any("true density" in n for n in names)
    assert any("10 draws" in n for n in names)
    (sentence,) = _successes(at)
    assert "95%" in sentence and "L2(T)" in sentence
    assert any("Guarantee" in i.value and "(epsilon, delta)-DP" in i.value for i in at.info)
    assert len(at.dataframe) >= 2  # sensitivity (both bounds) and sigma (both bounds x calibrations)
    assert not _problems(at)


def test_literature_settings_reproduce_the_library_release():
    at = _page()
    at.button(key="density_literature").click()
    at.run()
    _ok(at)
    assert at.session_state["g_epsilon"] == 1.0 and at.session_state["g_delta"] == 0.1
    assert at.radio(key="density_hall_bound").value == "paper"
    assert at.radio(key="density_calibration").value == "classical"
    points = hall_mixture_points(100, seed=0)
    release = hall_kde(points, ((0.0, 1.0),), epsilon=1.0, delta=0.1, bandwidth=0.1, grid_size=1000,
                           bound="paper", calibration="classical")
    assert any(f"sigma = {release.sigma:.4g}" in c.value for c in at.caption)
    (sentence,) = _successes(at)
    assert _expected_error(sentence) == pytest.approx(release.expected_sq_l2_error, rel=1e-3)
    l2, sup = _bold_numbers(sentence)
    assert l2 == pytest.approx(release.l2_error_radius(0.95), rel=1e-3)
    assert sup == pytest.approx(release.sup_error_radius(0.95), rel=1e-3)


def test_epsilon_change_rescales_the_radii_exactly():
    """The page reuses the Monte Carlo radii across epsilon changes: they must still equal
    fdp_core's radii of a freshly planned release at the new epsilon."""
    at = _page()
    _set(at, "slider", "density_grid_1d", 128)
    _set(at, "radio", "density_mechanism", "both")
    _set(at, "select_slider", "g_epsilon", 0.32)
    points = hall_mixture_points(100, seed=0)
    box = ((0.0, 1.0),)
    releases = [hall_kde(points, box, epsilon=0.32, delta=1e-5, bandwidth=0.1, grid_size=128),
                iclp_kde(points, box, epsilon=0.32, kernel="matern52", rho=0.1, eta=1.5, grid_size=128)]
    sentences = _successes(at)
    assert len(sentences) == 2
    for sentence, release in zip(sentences, releases):
        l2, sup = _bold_numbers(sentence)
        assert l2 == pytest.approx(release.l2_error_radius(0.95), rel=1e-3)
        assert sup == pytest.approx(release.sup_error_radius(0.95), rel=1e-3)
        assert _expected_error(sentence) == pytest.approx(release.expected_sq_l2_error, rel=1e-3)


def test_mixture_2d_heatmaps_surfaces_and_comparison():
    at = _page()
    _set(at, "radio", "density_source", "mixture2d")
    assert at.slider(key="density_grid_2d").value == 64
    _set(at, "slider", "density_grid_2d", 24)
    (fig,) = _charts(at)
    types = [t["type"] for t in fig["data"]]
    assert types == ["heatmap"] * 3  # analyst view + 2 sanitized draws
    _set(at, "slider", "density_panels", 3)
    _set(at, "radio", "density_view", "surfaces")
    (fig,) = _charts(at)
    assert [t["type"] for t in fig["data"]] == ["surface"] * 4
    _set(at, "radio", "density_mechanism", "both")
    figs = _charts(at)
    assert len(figs) == 2 and len(_successes(at)) == 2
    assert any("not the isotropic kernel" in c.value for c in at.caption)  # matern52 product kernel
    assert list(_table_with(at, "95% L2 radius")["mechanism"]) == ["Hall GP-KDE", "ICLP-KDE"]
    assert not _problems(at)


def test_example_size_and_seed_change_the_observations():
    at = _page()
    _set(at, "slider", "density_grid_1d", 64)
    _set(at, "number_input", "density_n_hall", 400)
    assert any("n = 400 observations" in c.value for c in at.caption)
    before = _successes(at)[0]
    _set(at, "number_input", "density_seed", 7)
    # Same public settings: the noise (hence the radii) is unchanged by new data of the same size.
    assert _bold_numbers(_successes(at)[0]) == _bold_numbers(before)


# --------------------------------------------------------------------------- curves features

def test_curves_need_a_typed_box():
    at = _page()
    _set(at, "radio", "density_source", "curves")
    assert at.number_input(key="density_lo1").value is None
    assert any("Type the public box" in i.value for i in at.info)
    assert not _charts(at)


@pytest.mark.parametrize("kind", ["value", "mean", "l2norm", "max"])
def test_every_functional_matches_the_library(kind):
    at = _curves_page()
    _set(at, "selectbox", "density_kind_1", kind)
    if kind == "mean":
        _set(at, "number_input", "density_u_1", 0.2)
        _set(at, "number_input", "density_v_1", 0.6)
    assert not _problems(at), _errors(at)
    spec = {"value": "value:0.25", "mean": "mean:0.2:0.6", "l2norm": "l2norm", "max": "max"}[kind]
    points, _ = extract_features(load_curves(EXAMPLE_FILE), spec)
    # The page's data-free rule (fdp_ui.density_defaults): Silverman's rule for values spread over the box.
    h = density_defaults.suggested_bandwidth(((0.0, 2.0),), len(points))
    assert h == pytest.approx(1.06 * 2.0 / 12 ** 0.5 * len(points) ** -0.2)
    release = hall_kde(points, ((0.0, 2.0),), epsilon=1.0, delta=1e-5, bandwidth=h, grid_size=64)
    (sentence,) = _successes(at)
    assert _expected_error(sentence) == pytest.approx(release.expected_sq_l2_error, rel=1e-3)
    assert any(f"h = {release.bandwidth:.4g}" in c.value for c in at.caption)  # default rule, shown
    assert len(_charts(at)) == 1
    assert any("release kde" in code.value and "--feature" in code.value for code in at.code)


def test_metadata_columns_numeric_non_numeric_and_missing():
    at = _page()
    _set(at, "radio", "density_source", "curves")
    _set(at, "selectbox", "density_kind_1", "column")
    # The built-in curves have only text metadata (id, group); the id is never the default feature.
    assert at.selectbox(key="density_col_1").value == "group"
    # A text column: a clear error, not a traceback.
    _set(at, "selectbox", "density_col_1", "group")
    assert "column 'group' is not numeric" in _errors(at)

    at = _page(_metadata_dataset())
    assert at.radio(key="density_source").value == "curves"  # uploads start from their own data
    _set(at, "selectbox", "density_kind_1", "column")
    assert at.selectbox(key="density_col_1").value == "age"  # the numeric column is offered first
    at.session_state["density_grid_1d"] = 64
    _set(at, "number_input", "density_lo1", 0.0)
    _set(at, "number_input", "density_hi1", 100.0)
    assert not _problems(at) and len(_charts(at)) == 1
    # A new data set without the column: the library's message names the missing column.
    fd = from_arrays(np.linspace(0, 1, 5), np.random.default_rng(1).normal(size=(6, 5)), name="plain")
    at.session_state["dataset"] = Dataset(fd, "upload: plain.csv", "upload")
    at.run()
    _ok(at)
    assert "the data has no column 'age'" in _errors(at)
    assert not _charts(at)


def test_real_data_numeric_metadata_column(shared_data):
    fd = load_curves(shared_data / "dti_cca.csv")
    at = _page(Dataset(fd, "upload: dti_cca.csv", "upload"))
    _set(at, "selectbox", "density_kind_1", "column")
    _set(at, "selectbox", "density_col_1", "visit")
    at.session_state["density_grid_1d"] = 64
    _set(at, "number_input", "density_lo1", 0.0)
    _set(at, "number_input", "density_hi1", 10.0)
    assert not _problems(at), _errors(at)
    # The Data page pre-selects 'subject' as the person column: one averaged observation per subject.
    persons = fd.metadata["subject"].nunique()
    assert any(f"n = {persons} observations" in c.value for c in at.caption)
    assert any(f"{fd.n} curves of {persons} persons" in c.value for c in at.caption)


def test_suggest_box_raises_the_not_dp_flag_until_unticked():
    at = _page()
    _set(at, "radio", "density_source", "curves")
    at.session_state["density_grid_1d"] = 64
    at.button(key="density_suggest_box").click()
    at.run()
    _ok(at)
    points, _ = extract_features(load_curves(EXAMPLE_FILE), "value:0.25")
    assert at.number_input(key="density_lo1").value == pytest.approx(points.min())
    assert at.number_input(key="density_hi1").value == pytest.approx(points.max())
    assert at.checkbox(key="density_box_flag").value
    assert "box read off the data" in _errors(at) and "NOT differentially private" in _errors(at)
    _set(at, "checkbox", "density_box_flag", False)
    assert not _problems(at)
    assert any(i.value.startswith("Guarantee") for i in at.info)


def test_curves_2d_features():
    at = _page()
    _set(at, "radio", "density_source", "curves")
    _set(at, "radio", "density_dim", "2-d")
    at.session_state["density_grid_2d"] = 16
    _set(at, "selectbox", "density_kind_2", "max")
    for key, value in (("density_lo1", 0.0), ("density_hi1", 2.0), ("density_lo2", 0.0), ("density_hi2", 3.0)):
        at.number_input(key=key).set_value(value)
    at.run()
    _ok(at)
    assert not _problems(at), _errors(at)
    (fig,) = _charts(at)
    assert fig["data"][0]["type"] == "heatmap"
    points, _ = extract_features(load_curves(EXAMPLE_FILE), "value:0.25,max")
    box = ((0.0, 2.0), (0.0, 3.0))
    release = hall_kde(points, box, epsilon=1.0, delta=1e-5, grid_size=16,
                           bandwidth=density_defaults.suggested_bandwidth(box, len(points)))
    assert _expected_error(_successes(at)[0]) == pytest.approx(release.expected_sq_l2_error, rel=1e-3)


# --------------------------------------------------------------------------- mechanisms and controls

def test_iclp_bounds_and_laplace_table():
    at = _page()
    _set(at, "slider", "density_grid_1d", 96)
    _set(at, "radio", "density_mechanism", "iclp")
    assert any("pure epsilon-DP" in i.value for i in at.info)
    points = hall_mixture_points(100, seed=0)
    expected = {}
    for bound in KDE_BOUNDS:
        release = iclp_kde(points, ((0.0, 1.0),), epsilon=1.0, kernel="matern52", rho=0.1, eta=1.5,
                               grid_size=96, bound=bound)
        expected[bound] = release.expected_sq_l2_error
    assert _expected_error(_successes(at)[0]) == pytest.approx(expected["exact"], rel=1e-3)
    _set(at, "radio", "density_iclp_bound", "paper")
    assert _expected_error(_successes(at)[0]) == pytest.approx(expected["paper"], rel=1e-3)
    assert expected["paper"] > expected["exact"]
    assert len(_table_with(at, "largest b_l")) == 2


def test_hall_bound_calibration_bandwidth_and_band():
    at = _page()
    _set(at, "slider", "density_grid_1d", 64)
    _set(at, "number_input", "density_bandwidth", 0.5)  # wide: the exact bound is visibly below sqrt 2
    points = hall_mixture_points(100, seed=0)
    for bound in KDE_BOUNDS:
        _set(at, "radio", "density_hall_bound", bound)
        for calibration in ("analytic", "classical"):
            _set(at, "radio", "density_calibration", calibration)
            release = hall_kde(points, ((0.0, 1.0),), epsilon=1.0, delta=1e-5, bandwidth=0.5, grid_size=64,
                                   bound=bound, calibration=calibration)
            assert any(f"sigma = {release.sigma:.4g}" in c.value for c in at.caption), (bound, calibration)
    _set(at, "radio", "density_style", "band")
    (fig,) = _charts(at)
    assert any("5-95%" in t.get("name", "") for t in fig["data"])
    _set(at, "radio", "density_style", "draws")
    _set(at, "slider", "density_draws", 3)
    (fig,) = _charts(at)
    assert any("3 draws" in t.get("name", "") for t in fig["data"])


def test_comparison_1d_shares_the_vertical_scale():
    at = _page()
    _set(at, "slider", "density_grid_1d", 64)
    _set(at, "radio", "density_mechanism", "both")
    figs = _charts(at)
    assert len(figs) == 2
    assert figs[0]["layout"]["yaxis"]["range"] == figs[1]["layout"]["yaxis"]["range"]
    assert list(_table_with(at, "95% sup radius")["mechanism"]) == ["Hall GP-KDE", "ICLP-KDE"]


def test_silverman_bandwidth_marks_the_page_not_dp():
    at = _page()
    _set(at, "slider", "density_grid_1d", 64)
    _set(at, "checkbox", "density_h_silverman", True)
    assert "Silverman" in _errors(at) and "NOT differentially private" in _errors(at)
    assert len(_charts(at)) == 1
    _set(at, "checkbox", "density_h_silverman", False)
    assert not _problems(at)


# --------------------------------------------------------------------------- bad input

def test_all_points_outside_the_box():
    at = _curves_page(lo=5.0, hi=6.0)
    assert "lie outside the box [5, 6]" in _errors(at)
    assert not _charts(at)


def test_box_lo_not_below_hi():
    at = _curves_page(lo=2.0, hi=1.0)
    assert "need lo < hi" in _errors(at)
    assert not _charts(at)


@pytest.mark.parametrize("bandwidth", [0.0, -0.2])
def test_bandwidth_not_positive(bandwidth):
    at = _page()
    _set(at, "slider", "density_grid_1d", 64)
    _set(at, "number_input", "density_bandwidth", bandwidth)
    assert "bandwidth must be > 0" in _errors(at)
    assert not _charts(at)


def test_eta_not_above_one_for_iclp():
    at = _page()
    _set(at, "slider", "density_grid_1d", 64)
    _set(at, "slider", "g_eta", 1.0)
    _set(at, "radio", "density_mechanism", "iclp")
    assert "eta must be > 1" in _errors(at) and "Raise eta in the sidebar" in _errors(at)
    assert not _charts(at)
    _set(at, "radio", "density_mechanism", "both")  # Hall does not use eta: still shown
    assert "eta must be > 1" in _errors(at)
    assert len(_charts(at)) == 1


def test_classical_calibration_refused_above_epsilon_one():
    at = _page()
    _set(at, "slider", "density_grid_1d", 64)
    _set(at, "select_slider", "g_epsilon", 2.0)
    _set(at, "radio", "density_calibration", "classical")
    assert "classical calibration is only valid for epsilon <= 1" in _errors(at)
    assert not _charts(at)
