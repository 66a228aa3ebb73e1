"""Metadata columns without pandas until someone asks for a DataFrame.

``FunctionalData.metadata`` is a pandas DataFrame for Python users, but the command line's
``release mean`` only needs one column (the person ids) and importing pandas costs more CPU
than the whole release on DTI (issue 42). The pyarrow reader therefore hands the loader the
metadata as :class:`MetaColumns` (the cells as read, one object array of str per column);
the DataFrame is built from them on first access, by the same ``metadata_frame`` conversion
as before, so its values and dtypes are unchanged.

:meth:`MetaColumns.column` gives one column's values as the DataFrame would hold them
without importing pandas when the answer is certain from the text alone: every cell a plain
integer (pandas reads int64) or, with no cell missing, some cell empty or holding a letter no
number can contain (the column stays text). Anything else (decimals, exponents, spaces, signs) is
converted by pandas itself, so the two routes can never disagree.
"""

from __future__ import annotations

import re
import sys

import numpy as np

from .layouts import metadata_frame

_PLAIN_INT = re.compile(r"-?[0-9]{1,18}\Z")  # int64 without overflow, as pd.to_numeric reads it
# A letter outside "infinity"/"nan"/"e" (any case) cannot occur in any number pandas or Python parses.
_NOT_A_NUMBER = re.compile(r"[b-dg-hj-mo-su-xzB-DG-HJ-MO-SU-XZ]")


class MetaColumns:
    """Metadata cells as read: ``{name: object array of str (None where missing)}``, n rows each."""

    __slots__ = ("names", "cells", "n_rows", "_converted")

    def __init__(self, cells: dict, n_rows: int):
        self.names = list(cells)
        self.cells = {name: np.asarray(cells[name], dtype=object) for name in self.names}
        self.n_rows = int(n_rows)
        self._converted = {}

    def __len__(self) -> int:
        return self.n_rows

    @property
    def columns(self) -> list:
        return list(self.names)

    def take(self, rows) -> "MetaColumns":
        """The rows selected by a boolean mask or index array, renumbered from 0."""
        cells = {name: values[rows] for name, values in self.cells.items()}
        n = int(np.count_nonzero(rows)) if np.asarray(rows).dtype == bool else len(np.asarray(rows))
        return MetaColumns(cells, n)

    def column(self, name) -> np.ndarray:
        """Column ``name`` as an object array holding what ``to_frame()[name]`` holds."""
        if name not in self._converted:
            self._converted[name] = _converted(self.cells[name])
        return self._converted[name]

    def to_frame(self):
        """The pandas DataFrame (metadata_frame's numeric conversion, RangeIndex), as the loader built it."""
        import pandas as pd  # lazy: only Python users and the pages need the DataFrame

        frame = pd.DataFrame({name: self.cells[name] for name in self.names}, columns=self.names,
                             index=pd.RangeIndex(self.n_rows))
        return metadata_frame(frame)


def _converted(cells: np.ndarray) -> np.ndarray:
    text = [cell for cell in cells.tolist()]
    if text and all(isinstance(c, str) and _PLAIN_INT.match(c) for c in text):
        return np.array([int(c) for c in text], dtype=np.int64).astype(object)
    if all(isinstance(c, str) for c in text) and any(c == "" or _NOT_A_NUMBER.search(c) for c in text):
        return cells  # pd.to_numeric leaves a NaN: metadata_frame keeps the text (a missing cell goes to pandas)
    import pandas as pd  # lazy: only columns whose conversion needs pandas' own number parser

    return metadata_frame(pd.DataFrame({"c": cells}))["c"].to_numpy(object)


def column_values(metadata, name) -> np.ndarray:
    """One metadata column as an object array, from a DataFrame or a :class:`MetaColumns`."""
    if isinstance(metadata, MetaColumns):
        return metadata.column(name)
    return metadata[name].to_numpy(object)


def take_rows(metadata, rows):
    """The rows of a DataFrame or MetaColumns selected by a boolean mask, renumbered from 0."""
    if isinstance(metadata, MetaColumns):
        return metadata.take(rows)
    return metadata[rows].reset_index(drop=True)


def as_frame(metadata):
    """A DataFrame (built once from MetaColumns) for code that needs pandas' API."""
    return metadata.to_frame() if isinstance(metadata, MetaColumns) else metadata


def pandas_loaded() -> bool:
    """Whether pandas is already imported (then its helpers cost nothing extra)."""
    return "pandas" in sys.modules


class LazyFrame:
    """Dataclass field descriptor: stores a DataFrame, a :class:`MetaColumns` or None as given and
    reads back a DataFrame (built once) or None; ``raw_metadata(obj, name)`` gives what was stored."""

    def __init__(self, name: str, empty_default: bool):
        # Stored in the instance's __dict__ under the field's own name (so ``vars(report)`` still names
        # every field); a data descriptor is looked up before __dict__, so reads still come here.
        # Named here: dataclasses put a field()'s default on the class after __set_name__ time.
        self.slot = name
        self.empty_default = empty_default  # FunctionalData: an empty DataFrame; LoadReport: None

    def __get__(self, obj, owner=None):
        if obj is None:
            return None  # the field's default (dataclasses ask the class): nothing stored
        value = obj.__dict__.get(self.slot)
        if isinstance(value, MetaColumns):
            value = value.to_frame()
            obj.__dict__[self.slot] = value
        elif value is None and self.empty_default:
            import pandas as pd  # lazy: an empty DataFrame for arrays wrapped without metadata

            value = pd.DataFrame()
            obj.__dict__[self.slot] = value
        return value

    def __set__(self, obj, value):
        # field(default=<this descriptor>) makes __init__'s default the descriptor itself: nothing given
        obj.__dict__[self.slot] = None if isinstance(value, LazyFrame) else value

    def __repr__(self) -> str:
        # how __init__'s signature shows the default (docs/API.md): as the default_factory/None it replaced
        return "<factory>" if self.empty_default else "None"


def raw_metadata(obj, name: str = "metadata"):
    """What was stored in a LazyFrame field (DataFrame, MetaColumns or None), without building anything."""
    return obj.__dict__.get(name)


def metadata_view(fd):
    """``fd.metadata`` for reading columns: the stored MetaColumns as they are (no DataFrame built), else the DataFrame."""
    stored = raw_metadata(fd)
    return stored if stored is not None else fd.metadata
