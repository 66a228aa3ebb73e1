"""Gaussian-process mechanism for the penalised mean, (epsilon, delta)-DP (METHODS.md 2).

Noise Z = sum_l sigma sqrt(lambda_l) xi_l phi_l is a centred GP with covariance sigma^2 C.
Adding it to mu_hat gives (eps, delta)-DP when sigma is calibrated for the Cameron-Martin
sensitivity of mu_hat: the privacy loss is that of a scalar Gaussian mechanism with
sensitivity Delta (Mirshani et al. 2019), so both calibrations of calibration.py apply.
"""

from __future__ import annotations

import numpy as np

from ..releases.estimators import shrinkage
from ..sensitivity import (BOUNDS, gaussian_mean_sensitivity_paper, gaussian_mean_sensitivity_tight)
from .families import GAUSSIAN
from .guarantee import Guarantee
from .calibration import CALIBRATIONS, GaussianCalibration
from .coefficient_noise import CoefficientNoise


def gaussian_mean_noise(eigenvalues, mean_coefficients, *, eta, phi, tau, n, epsilon, delta, bound, calibration,
                        calibrated: GaussianCalibration | None = None) -> CoefficientNoise:
    """Estimator coefficients, per-coefficient noise sd and the guarantee of the GP mechanism.

    ``calibrated``: the calibration of (epsilon, delta) built from settings validated at the
    boundary (the mean registry passes it: no re-check); None validates epsilon and delta here.
    One calibration serves the sigma in use and the table of both bounds: one bisection.
    """
    lam = np.asarray(eigenvalues, dtype=float)
    s = shrinkage(lam, eta, phi)
    sensitivities = {
        "tight": gaussian_mean_sensitivity_tight(lam, s, tau, n),
        "paper": gaussian_mean_sensitivity_paper(tau, n, eta, phi),
    }
    sensitivity = sensitivities[bound]
    calibrated = calibrated or GaussianCalibration.of(epsilon, delta)
    sigma = calibrated.sigma(sensitivity, calibration)
    table = {b: calibrated.both(sensitivities[b]) for b in BOUNDS}
    guarantee = Guarantee(GAUSSIAN.privacy, float(epsilon), float(delta), sensitivity=sensitivity,
                          sensitivity_norm="Cameron-Martin norm of C", sensitivity_key="sensitivity_cm",
                          sensitivities=sensitivities, gdp_mu=sensitivity / sigma,
                          details={"sigma_table": {f"{b}/{c}": table[b].get(c) for b in BOUNDS for c in CALIBRATIONS}})
    return CoefficientNoise(s * mean_coefficients, sigma * np.sqrt(lam), sensitivity, guarantee, sigma=sigma)
