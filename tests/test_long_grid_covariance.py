"""Covariance and PCA on long grids (METHODS.md 27): the top-L basis above 2,000 grid points.

Privacy needs only that the estimator, the noise and the sensitivity read one orthonormal basis with
positive lambdas. Checked here on a 2,500-point grid against independent computations: the Gram
matrix K formed in full (Rayleigh quotients), the sensitivity formulas rewritten from scratch, a
brute-force search over extreme neighbours pushed through the planner, and the default-settings
neighbours (a clipped curve, a dropped curve, a replaced person) whose publishable files must agree.
"""

import json
import math

import numpy as np
import pandas as pd
import pytest

from fdp_core.cli import main
from fdp_core.data.loading import FunctionalData, load_curves
from fdp_core.kernels import eigenbasis, kernel_matrix
from fdp_core.long_grid import top_eigenpairs
from fdp_core.kernels import _dense_eigh, _finite_kernel_row, trapezoid_weights
from fdp_core.releases.covariance import (LONG_GRID_SURFACE_POINTS, CovarianceSettings, accuracy_sentence,
                                          basis_truncation, plan_covariance_release, product_shrinkage, surface_index)
from fdp_core.releases.pca import PcaSettings, pca_sums, private_pca
from fdp_core.releases.pca import basis_truncation as pca_truncation

M = 2500  # above limits.MAX_DENSE_EIGH_POINTS: the long-grid path
GRID = np.linspace(0.0, 1.0, M)
KERNEL, RHO, ETA, PHI = "matern32", 0.1, 1.5, 1e-3
TAU = 1.0


@pytest.fixture(scope="module")
def dense():
    """The independent side: lambda_l as Rayleigh quotients phi_l' W K W phi_l with K formed in full."""
    basis = eigenbasis(KERNEL, RHO, GRID)
    K = kernel_matrix(KERNEL, GRID, GRID, RHO)
    wphi = basis.weights[:, None] * basis.eigenfunctions
    lam = np.einsum("il,il->l", wphi, K @ wphi)
    return basis, lam


def _curves(rng, n):
    t = GRID[None, :]
    return 0.4 * rng.normal(size=(n, 1)) * np.sin(np.pi * t) + 0.05 * rng.normal(size=(n, M))


def _settings(**kw):
    return CovarianceSettings(**{**dict(kernel=KERNEL, rho=RHO, eta=ETA, phi=PHI, centre=0.0, tau=TAU, epsilon=1.0,
                                        delta=1e-5), **kw})


def _shift(p, q, norm):
    D = (p.estimate - q.estimate) / np.sqrt(np.outer(p.eigenvalues, p.eigenvalues))
    return float(np.sqrt(np.sum(D**2))) if norm == "cm" else float(np.sum(np.abs(D)))


@pytest.mark.parametrize("mechanism,bound", [("gaussian", "kyfan"), ("gaussian", "sqrt2"), ("iclp", "kyfan")])
def test_covariance_sensitivity_matches_an_independent_computation(dense, mechanism, bound):
    basis, lam = dense
    n = 12
    plan = plan_covariance_release(FunctionalData(GRID, _curves(np.random.default_rng(0), n)),
                                   _settings(mechanism=mechanism, bound=bound))
    assert plan.n_components == basis.n_components <= 200 and plan.basis_tail is not None
    w, phi = plan.weights, plan.eigenfunctions
    np.testing.assert_allclose(phi.T @ (w[:, None] * phi), np.eye(phi.shape[1]), atol=1e-12)
    np.testing.assert_allclose(plan.eigenvalues, lam, rtol=1e-10, atol=1e-15)
    s = (np.outer(lam, lam) ** ETA) / (np.outer(lam, lam) ** ETA + PHI)
    A = s / np.sqrt(np.outer(lam, lam))
    if mechanism == "iclp":
        expected = TAU**2 / n * min(2 * np.max(np.linalg.eigvalsh(A)), math.sqrt(2) * np.sqrt(np.sum(A**2)))
    elif bound == "sqrt2":
        expected = math.sqrt(2) * TAU**2 * A.max() / n
    else:
        c = np.sort((A**2).max(axis=1))[::-1]
        expected = TAU**2 * math.sqrt(c[0] + c[1]) / n
    assert plan.sensitivity == pytest.approx(expected, rel=1e-8)


