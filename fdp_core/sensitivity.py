"""Sensitivity bounds, tight and paper versions (METHODS.md sections 2-3).

Neighbouring data sets replace one curve; after clipping, the coefficient difference d of
the replaced curve satisfies ||d||_2 <= 2 tau (Bessel), and the mean moves by d / n.
"""

from __future__ import annotations

import math

import numpy as np

from .params import check_positive, check_tau

BOUNDS = ("tight", "paper")


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
