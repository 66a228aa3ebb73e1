"""Noise scale of the Gaussian mechanism: classical and analytic calibration (METHODS.md 2).

Both functions are scale-free in the sensitivity: sigma = Delta * s(epsilon, delta).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from ..errors import ParameterError
from ..params import check_choice, check_delta, check_epsilon, check_positive
from .weighted_chi2 import quantile_upper_bound

CALIBRATIONS = ("analytic", "classical")


CLASSICAL_RANGE = ("classical calibration is only valid for epsilon <= 1 (got {epsilon:g}); "
                   "use the analytic calibration, which is valid for every epsilon > 0")


# The normal distribution function from the C library's erfc, not scipy.special: importing scipy
# costs 0.3 s of CPU, more than a whole mean release on DTI, and these two are all the release
# needs. erfc keeps full relative precision in its tail down to erfc(26.2) ~ 1e-300 (x = -37);
# below, log Phi(x) = -x^2/2 - log(-x) - log(2 pi)/2 + log(1 - 1/x^2 + 3/x^4 - ...), whose first
# omitted term (10395 / x^12 < 2e-15) is below rounding. Checked against scipy in
# tests/test_calibration.py.
_SQRT2 = math.sqrt(2.0)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def ndtr(x: float) -> float:
    """Phi(x), the standard normal distribution function."""
    return 0.5 * math.erfc(-float(x) / _SQRT2)


def log_ndtr(x: float) -> float:
    """log Phi(x), accurate in both tails."""
    x = float(x)
    if x >= 0.0:  # log(1 - Phi(-x)): no cancellation as Phi(x) nears 1
        return math.log1p(-0.5 * math.erfc(x / _SQRT2))
    if x >= -37.0:
        return math.log(0.5 * math.erfc(-x / _SQRT2))
    z = 1.0 / (x * x)
    series = 1.0 + z * (-1.0 + z * (3.0 + z * (-15.0 + z * (105.0 - 945.0 * z))))
    return -0.5 * x * x - math.log(-x) - _LOG_SQRT_2PI + math.log(series)


def analytic_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
    """Exact delta(epsilon) of a Gaussian mechanism with noise sigma and L2 sensitivity Delta.

    delta = Phi(Delta/(2 sigma) - eps sigma/Delta) - e^eps Phi(-Delta/(2 sigma) - eps sigma/Delta)
    (Balle & Wang 2018, Theorem 8), evaluated in log space so tiny deltas keep precision.
    """
    r = sensitivity / sigma
    a = r / 2.0 - epsilon / r
    b = -r / 2.0 - epsilon / r
    log_p = log_ndtr(a)
    log_q = epsilon + log_ndtr(b)
    if log_q >= log_p:
        return 0.0
    return float(math.exp(log_p) * -math.expm1(log_q - log_p))


@lru_cache(maxsize=1024)
def _analytic_log_unit(epsilon: float, delta: float) -> float:
    """log(sigma / Delta) of the analytic calibration: bisection on the scale-free problem (Delta = 1).

    Cached: a pure function of (epsilon, delta), asked again by every plan at the same budget
    (the report's trade-off chart includes the plan's own epsilon; pages re-plan on each rerun).

    analytic_delta is decreasing in sigma; the upper end of the final bracket is returned, so
    it always satisfies the condition (rounding towards more noise), within relative 1e-12
    of the exact root.
    """
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
    return hi


@dataclass(frozen=True)
class GaussianCalibration:
    """The Gaussian noise calibration of one (epsilon, delta): sigma = Delta * s(epsilon, delta).

    Built once per plan. :meth:`of` validates epsilon and delta (library entry points called
    with raw numbers); :meth:`of_validated` trusts them: the settings they come from were
    validated at the boundary (``MeanSettings.validated``), so the plan does not re-check.
    The analytic bisection runs at most once per calibration, on the scale-free problem, the
    first time an analytic sigma is asked for; every sensitivity then only re-checks the
    condition in its own units.
    """

    epsilon: float
    delta: float

    @classmethod
    def of(cls, epsilon, delta) -> "GaussianCalibration":
        """Validate epsilon and delta, then calibrate."""
        return cls(check_epsilon(epsilon), check_delta(delta))

    @classmethod
    def of_validated(cls, epsilon, delta) -> "GaussianCalibration":
        """Calibrate an (epsilon, delta) already validated at the boundary (no re-check)."""
        return cls(float(epsilon), float(delta))

    @cached_property
    def analytic_log_unit(self) -> float:
        """log(sigma / Delta) of the analytic calibration (the one bisection)."""
        return _analytic_log_unit(self.epsilon, self.delta)

    def analytic(self, sensitivity: float) -> float:
        """Smallest sigma whose exact privacy profile meets (epsilon, delta) at this sensitivity."""
        sensitivity = check_positive("sensitivity", sensitivity)
        sigma = sensitivity * math.exp(self.analytic_log_unit)
        # The search ran on the scale-free problem (Delta = 1); re-check in the caller's units
        # and step up past any rounding so the returned sigma provably satisfies the condition.
        # math.nextafter always moves, even for subnormal values where a relative step would not.
        while analytic_delta(sigma, sensitivity, self.epsilon) > self.delta:
            sigma = max(math.nextafter(sigma, math.inf), sigma * (1.0 + 1e-12))
        return sigma

    def classical(self, sensitivity: float) -> float:
        """sigma = Delta sqrt(2 log(2/delta)) / epsilon; ParameterError for epsilon > 1."""
        sensitivity = check_positive("sensitivity", sensitivity)
        if self.epsilon > 1:
            raise ParameterError(CLASSICAL_RANGE.format(epsilon=self.epsilon))
        return sensitivity * math.sqrt(2.0 * math.log(2.0 / self.delta)) / self.epsilon

    def sigma(self, sensitivity: float, calibration: str = "analytic") -> float:
        """The named calibration's sigma."""
        check_choice("calibration", calibration, CALIBRATIONS)
        if calibration == "classical":
            return self.classical(sensitivity)
        return self.analytic(sensitivity)

    def both(self, sensitivity: float) -> dict:
        """Both calibrations side by side; classical is None (with the reason) when invalid."""
        out = {"analytic": self.analytic(sensitivity)}
        try:
            out["classical"] = self.classical(sensitivity)
        except ParameterError as exc:
            out["classical"] = None
            out["classical_reason"] = str(exc)
        return out


