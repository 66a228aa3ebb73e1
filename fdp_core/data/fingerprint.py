"""Data set fingerprint: which privacy budget a data set spends.

A budget protects the people in one data set, so the persistent ledger
(:mod:`fdp_core.budget.ledger_store`) is keyed by the *content* of the parsed, validated curves,
not by a file name: the same curves uploaded as ``a.csv`` or ``copy of a.csv``, as wide or
long CSV or Parquet, or with their rows shuffled, are one data set and spend one budget.

The hash covers the grid, the multiset of curves (canonical little-endian float64 bytes,
-0.0 written as 0.0, rows in a canonical order), the person labels when a person column is
part of the unit of privacy, and the unit settings as canonical JSON.

The fingerprint is a hash of raw data: anyone who can guess the data could confirm the
guess with it. It stays in the ledger database and never enters an exported file.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from typing import Mapping

import numpy as np

from .loading import FunctionalData
from .meta_columns import column_values, metadata_view
from ..errors import ParameterError

FINGERPRINT_SCHEME = b"fdp.fingerprint/1"
# Settings that define what one record (one person) is: they change the neighbouring
# relation, so they select another data set. A public value range is deliberately not one
# of them: it is a per-release clipping choice, and keying the budget by it would let a
# user reach a fresh budget by nudging the range.
UNIT_KEYS = ("person_column",)
_ROWS_PER_CHUNK = 65_536

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _plain(value):
    """JSON-ready copy with a single spelling per value (tuples as lists, numpy as Python)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ParameterError(f"unit settings must hold finite numbers, got {value!r}")
        return value + 0.0
    if value is None or isinstance(value, (bool, int, str)):
        return value
    raise ParameterError(f"unit settings must be JSON-like (numbers, text, lists), got {type(value).__name__}")


def canonical_unit(unit: Mapping | None) -> str:
    """Canonical JSON of the unit settings (sorted keys, no spaces, None values dropped)."""
    if unit is None:
        unit = {}
    if not isinstance(unit, Mapping):
        raise ParameterError(f"unit settings must be a mapping, got {type(unit).__name__}")
    cleaned = {str(k): v for k, v in unit.items() if v is not None}
    return json.dumps(_plain(cleaned), sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=True)


def unit_of_privacy(settings) -> dict:
    """The unit settings (UNIT_KEYS) found in release settings (a mapping or a settings object)."""
    get = settings.get if isinstance(settings, Mapping) else (lambda key: getattr(settings, key, None))
    return {key: get(key) for key in UNIT_KEYS if get(key) is not None}


def _canonical_floats(values) -> np.ndarray:
    a = np.ascontiguousarray(values, dtype="<f8") + 0.0  # -0.0 + 0.0 == +0.0
    if np.isnan(a).any():
        a = np.where(np.isnan(a), np.nan, a)  # one NaN bit pattern
    return a


def _splitmix(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser on uint64 arrays (wrap-around arithmetic)."""
    x = x + _GOLDEN
    x = (x ^ (x >> np.uint64(30))) * _MIX1
    x = (x ^ (x >> np.uint64(27))) * _MIX2
    return x ^ (x >> np.uint64(31))


def _label_bytes(labels: list[str]) -> list[bytes]:
    return [s.encode("utf-8", "surrogatepass") for s in labels]


def _row_order(bits: np.ndarray, label_keys: np.ndarray | None) -> np.ndarray:
    """A canonical order of the rows: sorted by a 64-bit mix of each row's content.

    Rows with equal keys are identical (or collide with probability 2^-64), so their
    relative order does not change the bytes hashed.
    """
    key = np.zeros(bits.shape[0], dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(bits.shape[1]):
            key = _splitmix(key ^ bits[:, j])
        if label_keys is not None:
            key = _splitmix(key ^ label_keys)
    return np.argsort(key, kind="stable")


def fingerprint(fd: FunctionalData, unit: Mapping | None = None) -> str:
    """SHA-256 (hex) of the curves' content and the unit settings: the ledger's data-set key.

    ``unit``: the privacy-unit settings (e.g. ``{"person_column": "subject"}``); any JSON-like
    mapping is accepted and hashed canonically (None values dropped), default empty. When it
    names a person column present in the data's metadata, the person labels are hashed with
    their curves.
    """
    unit_json = canonical_unit(unit)
    grid = _canonical_floats(fd.grid_points)
    values = _canonical_floats(fd.data_matrix)
    n, m = values.shape
    labels = None
    person = json.loads(unit_json).get("person_column")
    metadata = metadata_view(fd)  # the loader's columns as read: no DataFrame (nor pandas) for a hash
    if isinstance(person, str) and person in metadata.columns:
        labels = [str(v) for v in column_values(metadata, person).tolist()]
    label_keys = None
    if labels is not None:
        # One digest per distinct label (any order of the distinct labels gives the same keys).
        uniques, codes = np.unique(np.array(labels, dtype=object), return_inverse=True)
        digests = np.array([int.from_bytes(hashlib.blake2b(b, digest_size=8).digest(), "little")
                            for b in _label_bytes(list(uniques))], dtype=np.uint64)
        label_keys = digests[codes]
    order = _row_order(values.view(np.uint64).reshape(n, m), label_keys)
    h = hashlib.sha256()
    h.update(FINGERPRINT_SCHEME + b"\0")
    h.update(struct.pack("<QQ", n, m))
    h.update(grid.tobytes())
    for start in range(0, n, _ROWS_PER_CHUNK):
        h.update(values[order[start:start + _ROWS_PER_CHUNK]].tobytes())
    if labels is not None:
        h.update(b"\0labels\0")
        for i in order:
            b = labels[i].encode("utf-8", "surrogatepass")
            h.update(struct.pack("<Q", len(b)) + b)
    h.update(b"\0unit\0" + unit_json.encode("ascii"))
    return h.hexdigest()
