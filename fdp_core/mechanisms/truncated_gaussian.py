"""Truncated Gaussian: the finite-dimensional Gaussian baseline for the mean, (epsilon, delta)-DP.

The Gaussian counterpart of FRL (METHODS.md 3): the sample mean is truncated to its first
M eigen-coefficients and each gets iid Gaussian noise of sd sigma, calibrated to the plain
L2 sensitivity 2 tau / n of that M-vector (Bessel: projecting onto orthonormal functions
never lengthens a difference). There is no smoothing penalty: the truncation is the only
regularisation, so it shows what the Gaussian-process mechanism's penalty buys. Expected
squared L2 error M sigma^2 (orthonormal basis).
"""

from __future__ import annotations

import numpy as np

from .calibration import CALIBRATIONS, GaussianCalibration
from .coefficient_noise import CoefficientNoise
from .families import GAUSSIAN
from .guarantee import Guarantee
from ..releases.estimators import truncated_mean_coefficients
from ..sensitivity import BOUNDS, truncated_gaussian_sensitivity

BOUND_LABEL = "exact (attained): 2 tau / n"


def truncated_gaussian_mean_noise(mean_coefficients, *, M, tau, n, epsilon, delta, calibration,
                                  calibrated: GaussianCalibration | None = None) -> CoefficientNoise:
    """The first M mean coefficients, noise sd sigma on each, Delta_2 and the guarantee.

    ``calibrated`` as in :func:`fdp_core.mechanisms.gaussian.gaussian_mean_noise` (None: validate here).

    >>> plan = truncated_gaussian_mean_noise(np.ones(5), M=3, tau=1.0, n=100, epsilon=1.0, delta=1e-5,
    ...                                      calibration="classical")
    >>> plan.estimate_coefficients.size, plan.sensitivity, bool(np.isclose(plan.sigma, 0.02 * np.sqrt(2 * np.log(2e5))))
    (3, 0.02, True)
    """
    sensitivity = truncated_gaussian_sensitivity(tau, n)
    calibrated = calibrated or GaussianCalibration.of(epsilon, delta)
    sigma = calibrated.sigma(sensitivity, calibration)
    both = calibrated.both(sensitivity)
    guarantee = Guarantee(GAUSSIAN.privacy, float(epsilon), float(delta), sensitivity=sensitivity,
                          sensitivity_norm="L2 norm of the first M coefficients", sensitivity_key="sensitivity_l2",
                          sensitivities={b: sensitivity for b in BOUNDS},
                          bound_label=BOUND_LABEL, bound_labels={b: BOUND_LABEL for b in BOUNDS},
                          noise="iid Gaussian of sd sigma on each of the first M eigen-coefficients",
                          gdp_mu=sensitivity / sigma,
                          details={"sigma_table": {f"{b}/{c}": both.get(c) for b in BOUNDS for c in CALIBRATIONS},
                                   "M": int(M)})
    return CoefficientNoise(truncated_mean_coefficients(mean_coefficients, M), np.full(int(M), sigma), sensitivity,
                            guarantee, sigma=sigma)