@pytest.mark.parametrize("mechanism", ["gaussian", "iclp"])
def test_brute_force_extreme_neighbours_stay_within_the_stated_sensitivity(dense, mechanism):
    """Extreme pairs (tau (phi_j +- phi_l)/sqrt 2, tau phi_j against -tau phi_j, random pairs on the tau
    sphere, curves far outside the ball) as curves on the long grid, through the planner."""
    basis, lam = dense
    settings = _settings(mechanism=mechanism)
    norm = "cm" if mechanism == "gaussian" else "l1c"
    rng = np.random.default_rng(1)
    base = _curves(rng, 9)
    A = product_shrinkage(lam, ETA, PHI) / np.sqrt(np.outer(lam, lam))
    phi, r, L = basis.eigenfunctions, TAU * (1 - 1e-12), lam.size
    top = np.argsort(A, axis=None)[::-1][:8]  # the largest weights: where the worst pairs live
    pairs = []
    for j, l in zip(*np.unravel_index(top, A.shape)):
        if j != l:  # the rotated pair tau (phi_j +- phi_l) / sqrt 2
            pairs.append((r * (phi[:, j] + phi[:, l]) / math.sqrt(2), r * (phi[:, j] - phi[:, l]) / math.sqrt(2)))
        pairs += [(r * phi[:, j], -r * phi[:, j]), (r * phi[:, j], r * phi[:, l]), (r * phi[:, j], 0 * phi[:, j])]
    perron = np.abs(np.linalg.eigh(A)[1][:, -1])
    pairs += [(r * phi @ perron, -r * phi @ perron), (r * phi @ perron, 0 * phi[:, 0])]
    for _ in range(6):  # random pairs on the tau sphere of the span
        u, v = rng.standard_normal((2, L))
        pairs.append((r * phi @ (u / np.linalg.norm(u)), r * phi @ (v / np.linalg.norm(v))))
    pairs += [(rng.normal(size=M) * 30, rng.normal(size=M) * 0.01) for _ in range(2)]  # clipped to the ball
    plans = {}

    def plan_of(curve):
        key = curve.tobytes()
        if key not in plans:
            plans[key] = plan_covariance_release(FunctionalData(GRID, np.vstack([base, curve])), settings)
        return plans[key]

    shifts = [_shift(plan_of(a), plan_of(b), norm) for a, b in pairs]
    stated = plan_of(pairs[0][0]).sensitivity
    assert max(shifts) <= stated * (1 + 1e-9)
    if mechanism == "gaussian":  # the rotated pair at the largest A_jl attains the Gaussian bound
        assert max(shifts) >= 0.99 * stated
    else:
        # a valid bound, not attained in general: the Perron pair (vs 0) reaches r(A) tau^2 / n, half of 2 r(A)
        assert max(shifts) >= 0.45 * stated


def _write(path, values, subjects=None):
    frame = pd.DataFrame(values, columns=[str(k) for k in range(1, M + 1)])
    if subjects is not None:
        frame.insert(0, "subject", subjects)
    frame.to_csv(path, index=False, na_rep="", float_format="%.6g")
    return path


@pytest.fixture(scope="module")
def neighbours(tmp_path_factory):
    """D and its neighbours with default settings: the last curve clipped (far outside the range), dropped
    (a missing value), or the last person (two curves) replaced by someone else."""
    folder = tmp_path_factory.mktemp("long_neighbours")
    rng = np.random.default_rng(2)
    values = 0.5 + 0.5 * _curves(rng, 16)
    subjects = [f"s{i // 2}" for i in range(16)]
    clipped, dropped, person = values.copy(), values.copy(), values.copy()
    clipped[-1] = 5.0
    dropped[-1, 7] = np.nan
    person[-2:] = 0.9 - 0.7 * np.abs(np.sin(7 * np.pi * GRID))[None, :] * np.array([[1.0], [0.5]])
    return {"D": _write(folder / "D.csv", values, subjects),
            "clipped": _write(folder / "clipped.csv", clipped, subjects),
            "dropped": _write(folder / "dropped.csv", dropped, subjects),
            "person": _write(folder / "person.csv", person, subjects)}


