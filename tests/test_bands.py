"""The privacy band, the confidence band (METHODS.md 18) and synthetic curves (METHODS.md 19)."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fdp_core.explore.band_coverage import GRID_POINTS, coverage_cell, design_settings
from fdp_core.releases.bands import band_summary, plan_band_release, privacy_band, smoothing_bias_bound
from fdp_core.budget.privacy_events import gdp_mu
from fdp_core.cli import main
from fdp_core.releases.bands import psd_part
from fdp_core.releases.covariance import CovarianceSettings, plan_covariance_release, product_shrinkage
from fdp_core.releases.estimators import shrinkage
from fdp_core.kernels import kernel_matrix
from fdp_core.releases.mean import MeanSettings
from fdp_core.data.simulate import SIMULATIONS, simulate
from fdp_core.releases.synthetic import compare, curves_table, model_covariance, synthetic_curves

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "data" / "example_curves.csv"
BAND = ["release", "mean", "--preview", "--data", str(EXAMPLE), "--kernel", "matern52", "--rho", "0.1", "--epsilon", "1",
        "--value-range", "-1.5,1.5", "--confidence-band", "0.95", "--band-share", "0.2", "--seed", "3"]


def _cli(args):
    """Run the command in this process (a subprocess costs seconds of imports): exit status, stdout, stderr."""
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = main(list(map(str, args)))
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def test_confidence_band_covers_the_smoothed_mean_at_nominal_level():
    """n = 1000, epsilon 1, 200 replications on S1: coverage of m_S near 0.95, width near the oracle's."""
    cell = coverage_cell("s1", 1000, 1.0, 200, seed=3, n_draws=1000)
    assert 0.91 <= cell.coverage <= 0.99
    assert 0.91 <= cell.privacy_coverage <= 0.99
    assert 1.0 <= cell.width_ratio < 1.2


def test_a_pure_dp_mechanism_gets_its_own_noise_law():
    cell = coverage_cell("s1", 1000, 1.0, 100, seed=5, n_draws=1000, mechanism="iclp-qr")
    assert 0.88 <= cell.coverage <= 1.0


def test_privacy_band_is_data_free_and_simultaneous():
    settings = design_settings("s1", 1.0)
    plans = [plan_band_release(simulate("s1", n=300, m=GRID_POINTS, seed=seed), settings).mean for seed in (1, 2)]
    values = np.zeros(GRID_POINTS)
    a, b = (privacy_band(p, values, 0.9) for p in plans)
    np.testing.assert_allclose(a.upper, b.upper)  # the noise law does not depend on the data
    z = plans[0].noise_coefficients(np.random.default_rng(0), 20_000) @ plans[0].synthesis.T
    assert np.mean(np.all(np.abs(z) <= a.upper, axis=1)) == pytest.approx(0.9, abs=0.01)


def test_smoothing_bias_bound_holds_for_every_mean_in_the_ball():
    settings = design_settings("s1", 1.0, smoothness_bound=2.0)
    plan = plan_band_release(simulate("s1", n=300, m=GRID_POINTS, seed=0), settings)
    cov, mean = plan.second_moment, plan.mean
    pointwise, l2 = smoothing_bias_bound(mean, cov.eigenfunctions, cov.eigenvalues, 2.0)
    assert l2 <= 2.0 * np.sqrt(settings.phi) / 2 + 1e-12
    x = cov.eigenvalues ** settings.eta
    s = np.zeros(cov.n_components)
    s[: mean.noise_scales.size] = x[: mean.noise_scales.size] / (x[: mean.noise_scales.size] + settings.phi)
    rng = np.random.default_rng(0)
    for a in rng.standard_normal((50, cov.n_components)):
        a *= 2.0 / np.linalg.norm(a)  # ||mu||_{H(C^eta)} = 2
        bias = cov.eigenfunctions @ ((1 - s) * np.sqrt(x) * a)
        assert np.all(np.abs(bias) <= pointwise + 1e-12)
        assert np.sqrt(bias**2 @ cov.weights) <= l2 + 1e-12


