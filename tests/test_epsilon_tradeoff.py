"""The report's error-against-epsilon chart is computed from the commit's one plan by scaling
the noise (fdp_core/explore/epsilon_tradeoff.py); it must equal re-planning the release from the raw
data at every epsilon (what commit.mean_tradeoff / kde_tradeoff did before), to 1e-9."""

from dataclasses import replace

import numpy as np
import pytest

from fdp_core.publish import commit
from fdp_core.data.loading import from_arrays
from fdp_core.errors import FdpError
from fdp_core.releases.kde import KdeSettings, plan_kde_release
from fdp_core.releases.mean import MeanSettings, plan_mean_release
from fdp_core.registry import MEAN_REGISTRY
from fdp_core.registry.kde import REGISTRY as KDE_REGISTRY


def _replanned(plan_at, settings, n_points):
    """Reference: plan the release from the data at each epsilon of the chart."""
    grid = np.unique(np.concatenate([np.logspace(-2, 1, n_points), [settings.epsilon]]))
    eps, err = [], []
    for e in grid:
        try:
            plan = plan_at(replace(settings, epsilon=float(e)))
        except FdpError:
            continue
        eps.append(float(e))
        err.append(plan.expected_sq_l2_error)
    return eps, err, plan_at(settings).expected_sq_l2_error


def _curves(n=30, m=41, seed=3):
    rng = np.random.default_rng(seed)
    grid = np.linspace(0.0, 1.0, m)
    values = 0.4 * rng.standard_normal((n, m)).cumsum(axis=1) / np.sqrt(m)
    return from_arrays(grid, values, name="random walks")


MEAN_CASES = [
    MeanSettings(mechanism="gaussian", epsilon=1.0, delta=1e-6, tau=1.0, phi=1e-2),
    MeanSettings(mechanism="gaussian", epsilon=0.5, delta=1e-5, tau=2.0, phi=1e-3, calibration="classical"),
    MeanSettings(mechanism="gaussian", epsilon=0.7, delta=1e-5, tau=1.0, phi=1e-2, bound="paper"),
    MeanSettings(mechanism="iclp-qr", epsilon=1.0, tau=1.0, psi=1e-3),
    MeanSettings(mechanism="iclp-ar", epsilon=2.0, tau=1.0, eta=1.5, psi=3e-2),
    MeanSettings(mechanism="frl", epsilon=1.0, tau=1.0, M=8),
    MeanSettings(mechanism="bernstein", epsilon=1.0, K=12, lo=-2.0, hi=2.0),
    MeanSettings(mechanism="truncated-gaussian", kernel="matern52", rho=0.2, epsilon=1.0, delta=1e-5, tau=1.0, M=6),
    MeanSettings(mechanism="gaussian", epsilon=1.0, delta=1e-6, tau_from_data=True, phi=1e-2),
]


def test_every_mean_mechanism_is_covered():
    assert {s.mechanism for s in MEAN_CASES} == set(MEAN_REGISTRY)


@pytest.mark.parametrize("settings", MEAN_CASES, ids=lambda s: f"{s.mechanism}-{s.calibration}-{s.bound}")
def test_mean_chart_equals_replanning_at_every_epsilon(settings):
    fd = _curves()
    plan = plan_mean_release(fd, settings)
    eps, err, chosen = _replanned(lambda s: plan_mean_release(fd, s), plan.settings, 31)
    chart = commit.mean_tradeoff(fd, plan.settings, plan=plan)
    assert chart["epsilon"] == eps and len(eps) >= 20
    np.testing.assert_allclose(chart["expected_sq_l2_error"], err, rtol=1e-9, atol=0)
    assert chart["chosen_error"] == pytest.approx(chosen, rel=1e-9)
    # Without a plan the function plans once itself: the same chart.
    assert commit.mean_tradeoff(fd, plan.settings) == chart


def test_classical_calibration_leaves_out_the_epsilons_it_refuses():
    fd = _curves()
    plan = plan_mean_release(fd, MEAN_CASES[1])
    chart = commit.mean_tradeoff(fd, plan.settings, plan=plan)
    assert max(chart["epsilon"]) <= 1.0 < 10.0


KDE_CASES = [
    KdeSettings(mechanism="gaussian", box=((-1.0, 2.0),), epsilon=0.7, delta=1e-6, grid_size=64),
    KdeSettings(mechanism="gaussian", box=((-1.0, 2.0),), epsilon=0.5, delta=1e-5, grid_size=64,
                calibration="classical", bound="paper"),
    KdeSettings(mechanism="iclp", box=((-1.0, 2.0),), epsilon=0.7, grid_size=64),
    KdeSettings(mechanism="gaussian", box=((-1.0, 2.0), (-1.0, 2.0)), epsilon=1.0, delta=1e-5, grid_size=16),
    KdeSettings(mechanism="iclp", box=((-1.0, 2.0), (-1.0, 2.0)), epsilon=1.5, grid_size=16),
]


def test_every_kde_mechanism_is_covered():
    assert {s.mechanism for s in KDE_CASES} == set(KDE_REGISTRY)


@pytest.mark.parametrize("settings", KDE_CASES, ids=lambda s: f"{s.mechanism}-{len(s.box)}d-{s.calibration}")
def test_kde_chart_equals_replanning_at_every_epsilon(settings):
    rng = np.random.default_rng(5)
    points = rng.normal(0.5, 0.4, (60, len(settings.box)))
    points = points[:, 0] if len(settings.box) == 1 else points
    plan = plan_kde_release(points, settings)
    eps, err, chosen = _replanned(lambda s: plan_kde_release(points, s), settings, 15)
    chart = commit.kde_tradeoff(points, settings, plan=plan)
    assert chart["epsilon"] == eps and len(eps) >= 8
    np.testing.assert_allclose(chart["expected_sq_l2_error"], err, rtol=1e-9, atol=0)
    assert chart["chosen_error"] == pytest.approx(chosen, rel=1e-9)
    assert commit.kde_tradeoff(points, settings) == chart


@pytest.mark.parametrize("settings", [s for s in MEAN_CASES if not s.tau_from_data],
                         ids=lambda s: f"{s.mechanism}-{s.calibration}-{s.bound}")
def test_a_mean_commit_and_its_bundle_plan_the_release_once(settings, monkeypatch):
    """Issue 25: a commit planned its release 33 times (the report's chart re-planned from the
    raw curves at 32 epsilons); the chart now comes from the commit's one plan. Counted at the
    data pass every plan makes (mean_sums) and at the planner itself, through the bundle's report."""
    from fdp_core.budget.accounting import Ledger
    from fdp_core.publish import bundle
    from fdp_core.releases import mean as mean_module

    passes, plans = [], []
    real_sums, real_plan = mean_module.mean_sums, mean_module.plan_mean_release
    monkeypatch.setattr(mean_module, "mean_sums", lambda *a, **k: passes.append(1) or real_sums(*a, **k))
    monkeypatch.setattr(commit, "plan_mean_release", lambda *a, **k: plans.append(1) or real_plan(*a, **k))
    ledger = Ledger(10.0, 1e-4)
    released = commit.commit_mean(ledger, _curves(), settings)
    files = bundle.bundle_files(released, ledger)
    assert len(passes) == 1 and len(plans) == 1
    assert len(released.tradeoff["epsilon"]) >= 20 and "report.html" in files
