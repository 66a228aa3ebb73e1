"""Worst-case neighbouring pairs and black-box audits for the covariance and regression releases.

The pairs are built from public inputs only (grid, n, settings). The audits reuse
:func:`fdp_core.explore.audit.audit_pair`: the statistic is the likelihood-ratio direction of the pair,
computed from mechanism outputs only, and a control run with every noise scale multiplied by
``control_factor`` must be flagged (METHODS.md 10, 13).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from .audit import AuditResult, audit_pair
from ..data.loading import FunctionalData, unit_interval
from ..kernels import eigenbasis
from ..mechanisms.families import GAUSSIAN, NoiseFamily
from ..registry.covariance import covariance_mechanism
from ..releases.covariance import plan_covariance_release, product_shrinkage
from ..sensitivity import covariance_weights
from ..releases.estimators import shrinkage
from ..releases.regression import plan_regression_release
from .private_selection import exponential_selection, pcv_private_scores, score_sensitivity

NORMS = ("cm", "l1c")


def pair_value(weights: np.ndarray, x: np.ndarray, y: np.ndarray, norm: str) -> float:
    """n times the shift of the shrunk second moment in the mechanism's norm when x is replaced by y.

    cm: sqrt(sum_jl A_jl^2 M_jl^2); l1c: sum_jl A_jl |M_jl|, with M = x x^T - y y^T.
    """
    M = np.outer(x, x) - np.outer(y, y)
    if norm == "cm":
        return float(np.sqrt(np.sum((weights * M) ** 2)))
    return float(np.sum(weights * np.abs(M)))


def covariance_pair_candidates(weights: np.ndarray, tau: float, rng: np.random.Generator | None = None,
                               n_random: int = 200) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Adversarial pairs of METHODS 13: tau e_j vs tau e_k (and vs 0), the rotated pairs
    tau (e_j +/- e_l)/sqrt2, the Perron vector (vs 0, vs its negative, vs the next eigenvector),
    random orthogonal pairs and random pairs on the sphere of radius tau."""
    A = np.asarray(weights, dtype=float)
    L = A.shape[0]
    eye = np.eye(L)
    out = []
    for j in range(L):
        out.append((f"tau e_{j + 1} vs 0", tau * eye[j], np.zeros(L)))
        for k in range(L):
            if k != j:
                out.append((f"tau e_{j + 1} vs tau e_{k + 1}", tau * eye[j], tau * eye[k]))
            if k > j:
                out.append((f"tau (e_{j + 1} + e_{k + 1})/sqrt2 vs tau (e_{j + 1} - e_{k + 1})/sqrt2",
                            tau * (eye[j] + eye[k]) / np.sqrt(2), tau * (eye[j] - eye[k]) / np.sqrt(2)))
    values, vectors = np.linalg.eigh((A + A.T) / 2)
    perron, second = np.abs(vectors[:, -1]), vectors[:, -2] if L > 1 else np.zeros(L)
    out += [("tau v (Perron) vs 0", tau * perron, np.zeros(L)),
            ("tau v (Perron) vs -tau v", tau * perron, -tau * perron),
            ("tau v (Perron) vs tau w (next eigenvector)", tau * perron, tau * second)]
    rng = rng or np.random.default_rng(0)
    for _ in range(n_random):
        u, v = rng.standard_normal((2, L))
        u /= np.linalg.norm(u)
        v -= (v @ u) * u
        v /= np.linalg.norm(v)
        out.append(("random orthogonal pair", tau * u, tau * v))
        w = rng.standard_normal(L)
        out.append(("random pair", tau * u, tau * w / np.linalg.norm(w)))
    return out


def _local_search(weights: np.ndarray, tau: float, x0: np.ndarray, y0: np.ndarray, norm: str):
    """Maximise the pair value over pairs on the tau sphere (L-BFGS on unnormalised directions). A search
    heuristic: it only ever finds pairs, so it can show a bound is attained or violated, never prove it."""
    L = x0.size

    def unpack(z):
        u, v = z[:L], z[L:]
        return tau * u / max(np.linalg.norm(u), 1e-300), tau * v / max(np.linalg.norm(v), 1e-300)

    def loss(z):
        x, y = unpack(z)
        return -pair_value(weights, x, y, norm)

    y_start = y0 if np.linalg.norm(y0) > 0 else np.random.default_rng(1).standard_normal(L) * 1e-3
    res = optimize.minimize(loss, np.concatenate([x0, y_start]), method="L-BFGS-B", options={"maxiter": 300})
    return unpack(res.x)


