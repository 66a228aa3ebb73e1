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
enter. Constant curves (no shape) are left out. Files with more than :data:`MAX_CURVES` curves
keep a deterministic bottom-k sample of them, the same curves in every version of the data.

What the ledger keeps (scheme ``fdp.sketch/2``, METHODS.md 24) is *not* the vectors: the ledger
is personal data next to the budget, so it holds the least that matching needs.

4. Each vector is hashed into coarse locality-sensitive buckets: :data:`TABLES` tables of
   :data:`BITS` random hyperplanes (SimHash), and :data:`FINE_LATTICES` shifted lattices of
   width :data:`FINE_WIDTH` (near-exact copies: an affine change of units, rounding). Each
   bucket is taken as the smallest over the curve's reversal and sign flip (time reversed,
   1 - x), so those transforms land in the same buckets.
5. Each bucket id is a keyed hash (HMAC-SHA256, 8 bytes) under a key held *outside* the database
   (:func:`sketch_key`: ``$FDP_SKETCH_KEY``, else a key file created on first use); without the
   key the stored digests are random numbers.
6. The registration stores sets, sorted, with no row order and no link between one curve's
   digests: the coarse digests that exactly one of its curves fell into (a crowded bucket says
   "many curves look like this" and would let similar but different people match, the role the
   ratio test of scheme 1 played), the fine digests, and the number of curves.

A file's curve is *found* in a registration when its fine digest is there (a near-exact copy),
or at least :data:`MIN_HITS` of its coarse digests are. Measured on DTI (issue 37): re-gridding,
every other grid point, 1% noise, affine units, subsets and additions find 84-100% of the curves,
unrelated studies 0%, another seed of a smooth simulation design at most 12%.

Files of fewer than :data:`MIN_FILE_CURVES` curves are not compared at all (public minimum
size): matching answers "this file is data set X (k of n)", never whether a few curves are in it.

The sketch is computed from the data without noise: it stays in the ledger database, next to
the data, and never enters a publishable file, a report or a bundle.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from .. import limits
from ..errors import ParameterError
from .loading import FunctionalData

SKETCH_SCHEME = "fdp.sketch/2"
OLD_SCHEMES = ("fdp.sketch/1",)  # per-curve float vectors: dropped by the ledger's migration
BINS = 16
_FINE = 256
TABLES = 16  # coarse SimHash tables
BITS = 24  # hyperplanes per table
MIN_HITS = 6  # coarse tables (of TABLES) in which a curve must meet a bucket held by one registered curve
FINE_LATTICES = 4
FINE_WIDTH = 0.02  # lattice width in units of the curve's own standard deviation
# A file is the registered data set when at least this share of its curves is found there,
# or of the registration's curves in the file (a subset or a superset of the same people).
MATCH_CONTAINMENT = 0.5
MIN_FILE_CURVES = limits.MIN_SKETCH_FILE_CURVES
MAX_CURVES = limits.MAX_SKETCH_CURVES
KEY_ENV = "FDP_SKETCH_KEY"
KEY_FILE_ENV = "FDP_SKETCH_KEY_FILE"
# The hyperplanes and lattice offsets are public (a fixed seed); the key is what keeps the buckets private.
_PLANES = np.random.default_rng(20261129).standard_normal((TABLES, BITS, BINS))
_OFFSETS = np.random.default_rng(20261130).uniform(0.0, 1.0, (FINE_LATTICES, BINS))


