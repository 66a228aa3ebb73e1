"""Sparse, irregular curves: each person observed at their own few times (METHODS.md section 20).

A long file (id, t, value; any three columns named as for :func:`fdp_core.data.loading.load_curves`)
holds one row per visit. When persons have few or different times, interpolating them onto
one common grid (what the gridded loader does) keeps only the range *every* curve covers,
which for three to ten visits per person is nearly empty. Such files go through the sparse
route instead: the observations are kept as they are, as a :class:`SparseData`.

:func:`sparse_reason` says whether (and why) a long file is sparse; it only reads public
facts about the *layout* to route the file, and the reason is shown to the analyst, never
published.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from typing import TYPE_CHECKING

import numpy as np

from .layouts import clean_text
from .public_grid import parse_domain  # noqa: F401 (re-exported: it lived here; a light module now, issue 42)
from .loading import FunctionalData, data_source, long_columns
from ..errors import DataError, FdpError
from ..limits import MAX_DIAGNOSE_BYTES, MAX_LONG_COLUMNS, MAX_LONG_ROWS

if TYPE_CHECKING:
    import pandas as pd

# Automatic detection needs this many persons: a handful of short curves is more likely a small
# gridded file with a mistake (the gridded loader then names it) than a sparse design.
MIN_PERSONS_AUTO = 10
# A person with at least this many visits, all on one shared grid, is a dense curve: today's route.
DENSE_VISITS = 20


@dataclass(frozen=True)
class SparseData:
    """Observations (person id, t, value), one per row; persons are the unit of privacy."""

    ids: np.ndarray  # person id of each observation (strings)
    t: np.ndarray
    y: np.ndarray
    name: str = "sparse data"

    @property
    def n_observations(self) -> int:
        return int(self.t.size)

    def person_index(self) -> tuple[np.ndarray, np.ndarray]:
        """(index of each observation's person 0..n-1, visits per person m_i)."""
        _, index, counts = np.unique(self.ids, return_inverse=True, return_counts=True)
        return index, counts

    @property
    def n(self) -> int:
        """Number of persons (the ids in the file; declared public like n of a gridded release)."""
        return int(np.unique(self.ids).size)

    def visits_per_person(self) -> np.ndarray:
        return self.person_index()[1]

    def same_values(self, other: "SparseData") -> bool:
        return (np.array_equal(self.ids, other.ids) and np.array_equal(self.t, other.t)
                and np.array_equal(self.y, other.y))


def from_observations(ids, t, y, *, name: str = "sparse data") -> SparseData:
    """Validated SparseData from arrays (finite t and values, at least one person)."""
    ids = np.asarray([str(i).strip() for i in ids], dtype=object)
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    if not (ids.size == t.size == y.size):
        raise DataError(f"{name}: ids, t and values have different lengths ({ids.size}, {t.size}, {y.size})")
    if t.size == 0:
        raise DataError(f"{name} has no observations")
    bad = np.flatnonzero(~np.isfinite(t) | ~np.isfinite(y))
    if bad.size:
        r = int(bad[0])
        raise DataError(f"{name}: observation {r + 1} (person '{ids[r]}') has a missing or non-finite t or value")
    return SparseData(ids, t, y, name)


def read_long(source, *, id_column=None, t_column=None, value_column=None, name: str | None = None) -> SparseData:
    """Read a long CSV or Parquet file (header id,t,value or the three named columns) as observations.

    Bounded whatever the file (one intake path for the CLI and the app's uploads): the source is
    checked first (regular files only, size limits, fdp_core.data.loading.data_source); the header
    is read from a capped head and a file too wide for a long layout, or whose header line does not
    end within the head, is refused before its body is read; then only the three named columns of
    at most MAX_LONG_ROWS rows are parsed by pandas' C parser.

    Parameters
    ----------
    source : path or bytes
        A long file: one observation (person, t, value) per row.
    id_column, t_column, value_column : str, optional
        The three columns' names (default ``id``, ``t``, ``value``).
    name : str, optional
        The name used in messages.

    Returns
    -------
    SparseData
        ``ids``, ``t`` and ``y`` of every observation (NON-PRIVATE).

    Examples
    --------
    >>> from pathlib import Path
    >>> data = read_long(Path(__file__).parents[2] / "data" / "example_sparse.csv")
    >>> data.t.size == data.y.size, len(set(data.ids))
    (True, 500)
    """
    import pandas as pd  # lazy: long files only; a wide CSV goes through the command line without pandas

    mapping = long_columns(id_column, t_column, value_column)
    cols = (mapping.id, mapping.t, mapping.value) if mapping else ("id", "t", "value")
    src = data_source(source)
    label = clean_text(name or src.name, 200)
    try:
        if str(name or src.name).lower().endswith((".parquet", ".pq")):
            picked = _parquet_columns(src, cols, label)
        else:
            picked = _csv_columns(src, cols, label)
    except FdpError:
        raise
    except (ValueError, OSError, pd.errors.ParserError, csv.Error) as exc:
        raise DataError(f"{label} could not be read as a long file: {clean_text(str(exc).splitlines()[0], 200)}") from None
    t = pd.to_numeric(picked[1].astype(str).str.strip(), errors="coerce").to_numpy(dtype=float)
    y = pd.to_numeric(picked[2].astype(str).str.strip(), errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(t) | ~np.isfinite(y))
    if bad.size:
        r = int(bad[0])
        raise DataError(f"{label}: row {r + 2} has a missing or non-numeric t or value "
                        f"({clean_text(picked[1].iloc[r], 40)!r}, {clean_text(picked[2].iloc[r], 40)!r})")
    return from_observations(picked[0].astype(str).to_numpy(), t, y, name=str(label))


def _pick(header, cols, label) -> list[int]:
    """Positions of the id, t and value columns in the header (names matched without case)."""
    if len(header) > MAX_LONG_COLUMNS:
        raise DataError(f"{label} has {len(header):,} columns; a long file (id, t, value) has at most "
                        f"{MAX_LONG_COLUMNS:,}: a wide file goes through the gridded loader, not the sparse route")
    lowered = {}
    for j, c in enumerate(header):
        lowered.setdefault(str(c).strip().lower(), j)
    positions = []
    for role, col in zip(("id", "t", "value"), cols):
        j = lowered.get(str(col).strip().lower())
        if j is None:
            raise DataError(f"{label}: no column '{clean_text(col, 60)}' for the {role} (a sparse file is long: "
                            "id, t, value; or name its columns with --id-column, --t-column, --value-column)")
        positions.append(j)
    return positions


def _too_many_rows(label) -> DataError:
    return DataError(f"{label} has more than {MAX_LONG_ROWS:,} observations, the limit for a long file read "
                     "in memory (fdp_core/limits.py)")


_SNIFF_CHARS = 65536  # the delimiter sniffer's sample, as in the gridded loader


def _sniff_delimiter(sample: str) -> str:
    if ";" not in sample and "\t" not in sample:
        # The sniffer only picks a delimiter that occurs in the sample (else it fails, read as ","): with
        # neither ";" nor a tab it can only answer ",", so its ~5 ms of regular expressions are skipped.
        return ","
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t").delimiter
    except csv.Error:
        return ","


def _csv_columns(src, cols, label) -> list[pd.Series]:
    import pandas as pd  # lazy: long files only; a wide CSV goes through the command line without pandas

    head = src.head(MAX_DIAGNOSE_BYTES)
    if b"\x00" in head[:_SNIFF_CHARS]:
        raise DataError(f"{label} is not a text CSV file")
    text = head.decode("utf-8-sig", errors="replace")
    first = next((line for line in text.splitlines(keepends=True) if line.strip(",;\t \r\n")), "")
    if not first:
        raise DataError(f"{label} has no header line")
    if not first.endswith(("\n", "\r")) and len(head) < src.size:
        raise DataError(f"{label}: the header line is longer than {MAX_DIAGNOSE_BYTES:,} bytes; "
                        "a long file's header names a few columns")
    delimiter = _sniff_delimiter(text[:_SNIFF_CHARS])
    header = next(csv.reader([first.rstrip("\r\n")], delimiter=delimiter), [])
    positions = _pick(header, cols, label)
    handle = io.BytesIO(src.raw) if src.raw is not None else str(src.path)
    frame = pd.read_csv(handle, sep=delimiter, engine="c", dtype=str, keep_default_na=False, encoding="utf-8-sig",
                        usecols=sorted(set(positions)), nrows=MAX_LONG_ROWS + 1, skip_blank_lines=True,
                        on_bad_lines="error")
    if len(frame) > MAX_LONG_ROWS:
        raise _too_many_rows(label)
    by_position = dict(zip(sorted(set(positions)), frame.columns))
    return [frame[by_position[j]] for j in positions]


def _parquet_columns(src, cols, label) -> list[pd.Series]:
    import pyarrow.parquet as pq  # lazy: pyarrow, only for a Parquet long file

    parquet = pq.ParquetFile(src.arrow_input())
    header = list(parquet.schema_arrow.names)
    positions = _pick(header, cols, label)
    if parquet.metadata.num_rows > MAX_LONG_ROWS:
        raise _too_many_rows(label)
    frame = parquet.read(columns=[header[j] for j in dict.fromkeys(positions)]).to_pandas()
    return [frame[header[j]] for j in positions]


@dataclass(frozen=True)
class SparseVerdict:
    """Whether a long file is sparse, and why (for the Data page and the CLI's message)."""

    sparse: bool
    reason: str  # shown to the analyst (the Data page, the CLI's note)
    visits_min: int
    visits_median: float
    visits_max: int
    distinct_grids: int


def sparse_reason(data: SparseData) -> SparseVerdict:
    """Sparse when persons are observed at different times and have few visits (median < DENSE_VISITS),
    and there are at least MIN_PERSONS_AUTO of them.

    Curves on one shared grid keep the gridded route (however few its points); so do dense
    irregular curves (median visits >= DENSE_VISITS), which interpolate well onto one grid
    (METHODS.md 20).
    """
    index, counts = data.person_index()
    order = np.lexsort((data.t, index))
    grids = {tuple(times) for times in np.split(data.t[order], np.cumsum(counts)[:-1])}
    med = float(np.median(counts))
    lo, hi = int(counts.min()), int(counts.max())
    few = med < DENSE_VISITS
    different = len(grids) > 1
    if different and few:
        reason = (f"persons have {lo} to {hi} observations (median {med:g}) at their own times: interpolating onto "
                  "a common grid would keep almost nothing, so the sparse route pools the observations")
    elif different:
        reason = (f"persons are observed at different times but densely (median {med:g} observations): the "
                  "gridded route interpolates them onto one grid")
    else:
        reason = f"every person is observed on the same grid of {hi} points: the gridded route"
    enough = counts.size >= MIN_PERSONS_AUTO
    if few and different and not enough:
        reason = (f"only {counts.size} persons: too few for the sparse route's pooled estimate to be recognised "
                  f"automatically (at least {MIN_PERSONS_AUTO}); ask for it explicitly (--sparse)")
    return SparseVerdict(few and different and enough, reason, lo, med, hi, len(grids))


# The privacy unit of a sparse file in the ledger: persons by id, observations (t, value) as rows.
SPARSE_UNIT = {"person_column": "id", "layout": "sparse observations (t, value)"}


def ledger_view(data: SparseData):
    """The observations as a FunctionalData of rows (t, value) with the person ids as metadata: what the
    ledger fingerprints (fdp_core.data.fingerprint) to key a sparse data set's budget with SPARSE_UNIT."""
    import pandas as pd  # lazy: long files only; a wide CSV goes through the command line without pandas

    return FunctionalData(np.array([0.0, 1.0]), np.column_stack([data.t, data.y]),
                          metadata=pd.DataFrame({"id": data.ids.astype(str)}))


SKETCH_POINTS = 256


def ledger_sketch(data: SparseData) -> np.ndarray:
    """The content sketch of sparse observations *per person* (METHODS.md 24): each person's pooled
    visits, interpolated linearly across the file's range of t (held at the first and last visit),
    is one curve of fdp_core.data.sketch. Sketching each observation as a 2-point line made every
    sparse file look alike. Persons with fewer than 2 distinct times have no shape and are left out."""
    from .sketch import curve_vectors  # lazy: hashlib and the sketch's tables, only for the ledger

    index, counts = data.person_index()
    order = np.lexsort((data.t, index))
    t, y = data.t[order], data.y[order]
    if t.size == 0 or t.min() == t.max():
        return curve_vectors(np.array([0.0, 1.0]), np.zeros((0, 2)))
    points = np.linspace(t.min(), t.max(), SKETCH_POINTS)
    rows = []
    for times, values in zip(np.split(t, np.cumsum(counts)[:-1]), np.split(y, np.cumsum(counts)[:-1])):
        times, first = np.unique(times, return_index=True)
        if times.size >= 2:
            rows.append(np.interp(points, times, values[first]))
    return curve_vectors(points, np.array(rows).reshape(len(rows), SKETCH_POINTS))
