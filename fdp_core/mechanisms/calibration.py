"""Noise scale of the Gaussian mechanism: classical and analytic calibration (METHODS.md 2).

Both functions are scale-free in the sensitivity: sigma = Delta * s(epsilon, delta).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ParameterError
from ..params import check_choice, check_delta, check_epsilon, check_positive

CALIBRATIONS = ("analytic", "classical")


def classical_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """sigma = Delta sqrt(2 log(2/delta)) / epsilon (Hall et al. 2013), valid for epsilon <= 1 only."""
    sensitivity = check_positive("sensitivity", sensitivity)
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    if epsilon > 1:
        raise ParameterError(
            f"classical calibration is only valid for epsilon <= 1 (got {epsilon:g}); "
            "use the analytic calibration, which is valid for every epsilon > 0")
    return sensitivity * math.sqrt(2.0 * math.log(2.0 / delta)) / epsilon


def analytic_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
    """Exact delta(epsilon) of a Gaussian mechanism with noise sigma and L2 sensitivity Delta.

    delta = Phi(Delta/(2 sigma) - eps sigma/Delta) - e^eps Phi(-Delta/(2 sigma) - eps sigma/Delta)
    (Balle & Wang 2018, Theorem 8), evaluated in log space so tiny deltas keep precision.
    """
    # scipy.special takes ~0.15-0.3 s to import (it pulls numpy.f2py and unittest in); imported
    # where used so that importing the library and starting the CLI do not pay for it.
    from scipy import special

    r = sensitivity / sigma
    a = r / 2.0 - epsilon / r
    b = -r / 2.0 - epsilon / r
    log_p = special.log_ndtr(a)
    log_q = epsilon + special.log_ndtr(b)
    if log_q >= log_p:
        return 0.0
    return float(math.exp(log_p) * -math.expm1(log_q - log_p))


def analytic_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """Smallest sigma whose exact privacy profile meets (epsilon, delta); valid for all epsilon > 0.

    Bisection on log(sigma / Delta): analytic_delta is decreasing in sigma. The returned
    value is the upper end of the final bracket, so it always satisfies the condition
    (rounding towards more noise), and is within relative 1e-12 of the exact root.
    """
    sensitivity = check_positive("sensitivity", sensitivity)
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)

    def too_small(log_s: float) -> bool:
        return analytic_delta(math.exp(log_s), 1.0, epsilon) > delta

    lo, hi = -1.0, 1.0
    while not too_small(lo):
        lo -= 1.0
    while too_small(hi):
        hi += 1.0
    while hi - lo > 1e-13:
        mid = 0.5 * (lo + hi)
        if too_small(mid):
            lo = mid
        else:
            hi = mid
    sigma = sensitivity * math.exp(hi)
    # The search ran on the scale-free problem (Delta = 1); re-check in the caller's units
    # and step up past any rounding so the returned sigma provably satisfies the condition.
    # math.nextafter always moves, even for subnormal values where a relative step would not.
    while analytic_delta(sigma, sensitivity, epsilon) > delta:
        sigma = max(math.nextafter(sigma, math.inf), sigma * (1.0 + 1e-12))
    return sigma


def gaussian_sigma(sensitivity: float, epsilon: float, delta: float, calibration: str = "analytic") -> float:
    """Dispatch to the named calibration."""
    check_choice("calibration", calibration, CALIBRATIONS)
    if calibration == "classical":
        return classical_sigma(sensitivity, epsilon, delta)
    return analytic_sigma(sensitivity, epsilon, delta)


def gaussian_sigma_both(sensitivity: float, epsilon: float, delta: float) -> dict:
    """Both calibrations side by side; classical is None (with the reason) when invalid."""
    out = {"analytic": analytic_sigma(sensitivity, epsilon, delta)}
    try:
        out["classical"] = classical_sigma(sensitivity, epsilon, delta)
    except ParameterError as exc:
        out["classical"] = None
        out["classical_reason"] = str(exc)
    return out


def weighted_chi2_cdf(x: float, variances: np.ndarray) -> float:
    """P(Q <= x) for Q = sum_l v_l chi2_1 (independent), by the Lugannani-Rice saddlepoint.

    Q is ||Z||^2 for Gaussian noise Z = sum_l sqrt(v_l) xi_l phi_l with orthonormal phi_l.
    The saddlepoint approximation is within about 0.005 in probability in the upper tail
    (p >= 0.9; where the accuracy statements live) and about 0.02 near the median (checked
    against Monte Carlo in the tests); exact inversion (Imhof) is orders of magnitude slower
    and numerically fragile when one variance dominates.
    """
    v = np.asarray(variances, dtype=float)
    v = v[v > 0]
    if x <= 0:
        return 0.0
    mean = float(v.sum())

    def k1(s):  # K'(s) for the cumulant generating function K(s) = -1/2 sum log(1 - 2 s v)
        return float(np.sum(v / (1.0 - 2.0 * s * v)))

    s_max = 1.0 / (2.0 * v.max())
    if abs(x - mean) < 1e-9 * mean:
        # At the mean the saddlepoint is s = 0; use the normal-with-skewness limit.
        k2, k3 = 2.0 * np.sum(v**2), 8.0 * np.sum(v**3)
        return float(0.5 + k3 / (6.0 * math.sqrt(2.0 * math.pi) * k2**1.5))
    # K' is increasing on (-inf, s_max) from 0 to +inf: bracket and solve K'(s) = x.
    lo, hi = -1.0 / mean, s_max * (1.0 - 1e-15)
    while k1(lo) > x:
        lo *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if k1(mid) < x:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * max(abs(lo), abs(hi), 1e-300):
            break
    s = 0.5 * (lo + hi)
    K = -0.5 * float(np.sum(np.log1p(-2.0 * s * v)))
    K2 = float(np.sum(2.0 * v**2 / (1.0 - 2.0 * s * v) ** 2))
    w = math.copysign(math.sqrt(max(2.0 * (s * x - K), 0.0)), s)
    u = s * math.sqrt(K2)
    if abs(w) < 1e-8 or abs(u) < 1e-8:
        k2, k3 = 2.0 * np.sum(v**2), 8.0 * np.sum(v**3)
        return float(0.5 + k3 / (6.0 * math.sqrt(2.0 * math.pi) * k2**1.5))
    from scipy import special  # late, as in analytic_delta

    return float(special.ndtr(w) + math.exp(-0.5 * w * w) / math.sqrt(2.0 * math.pi) * (1.0 / w - 1.0 / u))


def gaussian_quantile_radius(variances: np.ndarray, prob: float = 0.95) -> float:
    """Radius r with P(||Z|| <= r) = prob for Z = sum_l sqrt(v_l) xi_l phi_l (orthonormal phi)."""
    v = np.asarray(variances, dtype=float)
    v = v[v > 0]
    if v.size == 0:
        return 0.0
    lo, hi = 0.0, float(v.sum())
    while weighted_chi2_cdf(hi, v) < prob:
        hi *= 2.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if weighted_chi2_cdf(mid, v) < prob:
            lo = mid
        else:
            hi = mid
    return math.sqrt(hi)
