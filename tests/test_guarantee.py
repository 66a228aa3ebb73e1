"""One typed guarantee for every kind of release (issue 14): each release object holds a frozen
:class:`~fdp_core.mechanisms.guarantee.Guarantee`, and its publishable record's "guarantee" is
exactly ``Guarantee.record()``."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError

import numpy as np
import pandas as pd
import pytest

from fdp_core.releases import covariance, kde, mean, pca, regression
from fdp_core.data.loading import FunctionalData
from fdp_core.mechanisms.guarantee import Guarantee
from fdp_core.explore.private_selection import select_parameters
from fdp_core.publish.release import to_json

GRID = np.linspace(0, 1, 15)


def _curves(n=40, seed=0):
    rng = np.random.default_rng(seed)
    meta = pd.DataFrame({"a": rng.normal(0, 1, n)})
    return FunctionalData(GRID, rng.normal(0, 0.3, (n, GRID.size)), metadata=meta)


def _mean():
    plan = mean.plan_mean_release(_curves(), mean.MeanSettings(mechanism="iclp-qr", kernel="matern52", rho=0.2,
                                                               tau=1.0, epsilon=1.0, psi=1e-3))
    return plan, mean.release_record(plan, plan.sample(np.random.default_rng(0))[0])


def _kde(name):
    def run():
        points = np.random.default_rng(1).uniform(0, 1, 50)
        release = kde.plan_kde_release(points, kde.KdeSettings(mechanism=name, grid_size=32))
        return release, kde.release_record(release)
    return run


def _pca():
    result = pca.private_pca(_curves(), pca.PcaSettings(k=2, sampler="deflation", epsilon=5.0, tau=1.0), 3)
    return result, pca.release_record(result)


def _covariance(name):
    def run():
        plan = covariance.plan_covariance_release(_curves(), covariance.CovarianceSettings(
            mechanism=name, kernel="matern52", rho=0.3, centre=0.0, tau=1.0, epsilon=2.0,
            centring="released-mean", gamma=0.25))
        return plan, covariance.release_record(plan)
    return run


def _regression():
    plan = regression.plan_regression_release(_curves(), regression.RegressionSettings(
        covariates=("a",), bound_b=2.0, kernel="matern52", rho=0.3, centre=0.0, tau=1.0, epsilon=1.0, delta=1e-5))
    return plan, regression.release_record(plan)


def _selection():
    selection = select_parameters(_curves(), mean.MeanSettings(tau=1.0, kernel="matern52", rho=0.2, epsilon=1.0),
                                  [1e-4, 1e-2], [0.1, 0.2], epsilon=1.0, rng=np.random.default_rng(0))
    return selection, selection.record()


KINDS = {"mean": _mean, "kde-gaussian": _kde("gaussian"), "kde-iclp": _kde("iclp"), "pca": _pca,
         "covariance-gaussian": _covariance("gaussian"), "covariance-iclp": _covariance("iclp"),
         "regression": _regression, "selection": _selection}


def _plain(value):
    return json.loads(to_json(value))


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_holds_a_frozen_guarantee_and_publishes_its_record(kind):
    release, record = KINDS[kind]()
    g = release.guarantee
    assert isinstance(g, Guarantee)
    assert _plain(record["guarantee"]) == _plain(g.record())
    published = record["guarantee"]
    assert (published["privacy"], published["epsilon"], published["delta"]) == (g.privacy, g.epsilon, g.delta)
    with pytest.raises(FrozenInstanceError):
        g.epsilon = 100.0
    with pytest.raises(TypeError):
        g.details["epsilon"] = 100.0  # a read-only view: the published figures cannot be edited either


def test_parts_are_guarantees_of_their_own_and_the_whole_spends_the_budget():
    plan, record = _regression()
    t1, t2 = plan.guarantee.details["t1"], plan.guarantee.details["t2"]
    assert isinstance(t1, Guarantee) and isinstance(t2, Guarantee)
    assert t1.epsilon + t2.epsilon == pytest.approx(plan.guarantee.epsilon)
    assert t1.delta + t2.delta == pytest.approx(plan.guarantee.delta)
    assert record["guarantee"]["t1"]["sensitivity_frobenius"] == t1.sensitivity == plan.t1_sensitivity
    assert record["guarantee"]["t2"]["gdp_mu"] == pytest.approx(plan.t2_sensitivity / plan.t2_sigma)
    # A covariance release's guarantee is the whole budget; its parts' shares are in the details.
    cov, _ = _covariance("gaussian")()
    g = cov.guarantee
    assert g.epsilon == pytest.approx(g.details["epsilon_covariance"] + g.details["epsilon_mean"])
    assert g.delta == pytest.approx(g.details["delta_covariance"] + g.details["delta_mean"])


def test_every_bound_is_published_under_its_name():
    g = Guarantee("epsilon-DP", 1.0, 0.0, sensitivity=2.0, sensitivity_key="sensitivity_l1",
                  sensitivities={"exact": 2.0, "paper": 3.0})
    assert g.record() == {"privacy": "epsilon-DP", "epsilon": 1.0, "delta": 0.0, "sensitivity_l1": 2.0,
                          "sensitivity_exact": 2.0, "sensitivity_paper": 3.0}
    assert g.sensitivity_for("paper") == 3.0
    # A guarantee without a noise norm (the exponential mechanism's) publishes none.
    assert "sensitivity_norm" not in Guarantee("epsilon-DP", 1.0, 0.0, sensitivity=1.0).record()
