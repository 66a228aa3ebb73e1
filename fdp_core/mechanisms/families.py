"""The two noise families every mechanism draws from: Gaussian and Laplace.

A mechanism's noise is a family plus per-coordinate scales (sd for Gaussian, b for
Laplace). Everything that differs between the two families lives here, once, so callers
ask the family instead of comparing its name: which privacy type it gives, whether delta
applies, the variance per unit scale, standard draws for previews, the scaled sensitivity
the exact discrete sampler needs, and the OpenDP sampler itself (mechanisms/discrete.py).

>>> noise_family("laplace").variance_factor
2.0
>>> noise_family("gaussian").delta_or_zero(1e-5), noise_family("laplace").delta_or_zero(1e-5)
(1e-05, 0.0)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..params import check_choice
from .calibration import gaussian_quantile_radius

GAUSSIAN_PRIVACY = "(epsilon, delta)-DP"
PURE_PRIVACY = "epsilon-DP"


@dataclass(frozen=True)
class NoiseFamily:
    """One noise family: Gaussian ((epsilon, delta)-DP) or Laplace (pure epsilon-DP)."""

    name: str  # "gaussian" | "laplace": also the family name OpenDP's samplers and the records use
    privacy: str
    uses_delta: bool
    variance_factor: float  # Var(noise) / scale^2: 1 for a Gaussian sd, 2 for a Laplace scale b
    likelihood_ratio_label: str = ""  # what :meth:`log_likelihood_ratio` computes, in words (audit reports)

    def standard(self, rng: np.random.Generator, shape) -> np.ndarray:
        """Unit-scale draws (previews; exports use :meth:`discrete_release`)."""
        return rng.standard_normal(shape) if self.uses_delta else rng.laplace(0.0, 1.0, shape)

    def delta_or_zero(self, delta: float) -> float:
        """delta of the guarantee: the setting for Gaussian noise, 0 for pure epsilon-DP."""
        return float(delta) if self.uses_delta else 0.0

    def delta_or_none(self, delta):
        """delta for a ledger entry: None when the family is pure epsilon-DP."""
        return delta if self.uses_delta else None

    def scaled_sensitivity(self, sensitivity: float, sigma: float | None, epsilon: float) -> float:
        """d_in of the exact discrete sampler: mu = Delta / sigma (Gaussian), epsilon (Laplace calibrated for it)."""
        return float(sensitivity) / float(sigma) if self.uses_delta else float(epsilon)

    def log_likelihood_ratio(self, y: np.ndarray, centre: np.ndarray, centre_prime: np.ndarray,
                             scales: np.ndarray) -> np.ndarray:
        """log p(y | centre) - log p(y | centre') for each row of ``y``, independent noise of ``scales``.

        The most powerful statistic between two neighbouring outputs (Neyman-Pearson): the
        black-box audit (fdp_core/explore/audit.py) thresholds it.
        """
        if self.uses_delta:
            return (y - (centre + centre_prime) / 2.0) @ ((centre - centre_prime) / scales**2)
        return (np.abs(y - centre_prime) - np.abs(y - centre)) @ (1.0 / scales)

    def l2_quantile_radius(self, scales: np.ndarray, prob: float) -> float | None:
        """r with P(||noise||_2 <= r) = prob for independent coordinates of ``scales``, in closed form
        (Gaussian: a weighted chi-square), or None where there is none (Laplace: Monte Carlo instead)."""
        return gaussian_quantile_radius(np.asarray(scales) ** 2, prob) if self.uses_delta else None

    def discrete_plan(self, n_coefficients: int, *, scaled_sensitivity: float, granularity_exp: int):
        from . import discrete as _discrete  # lazy: the exact sampler is for commits, not a preview's start-up

        make = _discrete.discrete_gaussian_plan if self.uses_delta else _discrete.discrete_laplace_plan
        return make(n_coefficients, scaled_sensitivity=scaled_sensitivity, granularity_exp=granularity_exp)

    def discrete_release(self, values, scales, *, scaled_sensitivity: float, granularity_exp: int):
        from . import discrete as _discrete  # lazy: as in discrete_plan

        release = _discrete.discrete_gaussian_release if self.uses_delta else _discrete.discrete_laplace_release
        return release(values, scales, scaled_sensitivity=scaled_sensitivity, granularity_exp=granularity_exp)


GAUSSIAN = NoiseFamily("gaussian", GAUSSIAN_PRIVACY, True, 1.0,
                       likelihood_ratio_label="likelihood-ratio projection (Gaussian)")
LAPLACE = NoiseFamily("laplace", PURE_PRIVACY, False, 2.0,
                      likelihood_ratio_label="Laplace log-likelihood ratio sum_l (|y_l - c'_l| - |y_l - c_l|) / b_l")
FAMILIES = {f.name: f for f in (GAUSSIAN, LAPLACE)}


def noise_family(name: str) -> NoiseFamily:
    """The family called ``name`` ("gaussian" or "laplace")."""
    return FAMILIES[check_choice("noise family", name, tuple(FAMILIES))]
