"""The law of Q = sum_l v_l chi2_1 (independent), exactly: Imhof's inversion with a bounded error (METHODS.md 21, 25).

||Z||^2 for Gaussian noise Z = sum_l sqrt(v_l) xi_l phi_l on an orthonormal basis is Q, so the 95%
L2 radius of a Gaussian release is sqrt of Q's 0.95 quantile. Imhof (1961):

    P(Q > x) = 1/2 + (1/pi) int_0^inf sin(theta(u)) / (u rho(u)) du,
    theta(u) = 1/2 sum_l arctan(v_l u) - x u / 2,   rho(u) = prod_l (1 + v_l^2 u^2)^(1/4).

The integral is cut at U and computed by Gauss-Legendre panels a fraction of theta's shortest
period wide (the integrand is smooth: panel errors are far below 1e-9). The cut-off's error is
bounded, not estimated: |sin| <= 1 and rho(u) >= prod_{l <= k} (v_l u)^(1/2) for the k largest
variances, so the tail is at most (2 / k) U^(-k/2) / prod_{l <= k} sqrt(v_l) (the best k is used).
:func:`quantile_upper_bound` returns x with P(Q <= x) - error >= prob: the radius provably holds
(up to the panels' rounding, 1e-9), instead of a saddlepoint's approximate 0.95.
"""

from __future__ import annotations

import math

import numpy as np

from ..limits import MAX_IMHOF_PANELS  # beyond: the integral stops, its (larger, bounded) tail error charged

TAIL_TOLERANCE = 1e-7  # the cut-off's bound on P, when it can be reached within MAX_IMHOF_PANELS
NODES, NODE_WEIGHTS = np.polynomial.legendre.leggauss(8)
ROUNDING = 1e-9  # the panels' own error, charged on top (smooth integrand, 8 nodes per eighth of a period)


def _tail_bound(v: np.ndarray, U: float) -> float:
    """The cut-off error: min over k of (2 / k) U^(-k/2) / prod_{l <= k} sqrt(v_l), in probability (/ pi)."""
    top = np.sort(v)[::-1][:40]
    k = np.arange(1, top.size + 1)
    logs = np.log(2.0 / k) - 0.5 * k * math.log(U) - 0.5 * np.cumsum(np.log(top))
    return float(np.exp(np.min(logs)) / math.pi)


def _cutoff(v: np.ndarray) -> float:
    """The smallest U (on a log grid) whose tail bound is <= TAIL_TOLERANCE."""
    U = 1.0
    while _tail_bound(v, U) > TAIL_TOLERANCE and U < 1e300:
        U *= 2.0
    return U


def imhof_cdf(x: float, variances: np.ndarray) -> tuple[float, float]:
    """(P(Q <= x), a bound on the error of that number) for Q = sum_l v_l chi2_1."""
    v = np.asarray(variances, dtype=float)
    v = v[v > 0]
    if x <= 0 or v.size == 0:
        return (0.0 if v.size else 1.0), 0.0
    scale = float(v.max())  # Q / scale has the variances v / scale <= 1: the same probabilities
    v, x = v / scale, x / scale
    fastest = 0.5 * max(float(v.sum()), x)  # |theta'(u)| <= this: theta's shortest period is 2 pi / fastest
    width = (2.0 * math.pi / fastest) / 8.0
    U = _cutoff(v)
    panels = int(math.ceil(U / width))
    if panels > MAX_IMHOF_PANELS:
        panels, U = MAX_IMHOF_PANELS, MAX_IMHOF_PANELS * width
    total = 0.0
    for start in range(0, panels, 2000):  # chunks: memory stays ~2000 * 8 * L doubles
        lefts = width * np.arange(start, min(start + 2000, panels))
        u = (lefts[:, None] + 0.5 * width * (NODES + 1.0)).ravel()
        vu = np.outer(u, v)
        theta = 0.5 * np.arctan(vu).sum(axis=1) - 0.5 * x * u
        log_rho = 0.25 * np.log1p(vu**2).sum(axis=1)
        integrand = np.sin(theta) / (u * np.exp(log_rho))
        total += 0.5 * width * float(np.tile(NODE_WEIGHTS, lefts.size) @ integrand)
    cdf = 0.5 - total / math.pi
    return min(max(cdf, 0.0), 1.0), _tail_bound(v, U) + ROUNDING


