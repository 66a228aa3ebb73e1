"""Perturbed cross-validation (METHODS.md 6): its closed-form score against brute-force Monte
Carlo cross-validation over sanitized draws, and the grid's optimum, flag and validation."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from fdp_core.explore import sweeps
from fdp_core.explore.accuracy import sq_l2_distance
from fdp_core.data.loading import FunctionalData
from fdp_core.errors import ParameterError
from fdp_core.releases.mean import MEAN_MECHANISMS, MeanSettings, plan_mean_release
from fdp_core.data.simulate import kl_design
from fdp_core.explore.tuning import PCV_FLAG, pcv_folds, pcv_grid

SETTINGS = MeanSettings(kernel="matern52", rho=0.2, eta=1.5, phi=1e-3, epsilon=1.0, delta=1e-5, tau=0.3, psi=1e-3,
                        lo=-1.0, hi=1.0)


@pytest.fixture(scope="module")
def fd():
    return kl_design(n=60, m=61, seed=3)


PCV_MECHS = [m for m in ("gaussian", "iclp-qr") if m in MEAN_MECHANISMS]


@pytest.mark.parametrize("mechanism", PCV_MECHS)
def test_pcv_closed_form_equals_brute_force_monte_carlo(mechanism):
    small = kl_design(n=24, m=31, seed=7)
    settings = replace(sweeps.settings_for(SETTINGS, mechanism), epsilon=3.0, tau=0.25)
    penalties, rhos = np.array([1e-4, 1e-1]), np.array([0.05, 0.4])
    result = pcv_grid(small, settings, penalties, rhos, folds=4, seed=1)
    folds = pcv_folds(small.n, 4, seed=1)
    rng = np.random.default_rng(9)
    draws = 6000
    for r, rho in enumerate(rhos):
        for p, pen in enumerate(penalties):
            s = sweeps.with_parameter(replace(settings, rho=rho), "phi", pen)
            fold_means, fold_vars = [], []
            for test in folds:
                train = np.setdiff1d(np.arange(small.n), test)
                plan = plan_mean_release(FunctionalData(small.grid_points, small.data_matrix[train]), s)
                sq = sq_l2_distance(plan.sample(rng, draws), small.data_matrix[test].mean(axis=0), small.weights)
                fold_means.append(sq.mean())
                fold_vars.append(sq.var(ddof=1))
            brute = np.mean(fold_means)
            se = math.sqrt(np.sum(fold_vars) / draws) / len(folds)
            assert abs(result.scores[r, p] - brute) < 4 * se, (rho, pen, result.scores[r, p], brute, se)


def test_pcv_grid_optimum_flag_and_validation(fd):
    penalties, rhos = np.logspace(-6, 0, 7), np.array([0.05, 0.2, 0.8])
    result = pcv_grid(fd, SETTINGS, penalties, rhos, folds=5)
    assert result.scores.shape == (3, 7)
    r, p = np.unravel_index(np.argmin(result.scores), result.scores.shape)
    assert (result.best_rho, result.best_penalty) == (rhos[r], penalties[p])
    assert result.flag == PCV_FLAG and "not differentially private" in PCV_FLAG
    with pytest.raises(ParameterError):
        pcv_grid(fd, SETTINGS, penalties, rhos, folds=1)
    with pytest.raises(ParameterError):
        pcv_grid(fd, SETTINGS, [-1.0], rhos)
    if "frl" in MEAN_MECHANISMS:
        with pytest.raises(ParameterError):
            pcv_grid(fd, sweeps.settings_for(SETTINGS, "frl"), penalties, rhos)
    folds = pcv_folds(fd.n, 7, seed=0)
    assert sorted(np.concatenate(folds).tolist()) == list(range(fd.n))
