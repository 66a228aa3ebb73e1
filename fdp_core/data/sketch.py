"""Content sketch of a data set: which registered data set a file's curves belong to (METHODS.md 22).

The exact fingerprint (:mod:`fdp_core.data.fingerprint`) changes with any byte of the parsed
curves; a budget keyed by it alone resets when a spreadsheet rounds the values. The sketch
describes each curve by its *shape*, so the ordinary ways of re-exporting the same people
leave it (nearly) unchanged:

1. the grid is rescaled to [0, 1] (grid units and offsets drop out);
2. the curve is interpolated linearly onto 256 fixed points and averaged over 16 equal bins
   (another grid, every other grid point, a re-sampled export change the bins only a little,
   where point samples at 16 points would follow every wiggle of the grid);
3. the 16 bin means are centred by their own mean and divided by their own standard
   deviation (values in percent, another unit, another offset drop out; the file's other
   curves play no part, so adding or removing persons never moves a curve's vector).

Ids, metadata columns, row order, layout (wide, long, Parquet) and the person column do not
enter. Two files are compared curve by curve: a curve is *found* in a registration when its
nearest stored vector lies within :data:`FOUND_DISTANCE` (root mean square over the 16 bins,
in units of the curve's own standard deviation) and is at most :data:`RATIO` times the
distance to the second nearest (or within :data:`EXACT_DISTANCE`): simulated curves of one
smooth design, drawn with another seed, have close neighbours but none distinctly closest
(without the ratio test two seeds of a simulation design matched each other). Rounding the vectors onto a lattice and
hashing them (the first idea of section 22) breaks whenever a coordinate sits near a rounding
boundary; the nearest-neighbour distance has no boundaries. Measured on the DTI curves: the
same curves re-exported differ by at most 1e-5 (rounding to 6 significant digits), every other
grid point by at most 0.10, while the closest two *different* DTI curves are 0.12 apart and
the closest curve of another study (Berkeley growth, dti_rcst, the example data) 0.5.

Constant curves (no shape) are left out. Files with more than :data:`MAX_CURVES` curves keep
a deterministic bottom-k sample of them (the curves whose coarse hash is smallest), the same
curves in every version of the data, so the sketch and the comparison stay small.

The sketch is computed from the data without noise: it stays in the ledger database, next to
the data, and never enters a publishable file, a report or a bundle.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

import numpy as np

from .. import limits
from .loading import FunctionalData

SKETCH_SCHEME = "fdp.sketch/1"
BINS = 16
_FINE = 256
FOUND_DISTANCE = 0.1
# The nearest stored curve must be this much nearer than the second nearest (see _found).
RATIO = 0.3
EXACT_DISTANCE = 0.005
# A file is the registered data set when at least this share of its curves is found there,
# or of the registration's curves in the file (a subset or a superset of the same people).
MATCH_CONTAINMENT = 0.5
MAX_CURVES = limits.MAX_SKETCH_CURVES
_PAIRS_PER_BLOCK = 2_000_000


def curve_vectors(grid, values) -> np.ndarray:
    """Shape vectors (rows x BINS, float32) of complete, non-constant curves; see the module docstring."""
    t = np.asarray(grid, dtype=float)
    x = np.asarray(values, dtype=float)
    if x.ndim != 2 or x.shape[0] == 0 or t.size < 2 or t[-1] == t[0]:
        return np.zeros((0, BINS), dtype=np.float32)
    x = x[np.isfinite(x).all(axis=1)]
    u = (t - t[0]) / (t[-1] - t[0])
    fine = (np.arange(_FINE) + 0.5) / _FINE
    # Linear interpolation of every row at once: weights of the two neighbouring grid points.
    right = np.clip(np.searchsorted(u, fine, side="right"), 1, u.size - 1)
    left = right - 1
    w = np.clip((fine - u[left]) / (u[right] - u[left]), 0.0, 1.0)
    on_fine = x[:, left] * (1.0 - w) + x[:, right] * w
    bins = on_fine.reshape(x.shape[0], BINS, _FINE // BINS).mean(axis=2)
    centred = bins - bins.mean(axis=1, keepdims=True)
    sd = np.sqrt((centred**2).mean(axis=1))
    scale = np.abs(bins).max(axis=1) + 1e-300
    keep = sd > 1e-9 * scale  # constant curves have no shape
    return (centred[keep] / sd[keep, None]).astype(np.float32)


def _bottom_k(vectors: np.ndarray, k: int = MAX_CURVES) -> np.ndarray:
    """At most k rows: those with the smallest hash of their coarse (0.5-lattice) shape."""
    if vectors.shape[0] <= k:
        return vectors
    coarse = np.round(vectors * 2.0).astype(np.int8)
    keys = np.array([int.from_bytes(hashlib.blake2b(row.tobytes(), digest_size=8).digest(), "little")
                     for row in coarse], dtype=np.uint64)
    return vectors[np.sort(np.argsort(keys, kind="stable")[:k])]


def sketch_of(fd: FunctionalData) -> np.ndarray:
    """The sketch of loaded curves (local engine)."""
    return _bottom_k(curve_vectors(fd.grid_points, fd.data_matrix))


def sketch_of_chunks(grid, chunks) -> np.ndarray:
    """The same sketch from blocks of curves on ``grid`` (each curve's vector needs only that curve);
    the stream engine's :func:`fdp_core.engines.stream.sketch_of_stream` feeds it a file's chunks."""
    parts = [curve_vectors(grid, values) for values in chunks]
    return _bottom_k(np.concatenate(parts) if parts else np.zeros((0, BINS), dtype=np.float32))


def encode(vectors: np.ndarray) -> str:
    """Text form for the ledger database."""
    data = np.ascontiguousarray(vectors, dtype="<f4").tobytes()
    return f"{SKETCH_SCHEME}:{BINS}:" + base64.b64encode(data).decode("ascii")


def decode(text: str | None) -> np.ndarray | None:
    if not text:
        return None
    scheme, bins, payload = text.split(":", 2)
    if scheme != SKETCH_SCHEME or int(bins) != BINS:
        return None  # another scheme: not comparable, treated as no sketch
    return np.frombuffer(base64.b64decode(payload), dtype="<f4").reshape(-1, BINS)


def _found(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """For each row of a: is it *the same curve* as a row of b?

    Its nearest row of b must lie within FOUND_DISTANCE and be distinctly nearer than the
    second nearest (a ratio test): curves drawn independently from one smooth, low-dimensional
    design have many near neighbours and none distinctly nearest, a re-exported curve has one.
    Copies within EXACT_DISTANCE (rounding) are found whatever their neighbours.
    """
    if a.shape[0] == 0 or b.shape[0] == 0:
        return np.zeros(a.shape[0], dtype=bool)
    a64, b64 = a.astype(float), b.astype(float)
    b_sq = (b64**2).sum(axis=1)
    step = max(1, _PAIRS_PER_BLOCK // b.shape[0])
    out = np.empty(a.shape[0], dtype=bool)
    for start in range(0, a.shape[0], step):
        block = a64[start:start + step]
        d2 = np.maximum((block**2).sum(axis=1)[:, None] + b_sq[None, :] - 2.0 * block @ b64.T, 0.0) / BINS
        if b.shape[0] > 1:
            two = np.partition(d2, 1, axis=1)[:, :2]
            first, second = np.sqrt(two[:, 0]), np.sqrt(two[:, 1])
        else:
            first, second = np.sqrt(d2[:, 0]), np.full(d2.shape[0], np.inf)
        out[start:start + step] = (first <= FOUND_DISTANCE) & ((first <= EXACT_DISTANCE) | (first < RATIO * second))
    return out


@dataclass(frozen=True)
class Overlap:
    """How a file's curves and a registration's curves overlap."""

    found_in_registration: int  # curves of the file found in the registration
    n_file: int
    found_in_file: int  # curves of the registration found in the file
    n_registration: int

    @property
    def containment(self) -> float:
        """The larger of the two shares: 1 for a subset or a superset of the same curves."""
        shares = [self.found_in_registration / self.n_file if self.n_file else 0.0,
                  self.found_in_file / self.n_registration if self.n_registration else 0.0]
        return max(shares)

    @property
    def k(self) -> int:
        return min(self.found_in_registration, self.found_in_file) if self.n_file and self.n_registration else 0

    @property
    def n(self) -> int:
        return max(self.n_file, self.n_registration)

    @property
    def score(self) -> float:
        """k of n: the share of the larger of the two that the other holds."""
        return self.k / self.n if self.n else 0.0

    @property
    def matches(self) -> bool:
        return self.k > 0 and self.containment >= MATCH_CONTAINMENT


def overlap(file_vectors: np.ndarray, registered: np.ndarray) -> Overlap:
    """Both-way comparison of two sketches."""
    return Overlap(int(_found(file_vectors, registered).sum()), int(file_vectors.shape[0]),
                   int(_found(registered, file_vectors).sum()), int(registered.shape[0]))
