"""A declared public grid (METHODS.md 24): where a long file with person-specific times is released.

A long file whose persons are seen at their own times has no grid of its own that may be
published: the union of the observed times is a list of real visit times. Such a file is
interpolated onto a grid the custodian declares, ``A,B,M`` (M equally spaced points from A to
B), which is public because it was chosen without looking at the data. Each person's curve is
interpolated linearly between their visits and held at its first (last) value before (after)
them: a per-person rule, so one person's times change only that person's row.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ParameterError
from ..limits import MAX_GRID_POINTS


def parse_grid(spec) -> tuple[float, float, int] | None:
    """'A,B,M' (or a triple, or None) -> (A, B, M) with finite A < B and 2 <= M <= MAX_GRID_POINTS."""
    if spec is None:
        return None
    parts = spec.split(",") if isinstance(spec, str) else list(spec)
    try:
        a, b, m_text = parts
        a, b, m = float(a), float(b), float(m_text)
    except (TypeError, ValueError):
        raise ParameterError(f"the public grid is three numbers A,B,M (M points from A to B, e.g. --grid 0,1,50), "
                             f"got {spec!r}") from None
    if not (math.isfinite(a) and math.isfinite(b) and a < b):
        raise ParameterError(f"the public grid A,B,M needs finite A < B, got {spec!r}")
    if not (m.is_integer() and 2 <= m <= MAX_GRID_POINTS):
        raise ParameterError(f"the public grid's M is a whole number of points from 2 to {MAX_GRID_POINTS}, "
                             f"got {spec!r}")
    return a, b, int(m)


def grid_points(spec: tuple[float, float, int]) -> np.ndarray:
    a, b, m = spec
    return np.linspace(a, b, m)


def interpolate_onto(points: np.ndarray, times: np.ndarray, values: np.ndarray) -> np.ndarray:
    """One person's visits (times increasing) on the public points; NaN values are skipped, and
    a person with fewer than 2 usable visits is all NaN (dropped or refused like a missing curve)."""
    ok = np.isfinite(values)
    if ok.sum() < 2:
        return np.full(points.size, np.nan)
    return np.interp(points, times[ok], values[ok])


def spec_text(spec: tuple[float, float, int]) -> str:
    return f"{spec[0]:g},{spec[1]:g},{spec[2]}"


def parse_domain(text) -> tuple[float, float]:
    """'A,B' (or a pair) -> (A, B) with A < B, both finite."""
    parts = text.split(",") if isinstance(text, str) else list(text)
    try:
        a, b = (float(p) for p in parts)
    except (TypeError, ValueError):
        raise ParameterError(f"the domain must be two numbers A,B (e.g. --domain 0,1), got {text!r}") from None
    if not (math.isfinite(a) and math.isfinite(b) and a < b):
        raise ParameterError(f"the domain A,B needs finite A < B, got {text!r}")
    return a, b
