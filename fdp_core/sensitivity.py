"""Sensitivity bounds, tight and paper versions (METHODS.md sections 2-4, 13-14).

Neighbouring data sets replace one curve; after clipping, the coefficient difference d of
the replaced curve satisfies ||d||_2 <= 2 tau (Bessel), and the mean moves by d / n. The
densities' bounds (end of the module) replace one observation inside the public box.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from .params import check_choice, check_positive, check_tau

BOUNDS = ("tight", "paper")
KDE_BOUNDS = ("exact", "paper")


def gaussian_mean_sensitivity_tight(eigenvalues: np.ndarray, shrink: np.ndarray, tau: float, n: int) -> float:
    """Cameron-Martin sensitivity of the penalised mean, attained (METHODS.md 2).

    ||Delta mu||_H^2 = sum_l s_l^2 d_l^2 / (n^2 lambda_l) <= max_l (s_l^2 / lambda_l) ||d||^2 / n^2
    with equality when d = 2 tau e_l* (curves tau phi_l* and -tau phi_l*).
    """
    tau = check_tau(tau)
    ratio = np.asarray(shrink) ** 2 / np.asarray(eigenvalues)
    return 2.0 * tau / n * math.sqrt(float(ratio.max()))


def gaussian_mean_sensitivity_paper(tau: float, n: int, eta: float, phi: float) -> float:
    """Mirshani et al. (2019) closed form: the sup of s^2/lambda over all lambda > 0.

    Delta^2 = tau^2 (2 eta - 1)^(2 - 1/eta) / (n^2 phi^(1/eta) eta^2).
    """
    tau, phi = check_tau(tau), check_positive("phi", phi)
    sq = tau**2 * (2 * eta - 1) ** (2 - 1 / eta) / (n**2 * phi ** (1 / eta) * eta**2)
    return math.sqrt(sq)


def gaussian_mean_argmax_component(eigenvalues: np.ndarray, shrink: np.ndarray) -> int:
    """Index l* where the tight bound is attained (used to build the worst-case pair)."""
    return int(np.argmax(np.asarray(shrink) ** 2 / np.asarray(eigenvalues)))


# --------------------------------------------------------------------------- pure epsilon-DP (METHODS.md 3)
#
# The ICLP mechanism needs the sensitivity in ||h||_{1,C} = sum_l |h_l| / sqrt(lambda_l);
# FRL and Bernstein need the plain l1 sensitivity of their coefficient vectors.

def l1c_norm(coefficients: np.ndarray, eigenvalues: np.ndarray) -> np.ndarray:
    """||h||_{1,C} = sum_l |h_l| / sqrt(lambda_l) (over the last axis)."""
    return np.sum(np.abs(coefficients) / np.sqrt(np.asarray(eigenvalues, dtype=float)), axis=-1)


def iclp_qr_weights(eigenvalues: np.ndarray, shrink: np.ndarray) -> np.ndarray:
    """a_l = s_l / sqrt(lambda_l): the l1-C change of the QR mean is (1/n) sum_l a_l |d_l|."""
    return np.asarray(shrink, dtype=float) / np.sqrt(np.asarray(eigenvalues, dtype=float))


def iclp_qr_sensitivity_tight(eigenvalues: np.ndarray, shrink: np.ndarray, tau: float, n: int) -> float:
    """l1-C sensitivity of the quadratic-penalty mean, attained: (2 tau / n) ||a||_2.

    By Cauchy-Schwarz sum_l a_l |d_l| <= ||a||_2 ||d||_2 <= 2 tau ||a||_2, with equality for
    the curves X = tau sum_l a_l phi_l / ||a||_2 and X' = -X.
    """
    tau = check_tau(tau)
    return 2.0 * tau / n * float(np.linalg.norm(iclp_qr_weights(eigenvalues, shrink)))


def iclp_qr_sensitivity_paper(eigenvalues: np.ndarray, shrink: np.ndarray, tau: float, n: int) -> float:
    """Lin & Reimherr's bound (2 tau / n) sum_l a_l (each |d_l| <= 2 tau separately): never smaller."""
    tau = check_tau(tau)
    return 2.0 * tau / n * float(np.sum(iclp_qr_weights(eigenvalues, shrink)))


