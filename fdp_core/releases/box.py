"""The public box of a density release, its grid, and the observations inside it (METHODS.md 4, 17).

Every density mechanism (fdp_core/mechanisms/hall_kde.py, iclp_kde.py) starts from the
same public inputs: a box T chosen without looking at the data, an equally spaced grid of
G points per axis over it, and the observations clipped to T (a fixed per-record map, so
replace-one neighbours stay neighbours). This module holds those inputs, the sufficient
statistics a release reads from the observations (:class:`KdeSums`, built in memory here or
chunk by chunk by fdp_core/engines/stream.py) and the two bandwidth rules.

>>> parse_box("0,1,-1,2")
((0.0, 1.0), (-1.0, 2.0))
>>> float(box_diameter(((0.0, 3.0), (0.0, 4.0))))
5.0
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..errors import DataError, ParameterError
from .. import limits
from ..kernels import trapezoid_weights

Box = tuple  # ((lo, hi),) in 1-d, ((lo1, hi1), (lo2, hi2)) in 2-d

DEFAULT_GRID_SIZE = {1: 512, 2: 64}
MAX_GRID_SIZE = limits.MAX_KDE_GRID_SIZE
DATA_DEPENDENT_BANDWIDTH = ("bandwidth chosen from the data (Silverman's rule): "
                            "the release is not differentially private")


# --------------------------------------------------------------------------- box and grid

def check_box(box, d: int | None = None) -> Box:
    """Normalise a box to a tuple of (lo, hi) pairs, one per axis.

    Accepts (lo, hi), (lo1, hi1, lo2, hi2) or ((lo1, hi1), (lo2, hi2)).
    """
    try:
        flat = np.asarray(box, dtype=float).ravel()
    except (TypeError, ValueError):
        raise ParameterError(f"box must be numbers lo,hi (1-d) or lo1,hi1,lo2,hi2 (2-d), got {box!r}") from None
    if flat.size not in (2, 4):
        raise ParameterError(f"box must have 2 numbers (lo,hi) for a 1-d or 4 (lo1,hi1,lo2,hi2) for a 2-d "
                             f"density, got {flat.size}")
    if d is not None and flat.size != 2 * d:
        raise ParameterError(f"a {d}-d density needs a box with {2 * d} numbers, got {flat.size}")
    if not np.all(np.isfinite(flat)):
        raise ParameterError(f"box limits must be finite, got {box!r}")
    pairs = tuple((float(flat[i]), float(flat[i + 1])) for i in range(0, flat.size, 2))
    for axis, (lo, hi) in enumerate(pairs, start=1):
        if not lo < hi:
            raise ParameterError(f"box axis {axis}: need lo < hi, got [{lo:g}, {hi:g}]")
    return pairs


def parse_box(text: str) -> Box:
    """Parse "LO,HI" or "LO1,HI1,LO2,HI2" (CLI and app text inputs)."""
    try:
        numbers = [float(part) for part in str(text).split(",")]
    except ValueError:
        raise ParameterError(f"box must be comma-separated numbers like 0,1 or 0,1,0,1, got {text!r}") from None
    return check_box(numbers)


def box_widths(box: Box) -> np.ndarray:
    return np.array([hi - lo for lo, hi in box])


def box_centre(box: Box) -> np.ndarray:
    """(d,) centre of the box: the data-free observation of a person without a usable curve."""
    return np.array([lo / 2.0 + hi / 2.0 for lo, hi in check_box(box)])


def box_diameter(box: Box) -> float:
    """Euclidean diameter D of the box: the largest distance two observations can have."""
    return float(np.sqrt(np.sum(box_widths(box) ** 2)))


def check_grid_size(grid_size, d: int) -> int:
    if grid_size is None:
        return DEFAULT_GRID_SIZE[d]
    try:
        g = int(grid_size)
    except (TypeError, ValueError):
        raise ParameterError(f"grid size must be an integer, got {grid_size!r}") from None
    if g != grid_size or not 3 <= g <= MAX_GRID_SIZE[d]:
        raise ParameterError(f"grid size for a {d}-d density must be an integer in [3, {MAX_GRID_SIZE[d]}] "
                             f"(points per axis), got {grid_size!r}")
    return g


def kde_grids(box: Box, grid_size: int) -> tuple[np.ndarray, ...]:
    """Equally spaced grid of ``grid_size`` points per axis, in box coordinates."""
    return tuple(np.linspace(lo, hi, grid_size) for lo, hi in box)


def grid_weights(grids: tuple) -> np.ndarray:
    """Trapezoid weights of the (product) grid in box coordinates, grid-shaped: L2(T) norms and integrals."""
    w = [trapezoid_weights(g) for g in grids]
    return w[0] if len(w) == 1 else np.outer(w[0], w[1])


# --------------------------------------------------------------------------- observations

def check_points(points, d: int | None = None) -> np.ndarray:
    """Observations as an (n, d) float array; d inferred from the shape when not given."""
    x = np.asarray(points, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[1] not in (1, 2):
        raise DataError(f"observations must have shape (n,) or (n, 1) for a 1-d or (n, 2) for a 2-d density, "
                        f"got {np.shape(points)}")
    if d is not None and x.shape[1] != d:
        raise DataError(f"the box is {d}-d but the observations are {x.shape[1]}-d")
    if x.shape[0] < 1:
        raise DataError("no observations")
    bad = ~np.all(np.isfinite(x), axis=1)
    if bad.any():
        raise DataError(f"{int(bad.sum())} observation(s) are NaN or infinite (first: row {int(np.argmax(bad)) + 1})")
    return x


@dataclass(frozen=True)
class BoxClip:
    points: np.ndarray  # (n, d), every point inside the box
    n_clipped: int  # observations with at least one coordinate outside the box


def clip_to_box(points, box) -> BoxClip:
    """Move each observation to the nearest point of the public box (coordinate-wise clip).

    The sensitivities assume every observation lies in T; clipping is a fixed per-record
    map, so it keeps replace-one neighbours neighbours. Raises if no observation lies in
    the box (the release would only describe the box's boundary).
    """
    box = check_box(box)
    x = check_points(points, len(box))
    lo = np.array([b[0] for b in box])
    hi = np.array([b[1] for b in box])
    outside = np.any((x < lo) | (x > hi), axis=1)
    if outside.all():
        limits = " x ".join(f"[{a:g}, {b:g}]" for a, b in box)
        raise DataError(f"all {x.shape[0]} observations lie outside the box {limits}; choose a (public) box "
                        "that covers the range of the feature")
    return BoxClip(np.clip(x, lo, hi), int(outside.sum()))


def snap_to_grid(points: np.ndarray, box: Box, grid_size: int) -> np.ndarray:
    """Index of the nearest grid node per axis, shape (n, d): a fixed per-record map."""
    lo = np.array([b[0] for b in box])
    width = box_widths(box)
    idx = np.rint((points - lo) / width * (grid_size - 1)).astype(int)
    return np.clip(idx, 0, grid_size - 1)


def node_counts(node_index: np.ndarray, grid_size: int) -> np.ndarray:
    """Observations per grid node, (G,) or (G, G): ICLP-KDE's sufficient statistic."""
    if node_index.shape[1] == 1:
        return np.bincount(node_index[:, 0], minlength=grid_size).astype(float)
    counts = np.zeros((grid_size, grid_size))
    np.add.at(counts, (node_index[:, 0], node_index[:, 1]), 1.0)
    return counts


@dataclass(frozen=True)
class KdeSums:
    """What a density release reads from the observations (METHODS.md 17): n, how many were
    clipped to the box, and one of: the clipped points (needed when the bandwidth depends on
    n or on the data), the Gaussian bump sums on the grid at a fixed bandwidth (Hall), or
    the observations per grid node (ICLP). Built chunk by chunk by fdp_core/engines/stream.py; the
    density mechanisms accept it in place of the points."""

    box: tuple
    grid_size: int
    n: int
    n_clipped_box: int
    points: np.ndarray | None = None  # (n, d), inside the box
    bump_sums: np.ndarray | None = None  # sum_i exp(-||x - x_i||^2 / (2 h^2)) on the grid
    bandwidth: float | None = None  # the h of bump_sums
    node_counts: np.ndarray | None = None  # (G,) or (G, G)

    def require_points(self, what: str) -> np.ndarray:
        if self.points is None:
            raise ParameterError(f"{what} needs the observations themselves; these sufficient statistics hold "
                                 "only sums (stream with a fixed bandwidth, or keep the points)")
        return self.points


def kde_sums(points, box, grid_size: int | None) -> KdeSums:
    """Points (clipped to the box here) or ready-made sums, as one object with the checked box and grid size."""
    box = check_box(box)
    grid_size = check_grid_size(grid_size, len(box))
    if isinstance(points, KdeSums):
        if check_box(points.box) != box or points.grid_size != grid_size:
            raise ParameterError("these density sufficient statistics were taken for another box or grid size; "
                                 "recompute them with the release settings")
        if points.n_clipped_box == points.n:
            limits = " x ".join(f"[{a:g}, {b:g}]" for a, b in box)
            raise DataError(f"all {points.n} observations lie outside the box {limits}; choose a (public) box "
                            "that covers the range of the feature")
        return replace(points, box=box)
    clip = clip_to_box(points, box)
    return KdeSums(box, grid_size, clip.points.shape[0], clip.n_clipped, points=clip.points)


# --------------------------------------------------------------------------- bandwidth

def default_bandwidth(box, n: int) -> float:
    """Data-free rule h = (box width) * n^(-1/(4+d)).

    In 2-d the box width is the geometric mean of the side lengths (the side of the square
    with the box's area), since the Hall kernel has one isotropic bandwidth.
    """
    box = check_box(box)
    d = len(box)
    width = float(np.exp(np.mean(np.log(box_widths(box)))))
    return width * float(n) ** (-1.0 / (4 + d))


def silverman_bandwidth(points) -> float:
    """Silverman's rule 0.9 min(sd, IQR/1.34) n^(-1/5) (1-d); in 2-d the mean over axes of
    min(sd, IQR/1.34) times n^(-1/6) (Scott's exponent). Reads the data: a release using it
    must carry :data:`DATA_DEPENDENT_BANDWIDTH`."""
    x = check_points(points)
    n, d = x.shape
    sd = x.std(axis=0, ddof=1) if n > 1 else np.zeros(d)
    iqr = np.subtract(*np.percentile(x, [75, 25], axis=0)) / 1.34
    spread = np.where(iqr > 0, np.minimum(sd, iqr), sd)
    scale = float(np.mean(spread))
    if not scale > 0:
        raise DataError("Silverman's rule needs observations that are not all equal; give a bandwidth instead")
    return (0.9 * scale * n ** (-0.2)) if d == 1 else (scale * n ** (-1.0 / 6.0))