def _effective_shrinkage(plan, band, eigenvalues, variances, B):
    """The band's e_l recomputed from its family and parameter, independently of bands.py."""
    x = eigenvalues ** plan.settings.eta
    s = x / (x + plan.settings.phi)
    if band.family == "penalty":
        return x / (x + band.parameter)
    signal = B * B * x
    return signal / (signal + band.parameter * variances / s**2)


def test_the_mean_band_centre_and_bias_bound_are_exact():
    """METHODS 25: the centre re-weights the released coefficients by e_l / s_l, so on a noise-free release of a
    mean mu it is sum_l e_l mu_l phi_l, and |E[Y] - that| stays within the pointwise bias bound for every mu in the
    B-ball (checked on random means, the bound's worst direction included)."""
    from fdp_core.releases.bands import mean_band, smoother

    B = 2.0
    plan = plan_band_release(simulate("s1", n=300, m=GRID_POINTS, seed=0), design_settings("s1", 4.0,
                                                                                         smoothness_bound=B))
    mean, cov = plan.mean, plan.second_moment
    assert mean.noise_scales.size == cov.n_components  # the release's basis is the eigenbasis (kernel mechanisms)
    T = smoother(mean, cov.eigenfunctions, cov.eigenvalues)
    sigma = np.diag(0.01 / np.arange(1, cov.n_components + 1) ** 2)
    variances = mean.noise_scales**2 + np.diag(T @ sigma @ T.T) / mean.n
    x = cov.eigenvalues ** plan.settings.eta
    rng = np.random.default_rng(1)
    for trial in range(6):
        a = rng.standard_normal(cov.n_components)
        mu = np.sqrt(x) * a * B / np.linalg.norm(a)  # ||mu||_{H(C^eta)} = B
        values = mean.offset + mean.synthesis @ (T @ mu)
        band = mean_band(mean, cov.eigenfunctions, cov.eigenvalues, sigma, values, 0.95, B, n_draws=500, seed=trial)
        e = _effective_shrinkage(plan.mean, band, cov.eigenvalues, variances, B)
        np.testing.assert_allclose(band.centre, mean.offset + cov.eigenfunctions @ (e * mu), atol=1e-9)
        truth = mean.offset + cov.eigenfunctions @ mu
        assert np.all(np.abs(truth - band.centre) <= band.bias_pointwise + 1e-12)
        # The worst mean for t0 attains the bound there: the bound is the smallest that holds.
        t0 = trial * 7
        worst = B * np.sqrt(x) * (1 - e) * cov.eigenfunctions[t0] / np.linalg.norm(np.sqrt(x) * (1 - e)
                                                                                     * cov.eigenfunctions[t0])
        worst_mu = np.sqrt(x) * worst
        assert abs(cov.eigenfunctions[t0] @ ((1 - e) * worst_mu)) == pytest.approx(band.bias_pointwise[t0], rel=1e-9)


def test_the_mean_band_covers_the_population_mean():
    """The band labelled as covering E[Y] does so (B = 2 ||E[Y - c]||_H declared), where the m_S band need not."""
    cell = coverage_cell("s1", 1000, 4.0, 40, seed=11, n_draws=1000, smoothness_factor=2.0)
    assert cell.mean_coverage >= 0.9
    assert cell.mean_width_ratio >= cell.ci_raw_width_ratio  # it pays for the bias with width


