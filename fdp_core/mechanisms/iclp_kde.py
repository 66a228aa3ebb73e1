"""ICLP-KDE (Lin & Reimherr): kernel density estimate with Laplace noise per eigen-coefficient, pure epsilon-DP.

A noise kernel K with eigenpairs (lambda_l, phi_l), estimation kernel K^eta (eta > 1),
observations snapped to the nearest grid node and every bump normalised by
c(x) = integral_T K^eta(x, y) dy, so f_D = sum_l [(1/n) sum_i lambda_l^eta phi_l(x_i) / c(x_i)] phi_l.
Laplace noise of scale b_l = Delta_1 sqrt(lambda_l) / epsilon on coefficient l (b_l is the
Laplace scale, density exp(-|z|/b_l) / (2 b_l): the sqrt 2 pitfall of METHODS.md 3) where
Delta_1 is the sensitivity in ||h||_{1,C} = sum_l |h_l| / sqrt(lambda_l)
(:func:`~fdp_core.sensitivity.iclp_sensitivity`).

Coordinates. The kernel lives on the box **rescaled to [0, 1] per axis** (as every kernel of
the project: rho means the same on every page); its eigenbasis, coefficients, Delta_1 and
Laplace scales are in those unit coordinates, and the released density is converted to box
coordinates by dividing by the box volume, a fixed post-processing. Expected squared L2
errors are in box coordinates.

2-d. The grid is a product grid and the kernel the product K(u1, v1) K(u2, v2), so the
eigenpairs are products of the 1-d eigenpairs. For Matern and exponential kernels that
product is *not* the isotropic kernel of the ICLP paper (only the Gaussian kernel
factorises): it is a valid, different covariance.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..releases.box import box_widths, grid_weights, kde_grids, kde_sums, node_counts, snap_to_grid
from ..errors import ParameterError
from ..kernels import KERNEL_NAMES, eigenbasis, matern_nu
from ..params import check_choice, check_epsilon, check_eta, check_positive
from ..sensitivity import KDE_BOUNDS, iclp_sensitivity
from .discrete import UNIT_ROUNDOFF
from .guarantee import Guarantee
from .kde_plan import KdeNoisePlan

# The privacy statement of an ICLP-KDE release (its registry entry shows the same words).
ICLP_KDE_PRIVACY = "pure epsilon-DP (delta = 0)"


# --------------------------------------------------------------------------- one axis of the kernel

@dataclass(frozen=True, eq=False)
class IclpAxis:
    """ICLP quantities of one axis on the unit grid (cached per kernel, rho, nu, eta, G).

    ``bump_coefficients[j, l]`` = lambda_l^eta phi_l(u_j) / c(u_j): coefficient l of the
    normalised bump K^eta(., u_j) / c(u_j). ``sensitivity_vectors[j]`` = that row divided
    by sqrt(lambda_l): its coordinates in the ||.||_{1,C} norm. Compared and hashed by
    identity (``eq=False``): one object per cached setting, which keys the sensitivity cache.
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


def iclp_coefficients(node_index: np.ndarray, axis: IclpAxis) -> np.ndarray:
    """(1/n) sum_i of the bump coefficients at the snapped nodes: (L,) in 1-d, (L1, L2) in 2-d."""
    return iclp_coefficients_from_counts(node_counts(node_index, axis.bump_coefficients.shape[0]), axis,
                                         node_index.shape[0])


def iclp_coefficients_from_counts(counts: np.ndarray, axis: IclpAxis, n: int) -> np.ndarray:
    if counts.ndim == 1:
        return counts @ axis.bump_coefficients / n
    return axis.bump_coefficients.T @ counts @ axis.bump_coefficients / n


# --------------------------------------------------------------------------- the noise

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


def iclp_float_error_bound(axis: IclpAxis, n: int, scales: np.ndarray) -> float:
    """Worst-case float error of the commit's unit values y_l = coefficient_l / b_l, data-independent.

    Each coefficient is a sum of n bump coefficients (at most r_l in absolute value) after
    G d products: (G d + n + 20) u r_l / b_l (u = unit roundoff).
    """
    bump = np.max(np.abs(axis.bump_coefficients), axis=0)
    d = np.ndim(scales)
    r = bump if d == 1 else np.outer(bump, bump)
    G = axis.bump_coefficients.shape[0]
    return float(np.max((G * d + n + 20) * UNIT_ROUNDOFF * r / scales))


