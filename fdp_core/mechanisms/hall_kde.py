"""Hall, Rinaldo & Wasserman (2013): Gaussian KDE + Gaussian-process noise, (epsilon, delta)-DP.

The estimate is the Gaussian KDE f_D(x) = (1/n) sum_i (2 pi h^2)^(-d/2) exp(-||x - x_i||^2 / (2 h^2))
and the release is f_D + sigma G, G a centred Gaussian process with covariance
k(x, y) = exp(-||x - y||^2 / (2 h^2)). f_D is (2 pi h^2)^(-d/2) / n times a sum of the RKHS
representers k(., x_i), so replacing x by x' moves it by an RKHS norm of
(2 pi h^2)^(-d/2)/n * sqrt(2 - 2 k(x, x')) (bounds in fdp_core/sensitivity.py:
:func:`~fdp_core.sensitivity.hall_sensitivities`). The grid release is a projection of the
function release (the Mahalanobis norm of the grid vector is at most the RKHS norm), and the
eigenvalue floor below only enlarges the covariance, so both stay valid on the grid.

Coordinates: box coordinates throughout (h in the data's units; bumps near the box's edges
lose some mass outside it). 2-d: the isotropic Gaussian RBF factorises over axes, so the
Gram matrix is a Kronecker product and its eigenpairs are products of the 1-d ones (the
G^2 x G^2 matrix is never decomposed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..releases.box import (DATA_DEPENDENT_BANDWIDTH, box_diameter, default_bandwidth, grid_weights,
                   kde_grids, kde_sums, silverman_bandwidth)
from ..errors import ParameterError
from ..params import check_choice, check_delta, check_epsilon, check_positive
from ..sensitivity import KDE_BOUNDS, hall_sensitivities
from ..threads import small_problem
from .calibration import CALIBRATIONS, gaussian_sigma, gaussian_sigma_both
from .discrete import UNIT_ROUNDOFF
from .families import GAUSSIAN
from .guarantee import Guarantee
from .kde_plan import KdeNoisePlan

# Every eigenvalue of the Hall Gram matrix is raised to max(lambda, 0) + EIGEN_FLOOR * lambda_1.
EIGEN_FLOOR = 1e-10


# --------------------------------------------------------------------------- the estimate

def _gaussian_bumps(grid: np.ndarray, x: np.ndarray, h: float, out: np.ndarray) -> np.ndarray:
    """out[i, j] = exp(-(grid_j - x_i)^2 / (2 h^2)), written in place.

    In-place ufuncs on cache-sized blocks: this is the hot loop of the density page
    (n x G exponentials), about 4x faster than the naive expression.
    """
    scale = 1.0 / (h * math.sqrt(2.0))
    np.subtract((grid * scale)[None, :], (x * scale)[:, None], out=out)
    np.multiply(out, out, out=out)
    np.negative(out, out=out)
    return np.exp(out, out=out)


def hall_estimate(points: np.ndarray, grids: tuple, h: float, chunk: int = 256) -> np.ndarray:
    """Non-private Gaussian KDE on the grid (box coordinates), shape (G,) or (G1, G2).

    The isotropic Gaussian factorises over axes, so the 2-d estimate is E1^T E2 / n (no
    n x G^2 array is ever formed).
    """
    n, d = points.shape
    return hall_normaliser(n, h, d) * hall_bump_sums(points, grids, h, chunk)


def hall_normaliser(n: int, h: float, d: int) -> float:
    return 1.0 / (n * (2.0 * math.pi * h * h) ** (d / 2.0))


def hall_bump_sums(points: np.ndarray, grids: tuple, h: float, chunk: int = 256) -> np.ndarray:
    """sum_i exp(-||x - x_i||^2 / (2 h^2)) on the grid: the Gaussian KDE's sufficient statistic
    (additive over chunks of observations, METHODS.md 17)."""
    n, d = points.shape
    bufs = [np.empty((chunk, g.size)) for g in grids]
    total = np.zeros(tuple(g.size for g in grids))
    for start in range(0, n, chunk):
        block = points[start:start + chunk]
        E = [_gaussian_bumps(g, block[:, a], h, buf[:block.shape[0]]) for a, (g, buf) in enumerate(zip(grids, bufs))]
        total += E[0].sum(axis=0) if d == 1 else E[0].T @ E[1]
    return total


# --------------------------------------------------------------------------- the noise

@lru_cache(maxsize=16)
def _rbf_gram_eigh_cached(grid_bytes: bytes, h: float) -> tuple[np.ndarray, np.ndarray]:
    grid = np.frombuffer(grid_bytes, dtype=float)
    diff = (grid[:, None] - grid[None, :]) / h
    gram = np.exp(-0.5 * diff * diff)
    with small_problem(grid.size):
        lam, U = np.linalg.eigh(gram)
    order = np.argsort(lam)[::-1]
    lam, U = np.ascontiguousarray(lam[order]), np.ascontiguousarray(U[:, order])
    lam.setflags(write=False)
    U.setflags(write=False)
    return lam, U


def rbf_gram_eigh(grid: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray]:
    """Eigenpairs (descending, raw: may include tiny negative rounding values) of the Gram
    matrix exp(-(s - t)^2 / (2 h^2)) on a 1-d grid. Cached per (grid, h): O(G^3) once."""
    grid = np.ascontiguousarray(grid, dtype=float)
    return _rbf_gram_eigh_cached(grid.tobytes(), float(h))


def floored_eigenvalues(eigenvalues: np.ndarray) -> np.ndarray:
    """max(lambda, 0) + EIGEN_FLOOR * lambda_1 for *every* eigenvalue.

    Never drop a direction: f_D has components along the near-null eigenvectors of the
    Gram matrix, and a direction without noise would be released exactly. The floor only
    enlarges the covariance, which can only lower the privacy loss.
    """
    lam = np.asarray(eigenvalues, dtype=float)
    return np.maximum(lam, 0.0) + EIGEN_FLOOR * float(lam.max())


@dataclass(frozen=True)
class _HallNoise:
    """sigma * G on the grid with G ~ N(0, U diag(lambda_floored) U^T), per axis factors in 2-d.

    In the orthogonal frame U (U1 kron U2 in 2-d) the noise is independent N(0, scales^2) per
    coefficient: the commit releases the coefficients U^T f with those scales and maps them
    back with :meth:`synthesize`.
    """

    sigma: float
    axes_vectors: tuple  # U (G, G) per axis
    sqrt_floored: np.ndarray  # (G,) or (G1, G2): sqrt of floored (product) eigenvalues

    def draw(self, rng: np.random.Generator, size: int) -> np.ndarray:
        z = rng.standard_normal((size,) + self.sqrt_floored.shape) * self.sqrt_floored
        if len(self.axes_vectors) == 1:
            return self.sigma * (z @ self.axes_vectors[0].T)
        U1, U2 = self.axes_vectors
        # (U1 kron U2) vec(Z) = vec(U1 Z U2^T) in row-major order.
        return self.sigma * (U1 @ z @ U2.T)

    @property
    def scales(self) -> np.ndarray:
        """Noise sd of each coefficient in the frame U: sigma sqrt(lambda~_j), grid-shaped."""
        return self.sigma * self.sqrt_floored

    def to_coefficients(self, values: np.ndarray) -> np.ndarray:
        """U^T f (U1^T F U2 in 2-d): grid values in the noise's orthogonal frame."""
        if len(self.axes_vectors) == 1:
            return self.axes_vectors[0].T @ values
        return self.axes_vectors[0].T @ values @ self.axes_vectors[1]

    def synthesize(self, coefficients: np.ndarray) -> np.ndarray:
        """U c (U1 C U2^T in 2-d): the inverse of :meth:`to_coefficients`."""
        if len(self.axes_vectors) == 1:
            return self.axes_vectors[0] @ coefficients
        return self.axes_vectors[0] @ coefficients @ self.axes_vectors[1].T

    def covariance(self) -> np.ndarray:
        """The claimed noise covariance sigma^2 K_floored on the flattened grid (tests, small grids)."""
        U = self.axes_vectors[0]
        for V in self.axes_vectors[1:]:
            U = np.kron(U, V)
        return self.sigma**2 * (U * self.sqrt_floored.ravel() ** 2) @ U.T

    def pointwise_variance(self) -> np.ndarray:
        """diag(sigma^2 K_floored), same shape as the grid."""
        lam = self.sqrt_floored**2
        if len(self.axes_vectors) == 1:
            return self.sigma**2 * ((self.axes_vectors[0] ** 2) @ lam)
        U1, U2 = self.axes_vectors
        return self.sigma**2 * ((U1**2) @ lam @ (U2**2).T)