def test_release_mean_writes_both_bands(tmp_path):
    out = tmp_path / "band"
    result = _cli([*BAND, "--smoothness-bound", "1", "--out", str(out)])
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(out / "release.csv")
    assert list(table.columns)[:6] == ["t", "value", "privacy_lower", "privacy_upper", "ci_lower", "ci_upper"]
    assert np.all(table.privacy_lower < table.value) and np.all(table.value < table.privacy_upper)
    assert np.all(table.ci_lower < table.value)
    assert np.all(table.mean_lower < table.mean_centre) and np.all(table.mean_centre < table.mean_upper)
    record = json.loads((out / "release.json").read_text())
    band = record["band"]
    assert band["level"] == 0.95 and band["share"] == 0.2 and "simulation" in band["method"]
    assert band["epsilon_mean"] + band["epsilon_second_moment"] == pytest.approx(record["epsilon"]) == 1.0
    assert band["bias_bound_l2"] <= np.sqrt(1e-3) / 2
    # Each band says what it covers; "population mean" only for the one that covers E[Y] (under the declared B).
    assert "population mean" not in band["confidence_band"] and "smoothed mean" in band["confidence_band"]
    assert "population mean" in band["mean_band"] and "B" in band["mean_band_covers"]
    assert band["mean_band_family"] in ("penalty", "filter") and band["mean_band_bias_l2"] >= 0
    total = band["composed_total"]  # Gaussian parts: the exact GDP total is cheaper than the basic sum
    assert total["basic"] == {"epsilon": 1.0, "delta": pytest.approx(record["delta"])}
    assert total["method"] == "gdp" and total["epsilon"] == total["gdp"]["epsilon"] < total["zcdp"]["epsilon"] < 1.0
    assert total["gdp"]["mu"] == pytest.approx(np.hypot(gdp_mu(0.8, band["delta_mean"]),
                                                        gdp_mu(0.2, band["delta_second_moment"])))
    assert "composed total" in result.stdout and f"{total['gdp']['epsilon']:.4g}" in result.stdout
    # The summary line names what each band covers, the band for E[Y] with its B.
    assert "confidence band for the smoothed mean (ci_lower/ci_upper)" in result.stdout
    assert "population mean E[Y] itself (mean_lower/mean_upper), if ||E[Y] - c||_H <= B = 1 holds" in result.stdout
    assert record["settings"]["confidence_band"] == 0.95 and record["settings"]["epsilon"] == 1.0
    assert json.loads((out / "analyst_view.json").read_text())["publishable"] is False


def test_without_a_band_the_release_is_unchanged(tmp_path):
    result = _cli([*BAND[:-6], "--seed", "3", "--out", str(tmp_path / "plain")])
    assert result.returncode == 0, result.stderr
    assert list(pd.read_csv(tmp_path / "plain" / "release.csv").columns) == ["t", "value"]
    assert "band" not in json.loads((tmp_path / "plain" / "release.json").read_text())


@pytest.mark.parametrize("extra, message", [
    (["--confidence-band", "1.5"], "confidence_band"),
    (["--band-share", "1"], "band_share"),
    (["--smoothness-bound", "-1"], "smoothness_bound"),
    (["--engine", "stream"], "--engine local"),
])
def test_bad_band_options_are_refused(tmp_path, extra, message):
    result = _cli([*BAND, *extra, "--out", str(tmp_path / "x")])
    assert result.returncode == 2 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()


def test_every_mean_mechanism_gets_a_band(tmp_path):
    for mechanism, extra in (("iclp-ar", ["--eta", "1", "--psi", "0.02"]), ("frl", ["--M", "6"]),
                             ("bernstein", ["--K", "8"]), ("truncated-gaussian", ["--M", "6"])):
        result = _cli([*BAND, "--mechanism", mechanism, *extra, "--out", str(tmp_path / mechanism)])
        assert result.returncode == 0, (mechanism, result.stderr)
        table = pd.read_csv(tmp_path / mechanism / "release.csv")
        assert np.all(table.ci_upper >= table.ci_lower)
        total = json.loads((tmp_path / mechanism / "release.json").read_text())["band"]["composed_total"]
        pure = mechanism in ("iclp-ar", "frl", "bernstein")  # Laplace parts: only the basic sum
        assert (total["method"], "gdp" in total) == (("basic", False) if pure else ("gdp", True))
        assert total["basic"]["epsilon"] == pytest.approx(1.0) and total["epsilon"] <= 1.0