def iclp_ar_active_count(thresholds: np.ndarray, tau: float) -> int:
    """J*: the number of AR components whose soft threshold is below tau.

    A clipped curve has |x_l| <= ||X|| <= tau, so |xbar_l| <= tau and a threshold >= tau
    zeroes component l for every data set: it carries no information and gets no noise.
    Eigenvalues are sorted descending, so thresholds increase and the active ones come first.
    """
    tau = check_tau(tau)
    return int(np.sum(np.asarray(thresholds) < tau))


def iclp_ar_sensitivity_cs(eigenvalues: np.ndarray, n_active: int, tau: float, n: int) -> float:
    """CS bound for the AR mean: (2 tau / n) sqrt(sum_{l <= J*} 1 / lambda_l).

    Soft thresholding is 1-Lipschitz, so |Delta mu_l| <= |d_l| / n; Cauchy-Schwarz over the
    J* active components then gives the bound. Valid, but the thresholds usually make it
    unattainable: it is a "CS bound", not a tight one.
    """
    tau = check_tau(tau)
    lam = np.asarray(eigenvalues, dtype=float)[:n_active]
    return 2.0 * tau / n * math.sqrt(float(np.sum(1.0 / lam)))


def iclp_ar_sensitivity_triangle(eigenvalues: np.ndarray, n_active: int, tau: float, n: int) -> float:
    """Triangle bound for the AR mean: (2 tau / n) sum_{l <= J*} lambda_l^(-1/2).

    The paper prints lambda_l^(-eta/2) in this sum. That is wrong: the l1-C norm divides by
    sqrt(lambda_l) whatever eta is, and the printed sum is smaller (under-noises) as soon as
    some lambda_l > 1 (e.g. a domain not rescaled to [0, 1]). Never use the printed version.
    """
    tau = check_tau(tau)
    lam = np.asarray(eigenvalues, dtype=float)[:n_active]
    return 2.0 * tau / n * float(np.sum(lam ** -0.5))


def frl_sensitivity_tight(tau: float, n: int, n_components: int) -> float:
    """l1 sensitivity of the first M mean coefficients, attained: 2 tau sqrt(M) / n.

    sum_{l <= M} |d_l| <= sqrt(M) ||d||_2 <= 2 tau sqrt(M), equality for d = 2 tau (1, ..., 1) / sqrt(M).
    """
    tau = check_tau(tau)
    return 2.0 * tau * math.sqrt(n_components) / n


def frl_sensitivity_paper(tau: float, n: int, n_components: int) -> float:
    """The literature's 2 tau M / n (each |d_l| <= 2 tau separately): never smaller."""
    tau = check_tau(tau)
    return 2.0 * tau * n_components / n


def bernstein_sensitivity(K: int, lo: float, hi: float, n: int) -> float:
    """l1 sensitivity of the K + 1 lattice means under replace-one: (K + 1)(hi - lo) / n.

    Each lattice value of a curve lies in [lo, hi], so each mean moves by at most
    (hi - lo) / n; attained by a curve constant at hi replaced by one constant at lo.
    """
    return (K + 1) * (hi - lo) / n


# --------------------------------------------------------------------------- covariance (METHODS.md 13)
#
# Second moment S = (1/n) sum_i x_i x_i^T of coefficient vectors with ||x_i|| <= tau, shrunk
# entrywise by s_jl. Replacing x by y moves it by D = s o (x x^T - y y^T) / n. Every bound
# below is in terms of A_jl = s_jl / sqrt(lambda_j lambda_l) (non-negative, symmetric) and
# M = x x^T - y y^T, whose eigenvalues a >= 0 >= -b satisfy a, b <= tau^2 and
# a^2 + b^2 = ||x||^4 + ||y||^4 - 2 (x.y)^2 <= 2 tau^4.

COVARIANCE_GAUSSIAN_BOUNDS = ("kyfan", "sqrt2")
COVARIANCE_GAUSSIAN_BOUND_LABELS = {
    "kyfan": "Ky Fan bound tau^2 sqrt(c_1 + c_2) / n (valid; attained when the largest A_jl is off the diagonal)",
    "sqrt2": "sqrt(2) tau^2 max A_jl / n (valid; attained when the largest A_jl is off the diagonal)",
}