def _hall_noise(grids: tuple, h: float, sigma: float) -> _HallNoise:
    pairs = [rbf_gram_eigh(g, h) for g in grids]
    if len(pairs) == 1:
        lam = pairs[0][0]
    else:
        # Eigenvalues of K1 kron K2 are the products lambda1_i lambda2_j; the floor refers to
        # the largest of them (lambda_1 of the full Gram matrix).
        lam = np.outer(pairs[0][0], pairs[1][0])
    return _HallNoise(float(sigma), tuple(U for _, U in pairs), np.sqrt(floored_eigenvalues(lam)))


def hall_float_error_bound(n: int, bandwidth: float, scales: np.ndarray) -> float:
    """Worst-case float error of the commit's unit values y = (U^T f) / sd, data-independent.

    f's entries are at most (2 pi h^2)^(-d/2) and carry a relative error of (n + 10) u; the
    transform adds (N + 10) u; U's columns have unit norm (N = grid nodes, u = unit roundoff).
    """
    N, d = int(np.size(scales)), np.ndim(scales)
    fmax = (2.0 * math.pi * bandwidth**2) ** (-d / 2.0)
    return 4.0 * math.sqrt(N) * fmax * UNIT_ROUNDOFF * (N + n + 20) / float(np.min(scales))


# --------------------------------------------------------------------------- the mechanism