# --------------------------------------------------------------------------- synthetic curves (METHODS 19)

def _gp_truth(grid):
    return SIMULATIONS["s1"].true_mean(grid), 0.25 * kernel_matrix("gaussian", grid, grid, 0.1)


def test_synthetic_errors_fall_as_epsilon_grows():
    fd = simulate("s1", n=2000, m=40, seed=1)
    mu, K = _gp_truth(fd.grid_points)
    sw = np.sqrt(fd.weights)
    errors = []
    for eps in (0.5, 4.0, 64.0):
        settings = CovarianceSettings(lo=float(mu.min() - 3), hi=float(mu.max() + 3), kernel="matern52", rho=0.1,
                                      epsilon=eps, centring="released-mean")
        plan = plan_covariance_release(fd, settings)
        rng = np.random.default_rng(0)
        draw = plan.sample(rng, 1)
        mean = settings.centre_value + plan.eigenfunctions @ draw["mean"][0]
        y = synthetic_curves(mean, model_covariance(plan, draw), plan.eigenfunctions, 2000, rng,
                             (settings.lo, settings.hi))
        errors.append((np.sqrt((y.mean(0) - mu) ** 2 @ fd.weights),
                       np.linalg.norm(sw[:, None] * (np.cov(y.T) - K) * sw[None, :])))
    mean_errors, cov_errors = zip(*errors)
    assert mean_errors[0] > mean_errors[1] > mean_errors[2]
    assert cov_errors[0] > cov_errors[1] > cov_errors[2]


def test_synthetic_covariance_error_at_epsilon_8_meets_its_derived_bound():
    """METHODS 19's target (within 1.25x of the empirical covariance's error at epsilon 8, n = 10^4) is out of
    reach of section 13's mechanism with a public constant centre; the test asserts the derivation instead.

    The model's covariance is C^ = S~ - s2 * (m^ m^^T) (synthetic.model_covariance), so
    C^ - C = B + N2 - s2 * (xbar d^T + d xbar^T + d d^T) with B = s2 * (empirical covariance) - C (sampling and
    shrinkage, non-private), N2 the second moment's noise and d the de-shrunk mean's noise (independent, mean 0).
    Hence E||C^ - C||^2 ~ ||B||^2 + E||N2||^2 + E||s2 * (xbar d^T + d xbar^T)||^2 in closed form, and the last two
    (public noise law, xbar the centred mean) are a floor no smoothing removes."""
    fd = simulate("s1", n=10_000, m=50, seed=1)
    grid, sw = fd.grid_points, np.sqrt(fd.weights)
    mu, K = _gp_truth(grid)

    def hs(C):
        return np.linalg.norm(sw[:, None] * C * sw[None, :])

    empirical = hs(np.cov(fd.data_matrix.T) - K)
    settings = CovarianceSettings(lo=float(mu.min() - 3), hi=float(mu.max() + 3), kernel="matern52", rho=0.1,
                                  epsilon=8.0, centring="released-mean")
    plan = plan_covariance_release(fd, settings)
    lam, phi = plan.eigenvalues, plan.eigenfunctions
    s1, s2 = shrinkage(lam, settings.eta, settings.phi), product_shrinkage(lam, settings.eta, settings.phi)
    x = plan.coefficients
    xbar = x.mean(axis=0)
    bias = hs(phi @ (s2 * (x.T @ x / plan.n - np.outer(xbar, xbar))) @ phi.T - K)
    v2 = plan.scales**2  # Gaussian: variances; symmetrising halves the off-diagonal ones
    noise2 = (v2.sum() + np.trace(v2)) / 2.0
    d = np.where(s1 >= 0.5, plan.mean_scales**2 / np.maximum(s1, 0.5) ** 2, plan.mean_scales**2)
    cross = np.sum(s2**2 * (np.outer(xbar**2, d) + np.outer(d, xbar**2))) + 2 * np.sum(np.diag(s2) ** 2 * xbar**2 * d)
    floor, predicted = np.sqrt(noise2 + cross), np.sqrt(bias**2 + noise2 + cross)
    assert floor > 5 * 1.25 * empirical  # the 1.25x target is unreachable here (floor 13.6x, predicted 17.2x)

    rng = np.random.default_rng(0)
    model, plain, synthetic = [], [], []
    for _ in range(3):
        draw = plan.sample(rng, 1)
        C = model_covariance(plan, draw)
        model.append(hs(phi @ psd_part(C) @ phi.T - K))
        plain.append(hs(phi @ psd_part(draw["covariance"][0]) @ phi.T - K))
        y = synthetic_curves(settings.centre_value + phi @ draw["mean"][0], C, phi, plan.n, rng,
                             (settings.lo, settings.hi))
        synthetic.append(hs(np.cov(y.T) - K))
    assert 0.8 * predicted < np.mean(model) < 1.1 * predicted  # the derivation predicts the error
    assert np.mean(synthetic) < 1.25 * predicted  # synthetic curves add their own sampling error (N* = n)
    assert np.mean(model) < 0.5 * np.mean(plain)  # the matched mean square: 17x instead of 52x the empirical