def worst_covariance_pair(weights: np.ndarray, tau: float, norm: str, *, rng=None, n_random: int = 200,
                          refine: int = 5) -> tuple[str, np.ndarray, np.ndarray, float]:
    """The best pair among the candidates, refined by local search from the top ``refine`` of them."""
    candidates = covariance_pair_candidates(weights, tau, rng, n_random)
    scored = sorted(((pair_value(weights, x, y, norm), label, x, y) for label, x, y in candidates),
                    key=lambda item: -item[0])
    best_value, best_label, best_x, best_y = scored[0]
    for value, label, x, y in scored[:refine]:
        xr, yr = _local_search(weights, tau, x, y, norm)
        v = pair_value(weights, xr, yr, norm)
        if v > best_value:
            best_value, best_label, best_x, best_y = v, f"{label}, refined by local search", xr, yr
    return best_label, best_x, best_y, best_value


@dataclass(frozen=True)
class SummaryAudit:
    """Black-box audit of a summary release on a worst-case pair, with an under-noised control."""

    release: str
    mechanism: str
    epsilon: float
    delta: float
    pair: str
    attained_fraction: float  # pair's shift / the sensitivity the mechanism is calibrated for
    result: AuditResult
    control: AuditResult
    control_factor: float


def audit_coefficient_noise(c: np.ndarray, c_prime: np.ndarray, scales: np.ndarray, family: NoiseFamily,
                            epsilon: float, delta: float, *, factor: float = 1.0, n_select: int, n_test: int,
                            alpha: float, seed: int) -> AuditResult:
    """Audit independent coefficient noise of ``family`` (centres c vs c', the given scales) by the
    likelihood-ratio statistic of the pair; ``factor`` scales the noise (the control)."""
    c, c_prime, b = (np.asarray(a, dtype=float).ravel() for a in (c, c_prime, scales))
    active = b > 0
    c, c_prime, b = c[active], c_prime[active], b[active]

    def statistic(y):
        # The family's log-likelihood ratio of the pair, rounded to 1e-9 as in audit.audit_mean_mechanism:
        # the Laplace one has atoms at +/- epsilon that float rounding must not cut.
        return np.round(family.log_likelihood_ratio(y, c, c_prime, b), 9)

    def sampler(centre):
        def draw(rng, size):
            return statistic(centre + factor * b * family.standard(rng, (size, b.size)))
        return draw

    chunk = max(1000, min(50_000, 5_000_000 // max(b.size, 1)))
    return audit_pair(sampler(c), sampler(c_prime), epsilon, delta, n_select=n_select, n_test=n_test, alpha=alpha,
                      seed=seed, chunk=chunk)


def _pair_data(grid: np.ndarray, n: int, centre: float, curve_x: np.ndarray, curve_y: np.ndarray, visits: int = 1):
    """D, D' (n persons); ``visits`` > 1: the replaced person has that many curves in D' (all y), one in D,
    and every curve carries its person's id in the metadata column ``person`` (person-level releases)."""
    rest = np.full((n - 1, grid.size), centre)
    if visits == 1:
        return (FunctionalData(grid, np.vstack([rest, centre + curve_x])),
                FunctionalData(grid, np.vstack([rest, centre + curve_y])))
    return (person_data(grid, [*rest, centre + curve_x], [*range(1, n), 0]),
            person_data(grid, [*rest, *([centre + curve_y] * visits)], [*range(1, n), *([0] * visits)]))


def person_data(grid: np.ndarray, rows, persons) -> FunctionalData:
    """Curves with a ``person`` metadata column (ids ``p<k>``)."""
    import pandas as pd

    meta = pd.DataFrame({"person": [f"p{k}" for k in persons]})
    return FunctionalData(grid, np.asarray(rows, dtype=float), metadata=meta)


def audit_covariance_mechanism(settings, grid, n: int, *, n_select: int = 50_000, n_test: int = 200_000,
                               alpha: float = 1e-6, seed: int = 0, control_factor: float = 0.7,
                               visits: int = 1) -> SummaryAudit:
    """Audit the covariance release's calibration (public centring) on the worst pair found by search.

    The other n - 1 curves sit at the centre (coefficients 0); the pair's curves are the
    coefficient vectors x, y synthesised on the grid. Both data sets are run through the real
    planner (:func:`fdp_core.releases.covariance.plan_covariance_release`), and only its outputs are used.
    ``visits`` > 1 audits at person level: the replaced person has ``visits`` curves in D' (one in D),
    grouped by a person column, so D' has more curves than D but the same n persons.
    """
    from dataclasses import replace

    s = replace(settings.validated(), centring="public")
    if visits > 1:
        s = replace(s, person_column="person")
    grid = np.asarray(grid, dtype=float)
    unit = unit_interval(grid)
    weights = FunctionalData(grid, np.zeros((1, grid.size))).weights
    basis = eigenbasis(s.kernel, s.rho, unit, weights, nu=s.nu)
    A = covariance_weights(basis.eigenvalues, product_shrinkage(basis.eigenvalues, s.eta, s.phi))
    tau = s.tau_value * (1 - 1e-9)  # inside the ball: clipping must not touch the pair
    mechanism = covariance_mechanism(s.mechanism)
    norm = mechanism.sensitivity_norm
    # Structured candidates only: a pair whose shift sits on few entries makes the likelihood-ratio
    # statistic heavy-tailed enough for a finite sample to see the privacy loss (a refined, spread-out
    # pair attains a little more in norm but spreads the loss over L^2 entries).
    label, x, y, value = worst_covariance_pair(A, tau, norm, n_random=0, refine=0)
    d, d_prime = _pair_data(grid, int(n), s.centre_value, basis.synthesize(x), basis.synthesize(y), int(visits))
    plan, plan_prime = plan_covariance_release(d, s), plan_covariance_release(d_prime, s)
    if not np.allclose(plan.scales, plan_prime.scales, rtol=1e-12, atol=0):
        raise RuntimeError("noise scales depend on the data: the audit pair is not comparable")
    delta = mechanism.family.delta_or_zero(s.delta)
    common = dict(n_select=n_select, n_test=n_test, alpha=alpha, seed=seed)
    run = [audit_coefficient_noise(plan.estimate, plan_prime.estimate, plan.scales, plan.family, s.epsilon, delta,
                                   factor=f, **common) for f in (1.0, control_factor)]
    return SummaryAudit("covariance", s.mechanism, s.epsilon, delta, label, value / n / plan.sensitivity, run[0], run[1],
                        control_factor)


def regression_worst_pair(settings, grid, n: int, part: str):
    """Two data sets (curves + covariate metadata) attaining the sensitivity of T1 or T2.

    T1: covariates (1, z) vs (1, -z) with ||z|| = sqrt(B^2 - 1) and the same curve: the Frobenius
    shift is sqrt(2 B^4 - 2 (2 - B^2)^2) / n, the bound sqrt(2) B^2 / n when B^2 = 2.
    T2: the same covariates (1, z) of norm B, curve tau phi_l* vs -tau phi_l*: attains the bound.
    The other n - 1 records have zero covariates (besides the intercept) and curves at the centre.
    """
    import pandas as pd

    s = settings.validated()
    cs = s.curve_settings()
    grid = np.asarray(grid, dtype=float)
    unit = unit_interval(grid)
    weights = FunctionalData(grid, np.zeros((1, grid.size))).weights
    basis = eigenbasis(s.kernel, s.rho, unit, weights, nu=s.nu)
    lam = basis.eigenvalues
    q1 = len(s.covariates)
    radius = np.sqrt(s.bound_b**2 - 1.0) * (1 - 1e-9)
    z = np.full(q1, radius / np.sqrt(q1))
    tau = cs.tau_value * (1 - 1e-9)
    c = cs.centre_value
    rest = np.full((n - 1, grid.size), c)
    names = [str(name) for name in s.covariates]
    zeros = np.zeros((n - 1, q1))
    if part == "t1":
        curve = np.full(grid.size, c)
        pair = [(z, curve), (-z, curve)]
    else:
        l_star = int(np.argmax(shrinkage(lam, s.eta, s.phi) ** 2 / lam))
        pair = [(z, c + tau * basis.eigenfunctions[:, l_star]), (z, c - tau * basis.eigenfunctions[:, l_star])]
    out = []
    for covariates, curve in pair:
        meta = pd.DataFrame(np.vstack([zeros, covariates]), columns=names)
        out.append(FunctionalData(grid, np.vstack([rest, curve]), metadata=meta))
    return out


def audit_regression_mechanism(settings, grid, n: int, part: str, *, n_select: int = 50_000, n_test: int = 200_000,
                               alpha: float = 1e-6, seed: int = 0, control_factor: float = 0.7) -> SummaryAudit:
    """Audit T1 or T2 of the regression release (each is a Gaussian mechanism with its share of the budget)."""

    d, d_prime = regression_worst_pair(settings, grid, int(n), part)
    plan, plan_prime = plan_regression_release(d, settings), plan_regression_release(d_prime, settings)
    g = plan.guarantee.details[part]
    if part == "t1":
        c, c_prime, scales = plan.t1, plan_prime.t1, np.full(plan.t1.shape, plan.t1_sigma)
        shift = np.linalg.norm(plan.t1 - plan_prime.t1)
    else:
        c, c_prime, scales = plan.t2, plan_prime.t2, plan.t2_scales
        shift = np.sqrt(np.sum((plan.t2 - plan_prime.t2) ** 2 / plan.eigenvalues))
    common = dict(n_select=n_select, n_test=n_test, alpha=alpha, seed=seed)
    run = [audit_coefficient_noise(c, c_prime, scales, GAUSSIAN, g.epsilon, g.delta, factor=f, **common)
           for f in (1.0, control_factor)]
    return SummaryAudit(f"regression {part}", "gaussian", g.epsilon, g.delta, f"worst-case {part} pair",
                        float(shift / g.sensitivity), run[0], run[1], control_factor)


def selection_worst_pair(settings, grid, m: int, K: int, rho: float, visits: int = 1):
    """Data sets D, D' (n = K m) attaining the score bounds of METHODS 16, from public inputs only.

    Every curve of folds 2..K is -tau u; fold 1 has m - 1 curves tau u and the replaced curve is
    -tau u in D and tau u in D' (u = the first eigenfunction of the kernel at ``rho``). Records go
    to fold i mod K, so fold 1 is rows 0, K, 2K, ...
    ``visits`` > 1: person level (metadata column ``person``, one curve per person in D); in D' the
    replaced person (the first of the file) has ``visits`` curves tau u, the last ones of the file, so
    D' has more curves than D but the same persons in the same order.
    """
    grid = np.asarray(grid, dtype=float)
    unit = unit_interval(grid)
    weights = FunctionalData(grid, np.zeros((1, grid.size))).weights
    u = eigenbasis(settings.kernel, rho, unit, weights, nu=settings.nu).eigenfunctions[:, 0]
    tau = float(settings.tau) * (1 - 1e-9)
    values = np.tile(-tau * u, (K * m, 1))
    values[K: K * m: K] = tau * u  # fold 1 (rows 0, K, 2K, ...), all but row 0
    d = values.copy()
    d_prime = values.copy()
    d_prime[0] = tau * u
    if visits > 1:
        persons = list(range(K * m))
        return (person_data(grid, d, persons),
                person_data(grid, np.vstack([d_prime, np.tile(tau * u, (visits - 1, 1))]),
                            persons + [0] * (visits - 1)))
    return FunctionalData(grid, d), FunctionalData(grid, d_prime)


def audit_selection_mechanism(settings, grid, m: int, K: int, *, epsilon: float, rho: float = 0.2,
                              bound: str = "range", factor: float = 1.0, n_select: int = 50_000,
                              n_test: int = 200_000, alpha: float = 1e-6, seed: int = 0,
                              visits: int = 1) -> AuditResult:
    """Black-box audit of the exponential-mechanism selection run with ``factor`` x epsilon (claims epsilon).

    Grid: a nearly unshrunk point (penalty 1e-12) and copies of a fully shrunk one (penalty 1e12):
    the two score changes differ by nearly the spread bound. The number of copies is chosen from
    the public pair so that the unshrunk point's probability sits in the tail where the loss shows.
    The statistic is the index drawn (0 = the unshrunk point).
    """

    from dataclasses import replace

    # A huge release epsilon makes the (public, data-independent) noise term V(g) negligible, so both
    # grid points keep comparable scores; V never changes between D and D'.
    settings = replace(settings, epsilon=1e6, person_column="person" if visits > 1 else None)
    d, d_prime = selection_worst_pair(settings, grid, m, K, rho, visits)
    pens = np.array([1e-9, 1e9])
    scale = score_sensitivity(float(settings.tau), m, K, bound)
    s_d = pcv_private_scores(d, settings, pens, [rho], folds=K)[0]
    s_dp = pcv_private_scores(d_prime, settings, pens, [rho], folds=K)[0]
    # log-odds of index 0 on D at the audited epsilon; copies shift them towards about -2.
    gap = factor * epsilon * (s_d[1] - s_d[0]) / scale
    copies = int(max(1, round(math.exp(gap + 2.0))))
    if copies > 5000:
        raise ValueError(f"choose a smaller epsilon for this audit (would need {copies} grid copies)")
    scores_d = np.concatenate([[s_d[0]], np.full(copies, s_d[1])])
    scores_dp = np.concatenate([[s_dp[0]], np.full(copies, s_dp[1])])

    def sampler(scores):
        def draw(rng, size):
            return (exponential_selection(scores, factor * epsilon, scale, rng, size) > 0).astype(float)
        return draw

    return audit_pair(sampler(scores_d), sampler(scores_dp), epsilon, 0.0, n_select=n_select, n_test=n_test,
                      alpha=alpha, seed=seed, chunk=50_000)
