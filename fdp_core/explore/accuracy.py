"""Accuracy of one planned mean release, in closed form (METHODS.md sections 2, 3, 7).

Every mean mechanism releases sum_l (c_l + z_l b_l) with independent noise z_l of scale
``noise_scales[l]`` (a :class:`~fdp_core.releases.mean.MeanRelease`), so its error against the
non-private estimate depends on the data only through n and the grid. This module holds
the error of one plan: squared L2 norms of noise draws, the exact pointwise 95% half-width
(a weighted Laplace sum is inverted through its characteristic function), the factor by
which every noise scale moves with epsilon or delta, and the vectorised noise scales of the
quadratic-penalty mechanisms. The sweeps over a parameter built on them are in sweeps.py.

>>> import numpy as np
>>> round(float(laplace_sum_abs_quantile(np.array([[1.0]]), 0.95)[0]), 5)  # log 20 = 2.995732, on the safe side
2.99574
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import lru_cache

import numpy as np

from ..errors import ParameterError
from ..releases.estimators import shrinkage
from ..releases.mean import MeanRelease, MeanSettings
from ..mechanisms.calibration import gaussian_sigma
from ..mechanisms.families import GAUSSIAN, LAPLACE
from ..params import check_choice
from ..registry import mean_mechanism, quadratic_penalty_mechanisms

ACCURACY_METRICS = ("expected_sq_l2", "l2_radius_95", "pointwise_95")
ACCURACY_LABELS = {
    "expected_sq_l2": "expected squared L2 error (squared units, for formulas)",
    "l2_radius_95": "L2 radius holding with 95% probability",
    "pointwise_95": "pointwise 95% half-width (max over t)",
}

# Quadratic-penalty mechanisms with a vectorised noise closed form (sweeps, PCV, private
# selection): their registry entries carry the linear-shrinkage sensitivity it needs.
CLOSED_FORM_MECHANISMS = quadratic_penalty_mechanisms()


# --------------------------------------------------------------------------- noise of one plan

def has_orthonormal_basis(plan: MeanRelease) -> bool:
    """Whether the plan's synthesis functions are orthonormal in the weighted L2 product."""
    gram = plan.synthesis.T @ (plan.weights[:, None] * plan.synthesis)
    return bool(np.allclose(gram, np.eye(gram.shape[0]), atol=1e-8))


def standard_noise(plan: MeanRelease, rng: np.random.Generator, size: int, length: int | None = None) -> np.ndarray:
    """(size, length) draws of the plan's noise family at unit scale (its own sampler)."""
    length = plan.noise_scales.size if length is None else length
    return replace(plan, noise_scales=np.ones(length)).noise_coefficients(rng, size)


def noise_sq_norms(plan: MeanRelease, standard: np.ndarray, orthonormal: bool | None = None) -> np.ndarray:
    """||release - estimate||^2 (weighted L2) for each row of unit-scale noise ``standard``."""
    coefs = standard[:, :plan.noise_scales.size] * plan.noise_scales
    if orthonormal if orthonormal is not None else has_orthonormal_basis(plan):
        return np.sum(coefs**2, axis=1)
    gram = plan.synthesis.T @ (plan.weights[:, None] * plan.synthesis)
    return np.einsum("dl,lk,dk->d", coefs, gram, coefs)


