"""Choosing smoothing parameters (METHODS.md section 6): PSS, privacy-safe selection, and
PCV, private cross-validation (closed form; data-dependent, so not DP itself).

Plain functions; PSS never looks at the data, so it costs no privacy budget, but it uses
the sample size n: n must itself be public (say so wherever it is offered).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .accuracy import penalised_noise_scales
from ..data.loading import clip_to_ball, file_positions
from ..errors import ParameterError
from ..kernels import KERNEL_NAMES, eigenbasis, matern_nu
from ..releases.mean import resolve_tau
from ..params import check_choice, check_epsilon
from ..registry import mean_mechanism, quadratic_penalty_mechanisms

PSS_GAUSSIAN_ETA = 1.5


def eigenvalue_decay_rate(kernel: str, nu: float | None = None) -> float | None:
    """beta with lambda_j ~ j^(-beta): 2 nu + 1 for a Matern kernel in 1-d; None for the
    Gaussian kernel, whose eigenvalues decay faster than any power."""
    check_choice("kernel", kernel, KERNEL_NAMES)
    nu = matern_nu(kernel, nu)
    return None if nu is None else 2.0 * nu + 1.0


# PSS comes from the rate theory of the quadratic-penalty mean; for ICLP-AR (soft-thresholding)
# it does not hold: on DTI its error *rose* with epsilon (7.4 -> 16.1). Never offered there.
PSS_MECHANISMS = quadratic_penalty_mechanisms()  # PSS theory holds for quadratic penalties only


def pss_defaults(kernel: str, nu: float | None, n: int, epsilon: float, *,
                 mechanism: str | None = None) -> tuple[float, float]:
    """Privacy-safe defaults (eta, psi) for the quadratic-penalty means (Lin & Reimherr).

    ``mechanism``, when given, must be one of PSS_MECHANISMS (Gaussian with penalty phi,
    ICLP-QR with psi): the rule's theory does not cover ICLP-AR, FRL or Bernstein.

    Matern family (decay beta = 2 nu + 1): eta = 1 + 2 / beta and
    psi = (n eps^2)^(-eta beta / (beta + 2)); for that eta the exponent is exactly -1, so
    psi = 1 / (n eps^2). Gaussian kernel: eta = 1.5 and psi = 1 / (n eps^2).
    ``n`` must be public (the size of the data set is then part of what is disclosed).

    Parameters
    ----------
    kernel : str
        The kernel's name (its eigenvalues' decay sets eta).
    nu : float or None
        The Matern smoothness (None for the named kernels).
    n : int
        The public number of persons.
    epsilon : float
    mechanism : str, optional
        Checked to be a quadratic-penalty mean.

    Returns
    -------
    (eta, psi) : tuple of float

    Examples
    --------
    >>> eta, psi = pss_defaults("gaussian", None, 100, 1.0)
    >>> eta, psi
    (1.5, 0.01)
    """
    if mechanism is not None and mechanism not in PSS_MECHANISMS:
        raise ParameterError(f"privacy-safe defaults (PSS) apply to the quadratic-penalty means "
                             f"({', '.join(PSS_MECHANISMS)}) only, not to {mechanism}: its theory does not hold there")
    epsilon = check_epsilon(epsilon)
    if int(n) != n or n < 1:
        raise ParameterError(f"n must be a positive integer, got {n!r}")
    beta = eigenvalue_decay_rate(kernel, nu)
    if beta is None:
        return PSS_GAUSSIAN_ETA, 1.0 / (n * epsilon**2)
    eta = 1.0 + 2.0 / beta
    psi = math.exp(-eta * beta / (beta + 2.0) * math.log(n * epsilon**2))
    return eta, psi


# --------------------------------------------------------------------------- PCV (private cross-validation)

PCV_FLAG = ("PCV looks at the data: the selected (phi, rho) is data-dependent, not differentially "
            "private (no privacy budget is spent on the selection)")
PCV_MECHANISMS = quadratic_penalty_mechanisms()  # closed-form PCV needs linear shrinkage


@dataclass(frozen=True)
class PCVResult:
    """PCV scores on a (rho, penalty) grid; the penalty is phi (Gaussian) or psi (ICLP-QR)."""

    mechanism: str
    penalties: np.ndarray
    rhos: np.ndarray
    scores: np.ndarray  # (len(rhos), len(penalties)); NaN where a setting is invalid
    folds: int
    best_penalty: float
    best_rho: float
    best_score: float
    flag: str = PCV_FLAG


def pcv_folds(n: int, folds: int, seed: int | None = 0) -> list[np.ndarray]:
    """K disjoint held-out index sets covering 0..n-1 (random, sizes differing by at most 1)."""
    folds = int(folds)
    if folds < 2 or folds > n:
        raise ParameterError(f"PCV needs 2 <= folds <= n = {n}, got {folds}")
    return np.array_split(np.random.default_rng(seed).permutation(n), folds)


def file_folds(fd, folds: int, seed: int | None = 0) -> list[np.ndarray]:
    """The usable rows of each fold, the folds drawn over every curve of the file (dropped ones
    included, :func:`fdp_core.data.loading.file_positions`): a dropped curve moves no other curve to
    another fold. Refuses a fold left without a usable curve."""
    positions, n_file = file_positions(fd)
    fold_of = np.empty(n_file, dtype=np.int64)
    for k, idx in enumerate(pcv_folds(n_file, folds, seed)):
        fold_of[idx] = k
    row_fold = fold_of[positions]
    out = [np.flatnonzero(row_fold == k) for k in range(int(folds))]
    if any(idx.size == 0 for idx in out) or any(idx.size == fd.n for idx in out):
        raise ParameterError(f"PCV with {folds} folds leaves a fold without usable curves (or nothing to train on); "
                             "use fewer folds")
    return out


def pcv_scores(settings, penalties: np.ndarray, rhos: np.ndarray, grid: np.ndarray, weights: np.ndarray,
               train_means: np.ndarray, test_means: np.ndarray, n_train: np.ndarray, tau: float) -> np.ndarray:
    """PCV(g) on the grid penalties x rhos, shape (len(rhos), len(penalties)), from K folds (closed form).

    ``train_means`` and ``test_means`` (K, m): each fold's training mean (clipped) and held-out mean;
    ``n_train`` (K,): the training sizes at which the noise variance is taken. A fold's score is the
    squared L2 distance of the shrunk training mean to the held-out mean (its part outside the basis
    included) plus the noise's expected squared norm; PCV averages it over the folds.
    """
    test_sq_norms = (test_means**2) @ weights
    variance = mean_mechanism(settings.mechanism).noise_variance_factor  # Laplace(b): 2 b^2
    eta = np.full(penalties.size, float(settings.eta))
    scores = np.empty((rhos.size, penalties.size))
    for r, rho in enumerate(rhos):
        basis = eigenbasis(settings.kernel, float(rho), grid, weights, nu=settings.nu)
        lam = basis.eigenvalues
        a = basis.coefficients(train_means)  # (K, L)
        b = basis.coefficients(test_means)
        residual = np.maximum(test_sq_norms - np.sum(b**2, axis=1), 0.0)  # held-out mean outside the span
        lam_eta = lam**settings.eta
        shrink = lam_eta[None, :] / (lam_eta[None, :] + penalties[:, None])  # (P, L)
        fit = np.sum((shrink[:, None, :] * a[None, :, :] - b[None, :, :]) ** 2, axis=2)  # (P, K)
        # Every sensitivity is proportional to 1/n: one evaluation at n = 1, rescaled per fold.
        unit_scales = penalised_noise_scales(replace(settings, rho=float(rho)), lam, eta, penalties, tau, 1)
        noise = variance * np.sum(unit_scales**2, axis=1)[:, None] / n_train[None, :] ** 2
        scores[r] = np.mean(fit + residual[None, :] + noise, axis=1)
    return scores


def pcv_grid(fd, settings, penalties, rhos, *, folds: int = 10, seed: int | None = 0) -> PCVResult:
    """K-fold PCV score for every (rho, penalty) pair, in closed form (METHODS.md 6).

    score(penalty, rho) = (1/K) sum_k ( ||mu_hat_(-k) - xbar_k||^2 + E||Z_(-k)||^2 ),

    the expected squared L2 distance between the sanitized release computed from the
    training folds and the raw mean of the held-out fold: the noise Z is independent of the
    data and has mean zero, so the expectation splits exactly into the estimate's distance
    plus the noise variance (accuracy.penalised_noise_scales, at the training-fold size
    n_(-k)). No Monte Carlo. The held-out mean is the raw (unclipped) mean: what the release
    should predict. Split per rho into the kept eigen-directions, where the estimate lives,
    and the held-out mean's residual outside them, which does not depend on the penalty:
    each eigenbasis (cached) and projection is computed once per rho, the penalties are
    vectorised. PCV looks at the data: see PCV_FLAG.

    Parameters
    ----------
    fd : FunctionalData
        The curves (NON-PRIVATE: the scores are data-dependent, analyst view).
    settings : MeanSettings
        The mean release being tuned (Gaussian or ICLP-QR).
    penalties, rhos : sequence of float
        The public grid of penalties (phi or psi) and kernel ranges.
    folds : int
    seed : int or None
        The folds' random split.

    Returns
    -------
    PCVResult
        ``scores`` (len(rhos), len(penalties)), ``best_penalty``, ``best_rho``; flagged data-dependent.

    Examples
    --------
    >>> import numpy as np
    >>> from fdp_core.data.simulate import simulate
    >>> from fdp_core.releases.mean import MeanSettings
    >>> result = pcv_grid(simulate("kl", n=60, m=30), MeanSettings(tau=1.0), [1e-3, 1e-2], [0.05, 0.1], folds=5)
    >>> result.scores.shape
    (2, 2)
    """
    check_choice("mechanism (PCV)", settings.mechanism, PCV_MECHANISMS)
    penalties = np.asarray(penalties, dtype=float).ravel()
    rhos = np.asarray(rhos, dtype=float).ravel()
    if penalties.size == 0 or rhos.size == 0:
        raise ParameterError("PCV needs at least one penalty and one rho value")
    for name, grid_values in (("penalty", penalties), ("rho", rhos)):
        if not np.all(np.isfinite(grid_values)) or np.any(grid_values <= 0):
            raise ParameterError(f"every PCV {name} value must be a finite number > 0")
    settings.validated()
    tau, _ = resolve_tau(fd, settings)
    grid, weights = fd.unit_grid, fd.weights
    raw = fd.data_matrix
    clipped = clip_to_ball(raw, weights, tau).values
    held_out = file_folds(fd, folds, seed)
    n_train = np.array([fd.n - idx.size for idx in held_out], dtype=float)
    # Fold sums make every training mean one subtraction away: O(n m) once, not O(K n m).
    clipped_total = clipped.sum(axis=0)
    train_means = np.stack([(clipped_total - clipped[idx].sum(axis=0)) / (fd.n - idx.size) for idx in held_out])
    test_means = np.stack([raw[idx].mean(axis=0) for idx in held_out])
    scores = pcv_scores(settings, penalties, rhos, grid, weights, train_means, test_means, n_train, tau)
    best = np.unravel_index(np.nanargmin(scores), scores.shape)
    return PCVResult(settings.mechanism, penalties, rhos, scores, len(held_out),
                     float(penalties[best[1]]), float(rhos[best[0]]), float(scores[best]))
