"""Private kernel density estimates in 1-d and 2-d (METHODS.md section 4).

Two mechanisms, both releasing a density on a public grid over a public box T:

* **Hall, Rinaldo & Wasserman (2013)**, (epsilon, delta)-DP: the Gaussian KDE
  f_D(x) = (1/n) sum_i (2 pi h^2)^(-d/2) exp(-||x - x_i||^2 / (2 h^2)) plus sigma G, G a
  centred Gaussian process with covariance k(x, y) = exp(-||x - y||^2 / (2 h^2)). f_D is
  (2 pi h^2)^(-d/2) / n times a sum of the RKHS representers k(., x_i), so replacing x by x'
  moves it by an RKHS norm of (2 pi h^2)^(-d/2)/n * sqrt(2 - 2 k(x, x')); the paper bounds
  this by sqrt 2 (k >= 0), on a box of diameter D the maximum sqrt(2 (1 - exp(-D^2/(2h^2))))
  is attained by opposite corners. The grid release is a projection of the function
  release (the Mahalanobis norm of the grid vector is at most the RKHS norm), and the
  eigenvalue floor below only enlarges the covariance, so both stay valid on the grid.
* **ICLP-KDE** (Lin & Reimherr), pure epsilon-DP: a noise kernel K with eigenpairs
  (lambda_l, phi_l), estimation kernel K^eta (eta > 1), observations snapped to the
  nearest grid node and every bump normalised by c(x) = integral_T K^eta(x, y) dy, so
  f_D = sum_l [(1/n) sum_i lambda_l^eta phi_l(x_i) / c(x_i)] phi_l. Laplace noise of
  scale b_l = Delta_1 sqrt(lambda_l) / epsilon on coefficient l (b_l is the Laplace scale,
  density exp(-|z|/b_l) / (2 b_l): the sqrt 2 pitfall of METHODS.md 3) where Delta_1 is
  the sensitivity in ||h||_{1,C} = sum_l |h_l| / sqrt(lambda_l).

Coordinates. Hall works in box coordinates: the bandwidth h is in the data's units and
the estimate is the usual Gaussian KDE (bumps near the box's edges lose some mass outside
it). ICLP's kernel lives on the box **rescaled to
[0, 1] per axis** (as every kernel of the project: rho means the same on every page);
its eigenbasis, coefficients, Delta_1 and Laplace scales are in those unit coordinates,
and the released density is converted to box coordinates by dividing by the box volume,
a fixed post-processing. Expected squared L2 errors are in box coordinates for both.

2-d. The grid is a product grid and the kernels are product kernels, so Gram matrices
and covariance operators are Kronecker products: the eigenpairs are products of the
1-d eigenpairs (the G^2 x G^2 matrix is never decomposed). For Hall this is exact (the
isotropic Gaussian RBF factorises). For ICLP the product of two 1-d Matern or
exponential kernels is *not* the isotropic Matern/exponential kernel of the ICLP paper
(only the Gaussian kernel factorises): it is a valid, different covariance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import pandas as pd
from scipy.spatial.distance import cdist

from .errors import DataError, ParameterError
from .kernels import KERNEL_NAMES, eigenbasis, matern_nu, trapezoid_weights
from .mechanisms.calibration import CALIBRATIONS, gaussian_sigma, gaussian_sigma_both
from .params import check_choice, check_delta, check_epsilon, check_eta, check_positive
from .release import randomness_fields
from .settings_fields import CALIBRATION, DELTA, EPSILON, ETA, KERNEL, NU, PERSON_COLUMN, RHO, VALUE_RANGE, option
from .threads import small_problem

KDE_MECHANISMS = ("gaussian", "iclp")
KDE_MECHANISM_LABELS = {
    "gaussian": "Gaussian-process KDE (Hall, Rinaldo & Wasserman 2013), (epsilon, delta)-DP",
    "iclp": "ICLP-KDE (Lin & Reimherr), pure epsilon-DP",
}
KDE_BOUNDS = ("exact", "paper")
DEFAULT_GRID_SIZE = {1: 512, 2: 64}
MAX_GRID_SIZE = {1: 2000, 2: 128}
# Every eigenvalue of the Hall Gram matrix is raised to max(lambda, 0) + EIGEN_FLOOR * lambda_1.
EIGEN_FLOOR = 1e-10
DATA_DEPENDENT_BANDWIDTH = ("bandwidth chosen from the data (Silverman's rule): "
                            "the release is not differentially private")
_BOUND_LABELS = {
    ("gaussian", "exact"): "box-exact: sqrt(2 (1 - exp(-D^2/(2 h^2)))) / (n (2 pi h^2)^(d/2)), attained "
                           "by opposite corners",
    ("gaussian", "paper"): "paper (Hall et al. 2013): sqrt(2) / (n (2 pi h^2)^(d/2))",
    ("iclp", "exact"): "exact: (1/n) max over grid-node pairs of sum_l lambda_l^(eta-1/2) "
                       "|phi_l(x)/c(x) - phi_l(x')/c(x')|, attained",
    ("iclp", "paper"): "triangle bound: (2/n) max over single grid nodes of sum_l lambda_l^(eta-1/2) "
                       "|phi_l(x)/c(x)|",
}


# --------------------------------------------------------------------------- box, grid, points

Box = tuple  # ((lo, hi),) in 1-d, ((lo1, hi1), (lo2, hi2)) in 2-d


def check_box(box, d: int | None = None) -> Box:
    """Normalise a box to a tuple of (lo, hi) pairs, one per axis.

    Accepts (lo, hi), (lo1, hi1, lo2, hi2) or ((lo1, hi1), (lo2, hi2)).
    """
    try:
        flat = np.asarray(box, dtype=float).ravel()
    except (TypeError, ValueError):
        raise ParameterError(f"box must be numbers lo,hi (1-d) or lo1,hi1,lo2,hi2 (2-d), got {box!r}") from None
    if flat.size not in (2, 4):
        raise ParameterError(f"box must have 2 numbers (lo,hi) for a 1-d or 4 (lo1,hi1,lo2,hi2) for a 2-d "
                             f"density, got {flat.size}")
    if d is not None and flat.size != 2 * d:
        raise ParameterError(f"a {d}-d density needs a box with {2 * d} numbers, got {flat.size}")
    if not np.all(np.isfinite(flat)):
        raise ParameterError(f"box limits must be finite, got {box!r}")
    pairs = tuple((float(flat[i]), float(flat[i + 1])) for i in range(0, flat.size, 2))
    for axis, (lo, hi) in enumerate(pairs, start=1):
        if not lo < hi:
            raise ParameterError(f"box axis {axis}: need lo < hi, got [{lo:g}, {hi:g}]")
    return pairs


def parse_box(text: str) -> Box:
    """Parse "LO,HI" or "LO1,HI1,LO2,HI2" (CLI and app text inputs)."""
    try:
        numbers = [float(part) for part in str(text).split(",")]
    except ValueError:
        raise ParameterError(f"box must be comma-separated numbers like 0,1 or 0,1,0,1, got {text!r}") from None
    return check_box(numbers)


def box_widths(box: Box) -> np.ndarray:
    return np.array([hi - lo for lo, hi in box])


def box_diameter(box: Box) -> float:
    """Euclidean diameter D of the box: the largest distance two observations can have."""
    return float(np.sqrt(np.sum(box_widths(box) ** 2)))


def check_grid_size(grid_size, d: int) -> int:
    if grid_size is None:
        return DEFAULT_GRID_SIZE[d]
    try:
        g = int(grid_size)
    except (TypeError, ValueError):
        raise ParameterError(f"grid size must be an integer, got {grid_size!r}") from None
    if g != grid_size or not 3 <= g <= MAX_GRID_SIZE[d]:
        raise ParameterError(f"grid size for a {d}-d density must be an integer in [3, {MAX_GRID_SIZE[d]}] "
                             f"(points per axis), got {grid_size!r}")
    return g


def kde_grids(box: Box, grid_size: int) -> tuple[np.ndarray, ...]:
    """Equally spaced grid of ``grid_size`` points per axis, in box coordinates."""
    return tuple(np.linspace(lo, hi, grid_size) for lo, hi in box)


def check_points(points, d: int | None = None) -> np.ndarray:
    """Observations as an (n, d) float array; d inferred from the shape when not given."""
    x = np.asarray(points, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[1] not in (1, 2):
        raise DataError(f"observations must have shape (n,) or (n, 1) for a 1-d or (n, 2) for a 2-d density, "
                        f"got {np.shape(points)}")
    if d is not None and x.shape[1] != d:
        raise DataError(f"the box is {d}-d but the observations are {x.shape[1]}-d")
    if x.shape[0] < 1:
        raise DataError("no observations")
    bad = ~np.all(np.isfinite(x), axis=1)
    if bad.any():
        raise DataError(f"{int(bad.sum())} observation(s) are NaN or infinite (first: row {int(np.argmax(bad)) + 1})")
    return x


@dataclass(frozen=True)
class BoxClip:
    points: np.ndarray  # (n, d), every point inside the box
    n_clipped: int  # observations with at least one coordinate outside the box


def clip_to_box(points, box) -> BoxClip:
    """Move each observation to the nearest point of the public box (coordinate-wise clip).

    The sensitivities assume every observation lies in T; clipping is a fixed per-record
    map, so it keeps replace-one neighbours neighbours. Raises if no observation lies in
    the box (the release would only describe the box's boundary).
    """
    box = check_box(box)
    x = check_points(points, len(box))
    lo = np.array([b[0] for b in box])
    hi = np.array([b[1] for b in box])
    outside = np.any((x < lo) | (x > hi), axis=1)
    if outside.all():
        limits = " x ".join(f"[{a:g}, {b:g}]" for a, b in box)
        raise DataError(f"all {x.shape[0]} observations lie outside the box {limits}; choose a (public) box "
                        "that covers the range of the feature")
    return BoxClip(np.clip(x, lo, hi), int(outside.sum()))


@dataclass(frozen=True)
class KdeSums:
    """What a density release reads from the observations (METHODS.md 17): n, how many were
    clipped to the box, and one of: the clipped points (needed when the bandwidth depends on
    n or on the data), the Gaussian bump sums on the grid at a fixed bandwidth (Hall), or
    the observations per grid node (ICLP). Built chunk by chunk by fdp_core/stream.py;
    :func:`hall_kde` and :func:`iclp_kde` accept it in place of the points."""

    box: tuple
    grid_size: int
    n: int
    n_clipped_box: int
    points: np.ndarray | None = None  # (n, d), inside the box
    bump_sums: np.ndarray | None = None  # sum_i exp(-||x - x_i||^2 / (2 h^2)) on the grid
    bandwidth: float | None = None  # the h of bump_sums
    node_counts: np.ndarray | None = None  # (G,) or (G, G)

    def require_points(self, what: str) -> np.ndarray:
        if self.points is None:
            raise ParameterError(f"{what} needs the observations themselves; these sufficient statistics hold "
                                 "only sums (stream with a fixed bandwidth, or keep the points)")
        return self.points


def _clipped(points, box, grid_size: int) -> KdeSums:
    """Points (clipped to the box here) or ready-made sums, as one object."""
    if isinstance(points, KdeSums):
        if check_box(points.box) != box or points.grid_size != grid_size:
            raise ParameterError("these density sufficient statistics were taken for another box or grid size; "
                                 "recompute them with the release settings")
        if points.n_clipped_box == points.n:
            limits = " x ".join(f"[{a:g}, {b:g}]" for a, b in box)
            raise DataError(f"all {points.n} observations lie outside the box {limits}; choose a (public) box "
                            "that covers the range of the feature")
        return points
    clip = clip_to_box(points, box)
    return KdeSums(box, grid_size, clip.points.shape[0], clip.n_clipped, points=clip.points)


# --------------------------------------------------------------------------- bandwidth

def default_bandwidth(box, n: int) -> float:
    """Data-free rule h = (box width) * n^(-1/(4+d)).

    In 2-d the box width is the geometric mean of the side lengths (the side of the square
    with the box's area), since the Hall kernel has one isotropic bandwidth.
    """
    box = check_box(box)
    d = len(box)
    width = float(np.exp(np.mean(np.log(box_widths(box)))))
    return width * float(n) ** (-1.0 / (4 + d))


def silverman_bandwidth(points) -> float:
    """Silverman's rule 0.9 min(sd, IQR/1.34) n^(-1/5) (1-d); in 2-d the mean over axes of
    min(sd, IQR/1.34) times n^(-1/6) (Scott's exponent). Reads the data: a release using it
    must carry :data:`DATA_DEPENDENT_BANDWIDTH`."""
    x = check_points(points)
    n, d = x.shape
    sd = x.std(axis=0, ddof=1) if n > 1 else np.zeros(d)
    iqr = np.subtract(*np.percentile(x, [75, 25], axis=0)) / 1.34
    spread = np.where(iqr > 0, np.minimum(sd, iqr), sd)
    scale = float(np.mean(spread))
    if not scale > 0:
        raise DataError("Silverman's rule needs observations that are not all equal; give a bandwidth instead")
    return (0.9 * scale * n ** (-0.2)) if d == 1 else (scale * n ** (-1.0 / 6.0))


# --------------------------------------------------------------------------- Hall et al. (Gaussian)

def hall_sensitivities(n: int, bandwidth: float, box) -> dict:
    """RKHS sensitivity of the Gaussian KDE: {"exact": box-exact (attained), "paper": sqrt 2 bound}.

    ||f_D - f_D'||_H = (2 pi h^2)^(-d/2)/n * ||k(., x) - k(., x')||_H and
    ||k(., x) - k(., x')||_H^2 = k(x, x) + k(x', x') - 2 k(x, x') = 2 (1 - exp(-||x - x'||^2/(2h^2))),
    increasing in ||x - x'||, so the maximum over the box is at distance D (its diameter).
    """
    h = check_positive("bandwidth", bandwidth)
    box = check_box(box)
    d = len(box)
    scale = 1.0 / (n * (2.0 * math.pi * h * h) ** (d / 2.0))
    D = box_diameter(box)
    return {"exact": scale * math.sqrt(-2.0 * math.expm1(-D * D / (2.0 * h * h))),
            "paper": scale * math.sqrt(2.0)}


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
    """sigma * G on the grid with G ~ N(0, U diag(lambda_floored) U^T), per axis factors in 2-d."""

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


# --------------------------------------------------------------------------- ICLP-KDE

@dataclass(frozen=True)
class IclpAxis:
    """ICLP quantities of one axis on the unit grid (cached per kernel, rho, nu, eta, G).

    ``bump_coefficients[j, l]`` = lambda_l^eta phi_l(u_j) / c(u_j): coefficient l of the
    normalised bump K^eta(., u_j) / c(u_j). ``sensitivity_vectors[j]`` = that row divided
    by sqrt(lambda_l): its coordinates in the ||.||_{1,C} norm.
    """

    basis: object  # kernels.Eigenbasis on the unit grid
    normaliser: np.ndarray  # c(u_j) = integral_0^1 K^eta(u_j, v) dv (trapezoid)
    bump_coefficients: np.ndarray
    sensitivity_vectors: np.ndarray


@lru_cache(maxsize=32)
def _iclp_axis_cached(kernel: str, rho: float, nu, eta: float, grid_size: int) -> IclpAxis:
    unit = np.linspace(0.0, 1.0, grid_size)
    basis = eigenbasis(kernel, rho, unit, nu=nu)
    lam, phi = basis.eigenvalues, basis.eigenfunctions
    # c(x) = sum_l lambda_l^eta phi_l(x) <phi_l, 1>: the quadrature integral of the truncated
    # K^eta(x, .), so every released bump integrates to exactly 1 on the grid.
    c = phi @ (lam**eta * (basis.weights @ phi))
    if not np.all(c > 0):
        raise ParameterError(f"the ICLP normalising constant integral K^eta(x, y) dy is not positive at every grid "
                             f"node for kernel {kernel}, rho={rho:g}, eta={eta:g}; choose a larger rho or eta")
    bump = phi * lam**eta / c[:, None]
    sens = phi * lam ** (eta - 0.5) / c[:, None]
    for a in (c, bump, sens):
        a.setflags(write=False)
    return IclpAxis(basis, c, bump, sens)


def iclp_axis(kernel: str, rho: float, eta: float, grid_size: int, nu: float | None = None) -> IclpAxis:
    check_choice("kernel", kernel, KERNEL_NAMES)
    rho = check_positive("rho", rho)
    eta = check_eta(eta, minimum=1.0, strict=True)
    nu = matern_nu(kernel, nu) if kernel == "matern" else None
    return _iclp_axis_cached(kernel, rho, nu, eta, int(grid_size))


def _l1_diameter(A: np.ndarray, chunk: int = 256) -> tuple[float, tuple[int, int]]:
    """max_{j, k} ||A_j - A_k||_1 over rows (exact, blockwise cdist), with an attaining pair."""
    best, pair = -1.0, (0, 0)
    for start in range(0, A.shape[0], chunk):
        D = cdist(A[start:start + chunk], A, "cityblock")
        i = int(np.argmax(D))
        r, k = divmod(i, A.shape[0])
        if D.flat[i] > best:
            best, pair = float(D.flat[i]), (start + r, k)
    return best, pair


def _l1_diameter_kron(A: np.ndarray, B: np.ndarray) -> tuple[float, tuple]:
    """max over node pairs ((p, q), (p', q')) of ||A_p kron B_q - A_p' kron B_q'||_1, exactly.

    Brute force costs G^6 for a G x G grid. Branch and bound instead: three upper bounds
    from 1-d quantities (triangle inequality on the splits
    a b - a'b' = (a - a') b + a' (b - b') = (a - a') b' + a (b - b')
               = [(a - a') (b + b') + (a + a') (b - b')] / 2 and ||u kron v||_1 = ||u||_1 ||v||_1)
    discard every pair that cannot beat the best exact value found so far; the survivors,
    in decreasing order of their bound, are evaluated exactly until the next bound is no
    larger than the best value. The result is the exact maximum (tested against brute force).
    """
    nA, nB = np.abs(A).sum(axis=1), np.abs(B).sum(axis=1)
    DA, SA = cdist(A, A, "cityblock"), cdist(A, -A, "cityblock")
    DB, SB = cdist(B, B, "cityblock"), cdist(B, -B, "cityblock")
    GA, GB = A.shape[0], B.shape[0]

    def bounds(p: int) -> np.ndarray:
        # Upper bounds for the pairs ((p, q), (p', q')) with p' >= p (the rest by symmetry),
        # as an array indexed [q, p' - p, q'].
        d, s, a = DA[p, p:][None, :, None], SA[p, p:][None, :, None], nA[p:][None, :, None]
        ub = d * nB[:, None, None] + a * DB[:, None, :]
        np.minimum(ub, d * nB[None, None, :] + nA[p] * DB[:, None, :], out=ub)
        np.minimum(ub, 0.5 * (d * SB[:, None, :] + s * DB[:, None, :]), out=ub)
        return ub

    def exact(p, q, pp, qq) -> np.ndarray:
        # a kron b - a' kron b' as one batched rank-2 product [a, -a'] [b; b'].
        out = np.empty(len(p))
        for start in range(0, len(p), 256):
            sl = slice(start, start + 256)
            X = np.matmul(np.stack([A[p[sl]], -A[pp[sl]]], axis=2), np.stack([B[q[sl]], B[qq[sl]]], axis=1))
            np.abs(X, out=X)
            out[sl] = X.sum(axis=(1, 2))
        return out

    def unpack(p, flat):
        q, rest = np.divmod(flat, (GA - p) * GB)
        dp, qq = np.divmod(rest, GB)
        return p, q, p + dp, qq

    best, pair = -1.0, None
    surv_ub, surv_p, surv_flat = [], [], []
    for p0 in range(GA):
        ub = bounds(p0).ravel()
        # Raise the lower bound with this block's most promising pairs, then keep only the
        # pairs that could still beat it.
        top = np.array([int(np.argmax(ub))])
        p, q, pp, qq = unpack(np.full(top.size, p0), top)
        values = exact(p, q, pp, qq)
        i = int(np.argmax(values))
        if values[i] > best:
            best, pair = float(values[i]), ((p0, int(q[i])), (int(pp[i]), int(qq[i])))
        hit = np.flatnonzero(ub > best)
        surv_ub.append(ub[hit])
        surv_p.append(np.full(hit.size, p0))
        surv_flat.append(hit)
    surv_ub, surv_p, surv_flat = np.concatenate(surv_ub), np.concatenate(surv_p), np.concatenate(surv_flat)
    alive = surv_ub > best
    surv_ub, surv_p, surv_flat = surv_ub[alive], surv_p[alive], surv_flat[alive]
    order = np.argsort(surv_ub)[::-1]
    for start in range(0, order.size, 1024):
        block = order[start:start + 1024]
        if surv_ub[block[0]] <= best:
            break
        p, q, pp, qq = unpack(surv_p[block], surv_flat[block])
        values = exact(p, q, pp, qq)
        i = int(np.argmax(values))
        if values[i] > best:
            best, pair = float(values[i]), ((int(p[i]), int(q[i])), (int(pp[i]), int(qq[i])))
    return best, pair


@lru_cache(maxsize=32)
def _iclp_unit_sensitivity_cached(kernel, rho, nu, eta, grid_size, d, bound) -> tuple[float, tuple | None]:
    vec = _iclp_axis_cached(kernel, rho, nu, eta, grid_size).sensitivity_vectors
    single = np.abs(vec).sum(axis=1)
    if bound == "paper":
        return 2.0 * float(single.max()) ** d, None
    if d == 1:
        value, (j, k) = _l1_diameter(vec)
        return value, ((j,), (k,))
    return _l1_diameter_kron(vec, vec)


def iclp_sensitivity(n: int, *, kernel: str, rho: float, eta: float, grid_size: int, d: int = 1,
                     bound: str = "exact", nu: float | None = None) -> tuple[float, tuple | None]:
    """Delta_1 of ICLP-KDE in unit coordinates and the attaining node pair (exact bound).

    Replacing x by x' moves coefficient l by lambda_l^eta (phi_l(x)/c(x) - phi_l(x')/c(x')) / n,
    so in ||h||_{1,C} = sum_l |h_l| / sqrt(lambda_l) the move is
    (1/n) sum_l lambda_l^(eta - 1/2) |phi_l(x)/c(x) - phi_l(x')/c(x')|; observations sit on
    grid nodes (snapped), so the maximum over node pairs is exact and attained. The
    triangle ("paper") bound doubles the largest single-node norm. In 2-d the vectors are
    Kronecker products of the 1-d ones; the pair maximum is found by branch and bound.
    The pair is returned as node indices per axis, e.g. ((j,), (k,)) or ((p, q), (p', q')).
    """
    check_choice("bound", bound, KDE_BOUNDS)
    axis = iclp_axis(kernel, rho, eta, grid_size, nu)  # validates and fills the cache
    value, pair = _iclp_unit_sensitivity_cached(axis.basis.kernel, axis.basis.rho, axis.basis.nu, float(eta),
                                                int(grid_size), int(d), bound)
    return value / n, pair


@dataclass(frozen=True)
class _IclpNoise:
    """Laplace noise per coefficient in unit coordinates, synthesised and divided by the box volume."""

    scales: np.ndarray  # (L,) or (L1, L2)
    axes_functions: tuple  # phi (G, L) per axis
    volume: float

    def draw(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return self.synthesize(rng.laplace(0.0, 1.0, (size,) + self.scales.shape) * self.scales)

    def synthesize(self, coefficients: np.ndarray) -> np.ndarray:
        """Box-coordinate density values of unit-coordinate coefficients."""
        if len(self.axes_functions) == 1:
            return (coefficients @ self.axes_functions[0].T) / self.volume
        P1, P2 = self.axes_functions
        return (P1 @ coefficients @ P2.T) / self.volume


def snap_to_grid(points: np.ndarray, box: Box, grid_size: int) -> np.ndarray:
    """Index of the nearest grid node per axis, shape (n, d): a fixed per-record map."""
    lo = np.array([b[0] for b in box])
    width = box_widths(box)
    idx = np.rint((points - lo) / width * (grid_size - 1)).astype(int)
    return np.clip(idx, 0, grid_size - 1)


def node_counts(node_index: np.ndarray, grid_size: int) -> np.ndarray:
    """Observations per grid node, (G,) or (G, G): ICLP-KDE's sufficient statistic."""
    if node_index.shape[1] == 1:
        return np.bincount(node_index[:, 0], minlength=grid_size).astype(float)
    counts = np.zeros((grid_size, grid_size))
    np.add.at(counts, (node_index[:, 0], node_index[:, 1]), 1.0)
    return counts


def iclp_coefficients(node_index: np.ndarray, axis: IclpAxis) -> np.ndarray:
    """(1/n) sum_i of the bump coefficients at the snapped nodes: (L,) in 1-d, (L1, L2) in 2-d."""
    return iclp_coefficients_from_counts(node_counts(node_index, axis.bump_coefficients.shape[0]), axis,
                                         node_index.shape[0])


def iclp_coefficients_from_counts(counts: np.ndarray, axis: IclpAxis, n: int) -> np.ndarray:
    if counts.ndim == 1:
        return counts @ axis.bump_coefficients / n
    return axis.bump_coefficients.T @ counts @ axis.bump_coefficients / n


# --------------------------------------------------------------------------- the release object

@dataclass(frozen=True)
class KdeRelease:
    """A planned private density: deterministic parts computed, noise drawn on demand.

    ``density`` is the NON-PRIVATE estimate (analyst view, never publish); ``sample``
    draws sanitized densities. ``guarantee`` is the plain-data privacy record read by the
    UI, the export and the tests.
    """

    mechanism: str
    box: Box
    grids: tuple  # per-axis grid in box coordinates
    density: np.ndarray = field(repr=False)  # (G,) or (G1, G2); NON-PRIVATE
    weights: np.ndarray = field(repr=False)  # trapezoid weights in box coordinates, grid-shaped
    n: int
    n_clipped_box: int
    sensitivity: float
    sigma: float | None
    laplace_scales: np.ndarray | None = field(repr=False)  # unit-coordinate b_l (ICLP)
    bandwidth: float | None
    expected_sq_l2_error: float
    guarantee: dict = field(repr=False)
    data_dependent_flags: tuple = ()
    coefficients: np.ndarray | None = field(default=None, repr=False)  # NON-PRIVATE (ICLP, unit coords)
    iclp_axis: IclpAxis | None = field(default=None, repr=False)
    _noise: object = field(default=None, repr=False)

    @property
    def d(self) -> int:
        return len(self.grids)

    @property
    def grid(self) -> np.ndarray:
        """The 1-d grid (1-d densities only)."""
        if self.d != 1:
            raise ParameterError("a 2-d density has two grids: use .grids")
        return self.grids[0]

    @property
    def grid_shape(self) -> tuple:
        return tuple(g.size for g in self.grids)

    @property
    def m(self) -> int:
        return int(np.prod(self.grid_shape))

    def noise(self, rng: np.random.Generator, size: int = 1) -> np.ndarray:
        """``size`` noise fields on the grid, shape (size, *grid_shape)."""
        return self._noise.draw(rng, int(size))

    def sample(self, rng: np.random.Generator, size: int = 1) -> np.ndarray:
        """``size`` independent sanitized densities on the grid, shape (size, *grid_shape)."""
        return self.density + self.noise(rng, size)

    def _noise_norms(self, n_draws: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        draws = self.noise(np.random.default_rng(seed), n_draws).reshape(n_draws, -1)
        return np.sqrt((draws**2) @ self.weights.ravel()), np.abs(draws).max(axis=1)

    def l2_error_radius(self, prob: float = 0.95, n_draws: int = 4000) -> float:
        """r with P(||release - estimate||_L2(T) <= r) ~ prob (Monte Carlo, fixed seed)."""
        return float(np.quantile(self._noise_norms(n_draws, 12345)[0], prob))

    def sup_error_radius(self, prob: float = 0.95, n_draws: int = 4000) -> float:
        """r with P(max over the grid of |release - estimate| <= r) ~ prob (Monte Carlo, fixed seed)."""
        return float(np.quantile(self._noise_norms(n_draws, 54321)[1], prob))

    def unit_coefficients(self, values: np.ndarray) -> np.ndarray:
        """ICLP only: unit-coordinate eigen-coefficients of box-coordinate density values
        (shape (..., *grid_shape) -> (..., L) or (..., L1, L2)); exact on released values."""
        if self.iclp_axis is None:
            raise ParameterError("unit_coefficients is defined for the ICLP mechanism only")
        volume = float(np.prod(box_widths(self.box)))
        P = self.iclp_axis.basis.projector
        v = np.asarray(values, dtype=float) * volume
        if self.d == 1:
            return v @ P
        return P.T @ v @ P


def _grid_weights(grids: tuple) -> np.ndarray:
    w = [trapezoid_weights(g) for g in grids]
    return w[0] if len(w) == 1 else np.outer(w[0], w[1])


def _common_guarantee(mechanism, epsilon, delta, bound, sensitivities, box, grid_size, n, n_clipped, flags):
    return {
        "mechanism": mechanism,
        "mechanism_label": KDE_MECHANISM_LABELS[mechanism],
        "privacy": "(epsilon, delta)-DP" if mechanism == "gaussian" else "pure epsilon-DP (delta = 0)",
        "epsilon": epsilon,
        "delta": delta,
        "neighbouring": "replace one observation (one individual)",
        "sensitivity": sensitivities[bound],
        "sensitivity_bound": bound,
        "sensitivity_bound_label": _BOUND_LABELS[(mechanism, bound)],
        "sensitivity_exact": sensitivities["exact"],
        "sensitivity_paper": sensitivities["paper"],
        "box": [list(b) for b in box],
        "d": len(box),
        "grid_size": grid_size,
        "grid_shape": [grid_size] * len(box),
        "n": n,
        "data_dependent_flags": list(flags),
        "differentially_private": not flags,
        "arithmetic": "idealised real-arithmetic DP (floating-point numpy sampler)",
    }


def hall_kde(points, box, *, epsilon: float, delta: float, bandwidth: float | None = None,
             grid_size: int | None = None, bound: str = "exact", calibration: str = "analytic",
             data_dependent_bandwidth: bool = False) -> KdeRelease:
    """Gaussian KDE + Gaussian-process noise (Hall, Rinaldo & Wasserman 2013), (epsilon, delta)-DP.

    Parameters
    ----------
    points : (n,) or (n, d) observations, d in {1, 2}; clipped to ``box``.
    box : public box T, (lo, hi) or (lo1, hi1, lo2, hi2).
    bandwidth : h > 0 in box units; None uses :func:`default_bandwidth` (data-free) or, with
        ``data_dependent_bandwidth=True``, Silverman's rule (flagged: not DP).
    bound : "exact" (box diameter, attained; default) or "paper" (sqrt 2).
    calibration : "analytic" (Balle & Wang; default) or "classical" (epsilon <= 1 only).
    """
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    check_choice("bound", bound, KDE_BOUNDS)
    check_choice("calibration", calibration, CALIBRATIONS)
    box = check_box(box)
    d = len(box)
    grid_size = check_grid_size(grid_size, d)
    clip = _clipped(points, box, grid_size)
    n = clip.n
    flags: tuple = ()
    if bandwidth is not None and data_dependent_bandwidth:
        raise ParameterError("give either a bandwidth or data_dependent_bandwidth=True, not both")
    if bandwidth is None:
        if data_dependent_bandwidth:
            h, flags = silverman_bandwidth(clip.require_points("Silverman's rule")), (DATA_DEPENDENT_BANDWIDTH,)
        else:
            h = default_bandwidth(box, n)
    else:
        h = check_positive("bandwidth", bandwidth)
    grids = kde_grids(box, grid_size)
    sensitivities = hall_sensitivities(n, h, box)
    sensitivity = sensitivities[bound]
    sigma = gaussian_sigma(sensitivity, epsilon, delta, calibration)
    noise = _hall_noise(grids, h, sigma)
    weights = _grid_weights(grids)
    expected = float(np.sum(weights * noise.pointwise_variance()))
    guarantee = _common_guarantee("gaussian", epsilon, delta, bound, sensitivities, box, grid_size, n,
                                  clip.n_clipped_box, flags)
    guarantee.update({
        "sensitivity_norm": "RKHS norm of k(x, y) = exp(-||x - y||^2 / (2 h^2))",
        "bandwidth": h,
        "box_diameter": box_diameter(box),
        "calibration": calibration,
        "sigma": sigma,
        "sigma_table": {f"{b}/{c}": gaussian_sigma_both(sensitivities[b], epsilon, delta).get(c)
                        for b in KDE_BOUNDS for c in CALIBRATIONS},
        "gdp_mu": sensitivity / sigma,
        "noise": "sigma * G, G a centred Gaussian process with covariance exp(-||x - y||^2 / (2 h^2)) on the grid",
        "eigenvalue_floor": f"every Gram eigenvalue raised to max(lambda, 0) + {EIGEN_FLOOR:g} * lambda_1",
        "expected_sq_l2_error": expected,
    })
    if clip.bump_sums is not None and clip.bandwidth == h:
        density = hall_normaliser(n, h, d) * clip.bump_sums
    else:
        density = hall_estimate(clip.require_points("a Gaussian KDE at this bandwidth"), grids, h)
    return KdeRelease(mechanism="gaussian", box=box, grids=grids, density=density,
                      weights=weights, n=n, n_clipped_box=clip.n_clipped_box, sensitivity=sensitivity, sigma=sigma,
                      laplace_scales=None, bandwidth=h, expected_sq_l2_error=expected, guarantee=guarantee,
                      data_dependent_flags=flags, _noise=noise)


def iclp_kde(points, box, *, epsilon: float, kernel: str = "matern32", rho: float = 0.1, eta: float = 1.5,
             nu: float | None = None, grid_size: int | None = None, bound: str = "exact") -> KdeRelease:
    """ICLP kernel density estimate, pure epsilon-DP (METHODS.md section 4).

    Parameters
    ----------
    points : (n,) or (n, d) observations, d in {1, 2}; clipped to ``box`` and snapped to the
        nearest grid node.
    kernel, rho, nu : noise kernel K on the box rescaled to [0, 1] per axis (rho in those
        units). In 2-d the kernel is the product K(u1, v1) K(u2, v2): for Matern and
        exponential kernels that is not the isotropic kernel of the ICLP paper.
    eta : > 1; the estimate uses K^eta, whose coefficients are lambda_l^eta.
    bound : "exact" (node-pair maximum, attained; default) or "paper" (triangle bound).
    """
    epsilon = check_epsilon(epsilon)
    check_choice("bound", bound, KDE_BOUNDS)
    box = check_box(box)
    d = len(box)
    grid_size = check_grid_size(grid_size, d)
    clip = _clipped(points, box, grid_size)
    n = clip.n
    axis = iclp_axis(kernel, rho, eta, grid_size, nu)
    sensitivities, pairs = {}, {}
    for b in KDE_BOUNDS:
        sensitivities[b], pairs[b] = iclp_sensitivity(n, kernel=kernel, rho=rho, eta=eta, grid_size=grid_size, d=d,
                                                      bound=b, nu=nu)
    sensitivity = sensitivities[bound]
    lam = axis.basis.eigenvalues
    lam_full = lam if d == 1 else np.outer(lam, lam)
    # b_l is the Laplace *scale* (density exp(-|z|/b)/(2b), variance 2 b^2): with it the
    # privacy loss is sum_l |Delta coef_l| / b_l = epsilon * ||Delta f||_{1,C} / Delta_1 <= epsilon.
    scales = sensitivity * np.sqrt(lam_full) / epsilon
    volume = float(np.prod(box_widths(box)))
    grids = kde_grids(box, grid_size)
    if clip.node_counts is not None:
        coefficients = iclp_coefficients_from_counts(clip.node_counts, axis, n)
    else:
        coefficients = iclp_coefficients(snap_to_grid(clip.require_points("ICLP-KDE"), box, grid_size), axis)
    noise = _IclpNoise(scales, (axis.basis.eigenfunctions,) * d, volume)
    expected = float(2.0 * np.sum(scales**2) / volume)
    unit_grid = axis.basis.grid
    # The attaining node pair, in box coordinates (public: it depends on the settings only).
    attained = [[lo + (hi - lo) * float(unit_grid[j]) for j, (lo, hi) in zip(node, box)] for node in pairs["exact"]]
    guarantee = _common_guarantee("iclp", epsilon, 0.0, bound, sensitivities, box, grid_size, n, clip.n_clipped_box,
                                  ())
    guarantee.update({
        "sensitivity_norm": "||h||_{1,C} = sum_l |h_l| / sqrt(lambda_l), unit coordinates",
        "exact_attained_by": attained,
        "bandwidth": None,  # smoothing is set by the kernel range rho and the power eta
        "calibration": None,  # Laplace noise: no Gaussian calibration
        "sigma": None,
        "kernel": kernel,
        "kernel_form": "product of 1-d kernels" if d == 2 else "1-d kernel",
        "rho": float(rho),
        "nu": axis.basis.nu,
        "eta": float(eta),
        "coordinates": "kernel, eigenbasis, coefficients, Delta_1 and Laplace scales on the box rescaled to "
                       "[0, 1] per axis; density reported in box coordinates (unit density / box volume)",
        "box_volume": volume,
        "n_components": int(scales.size),
        "laplace_scale_formula": "b_l = Delta_1 sqrt(lambda_l) / epsilon (Laplace scale: density "
                                 "exp(-|z|/b_l) / (2 b_l))",
        "laplace_scale_max": float(scales.max()),
        "laplace_scale_min": float(scales.min()),
        "noise": "Laplace noise of scale b_l on each eigen-coefficient (ICLP)",
        "expected_sq_l2_error": expected,
    })
    density = noise.synthesize(coefficients)
    return KdeRelease(mechanism="iclp", box=box, grids=grids, density=density, weights=_grid_weights(grids), n=n,
                      n_clipped_box=clip.n_clipped_box, sensitivity=sensitivity, sigma=None, laplace_scales=scales,
                      bandwidth=None, expected_sq_l2_error=expected, guarantee=guarantee, data_dependent_flags=(),
                      coefficients=coefficients, iclp_axis=axis, _noise=noise)


# --------------------------------------------------------------------------- settings for app and CLI

@dataclass(frozen=True)
class KdeSettings:
    """Every public choice behind a density release (all of it goes into the provenance)."""

    mechanism: str = option("gaussian", choices=KDE_MECHANISMS,
                            help="gaussian: Hall et al. GP noise, (epsilon, delta)-DP; iclp: ICLP-KDE, pure epsilon-DP")
    box: tuple = option(((0.0, 1.0),), parse=parse_box, required=True,
                        help="public box LO,HI (1-d) or LO1,HI1,LO2,HI2 (2-d); observations are clipped to it. Write "
                             "--box=-1,2 when LO is negative")
    epsilon: float = option(1.0, EPSILON, required=True)
    delta: float = option(1e-5, DELTA)  # Gaussian mechanism only
    # Gaussian mechanism only; None = data-free default rule
    bandwidth: float | None = option(None, group="bandwidth",
                                     help="Gaussian bandwidth h > 0 in feature units (default: box width * "
                                          "n^(-1/(4+d)))")
    data_dependent_bandwidth: bool = option(False, flag="--bandwidth-from-data", group="bandwidth",
                                            help="Silverman's rule (data-dependent: the release is then NOT "
                                                 "differentially private)")
    grid_size: int | None = option(None, help="grid points per axis (default 512 in 1-d, 64 in 2-d)")
    bound: str = option("exact", choices=KDE_BOUNDS, help="sensitivity bound: exact (attained) or paper")
    calibration: str = option("analytic", CALIBRATION)  # Gaussian mechanism only
    kernel: str = option("matern32", KERNEL)  # ICLP only
    rho: float = option(0.1, RHO)
    nu: float | None = option(None, NU)
    eta: float = option(1.5, ETA, help="ICLP estimation kernel power eta > 1")
    # Public inputs of the per-record transform (METHODS.md 11-12): applied by the caller when it
    # turns curves into observations (features.person_features); plan_kde_release takes points.
    person_column: str | None = option(None, PERSON_COLUMN,
                                       help="metadata column identifying the person behind each curve: one "
                                            "observation per person (the average of their curves' features, each "
                                            "clipped to the box first)")
    value_range: tuple | None = option(None, VALUE_RANGE,
                                       help="public range of the curve values: curves are clipped pointwise to it "
                                            "before their features are computed")


def plan_kde_release(points, settings: KdeSettings) -> KdeRelease:
    """Validate the settings and compute everything but the random draw."""
    check_choice("mechanism", settings.mechanism, KDE_MECHANISMS)
    if settings.mechanism == "gaussian":
        return hall_kde(points, settings.box, epsilon=settings.epsilon, delta=settings.delta,
                        bandwidth=settings.bandwidth, grid_size=settings.grid_size, bound=settings.bound,
                        calibration=settings.calibration, data_dependent_bandwidth=settings.data_dependent_bandwidth)
    if settings.bandwidth is not None or settings.data_dependent_bandwidth:
        raise ParameterError("the bandwidth applies to the Gaussian (Hall) KDE; ICLP-KDE's smoothing is set by "
                             "rho and eta")
    return iclp_kde(points, settings.box, epsilon=settings.epsilon, kernel=settings.kernel, rho=settings.rho,
                    eta=settings.eta, nu=settings.nu, grid_size=settings.grid_size, bound=settings.bound)


def release_table(release: KdeRelease, values: np.ndarray) -> pd.DataFrame:
    """One sanitized density as a table: x (or x1, x2) and density, one row per grid node."""
    values = np.asarray(values, dtype=float)
    if values.shape != release.grid_shape:
        raise ParameterError(f"values of shape {values.shape} do not match the grid {release.grid_shape}")
    if release.d == 1:
        return pd.DataFrame({"x": release.grids[0], "density": values})
    x1, x2 = np.meshgrid(release.grids[0], release.grids[1], indexing="ij")
    return pd.DataFrame({"x1": x1.ravel(), "x2": x2.ravel(), "density": values.ravel()})


def release_record(release: KdeRelease, *, feature: str | None = None, n_dropped: int | None = None,
                   seed: int | None = None, person_column: str | None = None, value_range=None) -> dict:
    """The publishable record of one sanitized density: public inputs and the noise law only.

    Counts computed from the data (observations clipped to the box, curves dropped) are in
    :func:`analyst_view`; ``n_dropped`` is accepted for compatibility and ignored here.
    """
    g = release.guarantee
    flags = list(release.data_dependent_flags)
    return {
        "release": "kde",
        "mechanism": release.mechanism,
        "epsilon": g["epsilon"],
        "delta": g["delta"],
        "tau": None,  # no norm bound: a KDE bounds observations by the box instead
        "bound": g["sensitivity_bound"],
        "calibration": g.get("calibration"),
        "n": release.n,
        "m": release.m,
        "unit_of_privacy": (f"person (column '{person_column}'): one averaged observation each" if person_column
                            else "curve (one observation each)"),
        "person_column": person_column,
        "value_range": None if value_range is None else [float(v) for v in value_range],
        "n_policy": "declared public",
        "sensitivity": release.sensitivity,
        "sigma": release.sigma,
        "laplace_scales": None if release.laplace_scales is None else release.laplace_scales.ravel(),
        "expected_sq_l2_error": release.expected_sq_l2_error,
        "l2_error_radius_95": release.l2_error_radius(0.95),
        "data_dependent_flags": flags,
        "differentially_private": not flags,
        "bandwidth": release.bandwidth,
        "box": [list(b) for b in release.box],
        "grid_size": release.grid_shape[0],
        "feature": feature,
        "guarantee": g,
        **randomness_fields(seed),
    }


def analyst_view(release: KdeRelease, *, n_dropped: int = 0, n_curves: int | None = None,
                 n_outside_box: int | None = None) -> dict:
    """Counts computed from the data without noise (never publish)."""
    view = {"n_persons": release.n, "n_curves": release.n if n_curves is None else int(n_curves),
            "n_dropped": int(n_dropped),
            "n_clipped": int(release.n_clipped_box if n_outside_box is None else n_outside_box),
            "n_clipped_meaning": "observations (one per curve) with a coordinate outside the box, moved onto it"}
    if release.data_dependent_flags and release.bandwidth is not None:
        view["bandwidth_from_data"] = release.bandwidth
    return view


# --------------------------------------------------------------------------- simulations

HALL_EXAMPLE = {"n": 100, "centers": (0.3, 0.7), "sd": 0.1, "bandwidth": 0.1, "epsilon": 1.0, "delta": 0.1,
                "grid_size": 1000, "box": ((0.0, 1.0),)}


def hall_mixture_points(n: int = 100, *, centers=(0.3, 0.7), sd: float = 0.1, seed: int = 0) -> np.ndarray:
    """Hall et al.'s KDE example: an equal mixture of N(0.3, sd^2) and N(0.7, sd^2), shape (n,).

    Use with :data:`HALL_EXAMPLE` (h = 0.1, epsilon = 1, delta = 0.1, 1000-point grid on [0, 1]).
    """
    rng = np.random.default_rng(seed)
    component = rng.integers(0, len(centers), int(n))
    return np.asarray(centers, dtype=float)[component] + sd * rng.standard_normal(int(n))


def mixture_2d_points(n: int = 500, *, seed: int = 0) -> np.ndarray:
    """2-d example on [0, 1]^2: 0.6 N((0.3, 0.3), 0.1^2 I) + 0.4 N((0.7, 0.65), diag(0.12^2, 0.08^2)), (n, 2)."""
    rng = np.random.default_rng(seed)
    first = rng.random(int(n)) < 0.6
    means = np.where(first[:, None], [0.3, 0.3], [0.7, 0.65])
    sds = np.where(first[:, None], [0.1, 0.1], [0.12, 0.08])
    return means + sds * rng.standard_normal((int(n), 2))


def mixture_density(x, *, centers=(0.3, 0.7), sd: float = 0.1) -> np.ndarray:
    """True density of :func:`hall_mixture_points` (for error-vs-truth curves)."""
    x = np.asarray(x, dtype=float)
    z = (x[..., None] - np.asarray(centers)) / sd
    return np.exp(-0.5 * z**2).mean(axis=-1) / (sd * math.sqrt(2.0 * math.pi))
