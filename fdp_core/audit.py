"""Black-box privacy-loss audit of a mechanism on a neighbouring pair (METHODS.md section 10).

The audit only ever sees mechanism *outputs*, reduced to a scalar statistic by a fixed,
data-independent function. Events {T > c} or {T < c} are chosen on a selection sample;
on a fresh test sample, one-sided Clopper-Pearson bounds give p_L <= P(M(D) in E) and
q_U >= P(M(D') in E). The mechanism is flagged when p_L - e^eps q_U > delta: with
probability >= 1 - 2 alpha this is a true violation of (eps, delta)-DP. Both orders of the
pair are tested, since DP must hold in both directions.

Never estimate delta by plugging samples into the claimed densities: a mechanism that
adds too little noise still matches its own (wrong) claimed density, so such a test is blind.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy import stats

Sampler = Callable[[np.random.Generator, int], np.ndarray]


@dataclass(frozen=True)
class AuditResult:
    epsilon: float
    delta: float
    event: str  # e.g. "T > 0.731 (D vs D')"
    p_lower: float
    q_upper: float
    violation: float  # p_lower - e^eps q_upper - delta; > 0 means flagged
    n_select: int
    n_test: int
    alpha: float

    @property
    def flagged(self) -> bool:
        return self.violation > 0


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """One-sided Clopper-Pearson bounds (lower, upper), each holding with prob >= 1 - alpha."""
    lower = 0.0 if k == 0 else float(stats.beta.ppf(alpha, k, n - k + 1))
    upper = 1.0 if k == n else float(stats.beta.isf(alpha, k + 1, n - k))
    return lower, upper


def _draw(sampler: Sampler, rng: np.random.Generator, size: int, chunk: int) -> np.ndarray:
    parts, left = [], size
    while left > 0:
        take = min(chunk, left)
        parts.append(np.asarray(sampler(rng, take), dtype=float).reshape(take))
        left -= take
    return np.concatenate(parts)


def _best_event(t_d: np.ndarray, t_dp: np.ndarray, epsilon: float, n_thresholds: int = 400):
    """Threshold event maximising p_hat - e^eps q_hat on the selection sample."""
    qs = np.quantile(np.concatenate([t_d, t_dp]), np.linspace(0.0005, 0.9995, n_thresholds))
    sd, sdp = np.sort(t_d), np.sort(t_dp)
    best = (-np.inf, None, None)
    for above in (True, False):
        if above:
            p = 1.0 - np.searchsorted(sd, qs, side="right") / sd.size
            q = 1.0 - np.searchsorted(sdp, qs, side="right") / sdp.size
        else:
            p = np.searchsorted(sd, qs, side="left") / sd.size
            q = np.searchsorted(sdp, qs, side="left") / sdp.size
        gain = p - math.exp(epsilon) * q
        i = int(np.argmax(gain))
        if gain[i] > best[0]:
            best = (gain[i], float(qs[i]), above)
    return best[1], best[2]


def _audit_one_direction(sample_d, sample_dp, epsilon, delta, n_select, n_test, alpha, rng, chunk, label):
    c, above = _best_event(_draw(sample_d, rng, n_select, chunk), _draw(sample_dp, rng, n_select, chunk), epsilon)
    t_d, t_dp = _draw(sample_d, rng, n_test, chunk), _draw(sample_dp, rng, n_test, chunk)
    hit_d = int(np.sum(t_d > c) if above else np.sum(t_d < c))
    hit_dp = int(np.sum(t_dp > c) if above else np.sum(t_dp < c))
    p_lower, _ = clopper_pearson(hit_d, n_test, alpha)
    _, q_upper = clopper_pearson(hit_dp, n_test, alpha)
    violation = p_lower - math.exp(epsilon) * q_upper - delta
    event = f"T {'>' if above else '<'} {c:.6g} ({label})"
    return AuditResult(epsilon, delta, event, p_lower, q_upper, violation, n_select, n_test, alpha)


def audit_pair(sample_d: Sampler, sample_d_prime: Sampler, epsilon: float, delta: float, *,
               n_select: int = 200_000, n_test: int = 1_000_000, alpha: float = 1e-6,
               seed: int = 0, chunk: int = 100_000) -> AuditResult:
    """Audit a mechanism on the neighbouring pair (D, D'); returns the worse direction.

    ``sample_d(rng, size)`` must run the mechanism on D ``size`` times and return the
    scalar statistic of each output (likewise for D'). Fixed ``seed`` and small ``alpha``
    make CI deterministic while each flag stays statistically valid.
    """
    rng = np.random.default_rng(seed)
    forward = _audit_one_direction(sample_d, sample_d_prime, epsilon, delta, n_select, n_test, alpha, rng, chunk,
                                   "D vs D'")
    backward = _audit_one_direction(sample_d_prime, sample_d, epsilon, delta, n_select, n_test, alpha, rng, chunk,
                                    "D' vs D")
    return forward if forward.violation >= backward.violation else backward
