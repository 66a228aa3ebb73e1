"""weighted_chi2.brent_root: scipy.optimize.brentq's arithmetic step for step, so the release's
radius (and every number computed from it) is the same to the last bit without importing
scipy.optimize on the command line's path (issue 42 item 3)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from fdp_core.mechanisms import weighted_chi2
from fdp_core.mechanisms.weighted_chi2 import brent_root, imhof_cdf, quantile_upper_bound

FUNCTIONS = [
    (lambda x: x**3 - 2 * x - 5, 2.0, 3.0),
    (lambda x: math.cos(x) - x, 0.0, 1.0),
    (lambda x: math.exp(x) - 1e3, 0.0, 20.0),
    (lambda x: (x - 1.0) ** 5, 0.0, 3.0),  # a flat root: many bisections
    (lambda x: math.atan(1e4 * (x - 0.3)), -1.0, 1.0),  # a steep one
    (lambda x: x, 0.0, 1.0),  # the root at an end
    (lambda x: math.tanh(x - 0.123456789), -50.0, 60.0),
]


@pytest.mark.parametrize("f,a,b", FUNCTIONS)
@pytest.mark.parametrize("xtol,rtol", [(1e-12, 1e-7), (2e-12, 8.881784197001252e-16), (1e-3, 1e-3)])
def test_brent_root_equals_scipy_brentq_to_the_bit(f, a, b, xtol, rtol):
    try:
        expected = optimize.brentq(f, a, b, xtol=xtol, rtol=rtol)
    except RuntimeError:  # no convergence within 100 iterations: both say so
        with pytest.raises(RuntimeError):
            brent_root(f, a, b, xtol=xtol, rtol=rtol)
        return
    assert brent_root(f, a, b, xtol=xtol, rtol=rtol) == expected


def test_brent_root_on_random_polynomials_equals_scipy():
    rng = np.random.default_rng(0)
    for _ in range(300):
        roots = np.sort(rng.uniform(-5, 5, 3))
        poly = np.poly(roots)
        a, b = roots[1] - rng.uniform(0.01, 1), roots[1] + rng.uniform(0.01, 1)
        a, b = max(a, (roots[0] + roots[1]) / 2), min(b, (roots[1] + roots[2]) / 2)
        f = lambda x, p=poly: float(np.polyval(p, x))  # noqa: E731
        assert brent_root(f, a, b, 1e-12, 1e-7) == optimize.brentq(f, a, b, xtol=1e-12, rtol=1e-7)


def test_brent_root_refuses_a_non_bracket():
    with pytest.raises(ValueError):
        brent_root(lambda x: x * x + 1, -1.0, 1.0, 1e-12, 1e-7)


def _scipy_quantile(v, prob):
    """The quantile as it was computed with scipy.optimize.brentq (before issue 42)."""
    def slack(x):
        cdf, error = imhof_cdf(x, v)
        return cdf - error - prob
    lo = hi = float(v.sum())
    while slack(hi) < 0:
        lo, hi = hi, 2.0 * hi
    x = optimize.brentq(slack, lo, hi, xtol=1e-12, rtol=1e-7) if lo < hi else hi
    while slack(x) < 0:
        x *= 1.0 + 1e-7
    return float(x)


@pytest.mark.parametrize("seed", range(6))
def test_the_quantile_is_the_one_scipy_brentq_gave(seed):
    rng = np.random.default_rng(seed)
    v = np.sort(rng.exponential(1.0, rng.integers(2, 40)))[::-1] * 10.0 ** rng.uniform(-6, 2)
    for prob in (0.5, 0.9, 0.95):
        assert quantile_upper_bound(v, prob) == _scipy_quantile(v, prob)


def test_one_variance_is_the_chi_square_quantile():
    from scipy import stats

    assert weighted_chi2.quantile_upper_bound(np.array([2.5]), 0.95) == 2.5 * stats.chi2.ppf(0.95, 1)
