"""Kernels and the Nystrom eigenbasis (METHODS.md section 1)."""

import numpy as np
import pytest
from scipy import special

from fdp_core.errors import ParameterError
from fdp_core.kernels import KERNEL_NAMES, eigenbasis, kernel_function, kernel_matrix, trapezoid_weights

UNEVEN = np.sort(np.concatenate([[0.0, 1.0], np.random.default_rng(3).uniform(0, 1, 58)]))


@pytest.mark.parametrize("grid", [np.linspace(0, 1, 60), UNEVEN], ids=["uniform", "uneven"])
@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_eigenfunctions_orthonormal_in_weighted_inner_product(kernel, grid):
    basis = eigenbasis(kernel, 0.2, grid, nu=1.2)
    phi, w = basis.eigenfunctions, basis.weights
    gram = phi.T @ (w[:, None] * phi)
    np.testing.assert_allclose(gram, np.eye(basis.n_components), atol=1e-8)
    assert np.all(np.diff(basis.eigenvalues) <= 0)


@pytest.mark.parametrize("grid", [np.linspace(0, 1, 60), UNEVEN], ids=["uniform", "uneven"])
@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_eigenpairs_reconstruct_the_kernel(kernel, grid):
    """K(t_i, t_j) = sum_l lambda_l phi_l(t_i) phi_l(t_j) up to the dropped tiny eigenvalues."""
    basis = eigenbasis(kernel, 0.2, grid, nu=1.2)
    K = kernel_matrix(kernel, grid, grid, 0.2, nu=1.2)
    rebuilt = (basis.eigenfunctions * basis.eigenvalues) @ basis.eigenfunctions.T
    np.testing.assert_allclose(rebuilt, K, atol=1e-6)


def test_eigenvalues_approximate_the_integral_operator():
    """Operator eigenvalues converge as the grid refines (they are not matrix eigenvalues)."""
    coarse = eigenbasis("exponential", 0.3, np.linspace(0, 1, 200)).eigenvalues[:5]
    fine = eigenbasis("exponential", 0.3, np.linspace(0, 1, 800)).eigenvalues[:5]
    np.testing.assert_allclose(coarse, fine, rtol=2e-3)
    # The trace of the operator is the integral of k(t, t) = 1 over [0, 1].
    assert eigenbasis("exponential", 0.3, np.linspace(0, 1, 800)).eigenvalues.sum() == pytest.approx(1.0, rel=1e-6)


def test_named_kernels_match_general_matern():
    d = np.linspace(0, 2, 50)
    for name, nu in [("exponential", 0.5), ("matern32", 1.5), ("matern52", 2.5)]:
        np.testing.assert_allclose(kernel_function(name, d, 0.3), kernel_function("matern", d, 0.3, nu=nu),
                                   rtol=1e-10, atol=1e-14)


def test_gaussian_kernel_divides_by_rho_not_two_rho_squared():
    assert kernel_function("gaussian", np.array([0.3]), 0.5)[0] == pytest.approx(np.exp(-0.09 / 0.5))


def test_general_matern_formula_and_zero_distance():
    d, rho, nu = np.array([0.0, 0.1, 0.7]), 0.4, 0.8
    r = np.sqrt(2 * nu) * d[1:] / rho
    expected = 2 ** (1 - nu) / special.gamma(nu) * r**nu * special.kv(nu, r)
    out = kernel_function("matern", d, rho, nu=nu)
    assert out[0] == 1.0
    np.testing.assert_allclose(out[1:], expected)


def test_trapezoid_weights_integrate_linear_functions_exactly_on_uneven_grids():
    w = trapezoid_weights(UNEVEN)
    assert w @ (3 * UNEVEN + 1) == pytest.approx(2.5)


def test_cache_returns_the_same_read_only_object():
    grid = np.linspace(0, 1, 40)
    a = eigenbasis("matern32", 0.1, grid)
    assert eigenbasis("matern32", 0.1, grid.copy()) is a
    with pytest.raises(ValueError):
        a.eigenfunctions[0, 0] = 1.0


@pytest.mark.parametrize("rho", [0, -1, np.nan])
def test_bad_rho_is_rejected(rho):
    with pytest.raises(ParameterError, match="rho"):
        eigenbasis("gaussian", rho, np.linspace(0, 1, 10))


def test_unknown_kernel_is_rejected():
    with pytest.raises(ParameterError, match="kernel"):
        kernel_function("cauchy", np.zeros(1), 0.1)