def sq_l2_distance(values: np.ndarray, target: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted squared L2 distance of each row of ``values`` to ``target``."""
    return ((np.asarray(values) - np.asarray(target)) ** 2) @ np.asarray(weights)


def noise_scale_factor(plan: MeanRelease, epsilon: float, delta: float | None = None) -> float:
    """Ratio of every noise scale at (epsilon, delta) to the plan's, the sensitivity fixed.

    Laplace noise: epsilon_plan / epsilon. Gaussian: sigma(Delta, epsilon, delta) / sigma_plan
    with the plan's own calibration (raises ParameterError where it is invalid, e.g. the
    classical calibration for epsilon > 1).
    """
    s = plan.settings
    if plan.family.uses_delta:  # sigma = Delta c(epsilon, delta): re-calibrate
        delta = s.delta if delta is None else delta
        return gaussian_sigma(plan.sensitivity, epsilon, delta, s.calibration) / plan.sigma
    if epsilon <= 0 or not math.isfinite(epsilon):
        raise ParameterError(f"epsilon must be > 0, got {epsilon!r}")
    return s.epsilon / epsilon


# --------------------------------------------------------------------------- pointwise quantiles

def gaussian_sum_abs_quantile(coefficients: np.ndarray, prob: float = 0.95) -> np.ndarray:
    """q with P(|sum_l a_l Z_l| <= q) = prob for each row a of ``coefficients``; Z_l iid N(0, 1) (exact)."""
    # scipy.special and scipy.optimize take ~0.5-1 s to import together and only the two
    # quantile functions here need them: imported late so that starting the app or the CLI
    # does not pay for them.
    from scipy import special

    a = np.atleast_2d(np.asarray(coefficients, dtype=float))
    return special.ndtri(0.5 + prob / 2.0) * np.sqrt(np.sum(a**2, axis=1))


def laplace_sum_abs_quantile(coefficients: np.ndarray, prob: float = 0.95, *, tolerance: float = 1e-7) -> np.ndarray:
    """q with P(|sum_l a_l L_l| <= q) >= prob for each row a of ``coefficients``; L_l iid Laplace(0, 1).

    Exact up to numerical integration: the Gil-Pelaez inversion of the characteristic
    function phi(u) = prod_l 1 / (1 + a_l^2 u^2) of the symmetric sum X,

        P(|X| <= h) = (2/pi) int_0^inf sin(u h) phi(u) / u du,

    integrated by Gauss-Legendre panels on [0, U]. U is chosen so that the neglected tail is
    below ``tolerance`` / 10 (phi(u) <= prod_{l<=k} 1/(a_l u)^2 for the k largest |a_l|, any
    k, bounds it analytically), and the equation is solved for prob + 2 ``tolerance``, so the
    returned q errs on the large (conservative) side by about 1e-6 relative. Checked against
    the closed forms for one and two Laplace terms and against Monte Carlo in the tests.
    """
    from scipy import optimize  # late, as in gaussian_sum_abs_quantile

    A = np.abs(np.atleast_2d(np.asarray(coefficients, dtype=float)))
    if not 0 < prob <= 0.999:
        # The root is bracketed in [0, 10] standard deviations: P(|X| > 10 sd) <= exp(-10 sqrt 2).
        raise ParameterError(f"prob must be in (0, 0.999], got {prob!r}")
    gl_nodes, gl_weights = np.polynomial.legendre.leggauss(12)
    out = np.zeros(A.shape[0])
    for i, row in enumerate(A):
        a = np.sort(row[row > 0])[::-1]
        if a.size == 0:
            continue
        sd = math.sqrt(2.0 * float(np.sum(a**2)))
        a = a / sd  # unit variance: every quantile is now in [0, 10]
        a = a[a > 1e-9 * a[0]]
        k = np.arange(1, min(a.size, 12) + 1)
        log_prod = np.cumsum(np.log(a[: k.size] ** 2))
        # (2/pi) / (2 k U^(2k) prod a^2) <= tail_tol  <=>  U >= ((1/pi) / (k prod a^2 tail_tol))^(1/(2k))
        tail_tol = tolerance / 10.0
        log_u = (-math.log(math.pi) - np.log(k) - log_prod - math.log(tail_tol)) / (2.0 * k)
        upper = float(np.exp(log_u.min()))
        # Panels of width <= 0.5: sin(u h) with h <= 10 and phi (features on scales >= 1/a_max
        # >= sqrt 2) are smooth on each panel, and 12-point Gauss-Legendre is exact to degree 23.
        n_panels = max(int(math.ceil(upper / 0.5)), 8)
        edges = np.linspace(0.0, upper, n_panels + 1)
        half = np.diff(edges) / 2.0
        u = ((edges[:-1] + half)[:, None] + half[:, None] * gl_nodes[None, :]).ravel()
        w = (half[:, None] * gl_weights[None, :]).ravel()
        log_phi = -np.log1p(np.multiply.outer(u**2, a**2)).sum(axis=1)
        kernel = (2.0 / math.pi) * w * np.exp(log_phi) / u
        goal = prob + 2.0 * tolerance

        def excess(h: float) -> float:
            return float(np.dot(kernel, np.sin(u * h))) - goal

        out[i] = sd * optimize.brentq(excess, 1e-9, 10.0, xtol=1e-10, rtol=1e-12)
    return out


# The exact pointwise quantile of a weighted sum of each family's unit noise. A new family
# needs its own entry here (a KeyError says so) rather than silently borrowing another's law.
_SUM_ABS_QUANTILE = {GAUSSIAN: gaussian_sum_abs_quantile, LAPLACE: laplace_sum_abs_quantile}


def pointwise_halfwidth(plan: MeanRelease, prob: float = 0.95) -> float:
    """max over t of the pointwise prob-quantile of |release(t) - estimate(t)|.

    The noise at t is sum_l a_tl z_l with a_tl = b_l(t) * scale_l: Gaussian noise gives
    z_((1+prob)/2) times its sd (exact), Laplace noise the exact quantile of the weighted
    Laplace sum (:func:`laplace_sum_abs_quantile`).
    """
    a = plan.synthesis * plan.noise_scales[None, :]
    return float(np.max(_SUM_ABS_QUANTILE[plan.family](a, prob)))


def accuracy_metric(plan: MeanRelease, metric: str) -> float:
    """One accuracy number of a planned release (see ACCURACY_METRICS)."""
    check_choice("metric", metric, ACCURACY_METRICS)
    if metric == "expected_sq_l2":
        return float(plan.expected_sq_l2_error)
    if metric == "l2_radius_95":
        return float(plan.l2_error_radius(0.95))
    return pointwise_halfwidth(plan, 0.95)


# --------------------------------------------------------------------------- quadratic penalties, vectorised

@lru_cache(maxsize=256)
def _unit_sigma(epsilon: float, delta: float, calibration: str) -> float:
    """sigma at sensitivity 1 (both calibrations are linear in Delta)."""
    return gaussian_sigma(1.0, epsilon, delta, calibration)


def penalised_noise_scales(settings: MeanSettings, eigenvalues, eta, penalty, tau: float, n: int) -> np.ndarray:
    """Noise scales (V, L) of the quadratic-penalty mechanisms for V (eta, penalty) pairs.

    Gaussian: sd sigma sqrt(lambda_l) with sigma = Delta c(epsilon, delta), c the scale-free
    calibration (METHODS.md 2). ICLP-QR: Laplace scale Delta_1 sqrt(lambda_l) / epsilon
    (METHODS.md 3). The sensitivities are the registry entry's, the functions of
    fdp_core.sensitivity that the mechanisms themselves use; only the loop over V is saved.
    Invalid pairs must be screened by the caller (MeanSettings.validated).
    """
    lam = np.asarray(eigenvalues, dtype=float)
    eta = np.atleast_1d(np.asarray(eta, dtype=float))
    penalty = np.broadcast_to(np.asarray(penalty, dtype=float), eta.shape)
    check_choice("mechanism", settings.mechanism, CLOSED_FORM_MECHANISMS)
    entry = mean_mechanism(settings.mechanism)
    # Noise scale per unit sensitivity: the (epsilon, delta) calibrations are scale-free in Delta,
    # Laplace noise has b = Delta / epsilon.
    unit_scale = (_unit_sigma(settings.epsilon, settings.delta, settings.calibration)
                  if entry.uses_delta else 1.0 / settings.epsilon)
    sensitivity = np.empty(eta.size)
    for i in range(eta.size):
        shrink = shrinkage(lam, eta[i], penalty[i])
        sensitivity[i] = entry.shrinkage_sensitivity(settings.bound, lam, shrink, tau, n, eta[i], penalty[i])
    return (sensitivity * unit_scale)[:, None] * np.sqrt(lam)[None, :]
