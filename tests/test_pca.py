"""Private functional PCA (METHODS.md 5): the specification as tests.

Covers the basis (orthonormal in the weighted inner product, also on non-uniform grids;
p by the 99%-of-trace rule), the coefficient matrix (final rows clipped), the utility's
sensitivity (audited, and attained), the mechanism matrix, a black-box privacy audit of
the k = 1 release with a negative control that must be flagged, the release record, the
validation messages, the simulation design and the CLI.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fdp_core.explore.audit import audit_pair
from fdp_core.cli import main
from fdp_core.data.loading import DATA_DEPENDENT_TAU, from_arrays, load_curves
from fdp_core.errors import DataError, ParameterError
from fdp_core.kernels import eigenbasis, trapezoid_weights
from fdp_core.mechanisms.bingham import sample_vector_bingham
from fdp_core.releases.pca import (AWAN_RESCALING_FLAG, NOT_PRIVATE, SAMPLE_MEAN_CENTRING, PcaSettings, analyst_view,
                          coefficient_matrix,
                          exponential_mechanism_matrix, fourier_basis, pca_basis, private_pca, release_record,
                          simulate_fpca_awan)


def _gram(functions, weights):
    return functions.T @ (weights[:, None] * functions)


def _uneven_grid(m=31, seed=0):
    rng = np.random.default_rng(seed)
    return np.sort(np.concatenate([[0.0, 1.0], rng.uniform(0, 1, m - 2) ** 2]))


# --------------------------------------------------------------------------- bases

def test_fourier_basis_is_orthonormal_in_the_weighted_inner_product_on_an_uneven_grid():
    grid = _uneven_grid(60)
    w = trapezoid_weights(grid)
    raw = np.column_stack([np.ones_like(grid)] + [math.sqrt(2) * f(2 * math.pi * j * grid)
                                                  for j in range(1, 6) for f in (np.sin, np.cos)])
    # The raw Fourier vectors are far from orthonormal here: re-orthonormalising matters.
    assert np.max(np.abs(_gram(raw, w) - np.eye(11))) > 0.05
    B = fourier_basis(grid, w, 11)
    assert np.allclose(_gram(B, w), np.eye(11), atol=1e-10)
    # Gram-Schmidt order: span of the first j functions equals that of the first j raw ones.
    for j in (1, 3, 6):
        coef = np.linalg.lstsq(raw[:, :j], B[:, :j], rcond=None)[0]
        assert np.allclose(raw[:, :j] @ coef, B[:, :j], atol=1e-9)
    # Bessel: no curve of norm tau gets a coefficient row longer than tau.
    rng = np.random.default_rng(1)
    curves = rng.normal(size=(200, grid.size)) * (1 + 3 * grid)
    norms = np.sqrt(curves**2 @ w)
    rows = curves @ (w[:, None] * B)
    assert np.all(np.linalg.norm(rows, axis=1) <= norms * (1 + 1e-12))


def test_fourier_basis_refuses_too_many_functions():
    grid = np.linspace(0, 1, 10)
    with pytest.raises(ParameterError, match="p <= 9"):
        fourier_basis(grid, trapezoid_weights(grid), 10)


def test_kernel_basis_dimension_follows_the_99_percent_trace_rule():
    grid = np.linspace(0, 1, 80)
    w = trapezoid_weights(grid)
    lam = eigenbasis("matern32", 0.1, grid, w).eigenvalues
    expected = next(p for p in range(1, lam.size + 1) if lam[:p].sum() >= 0.99 * lam.sum())
    basis = pca_basis(PcaSettings(k=1, basis="kernel", kernel="matern32", rho=0.1), grid, w)
    assert basis.p == expected and 1 < expected < lam.size
    assert np.allclose(_gram(basis.functions, w), np.eye(basis.p), atol=1e-8)
    assert np.allclose(basis.prior_variances, lam[:expected])
    # A very smooth kernel needs few functions; the rule is then raised to k + 1.
    smooth = pca_basis(PcaSettings(k=4, basis="kernel", kernel="gaussian", rho=1.0), grid, w)
    assert smooth.p == 5 and "raised" in smooth.p_rule
    fourier = pca_basis(PcaSettings(k=1, basis="fourier"), grid, w)
    assert fourier.p == 39 and np.allclose(fourier.prior_variances, np.arange(1, 40) ** -3.0)


# --------------------------------------------------------------------------- coefficients and sensitivity

def test_coefficient_rows_are_clipped_after_centring_and_scaling():
    grid = np.linspace(0, 1, 50)
    w = trapezoid_weights(grid)
    B = fourier_basis(grid, w, 7)
    centre = 0.9 * np.ones_like(grid)
    values = np.vstack([0.5 * np.ones_like(grid),  # norm 0.5 <= tau, but 0.4 from the centre
                        -0.5 * np.ones_like(grid),  # 1.4 from the centre: clipped
                        3.0 * B[:, 1]])  # norm 3: clipped
    X, n_clipped = coefficient_matrix(values, B, w, tau=1.0, centre=centre)
    norms = np.linalg.norm(X, axis=1)
    assert n_clipped == 2
    assert np.all(norms <= 1.0)
    assert norms[0] == pytest.approx(0.4)
    assert norms[1] == pytest.approx(1.0) and norms[2] == pytest.approx(1.0)
    X_raw, n_raw = coefficient_matrix(values, B, w, tau=2.0)
    assert n_raw == 1 and np.linalg.norm(X_raw[0]) == pytest.approx(0.25)


def test_utility_sensitivity_is_one_and_attained():
    """|u_D(V) - u_D'(V)| <= 1 for neighbours D, D' (one row replaced), u(V) = ||X V||_F^2."""
    rng = np.random.default_rng(2)
    p, k, n = 6, 2, 8
    worst = 0.0
    for _ in range(2000):
        X = rng.normal(size=(n, p))
        X /= np.maximum(1, np.linalg.norm(X, axis=1))[:, None] * rng.uniform(1, 3, (n, 1))
        Xp = X.copy()
        Xp[0] = rng.normal(size=p)
        Xp[0] /= np.linalg.norm(Xp[0]) * rng.choice([1.0, 1.0, 2.0])
        V, _ = np.linalg.qr(rng.normal(size=(p, k)))
        worst = max(worst, abs(np.sum((X @ V) ** 2) - np.sum((Xp @ V) ** 2)))
    assert worst <= 1.0
    # Attained: a unit row inside span(V) replaced by one orthogonal to it.
    X = np.zeros((n, p))
    X[0, 0] = 1.0
    Xp = np.zeros((n, p))
    Xp[0, 1] = 1.0
    V = np.eye(p)[:, [0, 2]]
    assert np.sum((X @ V) ** 2) - np.sum((Xp @ V) ** 2) == pytest.approx(1.0, rel=1e-12)


def test_mechanism_matrix_is_the_log_density_of_the_exponential_mechanism():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(20, 5))
    X /= np.maximum(1, np.linalg.norm(X, axis=1))[:, None]
    c = np.arange(1, 6, dtype=float) ** -3.0
    A = exponential_mechanism_matrix(X, 0.7, 1.3, c)
    for _ in range(20):
        V1, _ = np.linalg.qr(rng.normal(size=(5, 2)))
        V2, _ = np.linalg.qr(rng.normal(size=(5, 2)))

        def log_density(V):  # (eps/2) utility - (gamma/2) tr(V^T Cinv V), written out directly
            return 0.35 * np.sum((X @ V) ** 2) - 0.65 * sum(V[j, l] ** 2 / c[j] for j in range(5) for l in range(2))

        assert np.trace(V1.T @ A @ V1) - np.trace(V2.T @ A @ V2) == pytest.approx(log_density(V1) - log_density(V2))
    with pytest.raises(ParameterError, match="norm <= 1"):
        exponential_mechanism_matrix(2 * X / np.linalg.norm(X, axis=1).min(), 1.0, 1.0, c)


# --------------------------------------------------------------------------- black-box audit

# Worst-case neighbours for the audit: one row on the unit sphere, e_1 in D and e_2 in D'
# (p = 2, n = 1). The exponential mechanism's analysis is loose by up to a factor 2 unless
# the two normalisers differ, so the public base term concentrates both outputs near e_1
# (Cinv = diag(1, 11), gamma = 1: weight exp(-5 v_2^2)); the privacy loss then approaches
# eps in the tail v ~ e_2, where the statistic T = (v . e_2)^2 is large, with enough mass
# there (~3%) for a 1.25 x epsilon control to be flagged. e^eps multiplies the upper
# confidence bound of the rare event under D, so both samples are large (the selection
# sample too, or the noisy threshold choice loses the margin).
AUDIT_EPS = 5.0
AUDIT_PRIOR = np.array([1.0, 1.0 / 11.0])


def _audit_sampler(row, epsilon):
    A = exponential_mechanism_matrix(np.array([row]), epsilon, 1.0, AUDIT_PRIOR)

    def sample(rng, size):
        return sample_vector_bingham(A, size, rng).samples[:, 1] ** 2
    return sample


def _audit(epsilon_used):
    e1, e2 = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    return audit_pair(_audit_sampler(e1, epsilon_used), _audit_sampler(e2, epsilon_used), AUDIT_EPS, 0.0,
                      n_select=2_000_000, n_test=4_000_000, alpha=1e-6, seed=11)


def test_black_box_audit_passes_at_the_true_epsilon():
    result = _audit(AUDIT_EPS)
    assert not result.flagged, result


def test_black_box_audit_flags_the_mechanism_run_at_1_25_epsilon():
    result = _audit(1.25 * AUDIT_EPS)
    assert result.flagged, result


# --------------------------------------------------------------------------- the release

@pytest.fixture(scope="module")
def awan():
    grid, values, flags = simulate_fpca_awan(300, seed=4)
    return from_arrays(grid, values), flags


def test_simulation_design_matches_its_description(awan):
    fd, flags = awan
    assert fd.n == 300 and fd.m == 100
    assert np.all(fd.norms() < 1.0) and fd.norms().max() > 0.99
    assert flags == (AWAN_RESCALING_FLAG,)
    basis = fourier_basis(fd.unit_grid, fd.weights, 21)
    X = fd.data_matrix @ (fd.weights[:, None] * basis)
    top = np.linalg.eigh(X.T @ X)[1][:, -1]
    assert np.argmax(np.abs(top)) == 3  # the extra weight makes u_4 the leading component


@pytest.mark.parametrize("sampler,k", [("exact", 1), ("deflation", 3), ("gibbs", 2)])
def test_release_contents_and_analyst_metrics(awan, sampler, k):
    fd, flags = awan
    settings = PcaSettings(k=k, basis="fourier", p=40, epsilon=50.0, gamma=1.0, sampler=sampler, tau=1.0,
                           gibbs_sweeps=400)
    res = private_pca(fd, settings, np.random.default_rng(5), data_dependent_flags=flags)
    V, B = res.coefficients, res.basis.functions
    assert V.shape == (40, k) and res.components.shape == (100, k)
    assert np.allclose(V.T @ V, np.eye(k), atol=1e-9)
    assert np.allclose(res.components, B @ V)
    assert np.allclose(_gram(res.components, fd.weights), np.eye(k), atol=1e-8)  # orthonormal functions
    # Analyst metrics, recomputed independently from the clipped coefficient matrix.
    X, n_clipped = coefficient_matrix(fd.data_matrix, B, fd.weights, 1.0)
    evals, evecs = np.linalg.eigh(X.T @ X)
    V_hat = evecs[:, ::-1][:, :k]
    ratio = np.trace(V.T @ X.T @ X @ V) / np.trace(V_hat.T @ X.T @ X @ V_hat)
    distance = 0.5 * np.sum((V @ V.T - V_hat @ V_hat.T) ** 2)
    assert res.variance_ratio == pytest.approx(ratio) and 0 <= res.variance_ratio <= 1
    assert res.subspace_distance == pytest.approx(distance, abs=1e-9) and 0 <= res.subspace_distance <= k
    assert res.variance_ratio > 0.8  # eps n = 15,000: the release is close to the truth
    assert np.allclose(res.scree, evals[::-1] / fd.n)
    assert res.n_clipped == n_clipped == 0
    assert set(res.not_private) == set(NOT_PRIVATE)
    assert res.guarantee.delta == 0.0 and res.guarantee.sensitivity == 1.0
    assert res.guarantee.sensitivity_norm is None  # the utility's sensitivity: there is no noise vector
    g = res.guarantee.details
    assert g["mechanism"] == "exponential"
    assert g["zcdp_rho"] == pytest.approx(50.0**2 / 8)
    assert g["approximate"] == (sampler == "gibbs")
    assert "not hardened" in g["floating_point"] or "no hardened" in g["floating_point"]
    if sampler == "deflation":
        assert g["epsilon_per_component"] == pytest.approx([50 / 3] * 3)
        assert g["zcdp_rho_sum_components"] == pytest.approx(3 * (50 / 3) ** 2 / 8)
    if sampler == "gibbs":
        assert res.diagnostics["trace"].shape == (400, k)
        # Columns are an arbitrary frame of the subspace; they are reported smoothest first.
        smooth = np.diag(V.T @ np.diag(1 / res.basis.prior_variances) @ V)
        assert np.all(np.diff(smooth) >= -1e-9)
    assert res.data_dependent_flags == flags
    record = release_record(res, seed=5)
    view = analyst_view(res)
    for key in ("variance_ratio", "subspace_distance", "acceptance_rate", "n_clipped"):
        assert key not in record and key in view, key  # computed from the data: analyst view only
    assert record["differentially_private"] is False  # the design's rescaling is flagged
    assert record["k"] == k and record["p"] == 40 and record["sampler"] == sampler
    assert 0 < view["acceptance_rate"] <= 1


def test_small_epsilon_gives_an_uninformative_release(awan):
    fd, _ = awan
    ratios = [private_pca(fd, PcaSettings(k=1, basis="fourier", p=40, epsilon=1e-3, gamma=0.0, tau=1.0),
                          np.random.default_rng(s)).subspace_distance for s in range(30)]
    assert np.mean(ratios) > 0.8  # nearly uniform on the sphere: E = 1 - 1/p


def test_data_dependent_choices_are_flagged(awan):
    fd, _ = awan
    res = private_pca(fd, PcaSettings(k=1, basis="fourier", p=10, tau=None, tau_from_data=True,
                                      centring="sample-mean"), 0)
    assert DATA_DEPENDENT_TAU in res.data_dependent_flags
    assert SAMPLE_MEAN_CENTRING in res.data_dependent_flags
    released = np.zeros(fd.m)
    clean = private_pca(fd, PcaSettings(k=1, basis="fourier", p=10, centring="released-mean"), 0,
                        released_mean=released)
    assert clean.data_dependent_flags == ()
    assert release_record(clean)["differentially_private"] is True


@pytest.mark.parametrize("settings,match", [
    (dict(k=0), "k .* >= 1"),
    (dict(k=6), "between 1 and 5"),
    (dict(k=2.5), "integer"),
    (dict(k=3, p=3, basis="fourier"), "p > k"),
    (dict(epsilon=0.0), "epsilon must be > 0"),
    (dict(tau=-1.0), "tau must be > 0"),
    (dict(gamma=-0.1), "gamma .* >= 0"),
    (dict(k=2, sampler="exact"), "deflation"),
    (dict(k=2, sampler="deflation", epsilon=1.0, epsilon_split=(0.3, 0.3)), "add up to epsilon"),
    (dict(k=2, sampler="deflation", epsilon_split=(0.5,)), "one epsilon per component"),
    (dict(sampler="mcmc"), "sampler must be one of exact, deflation, gibbs; got 'mcmc'"),
    (dict(k=2, sampler="gibbs", epsilon_split=(0.5, 0.5)), "epsilon_split applies only to the deflation sampler"),
    (dict(k=2, sampler="gibbs", gibbs_sweeps=0), "gibbs_sweeps must be >= 1"),
    (dict(k=2, sampler="gibbs", gibbs_sweeps=100, gibbs_burn_in=100), r"gibbs_burn_in must be in \[0, gibbs_sweeps"),
    (dict(k=2, sampler="gibbs", gibbs_thin=0.5), "gibbs_thin must be an integer"),
    (dict(basis="wavelet"), "basis must be one of"),
    (dict(centring="released-mean"), "released mean curve"),
    (dict(basis="kernel", kernel="gaussian", rho=0.01, p=500), "numerically non-zero"),
])
def test_bad_settings_are_refused_with_specific_messages(awan, settings, match):
    fd, _ = awan
    with pytest.raises(ParameterError, match=match):
        private_pca(fd, PcaSettings(**{"basis": "fourier", **settings}), 0)


def test_the_exact_samplers_refusal_of_k_above_one_is_word_for_word():
    with pytest.raises(ParameterError) as info:
        PcaSettings(k=3, sampler="exact").validated()
    assert str(info.value) == ("the exact sampler draws one component (k = 1); for k = 3 use sampler 'deflation' "
                               "(exact per component, the budget split across components) or 'gibbs' (matrix "
                               "Bingham, approximate)")


def test_fields_of_other_samplers_are_ignored():
    """Chain settings do not concern the exact samplers: a bad one is not refused there."""
    assert PcaSettings(k=2, gibbs_sweeps=0, gibbs_thin=0).validated().sampler_name == "deflation"


def test_fewer_curves_than_components_is_a_data_error():
    grid = np.linspace(0, 1, 30)
    fd = from_arrays(grid, np.vstack([np.sin(grid), np.cos(grid)]))
    with pytest.raises(DataError, match="at least k = 3 curves"):
        private_pca(fd, PcaSettings(k=3, basis="fourier", p=8), 0)


def test_real_data_release_runs(shared_data):
    fd = load_curves(shared_data / "berkeley_growth.csv")
    res = private_pca(fd, PcaSettings(k=2, basis="kernel", kernel="matern52", rho=0.2, epsilon=5.0,
                                      tau=float(np.median(fd.norms())), centring="none"), 0)
    assert res.components.shape == (fd.m, 2) and np.all(np.isfinite(res.components))
    assert res.n_clipped > 0


# --------------------------------------------------------------------------- CLI

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "data" / "example_curves.csv"
CLI_KEYS = ("k", "p", "basis", "sampler", "epsilon", "gamma", "n", "m", "tau", "n_policy", "unit_of_privacy",
            "data_dependent_flags", "guarantee")
ANALYST_KEYS = ("variance_ratio", "subspace_distance", "acceptance_rate", "n_clipped")


def test_cli_round_trip_matches_the_library(tmp_path):
    out = tmp_path / "pca"
    result = subprocess.run([sys.executable, "-m", "fdp_core", "release", "pca", "--preview", "--data", str(EXAMPLE), "--k", "2",
                             "--basis", "kernel", "--kernel", "matern52", "--rho", "0.1", "--sampler", "deflation",
                             "--epsilon", "2", "--gamma", "1", "--tau", "1", "--seed", "3", "--out", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    record = json.loads((out / "release.json").read_text())
    table = pd.read_csv(out / "release.csv")
    for key in CLI_KEYS:
        assert key in record, key
    analyst = json.loads((out / "analyst_view.json").read_text())
    assert analyst["publishable"] is False
    for key in ANALYST_KEYS:
        assert key not in record and key in analyst, key
    assert list(table.columns) == ["t", "pc1", "pc2"]
    fd = load_curves(EXAMPLE)
    expected = private_pca(fd, PcaSettings(k=2, basis="kernel", kernel="matern52", rho=0.1, sampler="deflation",
                                           epsilon=2.0, gamma=1.0, tau=1.0), np.random.default_rng(3))
    np.testing.assert_allclose(table["t"], fd.grid_points)
    np.testing.assert_allclose(table[["pc1", "pc2"]].to_numpy(), expected.components, rtol=1e-9, atol=1e-12)
    assert analyst["variance_ratio"] == pytest.approx(expected.variance_ratio)
    assert record["epsilon_per_component"] == [1.0, 1.0] and record["differentially_private"] is True


def test_cli_centres_by_a_released_mean_and_runs_gibbs(tmp_path, capsys):
    mean_dir, pca_dir = tmp_path / "mean", tmp_path / "pca"
    assert main(["release", "mean", "--preview", "--data", str(EXAMPLE), "--mechanism", "iclp-qr", "--kernel", "matern52",
                 "--rho", "0.1", "--epsilon", "1", "--tau", "1.5", "--psi", "0.02", "--seed", "1",
                 "--out", str(mean_dir)]) == 0
    assert main(["release", "pca", "--preview", "--data", str(EXAMPLE), "--k", "2", "--basis", "fourier", "--p", "9",
                 "--sampler", "gibbs", "--gibbs-sweeps", "300", "--epsilon", "2", "--tau", "0.5",
                 "--released-mean", str(mean_dir / "release.csv"), "--seed", "2", "--out", str(pca_dir)]) == 0
    record = json.loads((pca_dir / "release.json").read_text())
    assert record["centring"] == "released-mean" and record["sampler"] == "gibbs"
    assert record["approximate"] is True and record["differentially_private"] is False
    assert record["gibbs"]["n_sweeps"] == 300
    assert "not a DP claim" in record["privacy"]


@pytest.mark.parametrize("args,message", [
    (["--k", "2", "--sampler", "exact"], "deflation"),
    (["--k", "7"], "between 1 and 5"),
    (["--k", "3", "--basis", "fourier", "--p", "3"], "p > k"),
    (["--epsilon-split", "0.5,0.5", "--k", "2"], "add up to epsilon"),
])
def test_cli_refuses_bad_settings_with_exit_2(args, message, tmp_path, capsys):
    code = main(["release", "pca", "--preview", "--data", str(EXAMPLE), "--epsilon", "2", "--tau", "1", "--out", str(tmp_path),
                 *args])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "release.json").exists()


def test_cli_refuses_a_released_mean_on_another_grid(tmp_path, capsys):
    bad = tmp_path / "mean.csv"
    pd.DataFrame({"t": [0.0, 1.0], "value": [0.0, 0.0]}).to_csv(bad, index=False)
    code = main(["release", "pca", "--preview", "--data", str(EXAMPLE), "--epsilon", "1", "--tau", "1",
                 "--released-mean", str(bad), "--out", str(tmp_path / "o")])
    assert code == 2 and "not the data grid" in capsys.readouterr().err
