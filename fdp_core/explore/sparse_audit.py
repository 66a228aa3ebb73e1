"""Worst-case neighbouring pairs and black-box audits of the sparse mean release (METHODS.md 20).

The pairs are built from public inputs only (settings, n). The other n - 1 persons have one
visit each at the pair's time with the centre value (they add the same A and zero b to D and
D'). The replaced person differs:

- part "b": one visit at t* (argmax ||phi(t)|| on the public check grid) with value hi in D and
  lo in D': A is identical and ||b - b'|| = 2 h ||phi(t*)|| / n, the bound up to its 1.01 factor;
- part "A": one visit at t1 in D and at t2 in D' (value c, so b is identical), the pair of
  times maximising the shift of A in the noise's norm, found by search over the check grid.

Both data sets go through the real planner; the audit sees only the centres and the noise
scales it returns (fdp_core/summary_audit.audit_coefficient_noise).
"""

from __future__ import annotations

import numpy as np

from ..mechanisms.families import noise_family
from ..releases.sparse import SparseSettings, plan_sparse_release, sparse_basis
from ..data.sparse_data import from_observations
from .summary_audit import SummaryAudit, audit_coefficient_noise

PARTS = ("A", "b")


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
    return SummaryAudit(f"sparse mean {part}", s.noise, g.epsilon, g.delta, f"worst-case {part} pair",
                        float(shift / g.sensitivity), run[0], run[1], control_factor)