def classical_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """sigma = Delta sqrt(2 log(2/delta)) / epsilon (Hall et al. 2013), valid for epsilon <= 1 only."""
    sensitivity = check_positive("sensitivity", sensitivity)
    return GaussianCalibration.of(epsilon, delta).classical(sensitivity)


def analytic_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """Smallest sigma whose exact privacy profile meets (epsilon, delta); valid for all epsilon > 0.

    Bisection on log(sigma / Delta) (:func:`_analytic_log_unit`), then a re-check in the
    caller's units that rounds towards more noise.
    """
    sensitivity = check_positive("sensitivity", sensitivity)
    return GaussianCalibration.of(epsilon, delta).analytic(sensitivity)


def gaussian_sigma(sensitivity: float, epsilon: float, delta: float, calibration: str = "analytic") -> float:
    """Dispatch to the named calibration (validates epsilon and delta: for raw numbers)."""
    check_choice("calibration", calibration, CALIBRATIONS)
    if calibration == "classical":
        return classical_sigma(sensitivity, epsilon, delta)
    return analytic_sigma(sensitivity, epsilon, delta)


def gaussian_sigma_both(sensitivity: float, epsilon: float, delta: float) -> dict:
    """Both calibrations side by side; classical is None (with the reason) when invalid."""
    sensitivity = check_positive("sensitivity", sensitivity)
    return GaussianCalibration.of(epsilon, delta).both(sensitivity)


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
    return float(ndtr(w) + math.exp(-0.5 * w * w) / math.sqrt(2.0 * math.pi) * (1.0 / w - 1.0 / u))


def gaussian_quantile_radius(variances: np.ndarray, prob: float = 0.95) -> float:
    """Radius r with P(||Z|| <= r) >= prob for Z = sum_l sqrt(v_l) xi_l phi_l (orthonormal phi), provably: the
    weighted chi-square's exact law by Imhof's inversion with its error bound charged (weighted_chi2.py), not
    the saddlepoint (whose 0.95 can be 0.948). Cached: the same variances give the same radius."""
    v = np.asarray(variances, dtype=float)
    return _quantile_radius(np.ascontiguousarray(v[v > 0]).tobytes(), float(prob))


@lru_cache(maxsize=256)
def _quantile_radius(variance_bytes: bytes, prob: float) -> float:
    return math.sqrt(quantile_upper_bound(np.frombuffer(variance_bytes), prob))
