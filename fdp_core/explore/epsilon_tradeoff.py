"""The report's error-against-epsilon chart from the one plan a commit already made.

Along epsilon only the noise scale moves (the sums, the sensitivity and the estimator are
fixed; see fdp_core/explore/sweeps.py): Laplace scales are proportional to 1/epsilon and a Gaussian
sigma is Delta * c(epsilon, delta) with the plan's own calibration. So the expected squared
L2 error at epsilon' is the plan's error times (scale at epsilon' / scale at epsilon)^2 --
no re-planning from the raw curves at each of the chart's 32 points. Epsilons the
calibration refuses (classical, epsilon > 1) are left out, as a re-plan would refuse them.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .accuracy import noise_scale_factor
from ..errors import FdpError
from ..mechanisms.calibration import GaussianCalibration, gaussian_sigma
from ..mechanisms.families import NoiseFamily


def epsilon_grid(epsilon: float, n_points: int) -> np.ndarray:
    """n_points log-spaced epsilons in [0.01, 10] and the chosen one, sorted, distinct."""
    return np.unique(np.concatenate([np.logspace(-2, 1, n_points), [epsilon]]))


def scaled_errors(error: float, factor_at: Callable[[float], float], grid) -> tuple[list, list]:
    """(epsilons, expected squared L2 errors) along ``grid``; factor_at(e) is the ratio of the
    noise scales at e and at the plan's epsilon (FdpError: e is refused and left out)."""
    eps, err = [], []
    for e in grid:
        try:
            factor = factor_at(float(e))
        except FdpError:
            continue
        eps.append(float(e))
        err.append(error * factor**2)
    return eps, err


def grid_noise_scale_factor(plan, epsilon: float) -> float:
    """:func:`fdp_core.explore.accuracy.noise_scale_factor` at an epsilon of :func:`epsilon_grid`.

    The grid's epsilons are fdp's own (log-spaced in [0.01, 10]) or the plan's, whose settings
    were validated at the boundary: the Gaussian re-calibration trusts them (no re-check); the
    classical calibration still refuses epsilon > 1 (FdpError: the point is left out)."""
    if plan.family.uses_delta:
        s = plan.settings
        return GaussianCalibration.of_validated(epsilon, s.delta).sigma(plan.sensitivity, s.calibration) / plan.sigma
    return noise_scale_factor(plan, epsilon)


def mean_epsilon_errors(plan, n_points: int) -> tuple[list, list]:
    """The chart's points for a planned mean release (:class:`fdp_core.releases.mean.MeanRelease`)."""
    return scaled_errors(plan.expected_sq_l2_error, lambda e: grid_noise_scale_factor(plan, e),
                         epsilon_grid(plan.settings.epsilon, n_points))


def kde_noise_scale_factor(plan, family: NoiseFamily, settings, epsilon: float) -> float:
    """Ratio of the density release's noise scales at ``epsilon`` to ``plan``'s (same sensitivity)."""
    if family.uses_delta:
        return gaussian_sigma(plan.sensitivity, epsilon, settings.delta, settings.calibration) / plan.sigma
    return settings.epsilon / epsilon


def kde_epsilon_errors(plan, family: NoiseFamily, settings, n_points: int) -> tuple[list, list]:
    """The chart's points for a planned density release (:class:`fdp_core.releases.kde.KdeRelease`)."""
    return scaled_errors(plan.expected_sq_l2_error, lambda e: kde_noise_scale_factor(plan, family, settings, e),
                         epsilon_grid(settings.epsilon, n_points))