def covariance_weights(eigenvalues: np.ndarray, shrink: np.ndarray) -> np.ndarray:
    """A_jl = s_jl / sqrt(lambda_j lambda_l): ||D||_CM^2 = sum_jl A_jl^2 M_jl^2 / n^2."""
    root = np.sqrt(np.asarray(eigenvalues, dtype=float))
    return np.asarray(shrink, dtype=float) / np.outer(root, root)


def covariance_gaussian_sensitivity_sqrt2(weights: np.ndarray, tau: float, n: int) -> float:
    """sqrt(2) tau^2 max_jl A_jl / n: ||D||_CM <= max A ||M||_F / n and ||M||_F <= sqrt(2) tau^2.

    Attained by x = tau (e_j + e_l)/sqrt2, y = tau (e_j - e_l)/sqrt2 (M = tau^2 (e_j e_l^T + e_l e_j^T))
    when the maximum sits at j != l.
    """
    tau = check_positive("tau", tau)
    return math.sqrt(2.0) * tau**2 * float(np.max(weights)) / n


def covariance_gaussian_sensitivity_kyfan(weights: np.ndarray, tau: float, n: int) -> float:
    """tau^2 sqrt(c_1 + c_2) / n with c_j = max_l A_jl^2 (c_1 >= c_2 the two largest).

    Proof: A_jl^2 <= (c_j + c_l) / 2, so sum_jl A_jl^2 M_jl^2 <= sum_j c_j (M^2)_jj = tr(diag(c) M^2).
    Writing M = a p p^T - b q q^T (p _|_ q unit vectors), M^2 = a^2 p p^T + b^2 q q^T and
    tr(diag(c) M^2) = a^2 p^T diag(c) p + b^2 q^T diag(c) q <= max(a, b)^2 c_1 + min(a, b)^2 c_2 (Ky Fan
    for two orthonormal vectors) <= tau^4 (c_1 + c_2) since a, b <= tau^2. Never above the sqrt(2) bound.
    """
    tau = check_positive("tau", tau)
    c = np.sort(np.max(np.asarray(weights, dtype=float) ** 2, axis=1))[::-1]
    top = float(c[0] + (c[1] if c.size > 1 else 0.0))
    return tau**2 * math.sqrt(top) / n


def covariance_l1c_sensitivity(weights: np.ndarray, tau: float, n: int) -> dict:
    """l1-C sensitivity of the shrunk second moment: (tau^2/n) min(2 r(A), sqrt(2) ||A||_F).

    sum_jl A_jl |M_jl| <= |x|^T A |x| + |y|^T A |y| <= r(A) (||x||^2 + ||y||^2) <= 2 r(A) tau^2 (A >= 0,
    r = Perron root), and <= ||A||_F ||M||_F <= sqrt(2) tau^2 ||A||_F (Cauchy-Schwarz). Valid, not attained
    in general (the diagonal of M cannot take opposite signs for x and y): a "bound", not "tight".
    Returns both parts and the minimum.
    """
    tau = check_positive("tau", tau)
    A = np.asarray(weights, dtype=float)
    perron = float(np.max(np.linalg.eigvalsh((A + A.T) / 2.0)))
    parts = {"perron": 2.0 * perron * tau**2 / n, "frobenius": math.sqrt(2.0) * float(np.linalg.norm(A)) * tau**2 / n}
    return {**parts, "bound": min(parts.values())}


# --------------------------------------------------------------------------- regression (METHODS.md 14)

def regression_t1_sensitivity_frobenius(bound_b: float, n: int) -> float:
    """Frobenius sensitivity of T1 = (1/n) sum X X^T: ||X X^T - X' X'^T||_F^2 = ||X||^4 + ||X'||^4 -
    2 (X.X')^2 <= 2 B^4, so Delta_F = sqrt(2) B^2 / n (attained by orthogonal X, X' of norm B)."""
    return math.sqrt(2.0) * check_positive("B", bound_b) ** 2 / n


