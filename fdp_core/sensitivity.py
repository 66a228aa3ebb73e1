"""Sensitivity bounds, tight and paper versions (METHODS.md sections 2-3).

Neighbouring data sets replace one curve; after clipping, the coefficient difference d of
the replaced curve satisfies ||d||_2 <= 2 tau (Bessel), and the mean moves by d / n.
"""

from __future__ import annotations

import math

import numpy as np

from .params import check_positive

BOUNDS = ("tight", "paper")


def gaussian_mean_sensitivity_tight(eigenvalues: np.ndarray, shrink: np.ndarray, tau: float, n: int) -> float:
    """Cameron-Martin sensitivity of the penalised mean, attained (METHODS.md 2).

    ||Delta mu||_H^2 = sum_l s_l^2 d_l^2 / (n^2 lambda_l) <= max_l (s_l^2 / lambda_l) ||d||^2 / n^2
    with equality when d = 2 tau e_l* (curves tau phi_l* and -tau phi_l*).
    """
    tau = check_positive("tau", tau)
    ratio = np.asarray(shrink) ** 2 / np.asarray(eigenvalues)
    return 2.0 * tau / n * math.sqrt(float(ratio.max()))


def gaussian_mean_sensitivity_paper(tau: float, n: int, eta: float, phi: float) -> float:
    """Mirshani et al. (2019) closed form: the sup of s^2/lambda over all lambda > 0.

    Delta^2 = tau^2 (2 eta - 1)^(2 - 1/eta) / (n^2 phi^(1/eta) eta^2).
    """
    tau, phi = check_positive("tau", tau), check_positive("phi", phi)
    sq = tau**2 * (2 * eta - 1) ** (2 - 1 / eta) / (n**2 * phi ** (1 / eta) * eta**2)
    return math.sqrt(sq)


def gaussian_mean_argmax_component(eigenvalues: np.ndarray, shrink: np.ndarray) -> int:
    """Index l* where the tight bound is attained (used to build the worst-case pair)."""
    return int(np.argmax(np.asarray(shrink) ** 2 / np.asarray(eigenvalues)))
