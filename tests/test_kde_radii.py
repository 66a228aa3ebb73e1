"""The density's 95% radii cached per noise shape (fdp_core/releases/kde_radii.py): equal to
the release's own Monte Carlo radii, and reused across epsilon without new Monte Carlo."""

import numpy as np
import pytest

from fdp_core.data.simulate import hall_mixture_points, mixture_2d_points
from fdp_core.releases import kde_radii
from fdp_core.releases.kde import KdeSettings, plan_kde_release


def _plan(mechanism, points, box, **options):
    return plan_kde_release(points, KdeSettings(mechanism=mechanism, box=box, **options))


@pytest.mark.parametrize("mechanism", ["gaussian", "iclp"])
def test_radii_equal_the_release_monte_carlo(mechanism):
    release = _plan(mechanism, hall_mixture_points(100, seed=0), ((0.0, 1.0),), epsilon=0.7, grid_size=96)
    l2, sup = kde_radii.error_radii(release)
    assert l2 == pytest.approx(release.l2_error_radius(0.95, 4000), rel=1e-9)
    assert sup == pytest.approx(release.sup_error_radius(0.95, 4000), rel=1e-9)


@pytest.mark.parametrize("mechanism", ["gaussian", "iclp"])
def test_an_epsilon_change_reuses_the_shape_and_rescales_exactly(mechanism, monkeypatch):
    points, box = hall_mixture_points(80, seed=1), ((0.0, 1.0),)
    first = _plan(mechanism, points, box, epsilon=1.0, grid_size=72)
    kde_radii.error_radii(first)
    other = _plan(mechanism, points, box, epsilon=0.25, grid_size=72)
    assert kde_radii.is_cached(other)  # same noise shape: no Monte Carlo for the new epsilon
    expected = (other.l2_error_radius(0.95, 4000), other.sup_error_radius(0.95, 4000))
    monkeypatch.setattr(type(other), "l2_error_radius", lambda *a, **k: pytest.fail("Monte Carlo re-run"))
    assert kde_radii.error_radii(other) == pytest.approx(expected, rel=1e-9)
    # Another grid is another noise shape.
    assert not kde_radii.is_cached(_plan(mechanism, points, box, epsilon=1.0, grid_size=80))


def test_2d_radii_use_fewer_draws():
    release = _plan("gaussian", mixture_2d_points(200, seed=0), ((0.0, 1.0), (0.0, 1.0)), bandwidth=0.05,
                    grid_size=16)
    l2, sup = kde_radii.error_radii(release)
    assert kde_radii.RADIUS_DRAWS[2] == 1000
    assert (l2, sup) == pytest.approx((release.l2_error_radius(0.95, 1000), release.sup_error_radius(0.95, 1000)),
                                      rel=1e-9)
    assert np.isfinite(l2) and sup > 0


def test_the_planners_upper_radius_is_the_release_monte_carlo_once_per_shape(monkeypatch):
    points, box = hall_mixture_points(80, seed=2), ((0.0, 1.0),)
    first = _plan("gaussian", points, box, epsilon=1.0, grid_size=64)
    assert kde_radii.l2_upper_radius(first, draws=500) == pytest.approx(first.l2_error_radius(0.95, 500), rel=1e-9)
    other = _plan("gaussian", points, box, epsilon=0.3, grid_size=64)
    expected = other.l2_error_radius(0.95, 500)
    monkeypatch.setattr(type(other), "l2_error_radius", lambda *a, **k: pytest.fail("Monte Carlo re-run"))
    assert kde_radii.l2_upper_radius(other, draws=500) == pytest.approx(expected, rel=1e-9)
