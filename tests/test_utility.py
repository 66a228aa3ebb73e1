"""Trade-off sweeps, Monte Carlo bands, accuracy -> epsilon and PCV (METHODS.md 2, 3, 6, 7).

Every closed form is checked against something computed another way: a full
plan_mean_release at the swept value, Monte Carlo draws of the mechanism's own sampler,
a single Laplace's exact quantile, or a brute-force Monte Carlo cross-validation.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace

import numpy as np
import pytest

from fdp_core import utility as U
from fdp_core.data import FunctionalData
from fdp_core.errors import FdpError, ParameterError
from fdp_core.mean import MEAN_MECHANISMS, MeanSettings, plan_mean_release
from fdp_core.simulate import SIMULATIONS, kl_design
from fdp_core.tuning import PCV_FLAG, pcv_folds, pcv_grid

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
        s = U.with_parameter(U.settings_for(settings, mechanism), param, value)
        return plan_mean_release(fd, s).expected_sq_l2_error
    except FdpError:
        return math.nan


@pytest.mark.parametrize("param", list(SWEEPS))
def test_sweep_equals_a_full_plan_at_every_value(fd, param):
    """Scaling laws, vectorised closed forms and flat curves all reproduce plan_mean_release."""
    curves = U.tradeoff_curves(fd, SETTINGS, param, SWEEPS[param])
    assert [c.mechanism for c in curves] == list(MEAN_MECHANISMS)
    for curve in curves:
        direct = np.array([_direct(fd, curve.mechanism, param, v) for v in SWEEPS[param]])
        np.testing.assert_array_equal(np.isnan(curve.expected_sq_l2_error), np.isnan(direct),
                                      err_msg=f"{curve.mechanism}/{param}: validity differs")
        np.testing.assert_allclose(curve.expected_sq_l2_error, direct, rtol=1e-9,
                                   err_msg=f"{curve.mechanism}/{param} ({curve.method})")
        assert curve.current_error == pytest.approx(_direct(fd, curve.mechanism, "epsilon", SETTINGS.epsilon),
                                                    rel=1e-12, nan_ok=True) or curve.current_error is None


@pytest.mark.parametrize("calibration,bound", [("classical", "paper"), ("analytic", "paper"), ("classical", "tight")])
def test_sweep_follows_bound_and_calibration(fd, calibration, bound):
    settings = replace(SETTINGS, calibration=calibration, bound=bound)
    for param in ("epsilon", "phi", "eta"):
        for curve in U.tradeoff_curves(fd, settings, param, SWEEPS[param]):
            direct = [_direct(fd, curve.mechanism, param, v, settings) for v in SWEEPS[param]]
            np.testing.assert_allclose(curve.expected_sq_l2_error, direct, rtol=1e-9)


def test_classical_calibration_is_refused_above_epsilon_one_per_value(fd):
    settings = replace(SETTINGS, calibration="classical", epsilon=2.5)
    (curve,) = U.tradeoff_curves(fd, settings, "epsilon", SWEEPS["epsilon"], mechanisms=("gaussian",))
    assert curve.ok
    np.testing.assert_array_equal(np.isnan(curve.expected_sq_l2_error), [False, False, False, True, True])
    assert any("epsilon <= 1" in note for note in curve.notes)
    assert curve.current_error is None  # the current setting itself is invalid


def test_n_sweep_scales_as_inverse_square(fd):
    """Sensitivity is proportional to 1/n: a plan on n resampled curves has the scaled error."""
    values = [10, 30, 60, 240]
    rng = np.random.default_rng(0)
    for curve in U.tradeoff_curves(fd, SETTINGS, "n", values):
        for v, err in zip(values, curve.expected_sq_l2_error):
            rows = fd.data_matrix[rng.choice(fd.n, v, replace=True)]
            direct = _direct(FunctionalData(fd.grid_points, rows), curve.mechanism, "epsilon", SETTINGS.epsilon)
            assert err == pytest.approx(direct, rel=1e-9), (curve.mechanism, v)


def test_n_sweep_vs_truth_subsamples_and_stops_at_the_data(fd, truth):
    values = [20, 60, 120]
    (curve,) = U.tradeoff_curves(fd, SETTINGS, "n", values, mechanisms=("gaussian",), truth=truth)
    plan = plan_mean_release(fd, SETTINGS)
    bias_full = float(((plan.estimate - truth) ** 2) @ fd.weights)
    assert curve.bias_sq[1] == pytest.approx(bias_full, rel=1e-12)
    assert math.isnan(curve.bias_sq[2])  # no data beyond n: not extrapolated
    assert curve.bias_sq[0] > 0
    np.testing.assert_allclose(curve.error_vs_truth[:2], curve.bias_sq[:2] + curve.expected_sq_l2_error[:2])


@pytest.mark.parametrize("mechanism", MEAN_MECHANISMS)
def test_closed_form_agrees_with_monte_carlo(mechanism):
    """E||release - estimate||^2 against the mean of sanitized draws (within 4 standard errors).

    A fine grid keeps the quadrature of the Bernstein basis (whose closed form integrates
    exactly over [0, 1]) well inside the Monte Carlo error.
    """
    fine = kl_design(n=60, m=201, seed=3)
    plan = plan_mean_release(fine, U.settings_for(SETTINGS, mechanism))
    draws = plan.sample(np.random.default_rng(11), 30_000)
    sq = U.sq_l2_distance(draws, plan.estimate, fine.weights)
    se = sq.std(ddof=1) / math.sqrt(sq.size)
    assert abs(sq.mean() - plan.expected_sq_l2_error) < 4 * se, (sq.mean(), plan.expected_sq_l2_error, se)


@pytest.mark.parametrize("param", ["epsilon", "phi", "rho", "eta", "n"])
def test_monte_carlo_bands_match_independent_draws(fd, param):
    """The common-random-number bands have the law of fresh draws of the plan at each value."""
    values = [30, 60, 120] if param == "n" else SWEEPS[param][1:3]
    curves = U.tradeoff_curves(fd, SETTINGS, param, values, mc_draws=6000, quantile_levels=(0.25, 0.5, 0.75))
    for curve in curves:
        for i, v in enumerate(values):
            if param == "n":
                if v > fd.n:
                    continue
                data = FunctionalData(fd.grid_points, fd.data_matrix[:v])
                s = U.settings_for(SETTINGS, curve.mechanism)
            else:
                data, s = fd, U.with_parameter(U.settings_for(SETTINGS, curve.mechanism), param, v)
            try:
                plan = plan_mean_release(data, s)
            except FdpError:
                assert np.all(np.isnan(curve.mc_quantiles[:, i]))
                continue
            sq = U.sq_l2_distance(plan.sample(np.random.default_rng(5), 6000), plan.estimate, fd.weights)
            expected = np.quantile(sq, [0.25, 0.5, 0.75])
            # Quantiles of 6000 draws: a few percent; a wrong scale or noise family is off by far more.
            np.testing.assert_allclose(curve.mc_quantiles[:, i], expected, rtol=0.08,
                                       err_msg=f"{curve.mechanism}/{param}={v} ({curve.method})")


def test_error_vs_truth_is_bias_plus_noise_variance(fd, truth):
    """Against Monte Carlo: mean of ||release - mu||^2 over draws of the mechanism."""
    curves = U.tradeoff_curves(fd, SETTINGS, "phi", [1e-5, 1e-2], truth=truth)
    for curve in curves:
        for i, v in enumerate(curve.values):
            s = U.with_parameter(U.settings_for(SETTINGS, curve.mechanism), "phi", v)
            plan = plan_mean_release(fd, s)
            sq = U.sq_l2_distance(plan.sample(np.random.default_rng(2), 20_000), truth, fd.weights)
            se = sq.std(ddof=1) / math.sqrt(sq.size)
            assert abs(sq.mean() - curve.error_vs_truth[i]) < 4 * se, (curve.mechanism, v)
        assert curve.current_error_vs_truth is not None


def test_bad_states_come_back_per_mechanism_not_raised(fd):
    settings = replace(SETTINGS, lo=None, hi=None)
    curves = U.tradeoff_curves(fd, settings, "epsilon", SWEEPS["epsilon"])
    by_name = {c.mechanism: c for c in curves}
    if "bernstein" in by_name:
        assert not by_name["bernstein"].ok and "lo" in by_name["bernstein"].invalid
        assert np.all(np.isnan(by_name["bernstein"].expected_sq_l2_error))
    assert by_name["gaussian"].ok
    if "iclp-qr" in by_name:
        (qr,) = U.tradeoff_curves(fd, replace(SETTINGS, eta=1.0), "phi", SWEEPS["phi"], mechanisms=("iclp-qr",))
        assert not qr.ok and "eta > 1" in qr.invalid
    with pytest.raises(ParameterError):
        U.tradeoff_curves(fd, SETTINGS, "kappa", [1.0])
    with pytest.raises(ParameterError):
        U.tradeoff_curves(fd, SETTINGS, "n", [2.5])


def test_works_with_the_gaussian_mechanism_alone(fd, monkeypatch):
    monkeypatch.setattr(U, "MEAN_MECHANISMS", ("gaussian",))
    for param in ("epsilon", "phi", "rho", "n"):
        (curve,) = U.tradeoff_curves(fd, SETTINGS, param, SWEEPS.get(param, [10, 40]), mc_draws=200)
        assert curve.mechanism == "gaussian" and np.all(np.isfinite(curve.expected_sq_l2_error))
    (res,) = U.epsilon_for_accuracy(fd, SETTINGS, "expected_sq_l2", 1e-3)
    assert res.mechanism == "gaussian"


# --------------------------------------------------------------------------- pointwise quantiles

def test_laplace_sum_quantile_exact_cases():
    # One Laplace(b): P(|X| > q) = exp(-q/b).  Two iid Laplace(1): P(|X| > x) = (2 + x) e^-x / 2.
    one = U.laplace_sum_abs_quantile(np.array([[0.7]]), 0.95)[0]
    assert one == pytest.approx(0.7 * math.log(20), rel=1e-5) and one >= 0.7 * math.log(20)
    two = U.laplace_sum_abs_quantile(np.array([[1.0, 1.0]]), 0.95)[0]
    assert (2 + two) * math.exp(-two) / 2 == pytest.approx(0.05, rel=1e-5)
    assert (2 + two) * math.exp(-two) / 2 <= 0.05  # conservative side


def test_laplace_sum_quantile_against_monte_carlo():
    a = np.array([[1.0, 0.6, 0.3, 0.05], [0.2, 0.2, 0.2, 0.2]])
    q = U.laplace_sum_abs_quantile(a, 0.9)
    x = np.random.default_rng(4).laplace(size=(1_000_000, 4))
    for row, qi in zip(a, q):
        p_hat = np.mean(np.abs(x @ row) <= qi)
        assert abs(p_hat - 0.9) < 4 * math.sqrt(0.09 / x.shape[0])


@pytest.mark.parametrize("mechanism", MEAN_MECHANISMS)
def test_pointwise_halfwidth_against_monte_carlo(fd, mechanism):
    plan = plan_mean_release(fd, U.settings_for(SETTINGS, mechanism))
    h = U.pointwise_halfwidth(plan, 0.95)
    dev = np.abs(plan.sample(np.random.default_rng(8), 100_000) - plan.estimate)
    coverage = np.mean(dev <= h, axis=0)
    # At the worst grid point the coverage is 95%; everywhere else at least that.
    assert coverage.min() == pytest.approx(0.95, abs=4 * math.sqrt(0.95 * 0.05 / dev.shape[0]))


# --------------------------------------------------------------------------- accuracy -> epsilon

@pytest.mark.parametrize("metric", U.ACCURACY_METRICS)
def test_epsilon_for_accuracy_meets_target_and_one_percent_less_does_not(fd, metric):
    results = U.epsilon_for_accuracy(fd, SETTINGS, metric, _target(fd, metric))
    assert [r.mechanism for r in results] == list(MEAN_MECHANISMS)
    for r in results:
        assert r.epsilon is not None and 1e-3 < r.epsilon < 1e3, r
        s = U.settings_for(SETTINGS, r.mechanism)
        met = U.accuracy_metric(plan_mean_release(fd, replace(s, epsilon=r.epsilon)), metric)
        missed = U.accuracy_metric(plan_mean_release(fd, replace(s, epsilon=0.99 * r.epsilon)), metric)
        assert met <= r.target < missed, (r.mechanism, met, r.target, missed)


def _target(fd, metric):
    # A target every mechanism reaches inside [1e-3, 1e3]: the worst mechanism's value at epsilon = 2.
    values = [U.accuracy_metric(plan_mean_release(fd, replace(U.settings_for(SETTINGS, m), epsilon=2.0)), metric)
              for m in MEAN_MECHANISMS]
    return max(values)


def test_epsilon_for_accuracy_edges(fd):
    (tiny,) = U.epsilon_for_accuracy(fd, SETTINGS, "expected_sq_l2", 1e-30, mechanisms=("gaussian",))
    assert tiny.epsilon is None and "not reachable" in tiny.message
    (huge,) = U.epsilon_for_accuracy(fd, SETTINGS, "expected_sq_l2", 1e9, mechanisms=("gaussian",))
    assert huge.epsilon == 1e-3
    classical = replace(SETTINGS, calibration="classical")
    (cl,) = U.epsilon_for_accuracy(fd, classical, "expected_sq_l2", _target(fd, "expected_sq_l2") / 100,
                                   mechanisms=("gaussian",))
    assert cl.epsilon is None and "epsilon <= 1" in cl.message
    with pytest.raises(ParameterError):
        U.epsilon_for_accuracy(fd, SETTINGS, "expected_sq_l2", -1.0)


# --------------------------------------------------------------------------- PCV

PCV_MECHS = [m for m in ("gaussian", "iclp-qr") if m in MEAN_MECHANISMS]


@pytest.mark.parametrize("mechanism", PCV_MECHS)
def test_pcv_closed_form_equals_brute_force_monte_carlo(mechanism):
    small = kl_design(n=24, m=31, seed=7)
    settings = replace(U.settings_for(SETTINGS, mechanism), epsilon=3.0, tau=0.25)
    penalties, rhos = np.array([1e-4, 1e-1]), np.array([0.05, 0.4])
    result = pcv_grid(small, settings, penalties, rhos, folds=4, seed=1)
    folds = pcv_folds(small.n, 4, seed=1)
    rng = np.random.default_rng(9)
    draws = 6000
    for r, rho in enumerate(rhos):
        for p, pen in enumerate(penalties):
            s = U.with_parameter(replace(settings, rho=rho), "phi", pen)
            fold_means, fold_vars = [], []
            for test in folds:
                train = np.setdiff1d(np.arange(small.n), test)
                plan = plan_mean_release(FunctionalData(small.grid_points, small.data_matrix[train]), s)
                sq = U.sq_l2_distance(plan.sample(rng, draws), small.data_matrix[test].mean(axis=0), small.weights)
                fold_means.append(sq.mean())
                fold_vars.append(sq.var(ddof=1))
            brute = np.mean(fold_means)
            se = math.sqrt(np.sum(fold_vars) / draws) / len(folds)
            assert abs(result.scores[r, p] - brute) < 4 * se, (rho, pen, result.scores[r, p], brute, se)


def test_pcv_grid_optimum_flag_and_validation(fd):
    penalties, rhos = np.logspace(-6, 0, 7), np.array([0.05, 0.2, 0.8])
    result = pcv_grid(fd, SETTINGS, penalties, rhos, folds=5)
    assert result.scores.shape == (3, 7)
    r, p = np.unravel_index(np.argmin(result.scores), result.scores.shape)
    assert (result.best_rho, result.best_penalty) == (rhos[r], penalties[p])
    assert result.flag == PCV_FLAG and "not differentially private" in PCV_FLAG
    with pytest.raises(ParameterError):
        pcv_grid(fd, SETTINGS, penalties, rhos, folds=1)
    with pytest.raises(ParameterError):
        pcv_grid(fd, SETTINGS, [-1.0], rhos)
    if "frl" in MEAN_MECHANISMS:
        with pytest.raises(ParameterError):
            pcv_grid(fd, U.settings_for(SETTINGS, "frl"), penalties, rhos)
    folds = pcv_folds(fd.n, 7, seed=0)
    assert sorted(np.concatenate(folds).tolist()) == list(range(fd.n))


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
    pca = pytest.importorskip("fdp_core.pca")
    settings = pca.PcaSettings(kernel="matern52", rho=0.2, tau=0.3, gamma=1.0)
    curves = U.pca_variance_ratio_curves(fd, settings, [0.3, 30.0], ks=(1, 2), draws=300, seed=4)
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
    pca = pytest.importorskip("fdp_core.pca")
    curves = U.pca_variance_ratio_curves(fd, pca.PcaSettings(tau=0.3, p=3), [1.0], ks=(1, 3), draws=10)
    assert curves[0].ok and not curves[1].ok and "p > k" in curves[1].invalid
    with pytest.raises(ParameterError):
        U.pca_variance_ratio_curves(fd, pca.PcaSettings(tau=0.3), [0.0])
