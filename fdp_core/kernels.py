"""Covariance kernels and their discretised (Nystrom) eigenbasis, METHODS.md section 1.

The eigendecomposition is the only O(m^3) step of the pipeline, so it is cached per
(kernel, rho, nu, grid, weights); on a long grid only its top eigenpairs are computed
(fdp_core/long_grid.py). Arrays in a cached :class:`Eigenbasis` are
read-only so that no caller can corrupt the cache.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from .errors import ParameterError
from .threads import single_blas_thread, small_problem
from .limits import MAX_DENSE_EIGH_POINTS, check_grid_points
from .params import check_choice, check_positive

KERNEL_NAMES = ("gaussian", "matern52", "matern32", "exponential", "matern")

KERNEL_LABELS = {
    "gaussian": "Gaussian (C1): exp(-d^2 / rho)",
    "matern52": "Matern 5/2 (C2)",
    "matern32": "Matern 3/2 (C3)",
    "exponential": "Exponential (C4): exp(-d / rho)",
    "matern": "Matern (general nu)",
}

# Eigenvalue decay exponent beta (lambda_j ~ j^-beta) used by PSS; Matern nu in 1-d
# gives beta = 2 nu + 1. The Gaussian kernel decays faster than any power (None).
_MATERN_NU = {"matern52": 2.5, "matern32": 1.5, "exponential": 0.5}


def matern_nu(kernel: str, nu: float | None = None) -> float | None:
    """Smoothness nu of a Matern-family kernel (None for the Gaussian kernel)."""
    if kernel == "matern":
        return check_positive("nu", nu)
    return _MATERN_NU.get(kernel)


def kernel_function(kernel: str, d: np.ndarray, rho: float, nu: float | None = None) -> np.ndarray:
    """k as a function of the distance d = |s - t| (names and scalings of METHODS.md 1).

    The Gaussian kernel is exp(-d^2 / rho): it divides by rho, not 2 rho^2, following
    the literature this project reproduces.
    """
    check_choice("kernel", kernel, KERNEL_NAMES)
    rho = check_positive("rho", rho)
    d = np.abs(np.asarray(d, dtype=float))
    # A tiny rho overflows d / rho; the callers refuse a non-finite Gram matrix with a
    # one-line message, so numpy's RuntimeWarning lines would only clutter it.
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        return _kernel_values(kernel, d, rho, nu)


def _kernel_values(kernel: str, d: np.ndarray, rho: float, nu: float | None) -> np.ndarray:
    if kernel == "gaussian":
        return np.exp(-(d**2) / rho)
    if kernel == "matern52":
        r = np.sqrt(5.0) * d / rho
        return (1.0 + r + r**2 / 3.0) * np.exp(-r)
    if kernel == "matern32":
        r = np.sqrt(3.0) * d / rho
        return (1.0 + r) * np.exp(-r)
    if kernel == "exponential":
        return np.exp(-d / rho)
    nu = check_positive("nu", nu)
    r = np.sqrt(2.0 * nu) * d / rho
    out = np.ones_like(r)
    pos = r > 0
    # kv(nu, 0) is infinite; the limit of the whole expression at d = 0 is 1.
    rp = r[pos]
    # scipy.special takes ~0.15-0.3 s to import (it pulls numpy.f2py and unittest in);
    # imported where used so that importing the library and starting the CLI do not pay for it.
    from scipy import special

    out[pos] = (2.0 ** (1.0 - nu) / special.gamma(nu)) * rp**nu * special.kv(nu, rp)
    # For very large r, kv underflows to 0 and rp**nu may overflow: the kernel is 0 there.
    out[~np.isfinite(out)] = 0.0
    return out


def kernel_matrix(kernel: str, s, t, rho: float, nu: float | None = None) -> np.ndarray:
    """Gram matrix K_ij = k(s_i, t_j)."""
    s = np.asarray(s, dtype=float)
    t = np.asarray(t, dtype=float)
    return kernel_function(kernel, s[:, None] - t[None, :], rho, nu)


def trapezoid_weights(grid: np.ndarray) -> np.ndarray:
    """Quadrature weights w with sum_j w_j f(t_j) ~ integral f (works on uneven grids)."""
    grid = np.asarray(grid, dtype=float)
    if grid.ndim != 1 or grid.size < 2:
        raise ParameterError("a grid needs at least 2 points")
    gaps = np.diff(grid)
    if np.any(gaps <= 0):
        raise ParameterError("grid points must be strictly increasing")
    w = np.zeros_like(grid)
    w[:-1] += gaps / 2.0
    w[1:] += gaps / 2.0
    return w


@dataclass(frozen=True)
class Eigenbasis:
    """Eigenpairs of the discretised covariance operator of a kernel on a grid.

    ``eigenfunctions[:, l]`` holds phi_l on the grid; they are orthonormal in the
    weighted inner product <f, g> = sum_j w_j f_j g_j. ``eigenvalues`` are sorted
    descending and only those > rel_tol * lambda_1 are kept (L of them).
    """

    kernel: str
    rho: float
    nu: float | None
    grid: np.ndarray
    weights: np.ndarray
    eigenvalues: np.ndarray
    eigenfunctions: np.ndarray
    projector: np.ndarray = field(repr=False)  # W phi: coefficients are values @ projector
    # Public upper bound on the eigenvalues left out (sum over l > L): ~0 on a dense grid,
    # the stated tail of a long grid's top-L basis (METHODS.md 27, fdp_core/long_grid.py).
    tail_trace: float = 0.0

    @property
    def trace(self) -> float:
        """trace(W^1/2 K W^1/2) = k(0) sum_j w_j: the sum of all eigenvalues, public."""
        return float(kernel_function(self.kernel, np.zeros(1), self.rho, self.nu)[0] * self.weights.sum())

    @property
    def truncated(self) -> bool:
        """Whether the basis is a long grid's top L (its tail beyond L is a bias of the release)."""
        return self.grid.size > MAX_DENSE_EIGH_POINTS

    @property
    def n_components(self) -> int:
        return int(self.eigenvalues.size)

    def tail(self) -> dict | None:
        """A long grid's tail as its releases state it (METHODS.md 27), public numbers only: the grid's
        size, the L eigenpairs kept, the bound on the omitted eigenvalues' sum and the whole trace.
        None when nothing is left out (a grid decomposed in full)."""
        if not self.truncated:
            return None
        return dict(grid_points=int(self.grid.size), components=self.n_components,
                    omitted_eigenvalue_sum=self.tail_trace, kernel_trace=self.trace)

    def coefficients(self, values: np.ndarray) -> np.ndarray:
        """x_l = <X, phi_l> for each row X of ``values`` (shape (..., m) -> (..., L))."""
        return np.asarray(values, dtype=float) @ self.projector

    def synthesize(self, coefficients: np.ndarray) -> np.ndarray:
        """sum_l c_l phi_l on the grid (shape (..., L) -> (..., m))."""
        return np.asarray(coefficients, dtype=float) @ self.eigenfunctions.T


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=float)
    a.setflags(write=False)
    return a


