"""Worst-case neighbouring pairs and black-box audits of the sparse mean release (METHODS.md 20).

The pairs are built from public inputs only (settings, n). The other n - 1 persons have one
visit each at the pair's time with the centre value (they add the same A and zero b to D and
D'). The replaced person differs:

- part "b": one visit at t* (argmax ||phi(t)|| on the public check grid) with value hi in D and
  lo in D': A is identical and ||b - b'|| = 2 h ||phi(t*)|| / n, the bound up to its 1.01 factor;
- part "A": one visit at t1 in D and at t2 in D' (value c, so b is identical), the pair of
  times maximising the shift of A in the noise's norm, found by search over the check grid.

Both data sets go through the real planner; the audit sees only the centres and the noise
scales it returns (fdp_core/summary_audit.audit_coefficient_noise). Besides the flag, each run
reports an epsilon lower bound (:func:`epsilon_lower_bound`): the honest run's must stay below the
claimed epsilon, the 0.7x control's should exceed it.

The pure (Laplace) variant of A is audited with a small basis (J = 2, 4 noisy entries): its
privacy loss reaches its maximum only when every one of the J^2 noisy entries falls beyond both
centres, an event of probability 2^-(J^2), so for J = 8 no finite sample sees the control's excess
(the mechanism's worst case is as real, only rarer).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .audit import AuditResult, clopper_pearson
from ..mechanisms.families import noise_family
from ..releases.sparse import SparseSettings, plan_sparse_release, sparse_basis
from ..data.sparse_data import from_observations
from .summary_audit import SummaryAudit, audit_coefficient_noise

PARTS = ("A", "b")
N_THRESHOLDS = 400  # candidate thresholds of the statistic (quantiles of the selection sample)


@dataclass(frozen=True)
class EpsilonBound:
    """An epsilon lower bound from one threshold event E: log((P_D(E) lower - delta) / P_D'(E) upper).

    Both probabilities are one-sided Clopper-Pearson bounds at level ``alpha`` on a test sample
    independent of the one that chose E, so the bound holds with probability >= 1 - 2 alpha.
    """

    epsilon: float
    event: str
    p_lower: float
    q_upper: float
    n_test: int
    alpha: float


def bound_of(result: AuditResult) -> EpsilonBound:
    """The epsilon lower bound of an audit's own event: log((p_lower - delta) / q_upper). It exceeds the
    audited epsilon exactly when the audit flags (violation = p_lower - e^eps q_upper - delta > 0)."""
    ok = result.p_lower > result.delta and result.q_upper > 0
    epsilon = math.log((result.p_lower - result.delta) / result.q_upper) if ok else 0.0
    return EpsilonBound(max(epsilon, 0.0), result.event, result.p_lower, result.q_upper, result.n_test, result.alpha)


def _draws(sampler, rng, size: int, chunk: int) -> np.ndarray:
    return np.concatenate([sampler(rng, min(chunk, size - start)) for start in range(0, size, chunk)])


def _counts(sorted_t: np.ndarray, cuts: np.ndarray, kind: str) -> np.ndarray:
    """How many of ``sorted_t`` satisfy T <kind> c, for each cut c."""
    if kind == ">":
        return sorted_t.size - np.searchsorted(sorted_t, cuts, "right")
    if kind == ">=":
        return sorted_t.size - np.searchsorted(sorted_t, cuts, "left")
    return np.searchsorted(sorted_t, cuts, "left" if kind == "<" else "right")


def _bound_one_direction(sample_d, sample_dp, delta, n_select, n_test, alpha, rng, chunk, label) -> EpsilonBound:
    from scipy import stats  # late import, as in audit.clopper_pearson

    t_d, t_dp = _draws(sample_d, rng, n_select, chunk), _draws(sample_dp, rng, n_select, chunk)
    cuts = np.unique(np.quantile(np.concatenate([t_d, t_dp]), np.linspace(0.0005, 0.9995, N_THRESHOLDS)))
    sd, sdp = np.sort(t_d), np.sort(t_dp)
    best = (-np.inf, None, None)
    # Events T > c, T >= c, T < c, T <= c: a Laplace statistic has atoms (at its extremes and between).
    for kind in (">", ">=", "<", "<="):
        k, k_prime = _counts(sd, cuts, kind), _counts(sdp, cuts, kind)
        # Scored by the bound the test sample would give at the selection sample's frequencies (counts
        # scaled to n_test): a rare event's wide confidence interval is paid for, as it will be.
        k, k_prime = k * (n_test / n_select), k_prime * (n_test / n_select)
        p_low = np.where(k > 0, stats.beta.ppf(alpha, np.maximum(k, 1e-9), n_test - k + 1), 0.0)
        q_up = np.where(k_prime < n_test, stats.beta.isf(alpha, k_prime + 1, np.maximum(n_test - k_prime, 1e-9)),
                        1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            score = np.where(p_low > delta, np.log((p_low - delta) / q_up), -np.inf)
        i = int(np.argmax(score))
        if score[i] > best[0]:
            best = (score[i], float(cuts[i]), kind)
    _, c, kind = best
    if c is None:
        return EpsilonBound(0.0, f"no event ({label})", 0.0, 1.0, n_test, alpha)
    t_d, t_dp = _draws(sample_d, rng, n_test, chunk), _draws(sample_dp, rng, n_test, chunk)
    c_arr = np.array([c])
    hits = int(_counts(np.sort(t_d), c_arr, kind)[0]), int(_counts(np.sort(t_dp), c_arr, kind)[0])
    p_lower, _ = clopper_pearson(hits[0], n_test, alpha)
    _, q_upper = clopper_pearson(hits[1], n_test, alpha)
    epsilon = math.log((p_lower - delta) / q_upper) if p_lower > delta else 0.0
    return EpsilonBound(max(epsilon, 0.0), f"T {kind} {c:.6g} ({label})", p_lower, q_upper, n_test, alpha)


def epsilon_lower_bound(sample_d, sample_dp, delta: float, *, n_select: int, n_test: int, alpha: float,
                        seed: int, chunk: int = 50_000) -> EpsilonBound:
    """The larger of the two directions' lower bounds (D vs D', D' vs D) on the epsilon of a mechanism
    at ``delta``, from samples of its statistic on D and D' (``sample(rng, size)``)."""
    rng = np.random.default_rng(seed)
    forward = _bound_one_direction(sample_d, sample_dp, delta, n_select, n_test, alpha, rng, chunk, "D vs D'")
    backward = _bound_one_direction(sample_dp, sample_d, delta, n_select, n_test, alpha, rng, chunk, "D' vs D")
    return forward if forward.epsilon >= backward.epsilon else backward


def _likelihood_ratio_samplers(c, c_prime, scales, family, factor: float):
    """Samplers of the pair's log-likelihood ratio on D and D' (noise scales times ``factor``), rounded
    to 1e-9 like fdp_core/explore/summary_audit.audit_coefficient_noise (Laplace atoms stay atoms)."""
    c, c_prime, b = (np.asarray(a, dtype=float).ravel() for a in (c, c_prime, scales))

    def sampler(centre):
        def draw(rng, size):
            y = centre + factor * b * family.standard(rng, (size, b.size))
            return np.round(family.log_likelihood_ratio(y, c, c_prime, b), 9)
        return draw

    return sampler(c), sampler(c_prime)


@dataclass(frozen=True)
class SparseAudit(SummaryAudit):
    """A :class:`SummaryAudit` with the epsilon lower bounds of the honest run and of the control."""

    epsilon_bound: EpsilonBound
    control_epsilon_bound: EpsilonBound


def _gram_shift(p: np.ndarray, q: np.ndarray, l1: bool) -> np.ndarray:
    """n times the shift of A, pp^T vs qq^T, for every pair of rows of p and q (Frobenius or l1)."""
    if l1:
        return np.array([[np.abs(np.outer(a, a) - np.outer(b, b)).sum() for b in q] for a in p])
    pp = np.sum(p**2, axis=1)
    qq = np.sum(q**2, axis=1)
    return np.sqrt(np.maximum(pp[:, None] ** 2 + qq[None, :] ** 2 - 2.0 * (p @ q.T) ** 2, 0.0))


def worst_times(settings: SparseSettings, part: str, n_grid: int = 201) -> tuple[float, float, float]:
    """(t in D, t in D', the pair's shift times n) on a public grid of the domain."""
    s = settings.validated()
    basis = sparse_basis(s)
    t = np.linspace(float(s.domain[0]), float(s.domain[1]), n_grid)
    phi = basis.evaluate(s.to_unit(t))
    l1 = not noise_family(s.noise).uses_delta  # Laplace noise is calibrated in l1
    if part == "b":
        norms = np.sum(np.abs(phi), axis=1) if l1 else np.sqrt(np.sum(phi**2, axis=1))
        k = int(np.argmax(norms))
        return float(t[k]), float(t[k]), float(2.0 * s.half_width * norms[k])
    shift = _gram_shift(phi, phi, l1)
    i, j = np.unravel_index(int(np.argmax(shift)), shift.shape)
    return float(t[i]), float(t[j]), float(shift[i, j])


def sparse_worst_pair(settings: SparseSettings, n: int, part: str):
    """Two SparseData sets (n persons each) differing in one person, attaining (nearly) the bound of ``part``."""
    s = settings.validated()
    t_d, t_dp, _ = worst_times(s, part)
    ids = [f"p{i:05d}" for i in range(int(n))]
    rest_t = np.full(int(n) - 1, t_d)
    rest_y = np.full(int(n) - 1, s.centre)
    lo, hi = (float(v) for v in s.value_range)
    if part == "b":
        last = [(t_d, hi), (t_d, lo)]
    else:
        last = [(t_d, s.centre), (t_dp, s.centre)]
    out = []
    for t_last, y_last in last:
        out.append(from_observations(ids, np.append(rest_t, t_last), np.append(rest_y, y_last), name="audit pair"))
    return out


def audit_sparse_mechanism(settings: SparseSettings, n: int, part: str, *, n_select: int = 50_000,
                           n_test: int = 200_000, alpha: float = 1e-6, seed: int = 0,
                           control_factor: float = 0.7) -> SummaryAudit:
    """Audit A or b of the sparse release (each a mechanism with its share of the budget) and a control."""
    s = settings.validated()
    d, d_prime = sparse_worst_pair(s, n, part)
    plan, plan_prime = plan_sparse_release(d, s), plan_sparse_release(d_prime, s)
    g = plan.guarantee.details[part]
    if part == "A":
        c, c_prime = plan.statistics.A, plan_prime.statistics.A
        scales = np.full(c.shape, plan.scale_a)
        if not plan.scale_a == plan_prime.scale_a:
            raise RuntimeError("noise scales depend on the data: the audit pair is not comparable")
    else:
        c, c_prime = plan.statistics.b, plan_prime.statistics.b
        scales = np.full(c.shape, plan.scale_b)
    diff = (c - c_prime).ravel()
    shift = np.linalg.norm(diff) if plan.family.uses_delta else np.abs(diff).sum()
    common = dict(n_select=n_select, n_test=n_test, alpha=alpha, seed=seed)
    run = [audit_coefficient_noise(c, c_prime, scales, plan.family, g.epsilon, g.delta, factor=f, **common)
           for f in (1.0, control_factor)]
    chunk = max(1000, min(50_000, 5_000_000 // max(c.size, 1)))
    # Each run's bound: the better of its flag's event and a search for the event of largest bound (two
    # bounds each valid with probability >= 1 - 2 alpha: their maximum with >= 1 - 4 alpha). With the
    # flag's event in it, the control's bound exceeds the claimed epsilon whenever the control is flagged.
    bounds = [max(epsilon_lower_bound(*_likelihood_ratio_samplers(c, c_prime, scales, plan.family, f), g.delta,
                                      chunk=chunk, **{**common, "seed": seed + 1}),
                  bound_of(result), key=lambda b: b.epsilon)
              for f, result in zip((1.0, control_factor), run)]
    return SparseAudit(f"sparse mean {part}", s.noise, g.epsilon, g.delta, f"worst-case {part} pair",
                       float(shift / g.sensitivity), run[0], run[1], control_factor, bounds[0], bounds[1])

