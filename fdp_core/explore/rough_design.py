"""A rough, skewed design that is not a Gaussian process: coverage of the bands on real curves (METHODS.md 25).

Y(t) = mu(t) + a (N(t) - lambda t) / sqrt(lambda) + b (T - 0): N a Poisson process of rate lambda (jumps:
discontinuous, skewed for small lambda), T a Student t with 3 degrees of freedom (a heavy-tailed level shift).
E[Y] = mu exactly and Cov(Y(s), Y(t)) = a^2 min(s, t) + 3 b^2. The public range is wide enough that a curve is
clipped with probability below 1e-6 (so the released statistics target E[Y] of the unclipped curves). Unlike
band_coverage.py (exact sufficient statistics of Gaussian designs), every replication draws n curves and runs
the release path itself: plan, noise, second moment, bands.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..data.loading import FunctionalData
from ..releases.bands import confidence_band, plan_band_release, smoother
from ..releases.mean import MeanSettings
from .band_coverage import h_norm, parts_ratios, raw_oracle_half_width
from .band_floor import width_parts

RATE, JUMP, SHIFT = 8.0, 0.3, 0.1
VALUE_RANGE = (-3.0, 3.0)


def rough_mean(t: np.ndarray) -> np.ndarray:
    return 0.5 * t**2 - 0.3 * np.cos(3.0 * np.pi * t)


def rough_covariance(t: np.ndarray) -> np.ndarray:
    return JUMP**2 * np.minimum.outer(t, t) + 3.0 * SHIFT**2


def rough_curves(n: int, grid: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """n curves on ``grid`` (increasing, in [0, 1])."""
    steps = np.diff(np.concatenate([[0.0], grid]))
    counts = np.cumsum(rng.poisson(RATE * steps, (n, grid.size)), axis=1)
    jumps = JUMP * (counts - RATE * grid) / np.sqrt(RATE)
    return rough_mean(grid) + jumps + SHIFT * rng.standard_t(3, n)[:, None]


@dataclass(frozen=True)
class RoughCell:
    n: int
    epsilon: float
    replications: int
    smoothness_bound: float
    coverage: float  # of m_S by the confidence band
    mean_coverage: float  # of E[Y] by the mean band
    ci_mean_coverage: float  # of E[Y] by the m_S band (what it does not claim)
    ci_raw_width_ratio: float  # median mean half-width over the non-private oracle band's
    mean_width_ratio: float
    # The last replication's mean band split and the floor (band_coverage.CoverageCell's fields of the same names).
    noise_ratio: float | None = None
    sampling_ratio: float | None = None
    joint_ratio: float | None = None
    bias_ratio: float | None = None
    floor_ratio: float | None = None


def rough_cell(n: int, epsilon: float, replications: int, *, grid_points: int = 101, smoothness_factor: float = 2.0,
               seed: int = 0, n_draws: int = 2000, **changes) -> RoughCell:
    grid = np.linspace(0.0, 1.0, grid_points)
    rng = np.random.default_rng(seed)
    settings = MeanSettings(**{"epsilon": epsilon, "tau": None, "value_range": VALUE_RANGE, "confidence_band": 0.95,
                               **changes})
    first = plan_band_release(FunctionalData(grid, rough_curves(n, grid, rng)), settings)
    cov = first.second_moment
    mu_x = cov.eigenfunctions.T @ (cov.weights * (rough_mean(grid) - first.mean.offset))
    B = smoothness_factor * h_norm(first, mu_x)
    settings = replace(settings, smoothness_bound=B)
    truth = rough_mean(grid)
    raw = float(np.mean(raw_oracle_half_width(rough_covariance(grid), n, 0.95, n_draws, seed + 1)))
    hits = mean_hits = ci_mean_hits = 0
    widths, mean_widths = [], []
    for _ in range(replications):
        plan = plan_band_release(FunctionalData(grid, rough_curves(n, grid, rng)), settings)
        T = smoother(plan.mean, cov.eigenfunctions, cov.eigenvalues)
        target = plan.mean.offset + plan.mean.synthesis @ (T @ mu_x)  # m_S = c + S (E[Y] - c)
        values = plan.mean.sample(rng, 1)[0]
        second = plan.second_moment.sample(rng, 1)["second_moment"][0]
        bands = confidence_band(plan, values, second, n_draws=n_draws)
        hits += bool(np.all((target >= bands.band.lower) & (target <= bands.band.upper)))
        ci_mean_hits += bool(np.all((truth >= bands.band.lower) & (truth <= bands.band.upper)))
        mean_hits += bool(np.all((truth >= bands.mean.band.lower) & (truth <= bands.mean.band.upper)))
        widths.append(float(np.mean(bands.band.half_width)))
        mean_widths.append(float(np.mean(bands.mean.band.half_width)))
    projector = cov.eigenfunctions.T * cov.weights  # the population's covariance in the eigenbasis: the floor's
    sampling = T @ (projector @ rough_covariance(grid) @ projector.T) @ T.T / n
    parts = width_parts(plan.mean, cov.eigenfunctions, cov.eigenvalues, bands.sampling_cov, bands.mean, B, 0.95,
                        true_sampling=sampling, n_draws=n_draws)
    return RoughCell(n, epsilon, replications, B, hits / replications, mean_hits / replications,
                     ci_mean_hits / replications, float(np.median(widths)) / raw, float(np.median(mean_widths)) / raw,
                     **parts_ratios(parts, raw))
