"""Coverage of the confidence band on the Gaussian-process designs (METHODS.md 18, validation).

The designs of fdp_core/data/simulate.py (S1-S4: X = mu_0 + e, e a centred GP with RBF covariance)
are Gaussian with known mean and covariance, so the sufficient statistics can be drawn
directly instead of n curves per replication: in the kernel eigenbasis the centred curves'
coefficients are x_i ~ N(mu_x, Sigma_x), hence

    xbar ~ N(mu_x, Sigma_x / n)  and  sum_i (x_i - xbar)(x_i - xbar)^T ~ Wishart(n - 1, Sigma_x),

independent, and the second moment about c is (1/n) Wishart + xbar xbar^T. This is exact when no
curve is clipped: the public value range is chosen wide (mu_0 +- 6 noise sd), where a clip
has probability below 1e-8 per grid point. Every replication then goes through the real
post-processing (:func:`fdp_core.releases.bands.confidence_band`) with the planned mechanisms' noise.

The target is m_S = c + S (mu_0 - c); the oracle band is the same construction with the true
Sigma_x instead of the released one (the width the band would have with a known covariance).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .band_floor import WidthParts, width_parts
from ..releases.bands import (BandPlan, confidence_band, plan_band_release, psd_root, simultaneous_band, smoother,
                              sup_quantile)
from ..releases.covariance import product_shrinkage, symmetrise
from ..kernels import kernel_matrix
from ..limits import MAX_N_PUBLIC_FACTOR
from ..releases.mean import MeanSettings
from ..data.simulate import SIMULATIONS, simulate

GRID_POINTS = 50
NOISE_SD, NOISE_RHO = 0.5, 0.1  # the designs' defaults


@dataclass(frozen=True)
class CoverageCell:
    design: str
    n: int
    epsilon: float
    replications: int
    coverage: float  # share of replications whose band contains m_S on the whole grid
    privacy_coverage: float  # share whose privacy band contains the non-private estimate
    width_ratio: float  # mean half-width of the band / that of the oracle band (known covariance)
    oracle_coverage: float
    # With a smoothness bound B = smoothness_factor ||E[Y - c]||_{H(C^eta)} (METHODS 25), else None: the mean band's
    # coverage of E[Y] and its mean half-width over that of the non-private oracle band (the raw mean +- its
    # simultaneous quantile, known covariance); the m_S band's width against the same oracle.
    mean_coverage: float | None = None
    ci_mean_coverage: float | None = None  # the m_S band's coverage of E[Y] (what it does not claim)
    mean_width_ratio: float | None = None
    ci_raw_width_ratio: float | None = None
    smoothness_bound: float | None = None
    # The last replication's mean band split (explore/band_floor.py), each over the same oracle: its noise, sampling
    # and joint quantile parts, its bias bound, and the pointwise floor of any affine interval (true covariance).
    noise_ratio: float | None = None
    sampling_ratio: float | None = None
    joint_ratio: float | None = None
    bias_ratio: float | None = None
    floor_ratio: float | None = None


def _population(plan: BandPlan, design: str) -> tuple[np.ndarray, np.ndarray]:
    """(mu_x, Sigma_x): the centred curves' coefficient mean and covariance in the eigenbasis."""
    cov = plan.second_moment
    grid = cov.grid_points
    mu = SIMULATIONS[design].true_mean(grid)
    K = NOISE_SD**2 * kernel_matrix("gaussian", grid, grid, NOISE_RHO)
    projector = cov.eigenfunctions.T * cov.weights
    return projector @ (mu - plan.mean.offset), projector @ K @ projector.T


def _wishart(rng: np.random.Generator, root: np.ndarray, df: int) -> np.ndarray:
    """R A A^T R^T with A the Bartlett factor of Wishart(df, I_r): a Wishart(df, R R^T) draw."""
    r = root.shape[1]
    A = np.tril(rng.standard_normal((r, r)), -1)
    A[np.diag_indices(r)] = np.sqrt(rng.chisquare(df - np.arange(r)))
    B = root @ A
    return B @ B.T


def design_settings(design: str, epsilon: float, level: float = 0.95, **changes) -> MeanSettings:
    """The public settings of a coverage cell: a value range mu_0 +- 6 noise sd (no clipping in practice)."""
    grid = np.linspace(0.0, 1.0, GRID_POINTS)
    mu = SIMULATIONS[design].true_mean(grid)
    lo, hi = float(mu.min() - 6 * NOISE_SD), float(mu.max() + 6 * NOISE_SD)
    return MeanSettings(**{"epsilon": epsilon, "tau": None, "value_range": (lo, hi), "confidence_band": level,
                           **changes})


def h_norm(plan: BandPlan, coefficients: np.ndarray) -> float:
    """||sum_l m_l phi_l||_{H(C^eta)} = sqrt(sum_l m_l^2 / lambda_l^eta) on the eigenbasis."""
    x = plan.second_moment.eigenvalues ** float(plan.settings.eta)
    return float(np.sqrt(np.sum(coefficients**2 / x)))