def regression_t2_sensitivity_cm(eigenvalues: np.ndarray, shrink: np.ndarray, bound_b: float, tau: float,
                                 n: int) -> float:
    """Cameron-Martin sensitivity (q copies of C) of the shrunk T2 = (1/n) sum X y^T, attained.

    sum_kl s_l^2 (X_k y_l - X'_k y'_l)^2 / lambda_l <= max_l (s_l^2 / lambda_l) ||X y^T - X' y'^T||_F^2 and
    ||X y^T - X' y'^T||_F <= ||X|| ||y|| + ||X'|| ||y'|| <= 2 B tau; equality for X = X' of norm B and
    y = -y' = tau e_l* (l* = argmax s_l^2 / lambda_l).
    """
    ratio = np.asarray(shrink, dtype=float) ** 2 / np.asarray(eigenvalues, dtype=float)
    return 2.0 * check_positive("B", bound_b) * check_positive("tau", tau) * math.sqrt(float(ratio.max())) / n


# --------------------------------------------------------------------------- sparse curves (METHODS.md 20)
#
# Replace one person: A_i = (1/m_i) sum_j phi_j phi_j^T is PSD with tr A_i <= R2 (each
# ||phi(t)||_2^2 <= R2) and sum_kl |A_i,kl| <= R1 (each ||phi(t)||_1^2 <= R1); b_i = (1/m_i) sum_j
# (y_j - c) phi_j with |y_j - c| <= h has ||b_i||_2 <= h sqrt(R2) and ||b_i||_1 <= h sqrt(R1).

def sparse_gram_sensitivity_frobenius(r2: float, n: int) -> float:
    """||A_i - A_i'||_F^2 = ||A_i||_F^2 + ||A_i'||_F^2 - 2 <A_i, A_i'> <= tr(A_i)^2 + tr(A_i')^2 <= 2 R2^2
    (PSD: <A, A'> >= 0 and ||A||_F <= tr A), so Delta_F = sqrt(2) R2 / n. Attained when two times
    have orthogonal phi of squared norm R2 (rank-one A_i, A_i'); in general it is an upper bound."""
    return math.sqrt(2.0) * check_positive("R2", r2) / n


def sparse_gram_sensitivity_l1(r1: float, r2: float, n_basis: int, n: int) -> float:
    """l1 (all J^2 entries): ||A_i - A_i'||_1 <= ||A_i||_1 + ||A_i'||_1 <= 2 R1, and by Cauchy-Schwarz over the
    J^2 entries ||A_i - A_i'||_1 <= J ||A_i - A_i'||_F <= sqrt(2) J R2; the smaller of the two."""
    return min(2.0 * check_positive("R1", r1), math.sqrt(2.0) * int(n_basis) * check_positive("R2", r2)) / n


def sparse_b_sensitivity_l2(r2: float, h: float, n: int) -> float:
    """||b_i - b_i'||_2 <= 2 h sqrt(R2) / n; attained (up to R2's safety factor) by one visit at the t maximising
    ||phi(t)|| with y = c + h versus y = c - h."""
    return 2.0 * check_positive("h", h) * math.sqrt(check_positive("R2", r2)) / n


def sparse_b_sensitivity_l1(r1: float, h: float, n: int) -> float:
    """||b_i - b_i'||_1 <= 2 h sqrt(R1) / n; attained (up to R1's safety factor) as for the l2 bound."""
    return 2.0 * check_positive("h", h) * math.sqrt(check_positive("R1", r1)) / n


# --------------------------------------------------------------------------- densities (METHODS.md 4)
#
# Neighbouring data sets replace one observation; every observation lies in the public box
# (clipped), and for ICLP-KDE on a grid node (snapped). "exact" bounds are attained.