def test_synthetic_comparison_and_layouts():
    fd = simulate("s1", n=300, m=20, seed=2)
    same = compare(fd.data_matrix, fd.data_matrix, fd.grid_points, fd.weights)
    assert same["mean_l2_distance"] == 0 and same["covariance_hs_distance"] == 0
    assert same["subspace_distance_top3"] < 1e-6 and all(k["ks_statistic"] == 0 for k in same["pointwise_ks"])
    assert len(same["pointwise_ks"]) == 5
    other = compare(fd.data_matrix, fd.data_matrix + 1.0, fd.grid_points, fd.weights)
    assert other["mean_l2_distance"] == pytest.approx(1.0) and all(k["ks_statistic"] > 0.5 for k in other["pointwise_ks"])
    wide = curves_table(fd.data_matrix[:3], fd.grid_points, "wide")
    long = curves_table(fd.data_matrix[:3], fd.grid_points, "long")
    assert wide.shape == (3, 21) and list(long.columns) == ["id", "t", "value"] and len(long) == 60


def test_release_synthetic_keeps_the_input_layout(tmp_path):
    fd = simulate("s1", n=60, m=10, seed=0)
    long_file = tmp_path / "long.csv"
    pd.DataFrame({"id": np.repeat(np.arange(60), 10), "t": np.tile(fd.grid_points, 60),
                  "value": fd.data_matrix.ravel()}).to_csv(long_file, index=False)
    common = ["release", "synthetic", "--kernel", "matern52", "--rho", "0.1", "--epsilon", "2", "--value-range",
              "-2,6", "--seed", "1", "--n-synthetic", "25"]
    for source, layout in ((long_file, "long"), (EXAMPLE, "wide")):
        out = tmp_path / layout
        result = _cli([*common, "--data", str(source), "--out", str(out)])
        assert result.returncode == 0, result.stderr
        table = pd.read_csv(out / "release.csv")
        record = json.loads((out / "release.json").read_text())
        assert record["layout"] == layout and record["n_synthetic"] == 25
        assert "skewness" in record["cannot_keep"] and "mean" in record["keeps"]
        if layout == "long":
            assert list(table.columns) == ["id", "t", "value"] and table.id.nunique() == 25
        else:
            assert len(table) == 25 and table.columns[0] == "id"
        values = table["value"] if layout == "long" else table.iloc[:, 1:].to_numpy()
        assert np.all((np.asarray(values) >= -2) & (np.asarray(values) <= 6))
        view = json.loads((out / "analyst_view.json").read_text())
        assert view["publishable"] is False and "covariance_hs_distance" in view["comparison"]
    bad = _cli([*common, "--data", str(EXAMPLE), "--n-synthetic", "0", "--out", str(tmp_path / "bad")])
    assert bad.returncode == 2 and not (tmp_path / "bad").exists()


