"""One frozen event type per privacy curve, composed by the accountant (METHODS.md section 8).

A ledger entry stores a release's native privacy parameters under the name of its curve
(``gaussian``, ``pure``, ``bounded_range``, ``zcdp``, ``approximate``; the name is what the
ledger database keeps). :func:`event_of` turns an entry into the typed event of its curve,
as Google's dp-accounting has one event type per mechanism: the event checks that the
entry's (epsilon, delta) really follows from its native parameter, says how it composes
(Gaussian DP, zCDP rho, privacy-loss distribution) and how the report words it. The
accountant (``fdp_core.budget.accounting``) asks the event; nothing dispatches on the curve's name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import ParameterError
from ..mechanisms.calibration import analytic_delta

_REL_TOL = 1e-9


# --------------------------------------------------------------------------- conversions

def gdp_delta(mu: float, epsilon: float) -> float:
    """Exact privacy profile of mu-GDP: delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2).

    Dong, Roth & Su (2022), Corollary 2.13. It is the Balle-Wang profile of a Gaussian
    mechanism with Delta / sigma = mu, so it reuses the log-space evaluation.
    """
    if mu == 0:
        return 0.0
    return analytic_delta(1.0, mu, epsilon)


def gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest epsilon >= 0 with gdp_delta(mu, epsilon) <= delta (rounded up, never down)."""
    mu = float(mu)
    if not 0 < delta < 1:
        raise ParameterError(f"delta must be in (0, 1) to convert mu-GDP to (epsilon, delta), got {delta!r}")
    if mu == 0 or gdp_delta(mu, 0.0) <= delta:
        return 0.0
    lo, hi = 0.0, max(1.0, mu * mu)
    while gdp_delta(mu, hi) > delta:
        lo, hi = hi, 2.0 * hi
    # delta(eps) is decreasing in eps: bisect and return the upper (safe) end.
    while hi - lo > 1e-12 * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        if gdp_delta(mu, mid) > delta:
            lo = mid
        else:
            hi = mid
    return hi


def gdp_mu(epsilon: float, delta: float) -> float:
    """Largest mu with gdp_delta(mu, epsilon) <= delta: the mu-GDP of a Gaussian mechanism tightly
    calibrated to (epsilon, delta) (a Gaussian mechanism is exactly mu-GDP, mu = Delta / sigma, and its
    (epsilon, delta) guarantee holds only if its profile gdp_delta(mu, .) is below delta at epsilon)."""
    if epsilon <= 0 or delta <= 0:
        return 0.0
    lo, hi = 0.0, 1.0
    while gdp_delta(hi, epsilon) <= delta:
        lo, hi = hi, 2.0 * hi
    while hi - lo > 1e-12 * hi:  # gdp_delta increases with mu: bisect, keep the upper (safe) end
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if gdp_delta(mid, epsilon) <= delta else (lo, mid)
    return hi


# Grid over t = log(alpha - 1) for the CKS optimisation; the refined optimum is always
# compared with the best grid point, and any alpha gives a valid bound, so an imperfect
# minimisation only ever costs tightness, never validity.
_CKS_T_GRID = np.linspace(-15.0, 25.0, 801)


_INV_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def _golden_section_min(f, lo: float, hi: float, xatol: float = 1e-10) -> float:
    """Smallest value of ``f`` met by a golden-section search for its minimum on [lo, hi].

    Plain Python rather than scipy.optimize.minimize_scalar: importing scipy.optimize costs
    0.4-2 s, and every Ledger (the app's first page, every CLI commit) converts its budget
    through this minimisation. About 45 evaluations for the CKS bracket at xatol = 1e-10.
    """
    a, b = lo, hi
    c, d = b - _INV_GOLDEN * (b - a), a + _INV_GOLDEN * (b - a)
    fc, fd = f(c), f(d)
    best = min(fc, fd)
    while b - a > xatol:
        if fc < fd:  # the minimum lies in [a, d]
            b, d, fd = d, c, fc
            c = b - _INV_GOLDEN * (b - a)
            fc = f(c)
        else:  # the minimum lies in [c, b]
            a, c, fc = c, d, fd
            d = a + _INV_GOLDEN * (b - a)
            fd = f(d)
        best = min(best, fc, fd)
    return best


def _cks_minimise(objective) -> float:
    values = objective(_CKS_T_GRID)
    i = int(np.argmin(values))
    lo, hi = _CKS_T_GRID[max(i - 1, 0)], _CKS_T_GRID[min(i + 1, _CKS_T_GRID.size - 1)]
    best = float(values[i])
    refined = _golden_section_min(lambda t: float(objective(np.array([t]))[0]), float(lo), float(hi))
    if math.isfinite(refined):
        best = min(best, refined)
    return best


