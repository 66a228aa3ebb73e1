"""The non-private pooled local-linear smoother of sparse curves (Yao, Mueller & Wang 2005).

The reference the private sparse mean (fdp_core/releases/sparse.py) is compared with: every observation
of every person pooled, one local-linear fit with the Epanechnikov kernel, the bandwidth chosen
by 5-fold cross-validation over persons (a person's visits are held out together). The
observations are binned on 512 cells of the domain first, so the fits cost O(bins^2) whatever
the number of observations. NON-PRIVATE: only for the analyst view and the benchmark.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data.sparse_data import SparseData

N_BINS = 512
N_FOLDS = 5


@dataclass(frozen=True)
class SmoothResult:
    values: np.ndarray  # the smoother on the requested points
    bandwidth: float  # chosen by cross-validation


def _binned(t, y, edges):
    k = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, edges.size - 2)
    size = edges.size - 1
    return np.bincount(k, minlength=size).astype(float), np.bincount(k, weights=y, minlength=size), k


def _local_linear(centres, counts, sums, x, bandwidth):
    """Local-linear fit at x from binned counts and sums (NaN where the window holds no data)."""
    d = centres[None, :] - np.asarray(x, dtype=float)[:, None]
    z = d / bandwidth
    k = np.where(np.abs(z) < 1.0, 0.75 * (1.0 - z**2), 0.0)
    s0, s1, s2 = (k * counts) @ np.ones_like(centres), (k * counts * d).sum(1), (k * counts * d**2).sum(1)
    t0, t1 = (k * sums).sum(1), (k * sums * d).sum(1)
    det = s0 * s2 - s1**2
    with np.errstate(invalid="ignore", divide="ignore"):
        fit = (s2 * t0 - s1 * t1) / det
        local_mean = t0 / s0
    degenerate = ~(np.abs(det) > 1e-12 * np.maximum(s0, 1e-300) ** 2 * bandwidth**2)
    return np.where(degenerate, local_mean, fit)


def pooled_local_linear(data: SparseData, points, *, domain=None, bandwidths=None, seed: int = 0) -> SmoothResult:
    """The pooled local-linear smoother at ``points``, bandwidth by 5-fold cross-validation over persons."""
    a, b = (float(data.t.min()), float(data.t.max())) if domain is None else map(float, domain)
    inside = (data.t >= a) & (data.t <= b)
    t, y = data.t[inside], data.y[inside]
    person, _ = data.person_index()
    person = person[inside]
    edges = np.linspace(a, b, N_BINS + 1)
    centres = (edges[:-1] + edges[1:]) / 2.0
    span = b - a
    if bandwidths is None:
        bandwidths = span * np.geomspace(0.02, 0.5, 16)
    fold = np.random.default_rng(seed).permutation(int(person.max()) + 1 if person.size else 1) % N_FOLDS
    fold = fold[person]
    counts, sums, cell = _binned(t, y, edges)
    errors = []
    for h in bandwidths:
        err = 0.0
        for f in range(N_FOLDS):
            held = fold == f
            c_out, s_out, _ = _binned(t[held], y[held], edges)
            fit = _local_linear(centres, counts - c_out, sums - s_out, centres, h)
            pred = fit[cell[held]]
            err += float(np.nansum((y[held] - pred) ** 2)) + 1e12 * float(np.isnan(pred).sum())
        errors.append(err)
    best = float(bandwidths[int(np.argmin(errors))])
    values = _local_linear(centres, counts, sums, points, best)
    return SmoothResult(values, best)