# --------------------------------------------------------------------------- the mechanism

def iclp_kde(points, box, *, epsilon: float, kernel: str = "matern32", rho: float = 0.1, eta: float = 1.5,
             nu: float | None = None, grid_size: int | None = None, bound: str = "exact") -> KdeNoisePlan:
    """ICLP kernel density estimate, pure epsilon-DP (METHODS.md section 4).

    Parameters
    ----------
    points : (n,) or (n, d) observations, d in {1, 2}, or their :class:`~fdp_core.releases.box.KdeSums`;
        clipped to ``box`` and snapped to the nearest grid node.
    kernel, rho, nu : noise kernel K on the box rescaled to [0, 1] per axis (rho in those
        units). In 2-d the kernel is the product K(u1, v1) K(u2, v2): for Matern and
        exponential kernels that is not the isotropic kernel of the ICLP paper.
    eta : > 1; the estimate uses K^eta, whose coefficients are lambda_l^eta.
    bound : "exact" (node-pair maximum, attained; default) or "paper" (triangle bound).

    Returns
    -------
    KdeNoisePlan
        Estimate, noise law and guarantee; ``fdp_core.releases.kde.plan_kde_release`` wraps it
        into a release.
    """
    epsilon = check_epsilon(epsilon)
    check_choice("bound", bound, KDE_BOUNDS)
    sums = kde_sums(points, box, grid_size)  # checks the box and the grid size
    box, grid_size, n, d = sums.box, sums.grid_size, sums.n, len(sums.box)
    axis = iclp_axis(kernel, rho, eta, grid_size, nu)
    sensitivities, pairs = {}, {}
    for b in KDE_BOUNDS:
        sensitivities[b], pairs[b] = iclp_sensitivity(n, axis, d=d, bound=b)
    sensitivity = sensitivities[bound]
    lam = axis.basis.eigenvalues
    lam_full = lam if d == 1 else np.outer(lam, lam)
    # b_l is the Laplace *scale* (density exp(-|z|/b)/(2b), variance 2 b^2): with it the
    # privacy loss is sum_l |Delta coef_l| / b_l = epsilon * ||Delta f||_{1,C} / Delta_1 <= epsilon.
    scales = sensitivity * np.sqrt(lam_full) / epsilon
    volume = float(np.prod(box_widths(box)))
    grids = kde_grids(box, grid_size)
    if sums.node_counts is not None:
        coefficients = iclp_coefficients_from_counts(sums.node_counts, axis, n)
    else:
        coefficients = iclp_coefficients(snap_to_grid(sums.require_points("ICLP-KDE"), box, grid_size), axis)
    noise = _IclpNoise(scales, (axis.basis.eigenfunctions,) * d, volume)
    expected = float(2.0 * np.sum(scales**2) / volume)
    unit_grid = axis.basis.grid
    # The attaining node pair, in box coordinates (public: it depends on the settings only).
    attained = [[lo + (hi - lo) * float(unit_grid[j]) for j, (lo, hi) in zip(node, box)] for node in pairs["exact"]]
    guarantee = Guarantee(
        ICLP_KDE_PRIVACY, epsilon, 0.0, sensitivity=sensitivity,
        sensitivity_norm="||h||_{1,C} = sum_l |h_l| / sqrt(lambda_l), unit coordinates", sensitivities=sensitivities,
        noise="Laplace noise of scale b_l on each eigen-coefficient (ICLP)",
        details={
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
            "expected_sq_l2_error": expected,
        })
    return KdeNoisePlan(box=box, grids=grids, weights=grid_weights(grids), n=n, n_clipped_box=sums.n_clipped_box,
                        bound=bound, density=noise.synthesize(coefficients), noise=noise, expected_sq_l2_error=expected,
                        guarantee=guarantee, laplace_scales=scales, coefficients=coefficients, iclp_axis=axis)