def cks_epsilon(rho: float, delta: float) -> float:
    """epsilon such that rho-zCDP implies (epsilon, delta)-DP (Canonne, Kamath & Steinke 2020).

    Their Proposition 12 / Corollary 13: rho-zCDP gives (eps, delta)-DP with
    delta = inf_{alpha > 1} exp((alpha-1)(alpha rho - eps)) / (alpha-1) * (1 - 1/alpha)^alpha.
    Solving for eps at fixed alpha gives
    eps(alpha) = alpha rho + (log(1/delta) + (alpha-1) log(1 - 1/alpha) - log(alpha)) / (alpha-1),
    minimised here over alpha (parametrised by t = log(alpha - 1)).
    """
    rho = float(rho)
    if rho < 0 or not math.isfinite(rho):
        raise ParameterError(f"rho must be a finite number >= 0, got {rho!r}")
    if not 0 < delta < 1:
        raise ParameterError(f"delta must be in (0, 1) to convert zCDP to (epsilon, delta), got {delta!r}")
    if rho == 0:
        return 0.0
    log_inv_delta = -math.log(delta)

    def eps_of_t(t):
        am1 = np.exp(t)
        alpha = 1.0 + am1
        return alpha * rho + (log_inv_delta + am1 * np.log1p(-1.0 / alpha) - np.log(alpha)) / am1

    return max(0.0, _cks_minimise(eps_of_t))


def cks_delta(rho: float, epsilon: float) -> float:
    """delta such that rho-zCDP implies (epsilon, delta)-DP, by the same CKS bound (capped at 1)."""
    rho, epsilon = float(rho), float(epsilon)
    if rho == 0:
        return 0.0

    def log_delta_of_t(t):
        am1 = np.exp(t)
        alpha = 1.0 + am1
        return am1 * (alpha * rho - epsilon) - np.log(am1) + alpha * np.log1p(-1.0 / alpha)

    return min(1.0, math.exp(_cks_minimise(log_delta_of_t)))


def composed_total(parts: list[tuple[float, float, bool]]) -> dict:
    """The total guarantee of independent releases of the same data, from their public (epsilon, delta, gaussian).

    Basic composition: the epsilons and the deltas add up (valid for any parts). When every part is a Gaussian
    mechanism calibrated to (epsilon_j, delta_j), part j is mu_j-GDP with mu_j = gdp_mu(epsilon_j, delta_j)
    (an upper bound on Delta_j / sigma_j, so valid for any calibration method), the parts together are exactly
    mu-GDP with mu = sqrt(sum mu_j^2), read at the same total delta; zCDP (rho = mu^2 / 2, CKS conversion) is
    shown beside it and is never tighter than the exact GDP profile. ``epsilon`` / ``delta`` / ``method``: the
    cheapest of the totals at the basic total's delta.
    """
    epsilon = float(sum(float(e) for e, _, _ in parts))
    delta = float(sum(float(d) for _, d, _ in parts))
    out = {"basic": {"epsilon": epsilon, "delta": delta}, "epsilon": epsilon, "delta": delta, "method": "basic"}
    if parts and all(g for _, _, g in parts) and 0 < delta < 1:
        mu = float(math.sqrt(sum(gdp_mu(float(e), float(d)) ** 2 for e, d, _ in parts)))
        gdp = gdp_epsilon(mu, delta)
        out["gdp"] = {"mu": mu, "epsilon": gdp, "delta": delta}
        out["zcdp"] = {"rho": mu * mu / 2.0, "epsilon": cks_epsilon(mu * mu / 2.0, delta), "delta": delta}
        if gdp < epsilon:
            out.update(epsilon=gdp, method="gdp")
    return out

def composed_total_words(total: dict | None) -> str:
    """A :func:`composed_total` in words (the CLI's summary line, the report's settings table)."""
    if not total:
        return ""
    basic = total["basic"]
    words = f"basic composition epsilon {basic['epsilon']:.4g}" + (f", delta {basic['delta']:.3g}"
                                                                   if basic["delta"] else "")
    if total.get("source") == "ledger":  # a committed band: what the ledger charged and how it composes it
        words = "charged: " + words
        if "ledger" in total:
            ledger = total["ledger"]
            words += (f"; composed by the ledger ({ledger['method']}): epsilon {ledger['epsilon']:.4g} at delta "
                      f"{ledger['delta']:.3g}")
        return words
    if "gdp" in total:
        gdp, zcdp = total["gdp"], total["zcdp"]
        words += (f"; Gaussian parts composed exactly (mu-GDP, mu = {gdp['mu']:.4g}): epsilon {gdp['epsilon']:.4g} "
                  f"at the same delta (zCDP rho = {zcdp['rho']:.4g} gives {zcdp['epsilon']:.4g})")
    return words