def hall_sensitivities(n: int, bandwidth: float, box) -> dict:
    """RKHS sensitivity of the Gaussian KDE: {"exact": box-exact (attained), "paper": sqrt 2 bound}.

    ||f_D - f_D'||_H = (2 pi h^2)^(-d/2)/n * ||k(., x) - k(., x')||_H and
    ||k(., x) - k(., x')||_H^2 = k(x, x) + k(x', x') - 2 k(x, x') = 2 (1 - exp(-||x - x'||^2/(2h^2))),
    increasing in ||x - x'||, so the maximum over the box is at distance D (its diameter).
    """
    from .releases.box import box_diameter, check_box  # lazy: densities only; a mean release never loads the box

    h = check_positive("bandwidth", bandwidth)
    box = check_box(box)
    d = len(box)
    scale = 1.0 / (n * (2.0 * math.pi * h * h) ** (d / 2.0))
    D = box_diameter(box)
    return {"exact": scale * math.sqrt(-2.0 * math.expm1(-D * D / (2.0 * h * h))),
            "paper": scale * math.sqrt(2.0)}


def _l1_diameter(A: np.ndarray, chunk: int = 256) -> tuple[float, tuple[int, int]]:
    """max_{j, k} ||A_j - A_k||_1 over rows (exact, blockwise cdist), with an attaining pair."""
    # scipy.spatial takes ~0.1-0.2 s to import and only the density sensitivities need it:
    # imported here so that importing the mean (and the CLI) does not pay for it.
    from scipy.spatial.distance import cdist

    best, pair = -1.0, (0, 0)
    for start in range(0, A.shape[0], chunk):
        D = cdist(A[start:start + chunk], A, "cityblock")
        i = int(np.argmax(D))
        r, k = divmod(i, A.shape[0])
        if D.flat[i] > best:
            best, pair = float(D.flat[i]), (start + r, k)
    return best, pair


def _l1_diameter_kron(A: np.ndarray, B: np.ndarray) -> tuple[float, tuple]:
    """max over node pairs ((p, q), (p', q')) of ||A_p kron B_q - A_p' kron B_q'||_1, exactly.

    Brute force costs G^6 for a G x G grid. Branch and bound instead: three upper bounds
    from 1-d quantities (triangle inequality on the splits
    a b - a'b' = (a - a') b + a' (b - b') = (a - a') b' + a (b - b')
               = [(a - a') (b + b') + (a + a') (b - b')] / 2 and ||u kron v||_1 = ||u||_1 ||v||_1)
    discard every pair that cannot beat the best exact value found so far; the survivors,
    in decreasing order of their bound, are evaluated exactly until the next bound is no
    larger than the best value. The result is the exact maximum (tested against brute force).
    """
    from scipy.spatial.distance import cdist  # late, as in _l1_diameter

    nA, nB = np.abs(A).sum(axis=1), np.abs(B).sum(axis=1)
    DA, SA = cdist(A, A, "cityblock"), cdist(A, -A, "cityblock")
    DB, SB = cdist(B, B, "cityblock"), cdist(B, -B, "cityblock")
    GA, GB = A.shape[0], B.shape[0]

    def bounds(p: int) -> np.ndarray:
        # Upper bounds for the pairs ((p, q), (p', q')) with p' >= p (the rest by symmetry),
        # as an array indexed [q, p' - p, q'].
        d, s, a = DA[p, p:][None, :, None], SA[p, p:][None, :, None], nA[p:][None, :, None]
        ub = d * nB[:, None, None] + a * DB[:, None, :]
        np.minimum(ub, d * nB[None, None, :] + nA[p] * DB[:, None, :], out=ub)
        np.minimum(ub, 0.5 * (d * SB[:, None, :] + s * DB[:, None, :]), out=ub)
        return ub

    def exact(p, q, pp, qq) -> np.ndarray:
        # a kron b - a' kron b' as one batched rank-2 product [a, -a'] [b; b'].
        out = np.empty(len(p))
        for start in range(0, len(p), 256):
            sl = slice(start, start + 256)
            X = np.matmul(np.stack([A[p[sl]], -A[pp[sl]]], axis=2), np.stack([B[q[sl]], B[qq[sl]]], axis=1))
            np.abs(X, out=X)
            out[sl] = X.sum(axis=(1, 2))
        return out

    def unpack(p, flat):
        q, rest = np.divmod(flat, (GA - p) * GB)
        dp, qq = np.divmod(rest, GB)
        return p, q, p + dp, qq

    best, pair = -1.0, None
    surv_ub, surv_p, surv_flat = [], [], []
    for p0 in range(GA):
        ub = bounds(p0).ravel()
        # Raise the lower bound with this block's most promising pairs, then keep only the
        # pairs that could still beat it.
        top = np.array([int(np.argmax(ub))])
        p, q, pp, qq = unpack(np.full(top.size, p0), top)
        values = exact(p, q, pp, qq)
        i = int(np.argmax(values))
        if values[i] > best:
            best, pair = float(values[i]), ((p0, int(q[i])), (int(pp[i]), int(qq[i])))
        hit = np.flatnonzero(ub > best)
        surv_ub.append(ub[hit])
        surv_p.append(np.full(hit.size, p0))
        surv_flat.append(hit)
    surv_ub, surv_p, surv_flat = np.concatenate(surv_ub), np.concatenate(surv_p), np.concatenate(surv_flat)
    alive = surv_ub > best
    surv_ub, surv_p, surv_flat = surv_ub[alive], surv_p[alive], surv_flat[alive]
    order = np.argsort(surv_ub)[::-1]
    for start in range(0, order.size, 1024):
        block = order[start:start + 1024]
        if surv_ub[block[0]] <= best:
            break
        p, q, pp, qq = unpack(surv_p[block], surv_flat[block])
        values = exact(p, q, pp, qq)
        i = int(np.argmax(values))
        if values[i] > best:
            best, pair = float(values[i]), ((int(p[i]), int(q[i])), (int(pp[i]), int(qq[i])))
    return best, pair


