"""95% error radii of a density release, computed once per noise shape (METHODS.md section 4).

A density release's noise is its scale (Hall's sigma, ICLP's largest Laplace scale) times a
field whose law depends only on the noise *shape*: the mechanism, the box, the grid and the
kernel parameters (``KdeMechanism.noise_shape``), never on epsilon, delta, n, the bound or the
calibration. The Monte Carlo radii use fixed seeds, so they are exactly proportional to the
scale: the unit radii are cached by shape and rescaled, and a change of epsilon costs no new
Monte Carlo. This is the density twin of the mean's cache (``MeanRelease.l2_error_radius``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from ..registry.kde import kde_mechanism

# Monte Carlo draws behind the radii: a 64 x 64 noise field costs 16x a 512-point curve.
RADIUS_DRAWS = {1: 4000, 2: 1000}
_CACHE_SIZE = 64
_unit_radii: OrderedDict = OrderedDict()  # (noise shape, prob, draws) -> (unit L2, unit sup), least recent first
_lock = threading.Lock()  # the app serves several sessions from threads of one process


def is_cached(release, prob: float = 0.95) -> bool:
    """Whether :func:`error_radii` answers without Monte Carlo (the app shows a spinner otherwise)."""
    with _lock:
        return _key(release, prob) in _unit_radii


def error_radii(release, prob: float = 0.95) -> tuple[float, float]:
    """(L2, sup) radii r with P(||release - estimate|| <= r) ~ prob, in the release's units.

    Equal to ``(release.l2_error_radius(prob, n), release.sup_error_radius(prob, n))`` with
    n = ``RADIUS_DRAWS[release.d]``, up to rounding; computed once per noise shape.
    """
    entry = kde_mechanism(release.mechanism)
    scale = float(entry.noise_scale(release))
    draws = RADIUS_DRAWS[release.d]
    unit = _cached(_unit_radii, _key(release, prob), lambda: (release.l2_error_radius(prob, draws) / scale,
                                                              release.sup_error_radius(prob, draws) / scale))
    return unit[0] * scale, unit[1] * scale


def _cached(cache: OrderedDict, key, compute):
    """``cache[key]``, computed when absent (outside the lock: a Monte Carlo must not block the other
    sessions); beyond _CACHE_SIZE entries the least recently used go."""
    with _lock:
        value = cache.get(key)
        if value is not None:
            cache.move_to_end(key)
    if value is None:
        value = compute()
        with _lock:
            cache[key] = value
            while len(cache) > _CACHE_SIZE:
                cache.popitem(last=False)
    return value


def _key(release, prob: float) -> tuple:
    return (kde_mechanism(release.mechanism).noise_shape(release), float(prob), RADIUS_DRAWS[release.d])


_upper_l2: OrderedDict = OrderedDict()  # (noise shape, prob, draws) -> unit upper-bound L2 radius


def l2_upper_radius(release, prob: float = 0.95, draws: int = 4000) -> float:
    """``release.l2_error_radius(prob, draws)`` (the Monte Carlo upper confidence bound the plan states),
    computed once per noise shape: the order statistic of fixed-seed draws is exactly proportional to the
    scale, so the planner's stand-ins of any n share one Monte Carlo (issue 40)."""
    scale = float(kde_mechanism(release.mechanism).noise_scale(release))
    key = (kde_mechanism(release.mechanism).noise_shape(release), float(prob), int(draws))
    return _cached(_upper_l2, key, lambda: release.l2_error_radius(prob, draws) / scale) * scale