def _dense_eigh(kernel, rho, nu, grid, w) -> tuple[np.ndarray, np.ndarray]:
    """All eigenpairs (lambda descending, phi = W^-1/2 U) of W^1/2 K W^1/2 by one dense eigh."""
    sw = np.sqrt(w)
    K = kernel_matrix(kernel, grid, grid, rho, nu)
    M = sw[:, None] * K * sw[None, :]
    if not np.all(np.isfinite(M)):
        raise ParameterError(f"rho = {rho:g} is outside the range where the {kernel} kernel can be evaluated on "
                             "this grid; choose a larger rho")
    try:
        with small_problem(M.shape[0]):
            lam, U = np.linalg.eigh((M + M.T) / 2.0)
    except np.linalg.LinAlgError:
        raise ParameterError(f"the {kernel} kernel with rho = {rho:g} has no stable eigendecomposition on this "
                             "grid; choose a larger rho") from None
    order = np.argsort(lam)[::-1]
    return lam[order], U[:, order] / sw[:, None]


def _finite_kernel_row(kernel, rho, nu):
    """k at distances d, refusing a rho whose values are not finite (as the dense path does)."""
    def row(d):
        values = kernel_function(kernel, d, rho, nu)
        if not np.all(np.isfinite(values)):
            raise ParameterError(f"rho = {rho:g} is outside the range where the {kernel} kernel can be evaluated "
                                 "on this grid; choose a larger rho")
        return values
    return row


