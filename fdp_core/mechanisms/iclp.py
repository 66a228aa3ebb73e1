"""ICLP mechanism for penalised means, pure epsilon-DP (METHODS.md 3; Lin & Reimherr).

The Independent Component Laplace Process Z = sum_l sqrt(lambda_l) L_l phi_l adds, to
eigen-coefficient l of the estimate, Laplace noise of scale

    b_l = Delta_1 sqrt(lambda_l) / epsilon,

where Delta_1 is the sensitivity of the estimate in ||h||_{1,C} = sum_l |h_l| / sqrt(lambda_l).
Why this is epsilon-DP: for neighbouring data the coefficient shifts h_l give a density
ratio prod_l exp(|h_l| / b_l) = exp(epsilon sum_l |h_l| / (Delta_1 sqrt(lambda_l)))
<= exp(epsilon).

The sqrt 2 pitfall: the paper's Theorem 4 (sigma = Delta / epsilon) read with its
Definition 2 (*unit-variance* Laplace variables, i.e. scale 1/sqrt 2) gives scale b_l / sqrt 2
and only (sqrt 2 epsilon)-DP. Its Algorithm 1 (sqrt(lambda_k / 2) Lap(1) with
sigma = sqrt 2 Delta / epsilon) equals b_l above. Here Laplace "scale" always means the b
of the density exp(-|x| / b) / (2 b), whose variance is 2 b^2.
"""

from __future__ import annotations

import numpy as np

from .coefficient_noise import CoefficientNoise
from .families import LAPLACE
from .guarantee import Guarantee
from ..releases.estimators import absolute_penalty_mean_coefficients, absolute_penalty_thresholds, shrinkage
from ..sensitivity import (iclp_ar_active_count, iclp_ar_sensitivity_cs, iclp_ar_sensitivity_triangle,
                           iclp_qr_sensitivity_paper, iclp_qr_sensitivity_tight)

ICLP_NOISE = "ICLP: independent Laplace noise per eigen-coefficient, scale b_l = Delta_1 sqrt(lambda_l) / epsilon"
QR_BOUND_LABELS = {"tight": "tight (Cauchy-Schwarz, attained)", "paper": "paper (Lin & Reimherr: sum of a_l)"}
AR_BOUND_LABELS = {"tight": "CS bound (valid, not attained in general)",
                   "paper": "triangle bound (sum of lambda_l^(-1/2))"}


def iclp_laplace_scales(sensitivity_l1c: float, eigenvalues: np.ndarray, epsilon: float) -> np.ndarray:
    """Per-coefficient Laplace scales b_l = Delta_1 sqrt(lambda_l) / epsilon (the correct variant)."""
    return sensitivity_l1c * np.sqrt(np.asarray(eigenvalues, dtype=float)) / epsilon


def _guarantee(sensitivities: dict, bound: str, labels: dict, scales: np.ndarray, epsilon: float,
               **extra) -> Guarantee:
    return Guarantee(LAPLACE.privacy, float(epsilon), 0.0, sensitivity=sensitivities[bound],
                     sensitivity_norm="l1-C norm: sum_l |h_l| / sqrt(lambda_l)", sensitivity_key="sensitivity_l1c",
                     sensitivities=sensitivities, bound_label=labels[bound], bound_labels=labels, noise=ICLP_NOISE,
                     details={"laplace_scales": scales, **extra})


def iclp_qr_mean_noise(eigenvalues, mean_coefficients, *, eta, psi, tau, n, epsilon, bound) -> CoefficientNoise:
    """ICLP-QR: quadratic-penalty mean s_l xbar_l, s_l = lambda_l^eta / (lambda_l^eta + psi).

    Returns the estimate's coefficients, the Laplace scales, Delta_1 in use and the guarantee.
    """
    lam = np.asarray(eigenvalues, dtype=float)
    s = shrinkage(lam, eta, psi)
    sensitivities = {"tight": iclp_qr_sensitivity_tight(lam, s, tau, n),
                     "paper": iclp_qr_sensitivity_paper(lam, s, tau, n)}
    sensitivity = sensitivities[bound]
    scales = iclp_laplace_scales(sensitivity, lam, epsilon)
    guarantee = _guarantee(sensitivities, bound, QR_BOUND_LABELS, scales, epsilon, psi=psi)
    return CoefficientNoise(s * np.asarray(mean_coefficients, dtype=float), scales, sensitivity, guarantee)


def iclp_ar_mean_noise(eigenvalues, mean_coefficients, *, eta, psi, tau, n, epsilon, bound) -> CoefficientNoise:
    """ICLP-AR: soft threshold of xbar_l at psi / (2 lambda_l^(eta/2)).

    Components l > J* (threshold >= tau) are zero for every data set: they are released
    as exact zeros with no noise, and only the J* active ones enter the sensitivity.
    Returns the estimate's coefficients, the Laplace scales, Delta_1 in use and the guarantee.
    """
    lam = np.asarray(eigenvalues, dtype=float)
    thresholds = absolute_penalty_thresholds(lam, eta, psi)
    n_active = iclp_ar_active_count(thresholds, tau)
    coefs = absolute_penalty_mean_coefficients(mean_coefficients, lam, eta, psi)
    # Zero in exact arithmetic (|xbar_l| <= tau <= t_l); enforce it so rounding can never
    # let a noise-free component carry a trace of the data.
    coefs[n_active:] = 0.0
    sensitivities = {"tight": iclp_ar_sensitivity_cs(lam, n_active, tau, n),
                     "paper": iclp_ar_sensitivity_triangle(lam, n_active, tau, n)}
    sensitivity = sensitivities[bound]
    scales = iclp_laplace_scales(sensitivity, lam, epsilon)
    scales[n_active:] = 0.0
    guarantee = _guarantee(sensitivities, bound, AR_BOUND_LABELS, scales, epsilon, psi=psi,
                           sensitivity_cs=sensitivities["tight"], sensitivity_triangle=sensitivities["paper"],
                           n_active=n_active, n_components=int(lam.size),
                           thresholds_note="components with threshold psi / (2 lambda_l^(eta/2)) >= tau are "
                                           "released as exact zeros without noise")
    return CoefficientNoise(coefs, scales, sensitivity, guarantee)