# --------------------------------------------------------------------------- commit: two ledger entries

def test_commit_charges_both_parts_and_replays():
    from fdp_core.budget.accounting import Ledger
    from fdp_core.publish.band_commit import commit_mean_with_band
    from fdp_core.data.loading import load_curves
    from fdp_core.errors import BudgetError
    from fdp_core.publish.replay import replay

    fd = load_curves(EXAMPLE)
    ledger = Ledger(3.0, 1e-4)
    settings = MeanSettings(epsilon=1.0, value_range=(-1.5, 1.5), tau=None, confidence_band=0.9, band_share=0.25)
    release = commit_mean_with_band(ledger, fd, settings)
    kinds = [e.kind for e in ledger.entries]
    assert kinds == ["mean", "covariance"] and release.record["part_entry_ids"] == [e.id for e in ledger.entries]
    assert list(release.table.columns) == ["t", "value", "privacy_lower", "privacy_upper", "ci_lower", "ci_upper"]
    assert release.config["settings"]["epsilon"] == 1.0 and release.config["settings"]["confidence_band"] == 0.9
    assert release.record["band"]["epsilon_mean"] == pytest.approx(0.75)
    # The band's total states what the ledger charged (charged_total's numbers); the calibrated split beside it.
    total, charged = release.record["band"]["composed_total"], release.record["charged_total"]
    assert total["source"] == "ledger" and total["basic"] == {"epsilon": pytest.approx(charged["epsilon"], rel=1e-12),
                                                               "delta": pytest.approx(charged["delta"], rel=1e-12)}
    assert charged["epsilon"] == pytest.approx(sum(e.epsilon for e in ledger.entries), rel=1e-12)
    assert total["method"] == charged["composed"]["method"] and total["epsilon"] == charged["composed"]["epsilon"]
    assert total["epsilon"] <= total["basic"]["epsilon"]
    calibrated = release.record["band"]["calibrated_total"]
    assert calibrated["method"] == "gdp" and calibrated["epsilon"] < 1.0 == pytest.approx(calibrated["basic"]["epsilon"])
    from fdp_core.publish.report import report_html

    assert "population mean" not in band_summary(release.record["band"])  # no smoothness bound: no band for E[Y]
    html = report_html(release, ledger)
    assert f"charged: basic composition epsilon {charged['epsilon']:.4g}" in html
    assert f"mu = {calibrated['gdp']['mu']:.4g}" in html
    with pytest.raises(BudgetError):  # the replay's two parts no longer fit: refused before any draw
        replay(release.config, fd, ledger=Ledger(3.0, 1e-4, entries=list(ledger.entries) * 2))
    again, after = replay(release.config, fd, ledger=ledger)
    assert len(after.entries) == 4 and "band" in again.record


@pytest.mark.parametrize("mechanism, extra, n_test", [("frl", {"M": 4}, 1_000_000), ("iclp-qr", {}, 2_000_000)])
def test_combined_pure_audit_passes_and_flags_an_under_noised_control(mechanism, extra, n_test):
    """Mean + second moment audited together at the claimed total epsilon, Laplace noise. No single pair attains
    the basic composition (the mean's worst pair leaves the second moment in place), so the audit picks the pair
    on which a 0.7x control is most visible: for ICLP-QR the worst direction kept on its largest coefficients
    (few moved coordinates, loss > 0.7 epsilon), not the joint loss maximiser (loss 0.87 spread over 72)."""
    from fdp_core.explore.band_audit import audit_band_release

    settings = MeanSettings(mechanism=mechanism, rho=0.3, epsilon=1.0, value_range=(-2.0, 3.0), tau=0.5,
                            confidence_band=0.95, band_share=0.2, **extra)
    audit = audit_band_release(settings, np.linspace(0, 1, 8), 50, n_select=200_000, n_test=n_test)
    assert audit.delta == 0.0 and audit.epsilon == 1.0
    assert 0.7 < audit.pair_loss <= 1.0  # visible at 0.7x, never above the claim
    assert not audit.result.flagged and audit.honest_epsilon_lower <= 1.0
    assert audit.control.flagged and audit.control_factor == 0.7 and audit.control_epsilon_lower > 1.0


