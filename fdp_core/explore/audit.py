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
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from ..data.loading import FunctionalData, unit_interval
from ..errors import ParameterError
from ..kernels import eigenbasis
from ..releases.mean import MeanSettings, plan_mean_release
from ..registry import mean_mechanism

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
    # scipy.stats takes ~0.4-0.9 s to import and is needed only here: imported late so that starting the app or
    # the CLI does not pay for it.
    from scipy import stats

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


# --------------------------------------------------------------------------- audit of a configured mean mechanism

@dataclass(frozen=True)
class MechanismAudit:
    """Black-box privacy-loss audit of a mean mechanism on a worst-case pair built from public parameters."""

    mechanism: str
    epsilon: float
    delta: float
    pair: str
    statistic: str
    result: AuditResult
    control: AuditResult
    control_factor: float


def _worst_case_pair(settings: MeanSettings, grid: np.ndarray, n: int) -> tuple[FunctionalData, FunctionalData,
                                                                                   str]:
    """Two data sets differing in one curve, chosen to (nearly) attain the sensitivity.

    Only public inputs: the grid, n and the settings. The other n - 1 curves are zero
    (ICLP-AR: a background curve that lifts the active coefficients above their
    soft-thresholds, so the difference is not thresholded away).
    """
    s = settings.validated()
    grid = np.asarray(grid, dtype=float)
    unit = unit_interval(grid)
    weights = np.asarray(FunctionalData(grid, np.zeros((1, grid.size))).weights)
    m = grid.size
    background = np.zeros(m)
    if not mean_mechanism(s.mechanism).basis.kernel:  # Bernstein's lattice
        x, x_prime = np.full(m, float(s.hi)), np.full(m, float(s.lo))
        pair = "one curve at hi everywhere vs at lo everywhere (every lattice mean moves by (hi - lo)/n)"
    else:
        basis = eigenbasis(s.kernel, s.rho, unit, weights, nu=s.nu)
        lam, phi = basis.eigenvalues, basis.eigenfunctions
        tau = float(s.tau)
        direction, background_coefficients, pair = mean_mechanism(s.mechanism).worst_case(s, lam, tau, n)
        background = phi @ background_coefficients
        x = tau * (phi @ (direction / np.linalg.norm(direction)))
        x_prime = -x
    rest = np.tile(background, (n - 1, 1))
    return (FunctionalData(grid, np.vstack([rest, x])), FunctionalData(grid, np.vstack([rest, x_prime])), pair)


def audit_mean_mechanism(settings: MeanSettings, grid, n: int, *, n_select: int = 50_000, n_test: int = 200_000,
                         alpha: float = 1e-6, seed: int = 0, control_factor: float = 0.9) -> MechanismAudit:
    """Audit the mean mechanism's calibration with :func:`fdp_core.explore.audit.audit_pair`, plus a 0.9x control.

    The statistic is the likelihood-ratio direction of the pair in coefficient space
    (Gaussian: projection on (c - c') / b^2; Laplace: sum_l (|y_l - c'_l| - |y_l - c_l|) / b_l),
    computed from outputs only. The noise is drawn with the plan's numpy sampler
    (idealised arithmetic); the exact discrete sampler has its own conformance tests. The
    control runs the same audit with every noise scale multiplied by ``control_factor``.
    """
    if int(n) < 2:
        raise ParameterError("the audit needs n >= 2 curves")
    # The worst-case pair lives after the per-record transform (centred, person-level rows):
    # the mechanism and its sensitivity are the same, so audit it without the range and persons.
    if not mean_mechanism(settings.mechanism).basis.kernel:  # Bernstein's lattice
        lo, hi = settings.bernstein_range
        settings = replace(settings, lo=lo, hi=hi)
    if settings.tau is None and settings.value_range is not None:
        settings = replace(settings, tau=settings.bounds.default_tau(np.asarray(grid, dtype=float)))
    settings = replace(settings, value_range=None, reference=None, person_column=None, n_public=None)
    if settings.tau_from_data:
        raise ParameterError("the audit needs a public tau (tau from the data is not DP: nothing to audit)")
    d, d_prime, pair = _worst_case_pair(settings, grid, int(n))
    plan, plan_prime = plan_mean_release(d, settings), plan_mean_release(d_prime, settings)
    if not np.allclose(plan.noise_scales, plan_prime.noise_scales, rtol=1e-12, atol=0):
        raise RuntimeError("noise scales depend on the data: the audit pair is not comparable")
    c, c_prime, b = plan.estimate_coefficients, plan_prime.estimate_coefficients, plan.noise_scales
    active = b > 0
    family = plan.family
    delta = family.delta_or_zero(settings.delta)

    def statistic(y):
        t = family.log_likelihood_ratio(y[:, active], c[active], c_prime[active], b[active])
        # Rounded to 1e-9: the Laplace statistic has atoms at +/- epsilon whose last-bit rounding
        # differs between the two centres; an event cut through an atom would audit numpy's
        # floating-point artefacts (Mironov 2012, why exports use the exact sampler), not the calibration.
        return np.round(t, 9)

    def sampler(center, factor):
        def draw(rng, size):
            return statistic(center + factor * plan.noise_coefficients(rng, size))
        return draw

    def run(factor):
        return audit_pair(sampler(c, factor), sampler(c_prime, factor), settings.epsilon, delta, n_select=n_select,
                          n_test=n_test, alpha=alpha, seed=seed, chunk=50_000)

    return MechanismAudit(settings.mechanism, settings.epsilon, delta, pair, family.likelihood_ratio_label,
                          run(1.0), run(control_factor), control_factor)
