"""Penalised mean estimators in the kernel eigenbasis (METHODS.md sections 2-3)."""

from __future__ import annotations

import numpy as np

from ..params import check_positive


def shrinkage(eigenvalues: np.ndarray, eta: float, penalty: float) -> np.ndarray:
    """s_l = lambda_l^eta / (lambda_l^eta + penalty).

    This is the minimiser of  ||mu - xbar||^2 + penalty * ||mu||^2_{H(C^eta)}  coefficient
    by coefficient: d/dmu_l [(mu_l - xbar_l)^2 + penalty mu_l^2 / lambda_l^eta] = 0.
    """
    penalty = check_positive("phi", penalty)
    lam_eta = np.asarray(eigenvalues, dtype=float) ** eta
    return lam_eta / (lam_eta + penalty)


def soft_threshold(values: np.ndarray, threshold: np.ndarray) -> np.ndarray:
    """sign(x) max(|x| - t, 0), elementwise (1-Lipschitz in x: the AR sensitivity rests on it)."""
    values = np.asarray(values, dtype=float)
    return np.sign(values) * np.maximum(np.abs(values) - np.asarray(threshold, dtype=float), 0.0)


def absolute_penalty_thresholds(eigenvalues: np.ndarray, eta: float, psi: float) -> np.ndarray:
    """Thresholds t_l = psi / (2 lambda_l^(eta/2)) of the absolute-penalty (AR) mean."""
    psi = check_positive("psi", psi)
    return psi / (2.0 * np.asarray(eigenvalues, dtype=float) ** (eta / 2.0))


def absolute_penalty_mean_coefficients(mean_coefficients: np.ndarray, eigenvalues: np.ndarray,
                                       eta: float, psi: float) -> np.ndarray:
    """Coefficients of the ICLP-AR mean (Lin & Reimherr's absolute penalty).

    The estimate minimises

        ||mu - xbar||_L2^2 + psi * sum_l |mu_l| / lambda_l^(eta/2),

    i.e. the squared L2 distance to the sample mean plus psi times the l1 norm of the
    coefficients in the scale of C^(eta/2). The objective separates over l:
    (mu_l - xbar_l)^2 + w_l |mu_l| with w_l = psi / lambda_l^(eta/2); setting its
    subgradient 2 (mu_l - xbar_l) + w_l sign(mu_l) to zero gives the soft threshold of
    xbar_l at w_l / 2 = psi / (2 lambda_l^(eta/2)). (The part of xbar outside the span of
    the kept eigenfunctions only adds a constant to the objective.)
    """
    thresholds = absolute_penalty_thresholds(eigenvalues, eta, psi)
    return soft_threshold(mean_coefficients, thresholds)


def truncated_mean_coefficients(mean_coefficients: np.ndarray, n_components: int) -> np.ndarray:
    """First M coefficients of the sample mean (the FRL baseline's estimator)."""
    return np.asarray(mean_coefficients, dtype=float)[..., :n_components].copy()


def lattice_interpolation_matrix(unit_grid: np.ndarray, K: int) -> np.ndarray:
    """(m, K + 1) matrix P with (values @ P)[:, v] = linear interpolation of each curve at v / K.

    Each column has at most two non-negative weights summing to 1, so an interpolated
    value is a convex combination of observed values: clipping values to [lo, hi] first
    keeps every lattice value in [lo, hi] (the Bernstein sensitivity rests on it).
    """
    grid = np.asarray(unit_grid, dtype=float)
    nodes = np.arange(K + 1) / K
    P = np.zeros((grid.size, K + 1))
    right = np.clip(np.searchsorted(grid, nodes, side="right"), 1, grid.size - 1)
    left = right - 1
    frac = np.clip((nodes - grid[left]) / (grid[right] - grid[left]), 0.0, 1.0)
    cols = np.arange(K + 1)
    P[left, cols] += 1.0 - frac
    P[right, cols] += frac
    return P


def bernstein_lattice_means(values: np.ndarray, unit_grid: np.ndarray, K: int, lo: float, hi: float):
    """Coefficients c_v of the (non-iterated) Bernstein estimator and the clipping count.

    Every curve's values are clipped to the public range [lo, hi], interpolated at the
    lattice v / K (v = 0..K) of the domain rescaled to [0, 1] and averaged over curves.
    Returns (c (K + 1,), number of curves with at least one value outside [lo, hi]).
    """
    values = np.asarray(values, dtype=float)
    clipped = np.clip(values, lo, hi)
    n_clipped = int(np.sum(np.any(clipped != values, axis=1)))
    lattice = clipped @ lattice_interpolation_matrix(unit_grid, K)
    return lattice.mean(axis=0), n_clipped
