"""A public stand-in for sealed mode (issue 29): curves simulated from the declared design only.

In sealed mode the privacy officer explores, tunes and plans on a stand-in built from what is
public anyway -- the declared number of persons, the grid (points and domain) and the value
range -- and the private file is read once, at commit. Nothing here reads the private data,
so every view computed on the stand-in reveals nothing about it.
"""

from __future__ import annotations

import numpy as np

from .loading import FunctionalData, from_arrays
from .preprocess import file_persons

SEALED = "settings fixed on a stand-in; the private data were read only to release"
# Views recorded in sealed mode carry this prefix, so the commit can tell that they were
# computed on the stand-in and not on the private data.
STAND_IN_PREFIX = "on the public stand-in: "


def stand_in_view(label: str) -> str:
    """The label of a view computed on the stand-in (as fdp_ui.state.note_view records it)."""
    return label if label.startswith(STAND_IN_PREFIX) else STAND_IN_PREFIX + label


def all_on_stand_in(looked_at) -> bool:
    """True when every recorded view was computed on the stand-in (an empty record counts)."""
    return all(str(x).startswith(STAND_IN_PREFIX) for x in (looked_at or ()))


def stand_in_curves(n: int, points: int, domain: tuple[float, float], value_range: tuple[float, float], *,
                    seed: int = 0, name: str = "public stand-in") -> FunctionalData:
    """``n`` smooth random curves on ``points`` equally spaced points of ``domain`` inside ``value_range``.

    Each curve is a random combination of a few low-frequency sines and cosines, rescaled so the
    whole sample fills the declared range (a random mean level and amplitude per curve keeps the
    sample varied). The inputs are the declared design only; the seed makes it reproducible.
    """
    lo, hi = float(value_range[0]), float(value_range[1])
    a, b = float(domain[0]), float(domain[1])
    if int(n) < 1 or int(points) < 2:
        raise ValueError("a stand-in needs n >= 1 person and at least 2 grid points")
    if not (np.isfinite([lo, hi, a, b]).all() and hi > lo and b > a):
        raise ValueError("a stand-in needs a finite domain and value range with upper > lower")
    rng = np.random.default_rng(seed)
    grid = np.linspace(a, b, int(points))
    t = (grid - a) / (b - a)
    frequencies = np.arange(1, 5)
    basis = np.concatenate([np.sin(np.pi * np.outer(frequencies, t)), np.cos(np.pi * np.outer(frequencies, t))])
    weights = rng.normal(size=(int(n), basis.shape[0])) / np.concatenate([frequencies, frequencies])
    shapes = weights @ basis
    peak = np.abs(shapes).max(axis=1, keepdims=True)
    shapes = shapes / np.where(peak > 0, peak, 1.0)  # each curve in [-1, 1]
    centre, half = (lo + hi) / 2, (hi - lo) / 2
    level = rng.uniform(-0.3, 0.3, size=(int(n), 1))
    amplitude = rng.uniform(0.3, 0.7, size=(int(n), 1))
    values = centre + half * np.clip(level + amplitude * shapes, -1.0, 1.0)
    return from_arrays(grid, values, name=name)


SIMULATED = "simulated"  # the stand-in source that simulates curves from the declared design


def with_person_ids(fd: FunctionalData, person_column: str | None) -> FunctionalData:
    """The simulated stand-in under the declared person column (one curve per person, ids s000000...)."""
    if not person_column:
        return fd
    import pandas as pd

    ids = pd.DataFrame({person_column: [f"s{i:06d}" for i in range(fd.n)]})
    return from_arrays(fd.grid_points, fd.data_matrix, name=fd.report.source, metadata=ids)


def matched_stand_in(fd: FunctionalData, *, n: int, points: int, domain: tuple[float, float],
                     person_column: str | None, label: str) -> FunctionalData:
    """A public file as the stand-in: refused (ValueError, one line) unless it has the declared design.

    The declared n persons (by the declared person column, which it must hold) and the
    declared grid (number of points and its two ends), so that everything computed on it is
    what the private file will give: n, the grid and the range set every noise scale.
    """

    if person_column and person_column not in fd.metadata.columns:
        raise ValueError(f"the stand-in {label} has no column '{person_column}' (the declared person column)")
    persons = file_persons(fd, person_column or None).n_persons
    if persons != int(n):
        raise ValueError(f"the stand-in {label} holds {persons} persons, not the declared n = {int(n)}")
    a, b = float(domain[0]), float(domain[1])
    if fd.grid_points.size != int(points) or not np.allclose([fd.grid_points[0], fd.grid_points[-1]], [a, b]):
        raise ValueError(f"the stand-in {label} has {fd.grid_points.size} grid points on [{fd.grid_points[0]:g}, "
                         f"{fd.grid_points[-1]:g}], not the declared {int(points)} on [{a:g}, {b:g}]")
    return fd