def hall_kde(points, box, *, epsilon: float, delta: float, bandwidth: float | None = None,
             grid_size: int | None = None, bound: str = "exact", calibration: str = "analytic",
             data_dependent_bandwidth: bool = False) -> KdeNoisePlan:
    """Gaussian KDE + Gaussian-process noise (Hall, Rinaldo & Wasserman 2013), (epsilon, delta)-DP.

    Parameters
    ----------
    points : (n,) or (n, d) observations, d in {1, 2}, or their :class:`~fdp_core.releases.box.KdeSums`;
        clipped to ``box``.
    box : public box T, (lo, hi) or (lo1, hi1, lo2, hi2).
    bandwidth : h > 0 in box units; None uses :func:`~fdp_core.releases.box.default_bandwidth` (data-free)
        or, with ``data_dependent_bandwidth=True``, Silverman's rule (flagged: not DP).
    bound : "exact" (box diameter, attained; default) or "paper" (sqrt 2).
    calibration : "analytic" (Balle & Wang; default) or "classical" (epsilon <= 1 only).

    Returns
    -------
    KdeNoisePlan
        Estimate, noise law and guarantee; ``fdp_core.releases.kde.plan_kde_release`` wraps it
        into a release.
    """
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    check_choice("bound", bound, KDE_BOUNDS)
    check_choice("calibration", calibration, CALIBRATIONS)
    sums = kde_sums(points, box, grid_size)  # checks the box and the grid size
    box, grid_size, n, d = sums.box, sums.grid_size, sums.n, len(sums.box)
    flags: tuple = ()
    if bandwidth is not None and data_dependent_bandwidth:
        raise ParameterError("give either a bandwidth or data_dependent_bandwidth=True, not both")
    if bandwidth is None:
        if data_dependent_bandwidth:
            h, flags = silverman_bandwidth(sums.require_points("Silverman's rule")), (DATA_DEPENDENT_BANDWIDTH,)
        else:
            h = default_bandwidth(box, n)
    else:
        h = check_positive("bandwidth", bandwidth)
    grids = kde_grids(box, grid_size)
    sensitivities = hall_sensitivities(n, h, box)
    sensitivity = sensitivities[bound]
    sigma = gaussian_sigma(sensitivity, epsilon, delta, calibration)
    noise = _hall_noise(grids, h, sigma)
    weights = grid_weights(grids)
    expected = float(np.sum(weights * noise.pointwise_variance()))
    guarantee = Guarantee(
        GAUSSIAN.privacy, epsilon, delta, sensitivity=sensitivity,
        sensitivity_norm="RKHS norm of k(x, y) = exp(-||x - y||^2 / (2 h^2))", sensitivities=sensitivities,
        noise="sigma * G, G a centred Gaussian process with covariance exp(-||x - y||^2 / (2 h^2)) on the grid",
        gdp_mu=sensitivity / sigma,
        details={
            "bandwidth": h,
            "box_diameter": box_diameter(box),
            "calibration": calibration,
            "sigma": sigma,
            "sigma_table": {f"{b}/{c}": gaussian_sigma_both(sensitivities[b], epsilon, delta).get(c)
                            for b in KDE_BOUNDS for c in CALIBRATIONS},
            "eigenvalue_floor": f"every Gram eigenvalue raised to max(lambda, 0) + {EIGEN_FLOOR:g} * lambda_1",
            "expected_sq_l2_error": expected,
        })
    if sums.bump_sums is not None and sums.bandwidth == h:
        density = hall_normaliser(n, h, d) * sums.bump_sums
    else:
        density = hall_estimate(sums.require_points("a Gaussian KDE at this bandwidth"), grids, h)
    return KdeNoisePlan(box=box, grids=grids, weights=weights, n=n, n_clipped_box=sums.n_clipped_box, bound=bound,
                        density=density, noise=noise, expected_sq_l2_error=expected, guarantee=guarantee, sigma=sigma,
                        bandwidth=h, data_dependent_flags=flags)