# --------------------------------------------------------------------------- events


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= _REL_TOL * max(abs(a), abs(b), 1e-300)


@dataclass(frozen=True)
class PrivacyEvent:
    """A release's privacy curve with its parameters (the base: never instantiated itself)."""

    curve: ClassVar[str] = ""
    epsilon: float
    delta: float
    rho: float | None

    #: Gaussian-DP events compose exactly by mu = sqrt(sum mu_i^2).
    gaussian: ClassVar[bool] = False
    #: No DP claim rests on the event (approximate samplers): kept out of every DP total.
    approximate: ClassVar[bool] = False
    #: The guarantee is the sampler's rho (zCDP): its (epsilon, delta) is one view of many.
    accounted_by_rho: ClassVar[bool] = False

    def validate(self, mu: float | None) -> None:
        raise NotImplementedError

    def pld(self, discretisation: float):
        """A privacy-loss distribution dominating the release (dp-accounting, pessimistic):
        the generic (epsilon, delta)-DP one unless the event knows better."""
        from dp_accounting.pld import privacy_loss_distribution as pld
        from dp_accounting.pld.common import DifferentialPrivacyParameters

        return pld.from_privacy_parameters(DifferentialPrivacyParameters(self.epsilon, self.delta),
                                           value_discretization_interval=discretisation)

    def native(self) -> str:
        """The release's own privacy parameter, in the report's words."""
        raise NotImplementedError

    def statement(self) -> str:
        """One sentence: what this release alone guarantees."""
        raise NotImplementedError


@dataclass(frozen=True)
class GaussianEvent(PrivacyEvent):
    """A continuous Gaussian release: mu = Delta / sigma (mu-GDP), rho = mu^2 / 2."""

    curve: ClassVar[str] = "gaussian"
    gaussian: ClassVar[bool] = True
    mu: float = 0.0

    def validate(self, mu: float | None) -> None:
        if mu is None or mu <= 0:
            raise ParameterError(f"a Gaussian entry needs mu = Delta/sigma > 0, got {mu!r}")
        if self.rho is None or not _close(self.rho, mu**2 / 2):
            raise ParameterError(f"a Gaussian entry has rho = mu^2/2 = {mu**2 / 2:.6g}, got {self.rho!r}")
        # The claimed (epsilon, delta) must follow from mu (exact GDP profile): a release
        # cannot be booked cheaper than its noise makes it.
        needed = gdp_delta(mu, self.epsilon)
        if needed > self.delta * (1 + _REL_TOL):
            raise ParameterError(
                f"a Gaussian release with mu = {mu:.6g} is only (epsilon={self.epsilon:g}, delta={needed:.3g})-DP, "
                f"not delta = {self.delta:g}: its sigma is too small for the claimed guarantee")

    def pld(self, discretisation: float):
        from dp_accounting.pld import privacy_loss_distribution as pld

        # The loss of the GP mechanism is exactly that of a scalar Gaussian shift with Delta / sigma = mu.
        return pld.from_gaussian_mechanism(1.0 / self.mu, sensitivity=1.0,
                                           value_discretization_interval=discretisation)

    def native(self) -> str:
        return f"mu = {self.mu:.4g} (Gaussian DP)"

    def statement(self) -> str:
        return (f"This release satisfies mu-Gaussian differential privacy with mu = {self.mu:.4g}, hence "
                f"(epsilon, delta)-DP with epsilon = {self.epsilon:.4g}, delta = {self.delta:.3g}.")


@dataclass(frozen=True)
class PureEvent(PrivacyEvent):
    """Pure epsilon-DP (Laplace, ICLP, FRL, Bernstein): rho = epsilon^2 / 2."""

    curve: ClassVar[str] = "pure"
    rho_divisor: ClassVar[float] = 2.0
    rho_formula: ClassVar[str] = "epsilon^2/2"

    def validate(self, mu: float | None) -> None:
        if mu is not None:
            raise ParameterError(f"a {self.curve} entry has no mu (mu is for Gaussian releases)")
        if self.delta != 0:
            raise ParameterError(f"a {self.curve} (pure epsilon-DP) entry has delta = 0, got {self.delta!r}")
        if self.epsilon <= 0:
            raise ParameterError(f"a {self.curve} entry needs epsilon > 0, got {self.epsilon!r}")
        expected = self.epsilon**2 / self.rho_divisor
        if self.rho is None or not _close(self.rho, expected):
            raise ParameterError(f"a {self.curve} entry has rho = {self.rho_formula} = {expected:.6g}, "
                                 f"got {self.rho!r}")

    def native(self) -> str:
        return f"epsilon = {self.epsilon:.4g} (pure DP)"

    def statement(self) -> str:
        return f"This release satisfies pure epsilon-differential privacy with epsilon = {self.epsilon:.4g} (delta = 0)."


