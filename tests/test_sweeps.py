"""Trade-off sweeps, Monte Carlo bands, accuracy -> epsilon, the tradeoff CLI and the PCA
variance ratio (METHODS.md 2, 3, 5, 7).

Every sweep is checked against something computed another way: a full plan_mean_release
at the swept value, Monte Carlo draws of the mechanism's own sampler, or the released
mechanism itself.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace

import numpy as np
import pytest

from fdp_core.explore import sweeps
from fdp_core.explore.accuracy import ACCURACY_METRICS, accuracy_metric, sq_l2_distance
from fdp_core.data.loading import FunctionalData
from fdp_core.errors import FdpError, ParameterError
from fdp_core.releases.mean import MEAN_MECHANISMS, MeanSettings, plan_mean_release
from fdp_core.data.simulate import SIMULATIONS, kl_design

SETTINGS = MeanSettings(kernel="matern52", rho=0.2, eta=1.5, phi=1e-3, epsilon=1.0, delta=1e-5, tau=0.3, psi=1e-3,
                        lo=-1.0, hi=1.0)
SWEEPS = {
    "epsilon": [0.05, 0.3, 1.0, 2.5, 8.0],
    "delta": [1e-9, 1e-5, 1e-2, 0.2],
    "phi": [1e-7, 1e-4, 1e-2, 1.0],
    "rho": [0.01, 0.05, 0.3, 1.5],
    "eta": [1.0, 1.3, 2.0, 3.5],
}


@pytest.fixture(scope="module")
def fd() -> FunctionalData:
    return kl_design(n=60, m=61, seed=3)


@pytest.fixture(scope="module")
def truth(fd) -> np.ndarray:
    return SIMULATIONS["kl"].true_mean(fd.grid_points)


def _direct(fd, mechanism, param, value, settings=SETTINGS) -> float:
    try:
        s = sweeps.with_parameter(sweeps.settings_for(settings, mechanism), param, value)
        return plan_mean_release(fd, s).expected_sq_l2_error
    except FdpError:
        return math.nan


@pytest.mark.parametrize("param", list(SWEEPS))
def test_sweep_equals_a_full_plan_at_every_value(fd, param):
    """Scaling laws, vectorised closed forms and flat curves all reproduce plan_mean_release."""
    curves = sweeps.tradeoff_curves(fd, SETTINGS, param, SWEEPS[param])
    assert [c.mechanism for c in curves] == list(MEAN_MECHANISMS)
    for curve in curves:
        direct = np.array([_direct(fd, curve.mechanism, param, v) for v in SWEEPS[param]])
        np.testing.assert_array_equal(np.isnan(curve.expected_sq_l2_error), np.isnan(direct),
                                      err_msg=f"{curve.mechanism}/{param}: validity differs")
        np.testing.assert_allclose(curve.expected_sq_l2_error, direct, rtol=1e-9,
                                   err_msg=f"{curve.mechanism}/{param} ({curve.method})")
        assert curve.current_error == pytest.approx(_direct(fd, curve.mechanism, "epsilon", SETTINGS.epsilon),
                                                    rel=1e-12, nan_ok=True) or curve.current_error is None


@pytest.mark.parametrize("param", ["phi", "rho", "eta"])
def test_ignored_parameters_read_off_the_registry_are_ignored(fd, param):
    """A mechanism said to ignore a parameter releases the same at two of its values; no other does."""
    low, high = SWEEPS[param][1:3]
    for mechanism in MEAN_MECHANISMS:
        s = sweeps.settings_for(SETTINGS, mechanism)
        a = plan_mean_release(fd, sweeps.with_parameter(s, param, low))
        b = plan_mean_release(fd, sweeps.with_parameter(s, param, high))
        same = (a.noise_scales.shape == b.noise_scales.shape and np.allclose(a.noise_scales, b.noise_scales)
                and np.allclose(a.estimate, b.estimate))
        assert sweeps.ignores(mechanism, param) == same, (mechanism, param)


@pytest.mark.parametrize("calibration,bound", [("classical", "paper"), ("analytic", "paper"), ("classical", "tight")])
def test_sweep_follows_bound_and_calibration(fd, calibration, bound):
    settings = replace(SETTINGS, calibration=calibration, bound=bound)
    for param in ("epsilon", "phi", "eta"):
        for curve in sweeps.tradeoff_curves(fd, settings, param, SWEEPS[param]):
            direct = [_direct(fd, curve.mechanism, param, v, settings) for v in SWEEPS[param]]
            np.testing.assert_allclose(curve.expected_sq_l2_error, direct, rtol=1e-9)


def test_classical_calibration_is_refused_above_epsilon_one_per_value(fd):
    settings = replace(SETTINGS, calibration="classical", epsilon=2.5)
    (curve,) = sweeps.tradeoff_curves(fd, settings, "epsilon", SWEEPS["epsilon"], mechanisms=("gaussian",))
    assert curve.ok
    np.testing.assert_array_equal(np.isnan(curve.expected_sq_l2_error), [False, False, False, True, True])
    assert any("epsilon <= 1" in note for note in curve.notes)
    assert curve.current_error is None  # the current setting itself is invalid


def test_n_sweep_scales_as_inverse_square(fd):
    """Sensitivity is proportional to 1/n: a plan on n resampled curves has the scaled error."""
    values = [10, 30, 60, 240]
    rng = np.random.default_rng(0)
    for curve in sweeps.tradeoff_curves(fd, SETTINGS, "n", values):
        for v, err in zip(values, curve.expected_sq_l2_error):
            rows = fd.data_matrix[rng.choice(fd.n, v, replace=True)]
            direct = _direct(FunctionalData(fd.grid_points, rows), curve.mechanism, "epsilon", SETTINGS.epsilon)
            assert err == pytest.approx(direct, rel=1e-9), (curve.mechanism, v)


def test_n_sweep_vs_truth_subsamples_and_stops_at_the_data(fd, truth):
    values = [20, 60, 120]
    (curve,) = sweeps.tradeoff_curves(fd, SETTINGS, "n", values, mechanisms=("gaussian",), truth=truth)
    plan = plan_mean_release(fd, SETTINGS)
    bias_full = float(((plan.estimate - truth) ** 2) @ fd.weights)
    assert curve.bias_sq[1] == pytest.approx(bias_full, rel=1e-12)
    assert math.isnan(curve.bias_sq[2])  # no data beyond n: not extrapolated
    assert curve.bias_sq[0] > 0
    np.testing.assert_allclose(curve.error_vs_truth[:2], curve.bias_sq[:2] + curve.expected_sq_l2_error[:2])


@pytest.mark.parametrize("param", ["epsilon", "phi", "rho", "eta", "n"])
def test_monte_carlo_bands_match_independent_draws(fd, param):
    """The common-random-number bands have the law of fresh draws of the plan at each value."""
    values = [30, 60, 120] if param == "n" else SWEEPS[param][1:3]
    curves = sweeps.tradeoff_curves(fd, SETTINGS, param, values, mc_draws=6000, quantile_levels=(0.25, 0.5, 0.75))
    for curve in curves:
        for i, v in enumerate(values):
            if param == "n":
                if v > fd.n:
                    continue
                data = FunctionalData(fd.grid_points, fd.data_matrix[:v])
                s = sweeps.settings_for(SETTINGS, curve.mechanism)
            else:
                data, s = fd, sweeps.with_parameter(sweeps.settings_for(SETTINGS, curve.mechanism), param, v)
            try:
                plan = plan_mean_release(data, s)
            except FdpError:
                assert np.all(np.isnan(curve.mc_quantiles[:, i]))
                continue
            sq = sq_l2_distance(plan.sample(np.random.default_rng(5), 6000), plan.estimate, fd.weights)
            expected = np.quantile(sq, [0.25, 0.5, 0.75])
            # Quantiles of 6000 draws: a few percent; a wrong scale or noise family is off by far more.
            np.testing.assert_allclose(curve.mc_quantiles[:, i], expected, rtol=0.08,
                                       err_msg=f"{curve.mechanism}/{param}={v} ({curve.method})")


def test_error_vs_truth_is_bias_plus_noise_variance(fd, truth):
    """Against Monte Carlo: mean of ||release - mu||^2 over draws of the mechanism."""
    curves = sweeps.tradeoff_curves(fd, SETTINGS, "phi", [1e-5, 1e-2], truth=truth)
    for curve in curves:
        for i, v in enumerate(curve.values):
            s = sweeps.with_parameter(sweeps.settings_for(SETTINGS, curve.mechanism), "phi", v)
            plan = plan_mean_release(fd, s)
            sq = sq_l2_distance(plan.sample(np.random.default_rng(2), 20_000), truth, fd.weights)
            se = sq.std(ddof=1) / math.sqrt(sq.size)
            assert abs(sq.mean() - curve.error_vs_truth[i]) < 4 * se, (curve.mechanism, v)
        assert curve.current_error_vs_truth is not None


def test_bad_states_come_back_per_mechanism_not_raised(fd):
    settings = replace(SETTINGS, lo=None, hi=None)
    curves = sweeps.tradeoff_curves(fd, settings, "epsilon", SWEEPS["epsilon"])
    by_name = {c.mechanism: c for c in curves}
    if "bernstein" in by_name:
        assert not by_name["bernstein"].ok and "lo" in by_name["bernstein"].invalid
        assert np.all(np.isnan(by_name["bernstein"].expected_sq_l2_error))
    assert by_name["gaussian"].ok
    if "iclp-qr" in by_name:
        (qr,) = sweeps.tradeoff_curves(fd, replace(SETTINGS, eta=1.0), "phi", SWEEPS["phi"], mechanisms=("iclp-qr",))
        assert not qr.ok and "eta > 1" in qr.invalid
    with pytest.raises(ParameterError):
        sweeps.tradeoff_curves(fd, SETTINGS, "kappa", [1.0])
    with pytest.raises(ParameterError):
        sweeps.tradeoff_curves(fd, SETTINGS, "n", [2.5])


def test_works_with_the_gaussian_mechanism_alone(fd, monkeypatch):
    monkeypatch.setattr(sweeps, "MEAN_MECHANISMS", ("gaussian",))
    for param in ("epsilon", "phi", "rho", "n"):
        (curve,) = sweeps.tradeoff_curves(fd, SETTINGS, param, SWEEPS.get(param, [10, 40]), mc_draws=200)
        assert curve.mechanism == "gaussian" and np.all(np.isfinite(curve.expected_sq_l2_error))
    (res,) = sweeps.epsilon_for_accuracy(fd, SETTINGS, "expected_sq_l2", 1e-3)
    assert res.mechanism == "gaussian"


# --------------------------------------------------------------------------- accuracy -> epsilon

@pytest.mark.parametrize("metric", ACCURACY_METRICS)
def test_epsilon_for_accuracy_meets_target_and_one_percent_less_does_not(fd, metric):
    results = sweeps.epsilon_for_accuracy(fd, SETTINGS, metric, _target(fd, metric))
    assert [r.mechanism for r in results] == list(MEAN_MECHANISMS)
    for r in results:
        assert r.epsilon is not None and 1e-3 < r.epsilon < 1e3, r
        s = sweeps.settings_for(SETTINGS, r.mechanism)
        met = accuracy_metric(plan_mean_release(fd, replace(s, epsilon=r.epsilon)), metric)
        missed = accuracy_metric(plan_mean_release(fd, replace(s, epsilon=0.99 * r.epsilon)), metric)
        assert met <= r.target < missed, (r.mechanism, met, r.target, missed)


def _target(fd, metric):
    # A target every mechanism reaches inside [1e-3, 1e3]: the worst mechanism's value at epsilon = 2.
    values = [accuracy_metric(plan_mean_release(fd, replace(sweeps.settings_for(SETTINGS, m), epsilon=2.0)), metric)
              for m in MEAN_MECHANISMS]
    return max(values)


def test_epsilon_for_accuracy_edges(fd):
    (tiny,) = sweeps.epsilon_for_accuracy(fd, SETTINGS, "expected_sq_l2", 1e-30, mechanisms=("gaussian",))
    assert tiny.epsilon is None and "not reachable" in tiny.message
    (huge,) = sweeps.epsilon_for_accuracy(fd, SETTINGS, "expected_sq_l2", 1e9, mechanisms=("gaussian",))
    assert huge.epsilon == 1e-3
    classical = replace(SETTINGS, calibration="classical")
    (cl,) = sweeps.epsilon_for_accuracy(fd, classical, "expected_sq_l2", _target(fd, "expected_sq_l2") / 100,
                                   mechanisms=("gaussian",))
    assert cl.epsilon is None and "epsilon <= 1" in cl.message
    with pytest.raises(ParameterError):
        sweeps.epsilon_for_accuracy(fd, SETTINGS, "expected_sq_l2", -1.0)


# --------------------------------------------------------------------------- CLI

EXAMPLE = __import__("pathlib").Path(__file__).resolve().parents[1] / "data" / "example_curves.csv"


def _cli(tmp_path, *extra):
    from fdp_core.cli import main

    args = ["tradeoff", "--data", str(EXAMPLE), "--tau", "1", "--lo", "0", "--hi", "2", "--seed", "1",
            "--mc-draws", "300", "--out", str(tmp_path / "out"), *extra]
    try:
        return main(args)
    except SystemExit as exc:  # argparse's own errors
        return exc.code


def test_cli_round_trip_csv_and_offline_html(tmp_path):
    import pandas as pd

    assert _cli(tmp_path, "--param", "epsilon", "--values", "0.1,0.5", "2", "--mechanism", "all") == 0
    table = pd.read_csv(tmp_path / "out" / "tradeoff.csv")
    assert list(table.columns) == ["param", "value", "mechanism", "expected_sq_l2_error", "mc_q10", "mc_q90", "note"]
    assert len(table) == 3 * len(MEAN_MECHANISMS) and set(table["mechanism"]) == set(MEAN_MECHANISMS)
    assert (table["param"] == "epsilon").all() and sorted(set(table["value"])) == [0.1, 0.5, 2.0]
    assert (table["mc_q10"] < table["expected_sq_l2_error"]).all()
    html = (tmp_path / "out" / "tradeoff.html").read_text()
    assert html.lstrip().lower().startswith("<!doctype html>") and "</html>" in html
    assert "plotly" in html.lower() and "Plotly.newPlot" in html
    assert not re.search(r"<script[^>]*\bsrc=", html)  # plotly.js inlined: the report works offline
    # No data value leaves: none of the example's cells appears in the report.
    # (Search the report's own text and figure, not the inlined plotly.js library.)
    own = html[:html.index("<script")] + html[html.rindex("Plotly.newPlot"):]
    cells = {c for line in EXAMPLE.read_text().splitlines()[1:] for c in line.split(",")[2:] if len(c) >= 6}
    assert cells and not [c for c in cells if c in own]


def test_cli_n_sweep_several_mechanisms_and_bad_input(tmp_path, capsys):
    import pandas as pd

    mechs = [m for m in ("gaussian", "frl") if m in MEAN_MECHANISMS]
    assert _cli(tmp_path, "--param", "n", "--values", "10", "60", "600", "--mechanism", *mechs) == 0
    table = pd.read_csv(tmp_path / "out" / "tradeoff.csv")
    assert list(table["mechanism"].unique()) == mechs
    g = table[table["mechanism"] == "gaussian"].set_index("value")["expected_sq_l2_error"]
    assert g[10] == pytest.approx(g[60] * 36, rel=1e-9) and g[600] == pytest.approx(g[60] / 100, rel=1e-9)
    assert _cli(tmp_path, "--param", "epsilon", "--values", "0.1,abc") == 2
    assert "'abc' is not a number" in capsys.readouterr().err
    assert _cli(tmp_path, "--param", "phi", "--values", "1e-3", "--mechanism", "gaussian", "--quantiles", "0.9",
                "0.9") == 2


# --------------------------------------------------------------------------- PCA variance ratio

def test_pca_variance_ratio_curves_match_private_pca_draws(fd):
    pca = pytest.importorskip("fdp_core.releases.pca")
    settings = pca.PcaSettings(kernel="matern52", rho=0.2, tau=0.3, gamma=1.0)
    curves = sweeps.pca_variance_ratio_curves(fd, settings, [0.3, 30.0], ks=(1, 2), draws=300, seed=4)
    for curve in curves:
        assert curve.ok and curve.sampler == ("exact" if curve.k == 1 else "deflation")
        assert np.all((curve.quantiles >= 0) & (curve.quantiles <= 1 + 1e-12))
        assert curve.mean[1] > curve.mean[0]  # more budget, closer to the non-private components
        # Independent check: the released mechanism itself, one private_pca call per draw.
        s = replace(settings, k=curve.k, epsilon=0.3)
        ratios = np.array([pca.private_pca(fd, s, seed).variance_ratio for seed in range(300)])
        se = math.sqrt(2 * ratios.var(ddof=1) / ratios.size)  # difference of two means of the same law
        assert abs(curve.mean[0] - ratios.mean()) < 4 * se, (curve.k, curve.mean[0], ratios.mean(), se)


def test_pca_variance_ratio_bad_k_is_reported_not_raised(fd):
    pca = pytest.importorskip("fdp_core.releases.pca")
    curves = sweeps.pca_variance_ratio_curves(fd, pca.PcaSettings(tau=0.3, p=3), [1.0], ks=(1, 3), draws=10)
    assert curves[0].ok and not curves[1].ok and "p > k" in curves[1].invalid
    with pytest.raises(ParameterError):
        sweeps.pca_variance_ratio_curves(fd, pca.PcaSettings(tau=0.3), [0.0])