@pytest.mark.parametrize("mechanism, extra", [("gaussian", {}), ("truncated-gaussian", {"M": 6})])
def test_combined_gaussian_audit_tests_the_composed_gdp_and_flags_the_control(mechanism, extra):
    """Gaussian parts: the audit tests the exact composed mu = sqrt(mu1^2 + mu2^2) at audit delta 0.05
    (not the basic sum of epsilons and deltas), which is tight enough to flag the 0.7x control."""
    from fdp_core.explore.band_audit import AUDIT_DELTA, audit_band_release

    settings = MeanSettings(mechanism=mechanism, rho=0.3, epsilon=1.0, delta=1e-5, value_range=(-2.0, 3.0), tau=0.5,
                            confidence_band=0.95, band_share=0.2, **extra)
    audit = audit_band_release(settings, np.linspace(0, 1, 8), 50, n_select=50_000, n_test=500_000)
    assert audit.delta == AUDIT_DELTA and audit.epsilon < settings.epsilon
    assert not audit.result.flagged and audit.honest_epsilon_lower <= audit.epsilon
    assert audit.control.flagged and audit.control_factor == 0.7 and audit.control_epsilon_lower > audit.epsilon


def test_the_bound_asked_in_words_is_the_ball_of_bumps_at_most_that_high():
    """The app's words (METHODS 25): B = amplitude / sqrt(max_t k(t, t)); every mean in that ball stays within the
    amplitude of the centre, and the kernel's own bump of that height at the peak t* has norm exactly B."""
    from fdp_core.releases.bands import bound_from_amplitude

    plan = plan_band_release(simulate("s1", n=300, m=GRID_POINTS, seed=0), design_settings("s1", 1.0))
    cov = plan.second_moment
    x = cov.eigenvalues ** plan.settings.eta
    B = bound_from_amplitude(cov.eigenfunctions, cov.eigenvalues, plan.settings.eta, 0.3)
    rng = np.random.default_rng(0)
    for a in rng.standard_normal((50, cov.n_components)):
        f = cov.eigenfunctions @ (np.sqrt(x) * a * B / np.linalg.norm(a))
        assert np.max(np.abs(f)) <= 0.3 + 1e-12
    peak = int(np.argmax(cov.eigenfunctions**2 @ x))
    bump = x * cov.eigenfunctions[peak]  # coefficients of k(., t*)
    bump *= 0.3 / abs(cov.eigenfunctions[peak] @ bump)  # height 0.3 at t*
    assert np.sqrt(np.sum(bump**2 / x)) == pytest.approx(B, rel=1e-9)


def test_the_rough_design_has_the_mean_and_covariance_it_states():
    """The benchmark's non-Gaussian design (Poisson jumps, t3 level shift): its E[Y] and covariance, simulated."""
    from fdp_core.explore.rough_design import rough_covariance, rough_curves, rough_mean

    grid = np.linspace(0.0, 1.0, 11)
    curves = rough_curves(200_000, grid, np.random.default_rng(4))
    np.testing.assert_allclose(curves.mean(axis=0), rough_mean(grid), atol=0.004)  # sd of the mean <= 0.0012
    np.testing.assert_allclose(np.cov(curves.T), rough_covariance(grid), atol=0.006)  # t3's variance converges slowly