def _build(kernel, rho, nu, grid_bytes, weights_bytes, rel_tol) -> Eigenbasis:
    grid = np.frombuffer(grid_bytes, dtype=float)
    w = np.frombuffer(weights_bytes, dtype=float)
    if grid.size <= MAX_DENSE_EIGH_POINTS:
        lam, phi = _dense_eigh(kernel, rho, nu, grid, w)
        keep = lam > rel_tol * lam[0]
        tail = float(np.sum(np.clip(lam[~keep], 0.0, None)))
        lam, phi = lam[keep], phi[:, keep]
    else:
        from .long_grid import top_eigenpairs  # lazy: grids above MAX_DENSE_EIGH_POINTS only

        # One BLAS thread: the QR and the sub-grid eigh are 2-5x slower threaded on a shared machine.
        with single_blas_thread():
            lam, phi, tail = top_eigenpairs(_finite_kernel_row(kernel, rho, nu), grid, w,
                                            lambda sub, ws: _dense_eigh(kernel, rho, nu, sub, ws), rel_tol)
    return Eigenbasis(kernel, float(rho), nu, _readonly(grid), _readonly(w), _readonly(lam),
                      _readonly(phi), _readonly(w[:, None] * phi), tail)


@lru_cache(maxsize=64)
def _eigenbasis_cached(kernel, rho, nu, grid_bytes, weights_bytes, rel_tol) -> Eigenbasis:
    return _build(kernel, rho, nu, grid_bytes, weights_bytes, rel_tol)


# A long grid's basis is m x L twice (32 MB at m = 10,000, L = 200): few are kept.
@lru_cache(maxsize=4)
def _long_eigenbasis_cached(kernel, rho, nu, grid_bytes, weights_bytes, rel_tol) -> Eigenbasis:
    return _build(kernel, rho, nu, grid_bytes, weights_bytes, rel_tol)


def eigenbasis(kernel: str, rho: float, grid, weights=None, *, nu: float | None = None,
               rel_tol: float = 1e-12) -> Eigenbasis:
    """Nystrom eigenbasis: eigendecompose W^1/2 K W^1/2 = U diag(lambda) U^T, phi = W^-1/2 U.

    ``weights`` default to trapezoid weights of ``grid``. Cached per arguments. Above
    limits.MAX_DENSE_EIGH_POINTS points only the top eigenpairs are computed
    (fdp_core/long_grid.py, METHODS.md 27): still orthonormal, lambda their Rayleigh quotients.

    Parameters
    ----------
    kernel : str
        ``gaussian``, ``matern52``, ``matern32``, ``exponential`` or ``matern`` (with ``nu``).
    rho : float
        The kernel's range.
    grid : array (m,)
        The public grid.
    weights : array (m,), optional
        Quadrature weights of the L2 inner product (default: trapezoid).
    nu : float, optional
        The Matern smoothness.
    rel_tol : float
        Eigenvalues below rel_tol times the largest are dropped.

    Returns
    -------
    Eigenbasis
        ``eigenvalues`` (L,) and ``eigenfunctions`` (m, L), orthonormal in the weighted inner product.

    Examples
    --------
    The eigenfunctions are orthonormal in the weighted inner product:

    >>> import numpy as np
    >>> grid = np.linspace(0, 1, 101)
    >>> basis = eigenbasis("matern52", 0.1, grid)
    >>> gram = basis.eigenfunctions.T @ (basis.weights[:, None] * basis.eigenfunctions)
    >>> bool(np.allclose(gram, np.eye(basis.n_components), atol=1e-8))
    True
    >>> bool(np.all(np.diff(basis.eigenvalues) <= 0))
    True
    """
    check_choice("kernel", kernel, KERNEL_NAMES)
    rho = check_positive("rho", rho)
    nu = matern_nu(kernel, nu) if kernel == "matern" else None
    grid = np.ascontiguousarray(grid, dtype=float)
    check_grid_points(grid.size)
    weights = trapezoid_weights(grid) if weights is None else np.ascontiguousarray(weights, dtype=float)
    cached = _eigenbasis_cached if grid.size <= MAX_DENSE_EIGH_POINTS else _long_eigenbasis_cached
    return cached(kernel, rho, nu, grid.tobytes(), weights.tobytes(), float(rel_tol))