@lru_cache(maxsize=32)
def _iclp_unit_sensitivity_cached(axis, d: int, bound: str) -> tuple[float, tuple | None]:
    # Keyed by the axis object itself: IclpAxis hashes by identity and is cached per public
    # setting (mechanisms/iclp_kde.py), so one setting computes its maximum once.
    vec = axis.sensitivity_vectors
    single = np.abs(vec).sum(axis=1)
    if bound == "paper":
        return 2.0 * float(single.max()) ** d, None
    if d == 1:
        value, (j, k) = _l1_diameter(vec)
        return value, ((j,), (k,))
    return _l1_diameter_kron(vec, vec)


def iclp_sensitivity(n: int, axis, *, d: int = 1, bound: str = "exact") -> tuple[float, tuple | None]:
    """Delta_1 of ICLP-KDE in unit coordinates and the attaining node pair (exact bound).

    ``axis`` is the :class:`fdp_core.mechanisms.iclp_kde.IclpAxis` of the setting; its
    ``sensitivity_vectors[j, l]`` = lambda_l^(eta - 1/2) phi_l(u_j) / c(u_j). Replacing x by x'
    moves coefficient l by lambda_l^eta (phi_l(x)/c(x) - phi_l(x')/c(x')) / n, so in
    ||h||_{1,C} = sum_l |h_l| / sqrt(lambda_l) the move is
    (1/n) sum_l lambda_l^(eta - 1/2) |phi_l(x)/c(x) - phi_l(x')/c(x')|; observations sit on
    grid nodes (snapped), so the maximum over node pairs is exact and attained. The
    triangle ("paper") bound doubles the largest single-node norm. In 2-d the vectors are
    Kronecker products of the 1-d ones; the pair maximum is found by branch and bound.
    The pair is returned as node indices per axis, e.g. ((j,), (k,)) or ((p, q), (p', q')).
    """
    check_choice("bound", bound, KDE_BOUNDS)
    value, pair = _iclp_unit_sensitivity_cached(axis, int(d), bound)
    return value / n, pair


def truncated_gaussian_sensitivity(tau: float, n: int) -> float:
    """L2 sensitivity of the first M mean coefficients, attained: 2 tau / n (for every M).

    The coefficients are inner products with orthonormal eigenfunctions, so by Bessel's
    inequality ||P_M (x - x')||_2 <= ||x - x'||_L2 <= 2 tau for curves in the tau ball;
    x = tau phi_1, x' = -tau phi_1 attains it. Replace-one divides by n.
    """
    tau = check_tau(tau)
    return 2.0 * tau / n
