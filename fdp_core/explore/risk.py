"""Risk as hypothesis testing: how well can the best adversary tell members from non-members?

An adversary who sees the release tests H0 "this person's curve is not in the data"
against H1 "it is" (the neighbouring data sets). Differential privacy bounds the power
(true detection rate) of *every* such test at each level alpha (false accusation rate)
(Wasserman & Zhou 2010; Kairouz, Oh & Viswanath 2015; Dong, Roth & Su 2022):

* mu-GDP (Gaussian releases, mu = Delta / sigma): the trade-off function is
  f(alpha) = Phi(Phi^-1(1 - alpha) - mu), so power(alpha) = 1 - f(alpha) = Phi(Phi^-1(alpha) + mu).
  This is exact for the Gaussian mechanism: some adversary attains it.
* (epsilon, delta)-DP: f(alpha) = max(0, 1 - delta - e^eps alpha, e^-eps (1 - delta - alpha)), so
  power(alpha) <= min(1, e^eps alpha + delta, 1 - e^-eps (1 - alpha - delta)); delta = 0 for pure DP.

Every function takes alpha as a scalar or array in [0, 1] and returns the same shape.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ParameterError
from ..params import check_positive


def _alpha(alpha) -> np.ndarray:
    a = np.asarray(alpha, dtype=float)
    if np.any(~np.isfinite(a)) or np.any(a < 0) or np.any(a > 1):
        raise ParameterError("alpha (the false-accusation rate) must lie in [0, 1]")
    return a


def gdp_power(alpha, mu: float) -> np.ndarray:
    """Largest power of any membership test at level alpha against a mu-GDP release."""
    mu = float(mu)
    if not math.isfinite(mu) or mu < 0:
        raise ParameterError(f"mu must be a finite number >= 0, got {mu!r}")
    a = _alpha(alpha)
    # scipy.special takes ~0.15-0.3 s to import: imported where used so that starting the app
    # or the CLI does not pay for it.
    from scipy import special

    # ndtri(0) = -inf and ndtri(1) = +inf give power 0 and 1 at the ends, as they should.
    with np.errstate(over="ignore"):
        return special.ndtr(special.ndtri(a) + mu)


def approx_dp_power(alpha, epsilon: float, delta: float = 0.0) -> np.ndarray:
    """Largest power at level alpha against an (epsilon, delta)-DP release (delta = 0: pure DP)."""
    epsilon = float(epsilon)
    if not math.isfinite(epsilon) or epsilon < 0:
        raise ParameterError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
    if not 0 <= delta < 1:
        raise ParameterError(f"delta must be in [0, 1), got {delta!r}")
    a = _alpha(alpha)
    e = math.exp(epsilon)
    return np.minimum.reduce([np.ones_like(a), e * a + delta, 1.0 - (1.0 - a - delta) / e])


def pure_dp_power(alpha, epsilon: float) -> np.ndarray:
    """Largest power at level alpha against an epsilon-DP release: min(1, e^eps alpha, 1 - e^-eps (1 - alpha))."""
    return approx_dp_power(alpha, epsilon, 0.0)


def max_advantage(*, mu: float | None = None, epsilon: float | None = None, delta: float = 0.0) -> float:
    """max over alpha of (power - alpha): the adversary's best edge over guessing.

    mu-GDP: 2 Phi(mu/2) - 1 (attained at alpha = Phi(-mu/2)); (epsilon, delta)-DP:
    (e^eps - 1 + 2 delta) / (e^eps + 1) (attained where the two linear pieces meet).
    """
    if mu is not None:
        from scipy import special  # late, as in gdp_power

        return float(2.0 * special.ndtr(float(mu) / 2.0) - 1.0)
    if epsilon is None:
        raise ParameterError("give mu (Gaussian DP) or epsilon (and delta)")
    e = math.exp(float(epsilon))
    return float(min(1.0, (e - 1.0 + 2.0 * delta) / (e + 1.0)))


def power(alpha, *, mu: float | None = None, epsilon: float | None = None, delta: float = 0.0) -> np.ndarray:
    """Power bound from whichever guarantees are given; with both, the smaller (both are valid)."""
    bounds = []
    if mu is not None:
        bounds.append(gdp_power(alpha, mu))
    if epsilon is not None:
        bounds.append(approx_dp_power(alpha, epsilon, delta))
    if not bounds:
        raise ParameterError("give mu (Gaussian DP) or epsilon (and delta)")
    return np.minimum.reduce(bounds) if len(bounds) > 1 else bounds[0]


def power_curve(*, mu: float | None = None, epsilon: float | None = None, delta: float = 0.0,
                n_points: int = 201) -> tuple[np.ndarray, np.ndarray]:
    """(alpha, power) on an even grid of [0, 1], for plotting the trade-off."""
    alpha = np.linspace(0.0, 1.0, int(check_positive("n_points", n_points)))
    return alpha, power(alpha, mu=mu, epsilon=epsilon, delta=delta)


def risk_sentence(*, mu: float | None = None, epsilon: float | None = None, delta: float = 0.0,
                  alpha: float = 0.05) -> str:
    """Plain-language statement of the power bound at one false-accusation rate."""
    a = float(_alpha(alpha))
    p = float(power(a, mu=mu, epsilon=epsilon, delta=delta))
    return (f"An adversary who wrongly accuses at most {_pct(a)} of non-members can correctly detect "
            f"at most {_pct(p)} of members (random guessing detects {_pct(a)}; "
            f"no protection at all would allow 100%).")


def report_power(report, alpha) -> np.ndarray:
    """Power bound for a ledger's composition report (fdp_core.budget.accounting.CompositionReport).

    Uses the best (epsilon, delta) total and, when every DP release was Gaussian, also the
    exact composed GDP curve with mu = sqrt(sum mu_i^2); the smaller bound is reported.
    """
    if report.best is None:
        raise ParameterError("the ledger has no valid total at this delta, so there is no power bound")
    mu = report.mu_gaussian if report.gaussian_only else None
    return power(alpha, mu=mu, epsilon=report.best.epsilon, delta=report.best.delta)


def _pct(x: float) -> str:
    pct = 100.0 * x
    if pct >= 99.95:
        return "100%" if x >= 1 else "99.9%"
    return f"{pct:.1f}%" if pct >= 1 or pct == 0 else f"{pct:.2g}%"
