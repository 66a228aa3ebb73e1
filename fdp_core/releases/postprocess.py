"""Free post-processing of a noised release: projection onto what is publicly known (METHODS.md 18).

Anything computed from a differentially private output alone, without the data, keeps the
guarantee. Two such maps are applied:

* a mean curve is projected pointwise onto the declared public range [lo, hi]: the mean of the
  clipped curves lies in it (every curve is clipped to it first), and clipping each value to an
  interval containing a curve never increases the pointwise, hence the L2, distance to it;
* a density is clipped at 0 and rescaled to integrate to 1 over its public box: it removes
  impossible values (not guaranteed to shrink the L2 error, see METHODS.md 18).

Both are on by default (``raw_release=False`` in the settings) and stated in the record under
``"post_processing"``; the release as drawn stays in the analyst view for comparison. Every path
that produces a release (CLI, stream and Dask engines, commit, replay, bundle re-run) calls
:func:`finish_mean` or :func:`finish_density`, so they agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..registry import mean_mechanism

MEAN_PROJECTION = "projected pointwise onto the declared public range [{lo:g}, {hi:g}] (clip each value)"
DENSITY_CLIP = "negative values set to 0"
DENSITY_RENORMALISE = "rescaled to integrate to 1 over the public box"
DENSITY_UNIFORM = "uniform on the public box when no positive value is left"
NONE_DECLARED = "none: no public value range declared, so the curve is released as drawn"
SWITCHED_OFF = "none: switched off (raw_release / --no-post-processing)"


@dataclass(frozen=True)
class Finished:
    """A release after post-processing, the release as drawn and the steps applied (public words)."""

    values: np.ndarray
    raw: np.ndarray
    steps: tuple

    @property
    def changed(self) -> bool:
        return not np.array_equal(self.values, self.raw)

    def analyst_fields(self, weights: np.ndarray) -> dict:
        """The release as drawn and how far post-processing moved it (analyst view only: it is
        noised output, but published once only, in its post-processed form)."""
        diff = (np.asarray(self.values) - np.asarray(self.raw)).ravel()
        moved = float(np.sqrt(max(float(diff**2 @ np.asarray(weights, dtype=float).ravel()), 0.0)))
        return {"raw_release": np.asarray(self.raw).ravel(), "post_processing_steps": list(self.steps),
                "post_processing_moved_l2": moved,
                "post_processing_points_changed": int(np.count_nonzero(diff))}


def mean_range(settings) -> tuple | None:
    """The public range a mean release is projected onto: the declared value range, or for a
    lattice mechanism (Bernstein) its own public [lo, hi]; None when nothing is declared.
    The mechanism's basis says which (fdp_core/registry/mean_basis.py)."""
    return mean_mechanism(settings.mechanism).basis.public_range(settings)


def mean_steps(settings) -> tuple:
    """The post-processing of a mean release, in words: a function of the public settings only."""
    if getattr(settings, "raw_release", False):
        return (SWITCHED_OFF,)
    bounds = mean_range(settings)
    if bounds is None:
        return (NONE_DECLARED,)
    return (MEAN_PROJECTION.format(lo=bounds[0], hi=bounds[1]),)


def finish_mean(values: np.ndarray, settings) -> Finished:
    """Project a noised mean curve onto the declared public range (unless switched off)."""
    raw = np.asarray(values, dtype=float)
    bounds = None if getattr(settings, "raw_release", False) else mean_range(settings)
    out = raw if bounds is None else np.clip(raw, bounds[0], bounds[1])
    return Finished(out, raw, mean_steps(settings))


def density_steps(raw_release: bool = False) -> tuple:
    """The post-processing of a density release, in words (``raw_release``: the setting)."""
    if raw_release:
        return (SWITCHED_OFF,)
    return (DENSITY_CLIP, DENSITY_RENORMALISE, DENSITY_UNIFORM)


def finish_density(values: np.ndarray, weights: np.ndarray, settings) -> Finished:
    """Clip a noised density at 0 and rescale it to integrate to 1 with the quadrature ``weights``
    (grid-shaped, summing to the box's volume); uniform when nothing positive is left. ``values``
    is one density (grid-shaped) or several stacked along leading axes."""
    raw = np.asarray(values, dtype=float)
    if getattr(settings, "raw_release", False):
        return Finished(raw, raw, density_steps(True))
    w = np.asarray(weights, dtype=float)
    clipped = np.maximum(raw, 0.0)
    # Leading axes are independent draws (the pages' previews): one mass per draw.
    mass = np.sum(clipped * w, axis=tuple(range(-w.ndim, 0)), keepdims=True)
    empty = ~(mass > 0.0) | ~np.isfinite(mass)
    out = np.where(empty, 1.0 / float(np.sum(w)), clipped / np.where(empty, 1.0, mass))
    return Finished(out, raw, density_steps(False))