def brent_root(f, a: float, b: float, xtol: float, rtol: float, maxiter: int = 100) -> float:
    """A root of f in [a, b] (f(a), f(b) of opposite signs) by Brent's method, step for step the
    arithmetic of scipy.optimize.brentq (Brent 1973 as in scipy's Zeros/brentq.c), so the same
    root to the last bit (tests/test_weighted_chi2_root.py checks it against scipy). Here rather
    than scipy.optimize: importing that costs ~0.3-0.5 s of CPU, more than a whole mean release
    on DTI, and it was the release's only use of scipy.optimize."""
    x_prev, x_cur = float(a), float(b)
    f_prev, f_cur = float(f(x_prev)), float(f(x_cur))
    if f_prev * f_cur > 0:
        raise ValueError("f(a) and f(b) must have different signs")
    if f_prev == 0:
        return x_prev
    if f_cur == 0:
        return x_cur
    x_blk = f_blk = s_prev = s_cur = 0.0
    for _ in range(maxiter):
        if f_prev * f_cur < 0:  # the bracket is [x_prev, x_cur]: x_blk is its other end
            x_blk, f_blk = x_prev, f_prev
            s_prev = s_cur = x_cur - x_prev
        if abs(f_blk) < abs(f_cur):  # keep the best estimate in x_cur
            x_prev, x_cur, x_blk = x_cur, x_blk, x_cur
            f_prev, f_cur, f_blk = f_cur, f_blk, f_cur
        delta = (xtol + rtol * abs(x_cur)) / 2
        s_bis = (x_blk - x_cur) / 2
        if f_cur == 0 or abs(s_bis) < delta:
            return x_cur
        if abs(s_prev) > delta and abs(f_cur) < abs(f_prev):  # interpolate, if it promises a short step
            if x_prev == x_blk:  # secant
                s_try = -f_cur * (x_cur - x_prev) / (f_cur - f_prev)
            else:  # inverse quadratic
                d_prev = (f_prev - f_cur) / (x_prev - x_cur)
                d_blk = (f_blk - f_cur) / (x_blk - x_cur)
                s_try = -f_cur * (f_blk * d_blk - f_prev * d_prev) / (d_blk * d_prev * (f_blk - f_prev))
            if 2 * abs(s_try) < min(abs(s_prev), 3 * abs(s_bis) - delta):
                s_prev, s_cur = s_cur, s_try
            else:
                s_prev = s_cur = s_bis
        else:  # bisect
            s_prev = s_cur = s_bis
        x_prev, f_prev = x_cur, f_cur
        x_cur += s_cur if abs(s_cur) > delta else (delta if s_bis > 0 else -delta)
        f_cur = float(f(x_cur))
    raise RuntimeError(f"Brent's method did not converge in {maxiter} iterations")


def quantile_upper_bound(variances: np.ndarray, prob: float) -> float:
    """x with P(Q <= x) >= prob guaranteed (the computed cdf minus its error bound), within 1e-7 relative of the
    smallest such x on the computed law. One variance: the chi-square quantile itself."""
    v = np.asarray(variances, dtype=float)
    v = v[v > 0]
    if v.size == 0:
        return 0.0
    if v.size == 1:
        from scipy import stats  # lazy: scipy's import is slow; one variance only (a one-term basis)

        return float(v[0] * stats.chi2.ppf(prob, 1))

    known: dict = {}  # slack at each x already computed: the bracket's ends and Brent's last point come back

    def slack(x: float) -> float:
        if x not in known:
            cdf, error = imhof_cdf(x, v)
            known[x] = cdf - error - prob
        return known[x]

    lo = hi = float(v.sum())  # the mean: P(Q <= mean) < 0.95 for every weighted chi-square with >= 2 terms
    while slack(hi) < 0:
        lo, hi = hi, 2.0 * hi
    x = brent_root(slack, lo, hi, xtol=1e-12, rtol=1e-7) if lo < hi else hi
    while slack(x) < 0:  # brentq's answer may sit a rounding below the root: step up until it holds
        x *= 1.0 + 1e-7
    return float(x)


def monte_carlo_upper_quantile(sample: np.ndarray, prob: float, confidence: float = 0.999) -> float:
    """An upper confidence bound on the ``prob`` quantile from i.i.d. draws: the smallest order statistic
    X_(k) with P(Binomial(N, prob) <= k - 1) >= confidence, so P(X_(k) >= the true quantile) >= confidence
    (distribution-free). For laws without an exact inversion (Laplace noise), where np.quantile would be
    below the true quantile half of the time."""
    from scipy import stats  # lazy: scipy's import is slow

    ordered = np.sort(np.asarray(sample, dtype=float))
    k = int(stats.binom.ppf(confidence, ordered.size, prob)) + 1
    return float(ordered[min(k, ordered.size) - 1])
