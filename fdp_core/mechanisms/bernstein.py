"""Bernstein mechanism baseline for the mean, pure epsilon-DP (METHODS.md 3).

Aldà & Rubinstein (AAAI 2017), non-iterated operator as in the R package diffpriv: the
sample mean of the range-clipped curves is read off at the lattice v / K (v = 0..K) of
the domain rescaled to [0, 1]; each lattice value gets iid Laplace noise of scale
lambda = (K + 1)(hi - lo) / (n epsilon) (the l1 sensitivity of the lattice vector over
epsilon), and the release is the Bernstein polynomial sum_v c~_v C(K, v) t^v (1 - t)^(K - v).
The sensitivity is computed, never estimated by sampling (which gives only "random DP").
"""

from __future__ import annotations

import numpy as np

from .coefficient_noise import CoefficientNoise
from .families import LAPLACE
from .guarantee import Guarantee
from ..releases.estimators import bernstein_lattice_means
from ..sensitivity import bernstein_sensitivity


def bernstein_basis(unit_grid: np.ndarray, K: int) -> np.ndarray:
    """(m, K + 1) matrix of C(K, v) t^v (1 - t)^(K - v) on the unit grid.

    The binomial pmf evaluates exactly this product, stably for large K.
    """
    # scipy.stats costs ~0.35-0.9 s to import; only this function needs it, so importing
    # it here keeps the library import (and every CLI command) fast.
    from scipy import stats

    t = np.asarray(unit_grid, dtype=float)
    return stats.binom.pmf(np.arange(K + 1)[None, :], K, t[:, None])


def bernstein_sum_sq_norms(K: int) -> float:
    """S_K = sum_v ||b_v||^2 on [0, 1] = sum_v C(K, v)^2 (2v)! (2K - 2v)! / (2K + 1)!.

    ||b_v||^2 = C(K, v)^2 integral t^(2v) (1 - t)^(2K - 2v) dt = C(K, v)^2 Beta(2v + 1, 2K - 2v + 1).
    S_20 = 0.19455 (the figure in METHODS.md: K = 20, not K + 1 = 21).
    """
    # scipy.special takes ~0.15-0.3 s to import (it pulls numpy.f2py and unittest in);
    # imported where used so that importing the library and starting the CLI do not pay for it.
    from scipy import special

    v = np.arange(K + 1)
    log_terms = (2 * (special.gammaln(K + 1) - special.gammaln(v + 1) - special.gammaln(K - v + 1))
                 + special.gammaln(2 * v + 1) + special.gammaln(2 * K - 2 * v + 1) - special.gammaln(2 * K + 2))
    return float(np.sum(np.exp(log_terms)))


def bernstein_expected_sq_l2_error(K: int, scale: float, length: float = 1.0) -> float:
    """E||release - estimate||^2 = 2 lambda^2 (b - a) S_K for iid Laplace(lambda) lattice noise.

    The basis is not orthonormal, but the noise terms are independent with mean 0, so only
    the diagonal 2 lambda^2 ||b_v||^2 survives; on [a, b] each ||b_v||^2 scales by b - a.
    fdp computes L2 norms on the domain rescaled to [0, 1], i.e. length = 1.
    """
    return 2.0 * scale**2 * length * bernstein_sum_sq_norms(K)


def bernstein_mean_noise(values, unit_grid, weights, *, K, lo, hi, n, epsilon, lattice_means=None,
                         n_clipped=None) -> CoefficientNoise:
    """The lattice means (K + 1,), Laplace scales, Delta_1, the guarantee, n_clipped and the basis (synthesis).

    ``values`` may be None when the lattice means (and the clipping count) were computed
    elsewhere, e.g. summed chunk by chunk (fdp_core/engines/stream.py)."""
    if lattice_means is None:
        coefs, n_clipped = bernstein_lattice_means(values, unit_grid, K, lo, hi)
    else:
        coefs = np.asarray(lattice_means, dtype=float)
    sensitivity = bernstein_sensitivity(K, lo, hi, n)
    scale = sensitivity / epsilon
    scales = np.full(K + 1, scale)
    basis = bernstein_basis(unit_grid, K)
    guarantee = Guarantee(LAPLACE.privacy, float(epsilon), 0.0, sensitivity=sensitivity,
                          sensitivity_norm="l1 norm of the lattice vector (replace-one)",
                          sensitivity_key="sensitivity_l1", sensitivities={"tight": sensitivity, "paper": sensitivity},
                          bound_label="exact (attained): (K + 1)(hi - lo) / n",
                          bound_labels={"tight": "exact (attained)", "paper": "exact (attained)"},
                          noise="iid Laplace of scale lambda = (K + 1)(hi - lo) / (n epsilon) on the K + 1 lattice "
                                "means",
                          details={
                              "laplace_scales": scales, "K": K, "lo": lo, "hi": hi,
                              "sum_sq_basis_norms": bernstein_sum_sq_norms(K),
                              # On the grid's own quadrature, beside the closed form used as the headline.
                              "expected_sq_l2_error_quadrature": float(2.0 * scale**2
                                                                       * np.sum((basis**2).T @ weights)),
                              "tau": "not used: the Bernstein mechanism clips curve values to [lo, hi] instead"})
    return CoefficientNoise(coefs, scales, sensitivity, guarantee, synthesis=basis, n_clipped=n_clipped)
