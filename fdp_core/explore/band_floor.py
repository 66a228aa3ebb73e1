"""Where the width of the band for E[Y] comes from, and the least any affine interval can have (METHODS.md 25).

Given the population (the centred curves' coefficient covariance Sigma_x, known here: a validation tool, not a
release) and the declared bound B, the band's half-width centre +- (q_e w_e(t) + b_e(t)) splits into

* the privacy noise alone (the band of g Z), the sampling alone (the band of g G), both together (the band of
  g (G + Z): one simultaneous quantile of the sum, as the release computes it) and the bias bound b_e(t);
* the floor: at each t, the shortest interval of the form (affine estimate) +- half-width that holds E[Y](t) with
  the level's probability for every mean in the ball, however it is centred. An affine estimate with sd sd(t) and
  worst-case bias b(t) needs half-width cv(b / sd) sd, cv(beta) the level quantile of |N(beta, 1)| (the bias-aware
  critical value: the worst mean puts the whole bias on one side); the floor is its minimum over every weight
  vector, found on the bias-sd frontier (for uncorrelated errors the frontier is the filters
  e_l = B^2 x_l / (B^2 x_l + kappa v_l / s_l^2) of bands.filter_candidates, kappa = 1 / lambda). It is
  pointwise, so a simultaneous band cannot be narrower than it, and with the population's covariance no
  released statistic enters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from ..registry import mean_mechanism
from ..releases.bands import MeanBand, filter_candidates, psd_root, sup_quantile, undersmoothing_candidates
from ..releases.mean import MeanRelease

# The frontier's multiplier lambda (1 / kappa of the filters): fine, a coarse grid would overstate the floor.
FLOOR_LAMBDAS = 10.0 ** np.arange(-4.0, 3.01, 0.05)


@dataclass(frozen=True)
class WidthParts:
    """Mean half-widths over the grid (data units) of the parts of the band for E[Y], and the pointwise floor."""

    noise: float  # mean of q_Z w_Z(t) for g Z alone
    sampling: float  # mean of q_G w_G(t) for g G alone
    joint: float  # mean of q w(t) for g (G + Z): what the band uses
    bias: float  # mean of b_e(t)
    floor: float  # mean over t of the least half-width of an affine interval valid over the ball (pointwise)

    @property
    def total(self) -> float:
        return self.joint + self.bias


def bias_aware_critical_value(ratio: np.ndarray, level: float) -> np.ndarray:
    """cv(beta): the ``level`` quantile of |N(beta, 1)|, beta = worst-case bias / sd (bisection on
    Phi(c - beta) - Phi(-c - beta) = level, increasing in c; the root lies in [0, |beta| + 10])."""
    beta = np.abs(np.asarray(ratio, dtype=float))
    lo, hi = np.zeros_like(beta), beta + 10.0
    for _ in range(64):
        mid = (lo + hi) / 2.0
        above = ndtr(mid - beta) - ndtr(-mid - beta) >= level
        lo, hi = np.where(above, lo, mid), np.where(above, mid, hi)
    return hi


def pointwise_floor(plan: MeanRelease, eigenfunctions: np.ndarray, eigenvalues: np.ndarray, coefficient_cov: np.ndarray,
                    B: float, level: float, lambdas=FLOOR_LAMBDAS) -> np.ndarray:
    """The shortest bias-aware affine interval at every grid point (see the module doc).

    ``coefficient_cov``: the covariance C of the released coefficients' error (noise plus S Sigma S^T / n). An
    estimate sum_k w_k r_k of E[Y](t) (r_k = s_k mu_k + error) has sd^2 = w^T C w and worst-case bias
    b^2 = B^2 (sum_k x_k (phi_k(t) - s_k w_k)^2 + the dropped coefficients' sum_l x_l phi_l(t)^2). The least sd at a
    given bias solves min w^T C w + lambda b^2: (C + lambda B^2 S X S) w = lambda B^2 S X phi(t), one lambda per
    point of the frontier; cv(b / sd) sd grows with both, so its minimum lies on the frontier."""
    kept = plan.noise_scales.size
    s = mean_mechanism(plan.settings.mechanism).band_shrinkage(plan.settings, eigenvalues, plan.noise_scales)[:kept]
    x = eigenvalues ** float(plan.settings.eta)
    tail = eigenfunctions[:, kept:] ** 2 @ x[kept:]  # coefficients the release drops: their whole mean is bias
    x = x[:kept]
    phi = eigenfunctions[:, :kept].T  # (kept, grid)
    best = np.full(eigenfunctions.shape[0], np.inf)
    for lam in lambdas:
        weights = np.linalg.solve(coefficient_cov + np.diag(lam * B * B * s * s * x), (lam * B * B * s * x)[:, None] * phi)
        sd = np.sqrt(np.clip(np.sum(weights * (coefficient_cov @ weights), axis=0), 0.0, None))
        bias = B * np.sqrt(x @ (phi - s[:, None] * weights) ** 2 + tail)
        ratio = np.divide(bias, sd, out=np.full(sd.size, np.inf), where=sd > 0)
        half = np.where(sd > 0, bias_aware_critical_value(np.minimum(ratio, 1e6), level) * sd, bias)
        best = np.minimum(best, half)
    return best


def width_parts(plan: MeanRelease, eigenfunctions: np.ndarray, eigenvalues: np.ndarray, sampling: np.ndarray,
                band: MeanBand, B: float, level: float, *, true_sampling: np.ndarray | None = None,
                n_draws: int = 4000, seed: int = 0) -> WidthParts:
    """Split the chosen band's half-width into noise, sampling and bias (``band``: its family and parameter;
    ``sampling``: the covariance the band used, T Sigma~ T^T / n in the release's coefficients, i.e.
    ``ConfidenceBand.sampling_cov``), with the floor beside it (from ``true_sampling``, T Sigma T^T / n with the
    population's Sigma, when given; else from ``sampling``)."""
    noise_cov = np.diag(plan.family.variance_factor * plan.noise_scales**2)
    cov = noise_cov + sampling
    candidates = {**{("penalty", p): (e, g) for p, e, g in undersmoothing_candidates(plan, eigenvalues)},
                  **{("filter", p): (e, g) for p, e, g in filter_candidates(plan, eigenvalues, np.diag(cov), B)}}
    effective, gain = candidates[band.family, band.parameter]  # the band's own choice, as bands.mean_band made it
    rng = np.random.default_rng(seed)
    noise_draws = plan.noise_coefficients(rng, n_draws) * gain
    sampling_draws = (rng.standard_normal((n_draws, gain.size)) @ psd_root(sampling).T) * gain
    weighted = plan.synthesis * gain

    def part(draws, covariance):
        sd = np.sqrt(np.clip(np.einsum("ik,kl,il->i", weighted, covariance, weighted), 0.0, None))
        return float(np.mean(sup_quantile(draws @ plan.synthesis.T, sd, level) * sd))

    x = eigenvalues ** float(plan.settings.eta)
    bias = B * np.sqrt(eigenfunctions**2 @ (x * (1.0 - effective) ** 2))
    floor_cov = cov if true_sampling is None else noise_cov + true_sampling
    floor = pointwise_floor(plan, eigenfunctions, eigenvalues, floor_cov, B, level)
    return WidthParts(part(noise_draws, noise_cov), part(sampling_draws, sampling),
                      part(noise_draws + sampling_draws, cov), float(np.mean(bias)), float(np.mean(floor)))