def _same_public_record(a: dict, b: dict, output_keys):
    for record in (a, b):
        for key in ("created_utc", *output_keys):
            record.pop(key, None)
    assert a == b  # everything publishable but the noised output is the same on neighbours


@pytest.mark.parametrize("neighbour", ["clipped", "dropped", "person"])
@pytest.mark.parametrize("mechanism", ["gaussian", "iclp"])
def test_covariance_neighbours_on_a_long_grid(tmp_path, neighbours, neighbour, mechanism):
    person = ["--person-column", "subject"] if neighbour == "person" else []
    records, tables = [], []
    for which in ("D", neighbour):
        out = tmp_path / which
        assert main(["release", "covariance", "--preview", "--data", str(neighbours[which]), "--kernel", KERNEL,
                     "--rho", str(RHO), "--mechanism", mechanism, "--epsilon", "1", "--value-range", "0,1",
                     "--centring", "released-mean", "--seed", "3", *person, "--out", str(out)]) == 0
        records.append(json.loads((out / "release.json").read_text()))
        tables.append(pd.read_csv(out / "release.csv"))
    assert records[0]["m"] == M and records[0]["basis_truncation"]["grid_points"] == M
    assert records[0]["surface_grid"]["points"] == LONG_GRID_SURFACE_POINTS
    assert len(tables[0]) == LONG_GRID_SURFACE_POINTS**2
    pd.testing.assert_frame_equal(tables[0][["s", "t"]], tables[1][["s", "t"]])
    _same_public_record(*records, ("released_mean",))
    # The same pair through the planner: the estimates move by at most the stated sensitivity.
    settings = _settings(mechanism=mechanism, centre=None, tau=None, lo=0.0, hi=1.0,
                         person_column="subject" if person else None)
    p, q = (plan_covariance_release(load_curves(neighbours[which]), settings) for which in ("D", neighbour))
    assert p.n == q.n
    assert _shift(p, q, "cm" if mechanism == "gaussian" else "l1c") <= p.sensitivity * (1 + 1e-9)


def test_the_covariance_tail_is_stated_as_a_bias(dense):
    basis, lam = dense
    plan = plan_covariance_release(FunctionalData(GRID, _curves(np.random.default_rng(4), 10)),
                                   _settings(centring="released-mean"))
    tail = basis_truncation(plan)
    T = 1.0 - lam.sum()  # k(0) = 1 and the trapezoid weights sum to 1: trace(W^1/2 K W^1/2) = 1
    assert tail["omitted_eigenvalue_sum"] == pytest.approx(T, rel=1e-6, abs=1e-13)
    entry = (T * (lam[0] + T)) ** ETA / ((T * (lam[0] + T)) ** ETA + PHI)
    r = T**ETA / (T**ETA + PHI) * TAU
    assert tail["truncation_bias_hs_second_moment_max"] == pytest.approx(entry * TAU**2, rel=1e-6)
    assert tail["truncation_bias_hs_max"] == pytest.approx(entry * TAU**2 + math.sqrt(2 * TAU**2 * r**2 + r**4),
                                                           rel=1e-6)
    short = np.linspace(0, 1, 300)
    small = plan_covariance_release(FunctionalData(short, _curves(np.random.default_rng(4), 10)[:, ::8][:, :300]),
                                    _settings())
    assert basis_truncation(small) is None and small.surface_points.size == 300


def test_the_accuracy_sentence_states_the_covariance_tail():
    plan = plan_covariance_release(FunctionalData(GRID, _curves(np.random.default_rng(4), 10)), _settings())
    tail = basis_truncation(plan)
    L = tail["components"]
    assert accuracy_sentence(plan).endswith(
        f" On this 2,500-point grid the release is the {L} x {L} coefficient matrix in the kernel's top {L} "
        f"eigenfunctions (the surface is written on {LONG_GRID_SURFACE_POINTS} evenly spread grid points); leaving "
        f"out the rest (eigenvalues summing to at most {tail['omitted_share_of_trace']:.2g} of the total) biases the "
        f"covariance by at most {tail['truncation_bias_hs_max']:.3g} in HS norm (not part of the noise figures).")


