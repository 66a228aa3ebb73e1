"""Penalised mean estimators in the kernel eigenbasis (METHODS.md sections 2-3)."""

from __future__ import annotations

import numpy as np

from .params import check_positive


def shrinkage(eigenvalues: np.ndarray, eta: float, penalty: float) -> np.ndarray:
    """s_l = lambda_l^eta / (lambda_l^eta + penalty).

    This is the minimiser of  ||mu - xbar||^2 + penalty * ||mu||^2_{H(C^eta)}  coefficient
    by coefficient: d/dmu_l [(mu_l - xbar_l)^2 + penalty mu_l^2 / lambda_l^eta] = 0.
    """
    penalty = check_positive("phi", penalty)
    lam_eta = np.asarray(eigenvalues, dtype=float) ** eta
    return lam_eta / (lam_eta + penalty)


def penalised_mean_coefficients(mean_coefficients: np.ndarray, eigenvalues: np.ndarray,
                                eta: float, penalty: float) -> np.ndarray:
    """Coefficients s_l xbar_l of the RKHS-penalised mean (quadratic penalty)."""
    return shrinkage(eigenvalues, eta, penalty) * np.asarray(mean_coefficients, dtype=float)