def raw_oracle_half_width(covariance: np.ndarray, n: int, level: float, n_draws: int, seed: int) -> np.ndarray:
    """The non-private oracle band's half-width on the grid: raw mean +- q sd, sd^2 = diag(K) / n, q the level
    quantile of max_t |G(t)| / sd(t), G ~ N(0, K / n) (K the curves' covariance on the grid, known)."""
    sd = np.sqrt(np.clip(np.diag(covariance), 0.0, None) / n)
    draws = np.random.default_rng(seed).standard_normal((n_draws, sd.size)) @ psd_root(covariance / n).T
    return sup_quantile(draws, sd, level) * sd


def coverage_cell(design: str, n: int, epsilon: float, replications: int, *, seed: int = 0,
                  n_draws: int = 2000, smoothness_factor: float | None = None, **changes) -> CoverageCell:
    """Coverage of m_S and width against the oracle over ``replications`` releases (see the module doc); with
    ``smoothness_factor``, also the mean band's coverage of E[Y] under B = factor * ||E[Y - c]||_H."""
    settings = design_settings(design, epsilon, **changes)
    # The plan needs the grid only; n is declared (limits.MAX_N_PUBLIC_FACTOR times the stand-in's curves at most).
    fd = simulate(design, n=max(2, -(-n // MAX_N_PUBLIC_FACTOR)), m=GRID_POINTS, seed=seed)
    plan = plan_band_release(fd, replace(settings, n_public=n))
    plan = replace(plan, mean=replace(plan.mean, n=n))
    mean, cov = plan.mean, plan.second_moment
    level = float(settings.confidence_band)
    mu_x, sigma_x = _population(plan, design)
    B = None
    if smoothness_factor is not None:
        B = smoothness_factor * h_norm(plan, mu_x)
        plan = replace(plan, settings=replace(plan.settings, smoothness_bound=B))
    population = mean.offset + cov.eigenfunctions @ mu_x  # E[Y] on the grid
    root = psd_root(sigma_x)
    root = root[:, np.linalg.norm(root, axis=0) > 1e-9]
    T = smoother(mean, cov.eigenfunctions, cov.eigenvalues)
    target = mean.offset + mean.synthesis @ (T @ mu_x)
    oracle = simultaneous_band(mean, target, T @ sigma_x @ T.T / n, level, n_draws=n_draws)
    shrink = product_shrinkage(cov.eigenvalues, cov.settings.eta, cov.settings.phi)
    rng = np.random.default_rng(seed + 1)
    hits = private_hits = oracle_hits = mean_hits = ci_mean_hits = 0
    widths, mean_widths = [], []
    for _ in range(replications):
        xbar = mu_x + root @ rng.standard_normal(root.shape[1]) / np.sqrt(n)
        second = _wishart(rng, root, n - 1) / n + np.outer(xbar, xbar)
        estimate = mean.offset + mean.synthesis @ (T @ xbar)
        values = estimate + mean.noise_coefficients(rng, 1)[0] @ mean.synthesis.T
        released = symmetrise(shrink * second + cov.family.standard(rng, cov.scales.shape) * cov.scales)
        bands = confidence_band(plan, values, released, n_draws=n_draws)
        hits += bool(np.all((target >= bands.band.lower) & (target <= bands.band.upper)))
        private_hits += bool(np.all((estimate >= bands.privacy.lower) & (estimate <= bands.privacy.upper)))
        shifted = np.abs(values - target) <= oracle.half_width
        oracle_hits += bool(np.all(shifted))
        widths.append(float(np.mean(bands.band.half_width)))
        ci_mean_hits += bool(np.all((population >= bands.band.lower) & (population <= bands.band.upper)))
        if bands.mean is not None:
            band = bands.mean.band
            mean_hits += bool(np.all((population >= band.lower) & (population <= band.upper)))
            mean_widths.append(float(np.mean(band.half_width)))
    cell = CoverageCell(design, n, epsilon, replications, hits / replications, private_hits / replications,
                        float(np.mean(widths) / np.mean(oracle.half_width)), oracle_hits / replications)
    if B is None:
        return cell
    K = cov.eigenfunctions @ sigma_x @ cov.eigenfunctions.T
    raw = float(np.mean(raw_oracle_half_width(K, n, level, n_draws, seed + 2)))
    cell = replace(cell, mean_coverage=mean_hits / replications if mean_widths else None,
                   ci_mean_coverage=ci_mean_hits / replications,
                   mean_width_ratio=float(np.median(mean_widths)) / raw if mean_widths else None,
                   ci_raw_width_ratio=float(np.median(widths)) / raw, smoothness_bound=B)
    if bands.mean is None:
        return cell
    return replace(cell, **parts_ratios(width_parts(mean, cov.eigenfunctions, cov.eigenvalues, bands.sampling_cov,
                                                    bands.mean, B, level, true_sampling=T @ sigma_x @ T.T / n,
                                                    n_draws=n_draws), raw))


def parts_ratios(parts: WidthParts, raw: float) -> dict:
    """A band's width parts over the oracle's mean half-width ``raw`` (the cells' fields)."""
    return {"noise_ratio": parts.noise / raw, "sampling_ratio": parts.sampling / raw, "joint_ratio": parts.joint / raw,
            "bias_ratio": parts.bias / raw, "floor_ratio": parts.floor / raw}