def test_the_bound_on_the_largest_eigenvalue_holds():
    """lambda_1 + T bounds the true top eigenvalue (Cauchy interlacing), T the omitted sum: checked
    against a dense decomposition on a grid small enough for it."""
    grid = np.linspace(0, 1, 900)
    w = trapezoid_weights(grid)
    for kernel, rho in (("matern32", 0.1), ("exponential", 0.05)):
        true, _ = _dense_eigh(kernel, rho, None, grid, w)
        lam, _, tail = top_eigenpairs(_finite_kernel_row(kernel, rho, None), grid, w,
                                      lambda s, ws: _dense_eigh(kernel, rho, None, s, ws), 1e-12, components=40,
                                      subgrid=200)
        assert true[0] <= (lam[0] + tail) * (1 + 1e-12)
        assert true[lam.size:].sum() <= tail * (1 + 1e-9) + 1e-15


def test_the_surface_is_never_m_by_m():
    assert surface_index(1000).size == 1000
    idx = surface_index(20_000)
    assert idx.size == LONG_GRID_SURFACE_POINTS and idx[0] == 0 and idx[-1] == 19_999
    assert np.all(np.diff(idx) > 0)


# --------------------------------------------------------------------------- PCA on the long grid

def _top_sum(D, k):
    return float(np.sum(np.sort(np.linalg.eigvalsh(D))[::-1][:k]))


@pytest.mark.parametrize("neighbour", ["clipped", "dropped", "person"])
def test_pca_utility_sensitivity_on_long_grid_neighbours(neighbours, neighbour):
    """u(V) = tr(V' G V) moves by at most 1 for every orthonormal V: the top-k eigenvalue sums of
    G - G' and G' - G (the largest change over V, Ky Fan) are at most 1."""
    k = 2
    settings = PcaSettings(k=k, kernel=KERNEL, rho=RHO, epsilon=1.0, value_range=(0.0, 1.0),
                           person_column="subject" if neighbour == "person" else None)
    a, b = (pca_sums(load_curves(neighbours[which]), settings.validated()) for which in ("D", neighbour))
    assert a.n == b.n and a.basis.p == b.basis.p and a.basis.truncation is not None
    f, w = a.basis.functions, load_curves(neighbours["D"]).weights
    np.testing.assert_allclose(f.T @ (w[:, None] * f), np.eye(a.basis.p), atol=1e-12)
    D = a.gram - b.gram
    assert max(_top_sum(D, k), _top_sum(-D, k)) <= 1.0 + 1e-9
    assert max(_top_sum(D, k), _top_sum(-D, k)) > 1e-5  # the neighbour did change something


def test_pca_on_a_long_grid_states_its_span(dense):
    basis, lam = dense
    result = private_pca(FunctionalData(GRID, 0.5 + _curves(np.random.default_rng(5), 30)),
                         PcaSettings(k=2, kernel=KERNEL, rho=RHO, epsilon=1.0, value_range=(0.0, 1.0)),
                         np.random.default_rng(0))
    tail = pca_truncation(result)
    p = result.p
    share = np.cumsum(lam) / 1.0  # the whole trace is 1 here
    assert p == max(min(int(np.searchsorted(share, 0.99)) + 1, lam.size), 3)
    assert tail["outside_basis_share_of_trace"] == pytest.approx(1.0 - lam[:p].sum(), rel=1e-6)
    assert tail["p"] == p and "not in the release" in tail["statement"]
    assert result.components.shape == (M, 2)


