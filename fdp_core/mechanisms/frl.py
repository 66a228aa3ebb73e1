"""FRL: the finite-dimensional Laplace baseline for the mean, pure epsilon-DP (METHODS.md 3).

The sample mean is truncated to its first M eigen-coefficients and each gets iid Laplace
noise of scale Delta_1 / epsilon, Delta_1 the plain l1 sensitivity of that M-vector.
"""

from __future__ import annotations

import numpy as np

from .coefficient_noise import CoefficientNoise
from .families import LAPLACE
from .guarantee import Guarantee
from ..releases.estimators import truncated_mean_coefficients
from ..sensitivity import frl_sensitivity_paper, frl_sensitivity_tight

FRL_BOUND_LABELS = {"tight": "tight (Cauchy-Schwarz, attained): 2 tau sqrt(M) / n",
                    "paper": "paper: 2 tau M / n"}


def frl_mean_noise(mean_coefficients, *, M, tau, n, epsilon, bound) -> CoefficientNoise:
    """The first M mean coefficients, Laplace scales (M,), Delta_1 in use and the guarantee."""
    sensitivities = {"tight": frl_sensitivity_tight(tau, n, M), "paper": frl_sensitivity_paper(tau, n, M)}
    sensitivity = sensitivities[bound]
    scales = np.full(M, sensitivity / epsilon)
    guarantee = Guarantee(LAPLACE.privacy, float(epsilon), 0.0, sensitivity=sensitivity,
                          sensitivity_norm="l1 norm of the first M coefficients", sensitivity_key="sensitivity_l1",
                          sensitivities=sensitivities, bound_label=FRL_BOUND_LABELS[bound],
                          bound_labels=FRL_BOUND_LABELS,
                          noise="iid Laplace of scale Delta_1 / epsilon on each of the first M eigen-coefficients",
                          details={"laplace_scales": scales, "M": M})
    return CoefficientNoise(truncated_mean_coefficients(mean_coefficients, M), scales, sensitivity, guarantee)