def key_path() -> Path:
    """Where the sketch key lives when $FDP_SKETCH_KEY is not set: next to the user's configuration."""
    explicit = os.environ.get(KEY_FILE_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "fdp" / "sketch.key"


def sketch_key() -> bytes:
    """The HMAC key of the sketch digests: $FDP_SKETCH_KEY (hex), else the key file, created on first use
    (32 random bytes, readable by its owner only). Every machine that matches files against one ledger
    needs the same key (SECURITY.md)."""
    text = os.environ.get(KEY_ENV)
    if text is None:
        path = key_path()
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                pass  # another process created it first: read theirs
            else:
                with os.fdopen(fd, "w") as handle:
                    handle.write(secrets.token_hex(32) + "\n")
        text = path.read_text()
    try:
        key = bytes.fromhex(text.strip())
    except ValueError:
        raise ParameterError(f"the sketch key (${KEY_ENV} or {key_path()}) must be hexadecimal") from None
    if len(key) < 16:
        raise ParameterError(f"the sketch key (${KEY_ENV} or {key_path()}) must hold at least 16 bytes (32 hex "
                             "digits)")
    return key


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


def _orbit(vectors: np.ndarray) -> list[np.ndarray]:
    """A curve, its time reversal and its sign flip (1 - x after standardising) and both."""
    return [vectors, -vectors, vectors[:, ::-1], -vectors[:, ::-1]]


def _codes(vectors: np.ndarray) -> tuple[np.ndarray, list[list[bytes]]]:
    """Per curve: the TABLES coarse codes (int64) and FINE_LATTICES fine cells (bytes), smallest over the orbit."""
    orbit = _orbit(vectors.astype(float))
    weights = np.int64(1) << np.arange(BITS, dtype=np.int64)
    coarse = np.stack([np.stack([((o @ _PLANES[j].T) > 0) @ weights for o in orbit]).min(axis=0)
                       for j in range(TABLES)], axis=1)
    fine = []
    for row in range(vectors.shape[0]):
        fine.append([min(np.floor(o[row] / FINE_WIDTH + _OFFSETS[e]).astype("<i8").tobytes() for o in orbit)
                     for e in range(FINE_LATTICES)])
    return coarse, fine


def _digest(key: bytes, label: bytes) -> int:
    return int.from_bytes(hmac.new(key, label, hashlib.sha256).digest()[:8], "little")


def curve_digests(vectors: np.ndarray, key: bytes | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(coarse (n, TABLES), fine (n, FINE_LATTICES)) keyed digests (uint64) of each curve's buckets."""
    key = sketch_key() if key is None else key
    n = vectors.shape[0]
    coarse_codes, fine_cells = _codes(vectors) if n else (np.zeros((0, TABLES), np.int64), [])
    coarse = np.array([[_digest(key, b"c%d:%d" % (j, int(coarse_codes[i, j]))) for j in range(TABLES)]
                       for i in range(n)], dtype=np.uint64).reshape(n, TABLES)
    fine = np.array([[_digest(key, b"f%d:" % e + cells[e]) for e in range(FINE_LATTICES)] for cells in fine_cells],
                    dtype=np.uint64).reshape(n, FINE_LATTICES)
    return coarse, fine


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


@dataclass(frozen=True)
class Registered:
    """What the ledger holds of one version: sets of keyed digests and the number of curves."""

    n: int
    coarse: np.ndarray  # sorted uint64: coarse buckets that exactly one curve fell into
    fine: np.ndarray  # sorted uint64: fine buckets


def registered_of(vectors: np.ndarray, key: bytes | None = None) -> Registered:
    coarse, fine = curve_digests(vectors, key)
    values, counts = np.unique(coarse, return_counts=True)
    return Registered(int(vectors.shape[0]), values[counts == 1], np.unique(fine))


def encode(vectors: np.ndarray) -> str:
    """Text form for the ledger database: the digest sets (no vector, no row order).

    Memoised on the vectors' bytes and the key: the app looks its data's budget up on every page
    run, and the ~10 ms of HMAC digests per call gave the same text each time (issue 40)."""
    vectors = np.ascontiguousarray(vectors)
    return _encode(vectors.tobytes(), vectors.shape, vectors.dtype.str, sketch_key())


@lru_cache(maxsize=16)
def _encode(raw: bytes, shape: tuple, dtype: str, key: bytes) -> str:
    reg = registered_of(np.frombuffer(raw, dtype=dtype).reshape(shape), key)
    coarse = base64.b64encode(np.ascontiguousarray(reg.coarse, dtype="<u8").tobytes()).decode("ascii")
    fine = base64.b64encode(np.ascontiguousarray(reg.fine, dtype="<u8").tobytes()).decode("ascii")
    return f"{SKETCH_SCHEME}:{reg.n}:{coarse}:{fine}"


def decode(text: str | None) -> Registered | None:
    if not text:
        return None
    parts = text.split(":")
    if parts[0] != SKETCH_SCHEME or len(parts) != 4:
        return None  # another scheme: not comparable, treated as no sketch
    return Registered(int(parts[1]), np.frombuffer(base64.b64decode(parts[2]), dtype="<u8"),
                      np.frombuffer(base64.b64decode(parts[3]), dtype="<u8"))


def _found(file_vectors: np.ndarray, registered: Registered) -> np.ndarray:
    """For each curve of the file: is it a curve of the registration (see the module docstring)?"""
    if file_vectors.shape[0] == 0 or registered.n == 0:
        return np.zeros(file_vectors.shape[0], dtype=bool)
    coarse, fine = curve_digests(file_vectors)
    hits = np.isin(coarse, registered.coarse).sum(axis=1)
    return (hits >= MIN_HITS) | np.isin(fine, registered.fine).any(axis=1)


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


def overlap(file_vectors: np.ndarray, registered: Registered) -> Overlap:
    """The file's curves found in a registration; a found curve is one of the registration's curves, so the
    count serves both ways (capped at the registration's size). Files below MIN_FILE_CURVES: no overlap."""
    n_file = int(file_vectors.shape[0])
    if n_file < MIN_FILE_CURVES:
        return Overlap(0, n_file, 0, registered.n)
    found = int(_found(file_vectors, registered).sum())
    return Overlap(found, n_file, min(found, registered.n), registered.n)