@pytest.mark.parametrize("kind", ["covariance", "pca"])
def test_a_10000_point_release_exits_0(tmp_path, kind):
    m = 10_000
    t = np.linspace(0, 1, m)
    rng = np.random.default_rng(6)
    values = np.clip(0.4 * rng.normal(size=(40, 1)) * np.sin(2 * np.pi * t) + 0.05 * rng.normal(size=(40, m)), -2, 2)
    data = tmp_path / "long.csv"
    np.savetxt(data, values, delimiter=",", fmt="%.4f", header=",".join(str(k) for k in range(1, m + 1)), comments="")
    extra = ["--k", "2"] if kind == "pca" else ["--centring", "released-mean"]
    out = tmp_path / "out"
    assert main(["release", kind, "--preview", "--data", str(data), "--kernel", "matern52", "--rho", "0.1",
                 "--epsilon", "1", "--value-range=-2,2", "--seed", "1", *extra, "--out", str(out)]) == 0
    record = json.loads((out / "release.json").read_text())
    assert record["m"] == m and record["basis_truncation"]["grid_points"] == m
    rows = len((out / "release.csv").read_text().splitlines()) - 1
    assert rows == (LONG_GRID_SURFACE_POINTS**2 if kind == "covariance" else m)


def test_synthetic_comparison_on_a_long_grid_equals_the_dense_one(monkeypatch):
    """The synthetic release's comparison forms no m x m covariance above 2,000 points; its factor
    form gives the dense numbers (checked on a grid small enough for both)."""
    from fdp_core.releases import synthetic

    rng = np.random.default_rng(7)
    grid = np.linspace(0, 1, 300)
    w = trapezoid_weights(grid)
    real = rng.normal(size=(40, 1)) * np.sin(np.pi * grid) + 0.1 * rng.normal(size=(40, 300))
    synth = (rng.normal(size=(55, 1)) * np.sin(np.pi * grid) + 0.2 * rng.normal(size=(55, 1)) * np.cos(np.pi * grid)
             + 0.1 * rng.normal(size=(55, 300)))  # full rank: the top-3 subspace is well defined
    dense_numbers = synthetic.compare(real, synth, grid, w)
    monkeypatch.setattr(synthetic, "MAX_DENSE_EIGH_POINTS", 10)
    factor_numbers = synthetic.compare(real, synth, grid, w)
    for key in ("covariance_hs_distance", "real_covariance_hs_norm", "subspace_distance_top3"):
        assert factor_numbers[key] == pytest.approx(dense_numbers[key], rel=1e-9, abs=1e-12)


def test_regression_on_a_long_grid_states_its_tail_and_keeps_its_sensitivity(dense):
    """T2 in the top-L basis: a replaced curve (and covariate) moves it by at most the stated CM
    sensitivity, 2 B tau max_l s_l / sqrt(lambda_l) / n on the Rayleigh quotients; the tail is s(T) B tau."""
    from fdp_core.data.loading import from_arrays
    from fdp_core.releases.regression import RegressionSettings, plan_regression_release
    from fdp_core.releases.regression import basis_truncation as regression_truncation

    basis, lam = dense
    rng = np.random.default_rng(8)
    n, B = 12, 2.0
    values = 0.5 + 0.5 * _curves(rng, n)
    age = rng.uniform(-1, 1, n)
    settings = RegressionSettings(covariates=("age",), bound_b=B, kernel=KERNEL, rho=RHO, eta=ETA, phi=PHI,
                                  lo=0.0, hi=1.0, epsilon=1.0, delta=1e-5)
    plan = plan_regression_release(from_arrays(GRID, values, metadata={"age": age}), settings)
    s = lam**ETA / (lam**ETA + PHI)
    tau = 0.5
    assert plan.t2_sensitivity == pytest.approx(2 * B * tau * np.max(s / np.sqrt(lam)) / n, rel=1e-8)
    worst = 0.0
    for trial in range(4):
        other, other_age = values.copy(), age.copy()
        other[-1] = 5.0 if trial % 2 else 0.5 + rng.normal(size=M)
        other_age[-1] = (-1) ** trial * 50.0  # clipped to the covariate ball
        q = plan_regression_release(from_arrays(GRID, other, metadata={"age": other_age}), settings)
        shift = math.sqrt(float(np.sum((plan.t2 - q.t2) ** 2 / lam[None, :])))
        assert shift <= plan.t2_sensitivity * (1 + 1e-9)
        worst = max(worst, shift)
    assert worst > 0.05 * plan.t2_sensitivity
    tail = regression_truncation(plan)
    T = 1.0 - lam.sum()
    assert tail["truncation_bias_t2_max"] == pytest.approx(T**ETA / (T**ETA + PHI) * B * tau, rel=1e-6)
