"""Long grids (METHODS.md 27): the top-L eigenpairs above 2,000 grid points.

Privacy needs only that the estimator, the noise and the sensitivity use one orthonormal
basis with positive lambdas; these tests check that basis against independent dense
computations (the Gram matrix K formed in full), the sensitivity against neighbouring data
sets and an independent formula, and the stated tail.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fdp_core import limits
from fdp_core.data.loading import from_arrays
from fdp_core.kernels import _dense_eigh, _finite_kernel_row, eigenbasis, kernel_matrix, trapezoid_weights
from fdp_core.long_grid import kernel_times, top_eigenpairs
from fdp_core.releases.mean import MeanSettings, accuracy_sentence, basis_truncation, plan_mean_release

ROOT = Path(__file__).resolve().parents[1]
M_LONG = 3000
TAU = 1.0


def _row(kernel, rho):
    return _finite_kernel_row(kernel, rho, None)


@pytest.mark.parametrize("regular", [True, False])
def test_the_fast_kernel_product_equals_the_dense_one(regular):
    rng = np.random.default_rng(0)
    grid = np.linspace(0, 1, 700) if regular else np.sort(rng.uniform(0, 1, 700))
    x = rng.standard_normal((700, 5))
    dense = kernel_matrix("matern32", grid, grid, 0.1) @ x
    np.testing.assert_allclose(kernel_times(_row("matern32", 0.1), grid, x), dense, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kernel,rho", [("matern52", 0.1), ("gaussian", 0.1), ("exponential", 0.2)])
def test_top_eigenpairs_match_the_dense_decomposition(kernel, rho):
    """The long-grid method run on a grid small enough to decompose densely: the leading
    eigenvalues agree, and the stated tail bounds the true omitted sum from above."""
    grid = np.linspace(0, 1, 900)
    w = trapezoid_weights(grid)
    lam_dense, _ = _dense_eigh(kernel, rho, None, grid, w)
    lam, phi, tail = top_eigenpairs(_row(kernel, rho), grid, w, lambda s, ws: _dense_eigh(kernel, rho, None, s, ws),
                                    1e-12, components=60, subgrid=300)
    top = min(lam.size, 10)
    np.testing.assert_allclose(lam[:top], lam_dense[:top], rtol=1e-5)
    assert np.all(lam <= lam_dense[:lam.size] * (1 + 1e-9) + 1e-13 * lam[0])  # Ritz values never exceed (Cauchy)
    assert tail >= lam_dense[lam.size:].sum() * (1 - 1e-9)


@pytest.fixture(scope="module")
def long_basis():
    grid = np.linspace(0, 1, M_LONG)
    return grid, eigenbasis("matern32", 0.1, grid)


def test_long_basis_is_orthonormal_with_rayleigh_quotient_eigenvalues(long_basis):
    grid, basis = long_basis
    assert basis.truncated and 0 < basis.n_components <= 200
    w, phi, lam = basis.weights, basis.eigenfunctions, basis.eigenvalues
    np.testing.assert_allclose(phi.T @ (w[:, None] * phi), np.eye(lam.size), atol=1e-12)
    K = kernel_matrix("matern32", grid, grid, 0.1)  # formed in full: the independent computation
    wphi = w[:, None] * phi
    rayleigh = np.einsum("il,il->l", wphi, K @ wphi)
    np.testing.assert_allclose(lam, rayleigh, rtol=1e-10, atol=1e-15)
    assert np.all(lam > 0) and np.all(np.diff(lam) <= 0)
    assert basis.tail_trace == pytest.approx(w.sum() - lam.sum(), rel=1e-9, abs=1e-12)
    np.testing.assert_allclose(basis.projector, wphi)


def _settings(**kw):
    return MeanSettings(**{**dict(kernel="matern32", rho=0.1, eta=1.5, phi=1e-3, epsilon=1.0, delta=0.1, tau=TAU),
                           **kw})


def _curves(rng, n, grid):
    t = grid[None, :]
    return 0.4 * rng.normal(size=(n, 1)) * np.sin(np.pi * t) + 0.05 * rng.normal(size=(n, grid.size))


def test_long_grid_sensitivity_holds_on_neighbours_and_matches_an_independent_formula(long_basis):
    grid, basis = long_basis
    rng = np.random.default_rng(3)
    base = _curves(rng, 12, grid)
    settings = _settings()
    plan = plan_mean_release(from_arrays(grid, base), settings)
    # Independent: lambda from the dense Rayleigh quotients, s_l = lambda^eta / (lambda^eta + phi),
    # Delta = 2 tau / n * max_l s_l / sqrt(lambda_l).
    K = kernel_matrix("matern32", grid, grid, 0.1)
    wphi = basis.weights[:, None] * basis.eigenfunctions
    lam = np.einsum("il,il->l", wphi, K @ wphi)
    s = lam**1.5 / (lam**1.5 + 1e-3)
    expected = 2 * TAU / 12 * np.max(s / np.sqrt(lam))
    assert plan.sensitivity == pytest.approx(expected, rel=1e-9)
    assert plan.synthesis.shape == (M_LONG, basis.n_components)

    def cm(a, b):
        plans = [plan_mean_release(from_arrays(grid, np.vstack([x, base[1:]])), settings) for x in (a, b)]
        diff = plans[0].estimate_coefficients - plans[1].estimate_coefficients
        return float(np.sqrt(np.sum(diff**2 / basis.eigenvalues)))

    worst = 0.0
    for _ in range(20):  # random neighbours, many far outside the tau ball (clipped)
        worst = max(worst, cm(rng.normal(size=M_LONG) * rng.uniform(0.1, 20), rng.normal(size=M_LONG)))
    for l in (0, 5, basis.n_components - 1):
        worst = max(worst, cm(3 * TAU * basis.eigenfunctions[:, l], -3 * TAU * basis.eigenfunctions[:, l]))
    assert worst <= plan.sensitivity * (1 + 1e-9)
    l_star = int(np.argmax(s / np.sqrt(lam)))  # the Cauchy-Schwarz pair attains it
    attained = cm(TAU * basis.eigenfunctions[:, l_star], -TAU * basis.eigenfunctions[:, l_star])
    assert attained == pytest.approx(plan.sensitivity, rel=1e-6)


def test_the_tail_is_stated_as_a_bias(long_basis):
    grid, basis = long_basis
    plan = plan_mean_release(from_arrays(grid, _curves(np.random.default_rng(4), 10, grid)), _settings())
    tail = basis_truncation(plan)
    assert tail["components"] == basis.n_components and tail["grid_points"] == M_LONG
    T = basis.tail_trace
    assert tail["truncation_bias_l2_max"] == pytest.approx(T**1.5 / (T**1.5 + 1e-3) * TAU)
    short = np.linspace(0, 1, 200)
    assert basis_truncation(plan_mean_release(from_arrays(short, _curves(np.random.default_rng(4), 10, short)),
                                              _settings())) is None


def test_the_accuracy_sentence_states_the_tail(long_basis):
    grid, basis = long_basis
    plan = plan_mean_release(from_arrays(grid, _curves(np.random.default_rng(4), 10, grid)), _settings())
    tail = basis_truncation(plan)
    assert accuracy_sentence(plan).endswith(
        f" On this 3,000-point grid the release uses the kernel's top {basis.n_components} eigenfunctions; leaving "
        f"out the rest (eigenvalues summing to at most {tail['omitted_share_of_trace']:.2g} of the total) biases it "
        f"by at most {tail['truncation_bias_l2_max']:.3g} in L2 (not part of the noise figures).")


def test_a_release_on_a_10000_point_grid_exits_0_with_its_tail(tmp_path):
    grid = np.arange(1, 10_001)
    values = _curves(np.random.default_rng(5), 40, np.linspace(0, 1, grid.size))
    data = tmp_path / "long.csv"
    np.savetxt(data, values, delimiter=",", fmt="%.5f", header=",".join(map(str, grid)), comments="")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "fdp_core", "release", "mean", "--data", str(data), "--epsilon", "1",
                           "--kernel", "matern52", "--rho", "0.1", "--value-range", "-2,2", "--preview", "--seed", "1",
                           "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    record = json.loads((out / "release.json").read_text())
    assert record["m"] == 10_000 and record["basis_truncation"]["components"] <= 200
    assert len((out / "release.csv").read_text().splitlines()) == 10_001


def test_the_grid_limit_is_twenty_thousand_points():
    assert limits.MAX_GRID_POINTS >= 20_000