@dataclass(frozen=True)
class BoundedRangeEvent(PureEvent):
    """The exponential mechanism: epsilon-bounded range, hence rho = epsilon^2 / 8 (Cesar & Rogers 2021)."""

    curve: ClassVar[str] = "bounded_range"
    rho_divisor: ClassVar[float] = 8.0
    rho_formula: ClassVar[str] = "epsilon^2/8"

    def native(self) -> str:
        return f"epsilon = {self.epsilon:.4g} (exponential mechanism: rho = epsilon^2/8 = {self.rho:.4g})"


@dataclass(frozen=True)
class ZcdpEvent(PrivacyEvent):
    """The exact discrete Gaussian export: rho from OpenDP's privacy map, (epsilon, delta) by CKS."""

    curve: ClassVar[str] = "zcdp"
    accounted_by_rho: ClassVar[bool] = True

    def validate(self, mu: float | None) -> None:
        if mu is not None:
            raise ParameterError("a zCDP (discrete-Gaussian) entry has no mu: the sampler's guarantee is rho")
        if self.rho is None or self.rho <= 0:
            raise ParameterError(f"a zCDP entry needs rho > 0, got {self.rho!r}")
        if not 0 < self.delta < 1:
            raise ParameterError(f"a zCDP entry needs a delta in (0, 1) for its (epsilon, delta) view, got {self.delta!r}")
        needed = cks_epsilon(self.rho, self.delta)
        if self.epsilon < needed * (1 - _REL_TOL):
            raise ParameterError(f"rho = {self.rho:.6g} gives only epsilon = {needed:.6g} at delta = {self.delta:g} "
                                 f"(CKS conversion), not {self.epsilon:g}")

    def native(self) -> str:
        return f"rho = {self.rho:.4g} (zCDP, discrete Gaussian: the sampler's privacy map)"

    def statement(self) -> str:
        return (f"This release satisfies rho-zero-concentrated differential privacy with rho = {self.rho:.4g}, as "
                f"reported by the exact discrete Gaussian sampler's own privacy map. That implies "
                f"(epsilon, delta)-DP with epsilon = {self.epsilon:.4g} at delta = {self.delta:.3g}.")


@dataclass(frozen=True)
class ApproximateEvent(PrivacyEvent):
    """An approximate sampler (matrix Bingham by Gibbs): nominal epsilon only, not a DP claim."""

    curve: ClassVar[str] = "approximate"
    approximate: ClassVar[bool] = True

    def validate(self, mu: float | None) -> None:
        if mu is not None:
            raise ParameterError("an approximate entry has no mu")

    def native(self) -> str:
        return f"epsilon = {self.epsilon:.4g} nominal (approximate sampler: not a DP claim)"

    def statement(self) -> str:
        return (f"This release was drawn with an approximate sampler: its nominal epsilon = {self.epsilon:.4g} "
                "is NOT a differential-privacy claim.")


EVENT_TYPES: dict[str, type[PrivacyEvent]] = {
    cls.curve: cls for cls in (GaussianEvent, PureEvent, BoundedRangeEvent, ZcdpEvent, ApproximateEvent)}
CURVES = tuple(EVENT_TYPES)


def event_of(curve: str, *, epsilon: float, delta: float, rho: float | None, mu: float | None) -> PrivacyEvent:
    """The typed event of a stored curve name and its parameters (validated)."""
    try:
        cls = EVENT_TYPES[curve]
    except KeyError:
        raise ParameterError(f"curve must be one of {', '.join(CURVES)}, got {curve!r}") from None
    event = cls(epsilon, delta, rho, mu) if cls is GaussianEvent else cls(epsilon, delta, rho)
    event.validate(mu)
    return event


__all__ = ["cks_delta", "cks_epsilon", "gdp_delta", "gdp_epsilon", "gdp_mu", "composed_total", "composed_total_words", "ApproximateEvent", "BoundedRangeEvent", "CURVES", "EVENT_TYPES", "GaussianEvent", "PrivacyEvent",
           "PureEvent", "ZcdpEvent", "event_of"]
