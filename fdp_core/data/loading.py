"""Functional data in: loading, validation, missing values, clipping (METHODS.md section 0).

A data set is n curves on one common grid. The L2 inner product used everywhere is the
trapezoid rule on the grid rescaled to [0, 1] (``unit_grid``), so tau and every norm are
in L2([0, 1]); the original grid (ages, positions along a tract) is kept for display.

Two readers (METHODS.md section 17 for why size matters): pyarrow reads the numeric block
in one C-level call (fdp_core/data/arrow_io.py) and vectorised masks validate it; whenever it
refuses, the cell-by-cell parser below (the csv module, not pandas, which silently pads
short rows with NaN and turns stray text into object columns) reads the file again and
either accepts it or reports the problem with its row and column.
"""

from __future__ import annotations

import codecs
import csv
import io
import math
import os
import re
import stat
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import DataError, ParameterError, missing_extra
from .. import limits
from ..kernels import trapezoid_weights
from ..limits import MAX_ABS_VALUE, MAX_FILE_COLUMNS, MAX_GRID_POINTS, grid_limit_message
from ..params import check_choice, check_positive
from . import small_csv  # small wide CSV files without pyarrow (the same numbers)
from .small_csv import SMALL_CSV_BYTES
# The header and cell helpers both readers share (Layout, LongColumns and long_columns are also
# imported from here by callers of the loader).
from .public_grid import grid_points, interpolate_onto, parse_grid, spec_text
from .meta_columns import LazyFrame, raw_metadata, take_rows
from .layouts import (Layout, LongColumns, check_grid, check_width, clean_text, format_columns, long_columns,
                      metadata_frame, parse_number, read_layout, transposed_rows)

if TYPE_CHECKING:
    import pandas as pd

MAX_REGRID_CELLS = limits.MAX_REGRID_CELLS  # long format on mixed grids: n_curves x union-grid size
MISSING_POLICIES = ("drop", "interpolate")
DATA_DEPENDENT_TAU = "tau computed from the data: the release is not differentially private"


@dataclass(frozen=True)
class LoadReport:
    """What loading did to the file: always shown to the user."""

    source: str
    n_read: int
    n_dropped: int = 0
    n_interpolated: int = 0
    n_missing_cells: int = 0
    dropped_rows: tuple = ()
    messages: tuple = ()
    # The metadata of the dropped curves (file order): their person ids still count towards n,
    # the number of persons in the file, which must not depend on which curves are usable.
    # A DataFrame on access; the pyarrow reader stores MetaColumns, built into one only when read.
    dropped_metadata: pd.DataFrame | None = field(default=LazyFrame("dropped_metadata", False), compare=False, repr=False)
    public_grid: tuple | None = None  # the declared public grid (A, B, M) the curves were interpolated onto


@dataclass(frozen=True)
class FunctionalData:
    """n curves observed on a common, strictly increasing grid.

    Build it with :func:`load_curves`, :func:`from_arrays` (which also takes scikit-fda's order,
    values first) or :func:`fdp_core.from_skfda`; the fields are keywords-first in practice:
    ``FunctionalData(grid_points=t, data_matrix=X)``. ``fd.to_skfda()`` gives a scikit-fda FDataGrid.

    Attributes
    ----------
    grid_points : ndarray (m,)
        The public grid, strictly increasing.
    data_matrix : ndarray (n, m)
        One curve per row (NON-PRIVATE: never publish).
    metadata : DataFrame
        One row per curve: person ids, covariates, features.
    report : LoadReport
        What loading did (curves dropped or interpolated): analyst view.

    Examples
    --------
    >>> import numpy as np
    >>> fd = FunctionalData(grid_points=np.linspace(0, 1, 3), data_matrix=np.array([[0.0, 1.0, 0.0], [1.0, 2.0, 1.0]]))
    >>> fd.n, fd.m
    (2, 3)
    """

    grid_points: np.ndarray
    data_matrix: np.ndarray
    # A DataFrame on access (empty by default); stored as given, so MetaColumns from the pyarrow
    # reader become a DataFrame only when someone reads it (the command line never does).
    metadata: pd.DataFrame = field(default=LazyFrame("metadata", True), repr=False)
    report: LoadReport = field(default_factory=lambda: LoadReport("array", 0))

    def to_skfda(self):
        """The curves as a scikit-fda FDataGrid (the optional 'skfda' extra)."""
        return to_skfda(self.grid_points, self.data_matrix, dataset_name=self.report.source)

    def __post_init__(self):
        grid = np.asarray(self.grid_points, dtype=float)
        values = np.asarray(self.data_matrix, dtype=float)
        if values.ndim != 2 or values.shape[1] != grid.size:
            raise DataError(f"data matrix shape {values.shape} does not match a grid of {grid.size} points")
        object.__setattr__(self, "grid_points", grid)
        object.__setattr__(self, "data_matrix", values)

    @property
    def n(self) -> int:
        return int(self.data_matrix.shape[0])

    @property
    def m(self) -> int:
        return int(self.grid_points.size)

    @property
    def domain(self) -> tuple[float, float]:
        return float(self.grid_points[0]), float(self.grid_points[-1])

    # Derived arrays are cached on the (frozen, never mutated) instance: the app asks for
    # them on every rerun and at n = 10,000 curves each pass over the data costs tens of ms.
    @cached_property
    def unit_grid(self) -> np.ndarray:
        return unit_interval(self.grid_points)

    @cached_property
    def weights(self) -> np.ndarray:
        return trapezoid_weights(self.unit_grid)

    @cached_property
    def _norms(self) -> np.ndarray:
        return l2_norms(self.data_matrix, self.weights)

    def norms(self) -> np.ndarray:
        """L2([0, 1]) norm of every curve."""
        return self._norms

    def n_clipped(self, tau: float) -> int:
        """How many curves clipping at tau would shrink."""
        return int(np.sum(beyond_tau(self._norms, check_positive("tau", tau))))

    def clipped_mean(self, tau: float) -> np.ndarray:
        """Mean of the curves after clipping each to the L2 ball of radius tau.

        Equal to clip_to_ball(...).values.mean(axis=0), computed as one matrix-vector
        product with the cached norms instead of materialising the clipped matrix.
        """
        return self.clipped_sum(tau) / self.n

    def clipped_sum(self, tau: float) -> np.ndarray:
        """Sum of the curves clipped at tau (the mean's sufficient statistic, METHODS.md 17)."""
        factor = clip_factors(self._norms, check_positive("tau", tau))
        return factor @ self.data_matrix


def file_positions(fd: FunctionalData) -> tuple[np.ndarray, int]:
    """(0-based position in the file of each usable curve, number of curves in the file).

    The file's row count is a public input (replacing one person keeps it); which rows are
    usable depends on the data. When the report does not describe ``fd`` (arrays wrapped by
    hand, a subset), every row of ``fd`` is taken as the whole file."""
    report = fd.report
    dropped = np.asarray(report.dropped_rows, dtype=np.int64) - 1
    if report.n_read != fd.n + report.n_dropped or dropped.size != report.n_dropped or not report.n_dropped:
        return np.arange(fd.n), fd.n
    keep = np.ones(report.n_read, dtype=bool)
    keep[dropped] = False
    return np.flatnonzero(keep), int(report.n_read)


def unit_interval(grid) -> np.ndarray:
    """The grid rescaled to [0, 1]: the domain of every kernel and L2 norm in fdp (METHODS.md 0)."""
    grid = np.asarray(grid, dtype=float)
    return (grid - grid[0]) / (grid[-1] - grid[0])


# --------------------------------------------------------------------------- clipping

@dataclass(frozen=True)
class ClipResult:
    values: np.ndarray
    n_clipped: int
    norms: np.ndarray  # norms before clipping


def l2_norms(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    return np.sqrt(np.maximum((np.asarray(values) ** 2) @ np.asarray(weights), 0.0))


# A curve is *counted* as clipped only when its norm exceeds tau by more than this relative
# tolerance. With tau taken from the data (tau = the largest norm) the largest curve ties with
# tau, and whether its recomputed norm lands one ulp above or below tau depends on the BLAS
# summation order (engine, chunking, CPU kernel). The clip itself is unchanged: every norm above
# tau is still scaled to at most tau, so the sensitivity bound (2 tau / n and the others) stays
# exact; the tolerance only makes the reported count the same on every engine (METHODS.md 28).
CLIP_COUNT_RTOL = 1e-12


def beyond_tau(norms, tau: float) -> np.ndarray:
    """Which norms count as clipped at tau: above tau (1 + CLIP_COUNT_RTOL), ties are not counted."""
    return np.asarray(norms) > tau * (1.0 + CLIP_COUNT_RTOL)


def clip_factors(norms: np.ndarray, tau: float) -> np.ndarray:
    """Per-curve factors min(1, tau / norm) that bring every L2 norm to at most tau."""
    factor = np.minimum(1.0, tau / np.where(norms > 0, norms, np.inf))
    # Rounding can leave tau * (1 + 1e-16); shrink by one ulp so the bound holds exactly.
    return np.where(factor < 1.0, np.nextafter(factor, 0.0), factor)


def clip_to_ball(values: np.ndarray, weights: np.ndarray, tau: float) -> ClipResult:
    """X_i <- X_i min(1, tau / ||X_i||): after this every curve has L2 norm <= tau.

    Parameters
    ----------
    values : array (n, m)
        The curves on the grid.
    weights : array (m,)
        Quadrature weights of the L2 inner product.
    tau : float
        The public norm bound.

    Returns
    -------
    ClipResult
        ``values`` with every norm at most tau, and how many curves were shrunk (analyst view).

    Examples
    --------
    >>> import numpy as np
    >>> result = clip_to_ball(np.array([[3.0, 3.0], [0.1, 0.1]]), np.array([0.5, 0.5]), 1.0)
    >>> np.round(np.sqrt((result.values**2) @ np.array([0.5, 0.5])), 6).tolist(), result.n_clipped
    ([1.0, 0.1], 1)
    """
    tau = check_positive("tau", tau)
    norms = l2_norms(values, weights)
    return ClipResult(values * clip_factors(norms, tau)[:, None], int(np.sum(beyond_tau(norms, tau))), norms)


def data_derived_tau(fd: FunctionalData) -> float:
    """max_i ||X_i||: a teaching convenience only. Anything using it must carry
    ``DATA_DEPENDENT_TAU`` in its flags."""
    return float(fd.norms().max())


# --------------------------------------------------------------------------- sources and limits

_env_megabytes = limits.env_megabytes
# Size limits (fdp_core/limits.py, the one table); module attributes here so that tests and
# deployments can lower them for this module: uploads held in memory, files read by path,
# and the cell-by-cell parser (it holds every cell as a Python string).
MAX_FILE_BYTES = limits.MAX_FILE_BYTES
MAX_PATH_BYTES = limits.MAX_PATH_BYTES
MAX_SLOW_BYTES = limits.MAX_SLOW_BYTES
_SNIFF_CHARS = 65536
# A long grid's header (20,000 grid points, ~10 characters each) outgrows the sniff window:
# the window then stretches to the header line plus _SNIFF_CHARS, up to this many bytes.
_MAX_HEADER_BYTES = 4 << 20
_CSV_FIELD_LIMIT = 131072  # the csv module's default field_size_limit


def _mb(nbytes: int) -> str:
    return f"{nbytes / 2**20:.0f} MB"


@dataclass
class _Source:
    """A data file: a path on disk (read lazily) or bytes in memory."""

    name: str
    path: Path | None = None
    raw: bytes | None = None

    @property
    def size(self) -> int:
        return self.path.stat().st_size if self.raw is None else len(self.raw)

    def head(self, nbytes: int) -> bytes:
        if self.raw is not None:
            return self.raw[:nbytes]
        with open(self.path, "rb") as handle:
            return handle.read(nbytes)

    def arrow_input(self):
        import pyarrow as pa

        return str(self.path) if self.raw is None else pa.BufferReader(self.raw)

    def all_bytes(self) -> bytes:
        return self.path.read_bytes() if self.raw is None else self.raw


def check_regular_file(path: Path, what: str = "data file") -> os.stat_result:
    """The stat of ``path`` if it is a regular file (symlinks followed); DataError otherwise.

    Checked before any read: a device (/dev/zero) never ends and a named pipe nobody writes
    never returns, so reading them would hang rather than fail."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise DataError(f"file not found: {clean_text(path, 200)}") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise DataError(f"cannot read {clean_text(path, 200)}: {getattr(exc, 'strerror', None) or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise DataError(f"{clean_text(path, 200)} is a folder, not a {what}")
    if not stat.S_ISREG(info.st_mode):
        kind = ("a named pipe" if stat.S_ISFIFO(info.st_mode) else "a socket" if stat.S_ISSOCK(info.st_mode)
                else "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) else "a special file")
        raise DataError(f"{clean_text(path, 200)} is {kind}, not a {what}: give a regular file")
    return info


def data_source(source) -> _Source:
    """A path, bytes or a file-like object as one readable source (size checked against the limits)."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        size = check_regular_file(path).st_size
        if size > MAX_PATH_BYTES:
            raise DataError(f"{path.name} is {_mb(size)}; the limit is {_mb(MAX_PATH_BYTES)} (FDP_MAX_PATH_MB)")
        return _Source(path.name, path=path)
    if isinstance(source, (bytes, bytearray)):
        raw, name = bytes(source), "uploaded data"
    else:  # file-like (Streamlit UploadedFile, BytesIO, open file)
        name = getattr(source, "name", "uploaded file")
        size = getattr(source, "size", None)
        if size is not None and size > MAX_FILE_BYTES:
            raise DataError(f"{name} is {_mb(size)}; the limit is {_mb(MAX_FILE_BYTES)}")
        if hasattr(source, "seek"):
            source.seek(0)
        raw = source.read(MAX_FILE_BYTES + 1)
        if isinstance(raw, str):
            raw = raw.encode("utf-8")
    if len(raw) > MAX_FILE_BYTES:
        raise DataError(f"{name} exceeds the {_mb(MAX_FILE_BYTES)} limit")
    return _Source(str(name), raw=raw)


def _read_bytes(source) -> tuple[bytes, str]:
    """Whole file as bytes and its display name (small files: the app's upload path)."""
    src = data_source(source)
    return src.all_bytes(), src.name


# --------------------------------------------------------------------------- cell parsing

def _number_hint(cell: str) -> str:
    """Why a cell is not a number, when the reason is a common export quirk."""
    text = cell.strip()
    if "_" in text and parse_number(text.replace("_", "")) is not None:
        return "; '_' digit separators are not read as numbers"
    if _DECIMAL_COMMA.match(text):
        return "; decimal commas are not read as numbers (use '.' as the decimal point)"
    return ""


_DECIMAL_COMMA = re.compile(r"^[+-]?\d+,\d+$")


def _decode(raw: bytes, name: str) -> str:
    """UTF-8 (with or without BOM), UTF-16 with a BOM, else Latin-1 (decodes any byte, so
    stray bytes surface later as specific non-numeric cells rather than a crash)."""
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        try:
            return raw.decode("utf-16")
        except UnicodeDecodeError:
            raise DataError(f"{name} starts with a UTF-16 marker but is not valid UTF-16") from None
    if b"\x00" in raw:
        raise DataError(f"{name} is not a text CSV file (it contains NUL bytes); upload a CSV or Parquet file")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _sniff_delimiter(sample: str) -> str:
    if ";" not in sample and "\t" not in sample:
        # The sniffer only picks a delimiter that occurs in the sample (else it fails, read as ","): with
        # neither ";" nor a tab it can only answer ",", so its ~5 ms of regular expressions are skipped.
        return ","
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t").delimiter
    except csv.Error:
        return ","


def _nonblank(rows):
    return (row for row in rows if any(c.strip() for c in row))


def _csv_rows(text: str, name: str, mapping=None, max_columns: int | None = MAX_FILE_COLUMNS) -> list[list[str]]:
    """Every non-blank row of a CSV text. The header's width is checked before the body is
    parsed, so a file of millions of columns is refused after reading one line."""
    if not text.strip():
        raise DataError(f"{name} is empty")
    delimiter = _sniff_delimiter(text[:_SNIFF_CHARS])
    try:
        reader = _nonblank(csv.reader(io.StringIO(text), delimiter=delimiter))
        header = next(reader, None)
        if header is not None and max_columns is not None:
            check_width(len(header), name)
        rows = [] if header is None else [header, *reader]
    except csv.Error as exc:
        raise DataError(f"{name} is not valid CSV: {exc}") from None
    if not rows:
        raise DataError(f"{name} is empty")
    check_dialect(text[:_SNIFF_CHARS], rows[:50], delimiter, name, mapping)
    return rows


def check_dialect(sample: str, rows: list[list[str]], delimiter: str, name: str, mapping=None) -> None:
    """European CSV (';' separators, decimal commas) and trailing separators: say so, instead
    of the misleading message the header checks would give."""
    lines = [line for line in sample.splitlines()[:50] if line.strip()]
    if lines and all(";" in line for line in lines[:2]):
        cells = [c.strip() for row in csv.reader(lines, delimiter=";") for c in row]
        example = next((c for c in cells if _DECIMAL_COMMA.match(c)), None)
        if example is not None:
            raise DataError(f"{name} looks like a European CSV (';' separators and decimal commas such as "
                            f"'{clean_text(example)}'); save it with '.' as the decimal point and ',' or ';' "
                            "between fields")
    header = rows[0] if rows else []
    if mapping is None and len(header) > 1 and not header[-1].strip() and all(h.strip() for h in header[:-1]):
        body = rows[1:]
        if body and all(len(r) == len(header) and not r[-1].strip() for r in body):
            raise DataError(f"{name}: every line ends with a trailing '{clean_text(delimiter)}' (an empty column after "
                            f"'{clean_text(header[-2])}'); remove the trailing separators")
        raise DataError(f"{name}: the header ends with a trailing '{clean_text(delimiter)}' (an empty column name "
                        f"after '{clean_text(header[-2])}'); remove it")


# --------------------------------------------------------------------------- transposed files

def looks_transposed(source, *, name: str | None = None) -> bool:
    """True when ``source`` reads as a wide file with grid points as rows and curves as columns
    (the app offers a one-click transpose; the CLI has --transpose)."""
    raw, default_name = _read_bytes(source)
    if raw[:4] == b"PAR1":
        return False
    try:
        rows = _csv_rows(_decode(raw, default_name), default_name, max_columns=None)
    except DataError:
        return False
    header = [h.strip() for h in rows[0]]
    if any(parse_number(h) not in (None,) and not math.isnan(parse_number(h)) for h in header[1:]):
        return False  # numeric headers: an ordinary wide file
    return transposed_rows(rows)


def _transpose(rows: list[list[str]], name: str) -> list[list[str]]:
    width = len(rows[0])
    for r, row in enumerate(rows[1:], start=2):
        if len(row) != width:
            raise DataError(f"{name}: row {r} has {len(row)} fields but the header has {width} (ragged rows); "
                            "a file can only be transposed when every row has the same number of fields")
    out = [list(col) for col in zip(*rows)]
    out[0][0] = "id"  # the old header's first cell named the grid; the new first column holds curve names
    return out


# --------------------------------------------------------------------------- cell-by-cell parser

def _parse_wide(rows, name: str, layout: Layout, store: bool = True):
    """Rows after the header -> values (n, m) and metadata; every problem named with its row.

    ``store=False`` only checks (the error locator for files too big to hold as strings)."""
    width, first_numeric, grid = layout.width, layout.first_numeric, layout.grid
    grid_labels = list(layout.header[first_numeric:])
    header = list(layout.header)
    values, meta_rows, n = [], [], 0
    for r, row in enumerate(rows, start=2):  # file line numbers: header is line 1
        n += 1
        if len(row) != width:
            hint = ""
            if len(row) == width + 1 and not row[-1].strip():
                hint = "; it ends with a trailing separator"
            raise DataError(f"{name}: row {r} has {len(row)} fields but the header has {width} (ragged rows{hint})")
        cells = row[first_numeric:]
        if cells and cells[0].strip() == grid_labels[0] and [c.strip() for c in row] == header:
            raise DataError(f"{name}: row {r} repeats the header line (two files joined into one?); remove it, or it "
                            "would be read as a curve whose values are the grid points")
        parsed = [parse_number(c) for c in cells]
        bad = [j for j, v in enumerate(parsed) if v is None]
        if bad:
            first = cells[bad[0]]
            raise DataError(f"{name}: row {r} has {len(bad)} non-numeric cell(s) (column(s) "
                            f"{format_columns([grid_labels[j] for j in bad])}), e.g. '{clean_text(first.strip(), 20)}'"
                            f"{_number_hint(first)}")
        if store:
            values.append(parsed)
            meta_rows.append(row[:first_numeric])
    if n == 0:
        raise DataError(f"{name} has a header but no data rows")
    if not store:
        return None
    import pandas as pd  # lazy: the cell-by-cell reader's metadata (the pyarrow reader's stays numpy)

    meta = metadata_frame(pd.DataFrame(meta_rows, columns=layout.meta_names))
    return grid, layout.ascending(np.array(values, dtype=float).reshape(len(values), grid.size)), meta


def _parse_long(rows, name: str, layout: Layout, public=None):
    i_id, i_t, i_v = layout.long_index
    width = layout.width
    records: dict[str, dict[float, float]] = {}
    for r, row in enumerate(rows, start=2):
        if len(row) != width:
            what = "a long CSV has exactly id,t,value" if width == 3 else f"the header has {width}"
            raise DataError(f"{name}: row {r} has {len(row)} fields; {what}")
        curve_id, t_cell, v_cell = row[i_id].strip(), parse_number(row[i_t]), parse_number(row[i_v])
        if t_cell is None or math.isnan(t_cell) or not math.isfinite(t_cell):
            raise DataError(f"{name}: row {r} has a non-numeric or missing t ({clean_text(row[i_t])!r})")
        if v_cell is None:
            raise DataError(f"{name}: row {r} has a non-numeric value ({clean_text(row[i_v])!r}"
                            f"{_number_hint(row[i_v])})")
        curve = records.setdefault(curve_id, {})
        if t_cell in curve:
            raise DataError(f"{name}: curve '{clean_text(curve_id)}' has two values at t = {t_cell:g} (row {r})")
        curve[t_cell] = v_cell
    if not records:
        raise DataError(f"{name} has a header but no data rows")
    grids = {tuple(sorted(c)) for c in records.values()}
    n_regridded = 0
    if len(grids) == 1 and public is None:
        grid = np.array(next(iter(grids)))
        values = np.array([[records[i][t] for t in grid] for i in records])
    elif public is None:
        # Persons seen at their own times: the union of their times is a list of real visit times,
        # never a published grid (METHODS.md 24). Which route is the custodian's declaration.
        raise DataError(f"{name}: the {len(records)} curves are observed at person-specific times; their union is "
                        "not a public grid: declare one to interpolate onto (--grid A,B,M; the Data page's public "
                        "grid), or release the observations through the sparse route (--sparse --domain A,B)")
    else:
        grid = grid_points(public)
        if len(records) * grid.size > MAX_REGRID_CELLS:
            raise DataError(f"{name}: {len(records)} curves on the declared grid of {grid.size} points would need "
                            f"{len(records) * grid.size:,} cells (at most {MAX_REGRID_CELLS:,}): declare fewer points")
        values = np.empty((len(records), grid.size))
        for k, curve in enumerate(records.values()):
            ts = np.array(sorted(curve))
            values[k] = interpolate_onto(grid, ts, np.array([curve[t] for t in ts]))
        n_regridded = len(records)
    check_grid(grid, [f"{t:g}" for t in grid], name)
    import pandas as pd  # lazy: the cell-by-cell reader's metadata (the pyarrow reader's stays numpy)

    meta = pd.DataFrame({"id": list(records)})
    return grid, values, meta, n_regridded


def handle_missing(grid: np.ndarray, values: np.ndarray, policy: str) -> tuple[np.ndarray, np.ndarray, int]:
    """Returns (values, keep mask, n_interpolated). Interior gaps can be interpolated
    (linearly in t); a curve missing its first or last point cannot (no extrapolation) and
    is dropped. Works in place on ``values`` (the loader's own array)."""
    missing_rows = np.flatnonzero(np.isnan(values).any(axis=1))
    keep = np.ones(values.shape[0], dtype=bool)
    keep[missing_rows] = False
    n_interp = 0
    if policy == "interpolate":
        for i in missing_rows:
            ok = ~np.isnan(values[i])
            if ok[0] and ok[-1] and ok.sum() >= 2:
                values[i, ~ok] = np.interp(grid[~ok], grid[ok], values[i, ok])
                keep[i] = True
                n_interp += 1
    return values, keep, n_interp


def _check_magnitudes(grid, values, name) -> None:
    """Values so large that their squares overflow would give infinite norms, and clipping
    would then silently turn the curve into zero: refuse them (limits.MAX_ABS_VALUE)."""
    with np.errstate(invalid="ignore"):
        too_big = np.abs(values) > MAX_ABS_VALUE
    if too_big.any():
        r, c = np.argwhere(too_big)[0]
        raise DataError(f"{name}: curve {r + 1} has the value {values[r, c]:.3g} at t = {grid[c]:g}; values beyond "
                        f"+-{MAX_ABS_VALUE:g} overflow squared norms: rescale the data (e.g. change units)")


def _finish(grid, values, meta, name, missing, extra_messages=()) -> FunctionalData:
    check_choice("missing", missing, MISSING_POLICIES)
    n_read = values.shape[0]
    n_missing_cells = int(np.count_nonzero(np.isnan(values)))
    finite_or_nan = n_missing_cells + int(np.count_nonzero(np.isfinite(values)))
    if finite_or_nan != values.size:
        r, c = np.argwhere(np.isinf(values))[0]
        raise DataError(f"{name}: curve {r + 1} (data row {r + 1}) has an infinite value at t = {grid[c]:g}; "
                        "remove or fix infinite values")
    _check_magnitudes(grid, values, name)
    values, keep, n_interp = handle_missing(grid, values, missing)
    n_dropped = int((~keep).sum())
    dropped_metadata = take_rows(meta, ~keep) if n_dropped else None
    if keep.sum() == 0:
        hint = "" if missing == "interpolate" else " (try interpolating interior gaps)"
        raise DataError(f"{name}: all {n_read} curves have missing values and were dropped{hint}")
    if n_dropped:  # a copy only when something was dropped (memory: see SECURITY.md)
        values, meta = values[keep], take_rows(meta, keep)
    if values.shape[0] < 2:
        raise DataError(f"{name}: only {values.shape[0]} complete curve; a mean, density or PCA "
                        "release needs at least 2 curves")
    check_variation(values, name)
    messages = list(extra_messages)
    if n_dropped:
        messages.append(f"{n_dropped} curve(s) with missing values dropped")
    if n_interp:
        messages.append(f"{n_interp} curve(s) had interior gaps filled by linear interpolation")
    report = LoadReport(name, n_read, n_dropped, n_interp, n_missing_cells,
                        tuple(int(i) + 1 for i in np.flatnonzero(~keep)), tuple(messages), dropped_metadata)
    return FunctionalData(grid, values, meta, report)


def check_variation(values: np.ndarray, name: str) -> None:
    """Refuse data with nothing to estimate (identical curves, or constant curves)."""
    if np.all(values.max(axis=0) == values.min(axis=0)):
        raise DataError(f"{name}: all {values.shape[0]} curves are identical; there is nothing to estimate")
    if not np.any(values.max(axis=1) != values.min(axis=1)):
        raise DataError(f"{name}: every curve is constant over t, so these are scalars, not functions; "
                        "use a numeric column on the density page instead")


def _from_rows(rows, name, missing, mapping=None, transpose=False, public=None) -> FunctionalData:
    if transpose:
        rows = _transpose(rows, name)
    layout = read_layout(rows[0], name, mapping, rows[1:51])
    return _from_layout_rows(layout, rows[1:], name, missing, public)


def _from_layout_rows(layout: Layout, body, name, missing, public=None) -> FunctionalData:
    if layout.kind == "long":
        grid, values, meta, n_regridded = _parse_long(body, name, layout, public)
        extra = ([f"{n_regridded} curves were interpolated onto the declared public grid {spec_text(public)} "
                  f"({grid.size} points)"] if n_regridded else [])
        return _finish(grid, values, meta, name, missing, extra)
    grid, values, meta = _parse_wide(body, name, layout)
    return _finish(grid, values, meta, name, missing)


# --------------------------------------------------------------------------- loading

def _arrow_io(purpose: str | None = None):
    """The pyarrow readers, or None in the light install (no 'io' extra): small CSV files are then
    read by the cell-by-cell parser; ``purpose`` names what cannot do without them (refused)."""
    try:
        from . import arrow_io  # lazy: pyarrow, loaded with the first file read
    except ModuleNotFoundError as exc:
        error = missing_extra(exc, purpose or "reading files fast")
        if error is None:
            raise
        if purpose is not None:
            raise error from None
        return None
    return arrow_io


def _load_parquet(src: _Source, name: str, missing: str, mapping, public=None) -> FunctionalData:
    arrow_io = _arrow_io(f"{name}: reading Parquet")
    fast = arrow_io.read_parquet_block(src, name, mapping)
    if isinstance(fast, tuple):
        grid, values, meta, extra = fast
        return _finish(grid, values, meta, name, missing, extra)
    frame = fast  # a DataFrame: the cells go through the cell-by-cell parser
    header = [str(c) for c in frame.columns]
    cells = frame.astype(object).where(frame.notna(), "").astype(str).values.tolist()
    return _from_rows([header] + cells, name, missing, mapping, public=public)


def _head_window(src: _Source) -> tuple[bytes, int]:
    """The file's first bytes and the sniff window in characters: _SNIFF_CHARS, or the header
    line plus _SNIFF_CHARS when the header is longer (a long grid), at most _MAX_HEADER_BYTES."""
    head = src.head(4 * _SNIFF_CHARS)
    if b"\n" in head[:_SNIFF_CHARS]:
        return head, _SNIFF_CHARS
    longer = src.head(_MAX_HEADER_BYTES)
    end = longer.find(b"\n")
    if end < 0:
        return head, _SNIFF_CHARS
    window = end + 1 + _SNIFF_CHARS
    return src.head(4 * window), window


def csv_head(src: _Source, name: str):
    """(sample text, delimiter, header row) for the fast path, or None when the file must go
    through the cell-by-cell parser (not UTF-8, a UTF-16 marker, blank first line, ...)."""
    head, window = _head_window(src)
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in head:
        return None
    try:
        text = codecs.getincrementaldecoder("utf-8-sig")().decode(head, final=len(head) < 4 * window)
    except UnicodeDecodeError:
        return None
    sample = text[:window]
    first_line = sample.split("\n", 1)[0]
    if not first_line.strip(",;\t \r") or "\n" not in sample or first_line.count('"') % 2:
        # Leading blank lines, a header longer than the sample, a quoted header cell spanning
        # lines. Quoted header cells on one line ("0","0.5", as pyarrow writes them) are fine:
        # the csv module unquotes them below and pyarrow skips that one line.
        return None
    delimiter = _sniff_delimiter(sample)
    try:
        rows = list(_nonblank(csv.reader(io.StringIO(sample), delimiter=delimiter)))
    except csv.Error:
        return None
    if len(rows) < 2:
        return None
    return sample, delimiter, rows


def _why_not_fast(src: _Source, transpose: bool) -> str:
    """Why csv_head sent a file to the cell-by-cell parser, in the user's words (the message
    for files too big for that parser must name the actual cause)."""
    if transpose:
        return "is to be transposed, which reads every cell as text"
    head, window = _head_window(src)
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in head:
        return "is UTF-16 or holds NUL bytes"
    try:
        text = codecs.getincrementaldecoder("utf-8-sig")().decode(head, final=len(head) < 4 * window)
    except UnicodeDecodeError:
        return "is not UTF-8"
    sample = text[:window]
    first_line = sample.split("\n", 1)[0]
    if not first_line.strip(",;\t \r"):
        return "starts with a blank line"
    if "\n" not in sample:
        return f"has a header line longer than {_MAX_HEADER_BYTES:,} bytes"
    if first_line.count('"') % 2:
        return "has a quoted header cell that spans lines"
    return "has fewer than two readable lines at its start"


def _load_csv(src: _Source, name: str, missing: str, mapping, transpose: bool, public=None) -> FunctionalData:
    small = src.size <= min(SMALL_CSV_BYTES, MAX_SLOW_BYTES)
    # A small file may never need pyarrow (its import costs more than reading the file in Python).
    arrow_io = None if small else _arrow_io(None if src.size <= MAX_SLOW_BYTES else f"{name} ({_mb(src.size)})")
    head = None if transpose else csv_head(src, name)
    if head is not None:
        sample, delimiter, rows = head
        check_dialect(sample, rows[:50], delimiter, name, mapping)
        complete = src.size <= 4 * _SNIFF_CHARS
        layout = read_layout(rows[0], name, mapping, rows[1:51] if complete else ())
        fast = small_csv.read_wide(src.all_bytes(), layout, delimiter) if small else None
        if fast is None and small:
            arrow_io = _arrow_io()
        if fast is None and arrow_io is not None:
            fast = arrow_io.read_csv_block(src, layout, delimiter)
        if fast is not None:
            grid, values, meta, extra = fast
            return _finish(grid, values, meta, name, missing, extra)
        if src.size > MAX_SLOW_BYTES:
            return _locate_error(src, name, layout, delimiter)
    if src.size > MAX_SLOW_BYTES:
        raise DataError(f"{name} ({_mb(src.size)}) {_why_not_fast(src, transpose)}; files above {_mb(MAX_SLOW_BYTES)} "
                        "must be UTF-8 CSV with a one-line header (re-save it, or convert it to Parquet)")
    rows = _csv_rows(_decode(src.all_bytes(), name), name, mapping, max_columns=None if transpose else MAX_FILE_COLUMNS)
    return _from_rows(rows, name, missing, mapping, transpose, public)


def _locate_error(src: _Source, name: str, layout: Layout, delimiter: str):
    """The fast reader refused a file too big for the cell-by-cell parser: stream its rows
    through the same checks to name the first bad row, holding one row at a time."""
    csv.field_size_limit(_CSV_FIELD_LIMIT)
    with open(src.path, encoding="utf-8-sig", errors="replace", newline="") as handle:
        rows = _nonblank(csv.reader(handle, delimiter=delimiter))
        next(rows)
        try:
            if layout.kind == "wide":
                _parse_wide(rows, name, layout, store=False)
            else:
                for r, row in enumerate(rows, start=2):
                    if len(row) != layout.width:
                        raise DataError(f"{name}: row {r} has {len(row)} fields but the header has {layout.width}")
        except csv.Error as exc:
            raise DataError(f"{name} is not valid CSV: {exc}") from None
    raise DataError(f"{name}: the fast reader refused a value in this {_mb(src.size)} file that the cell-by-cell "
                    f"checks accept (e.g. spaces around a missing-value token, infinite values, curves on different "
                    f"grids); files above {_mb(MAX_SLOW_BYTES)} need plain numbers: re-save it or convert it to "
                    "Parquet")


def load_curves(source, *, name: str | None = None, missing: str = "drop", id_column: str | None = None,
                t_column: str | None = None, value_column: str | None = None,
                transpose: bool = False, grid=None) -> FunctionalData:
    """Load curves from a path, bytes or an uploaded file object.

    Formats: wide CSV (numeric headers are grid points; leading non-numeric columns are
    metadata), long CSV (header ``id,t,value``, or any three columns named by
    ``id_column``, ``t_column`` and ``value_column``; other columns are ignored), Parquet
    (either layout). ``transpose=True`` reads a wide CSV stored with the grid down the first
    column and one curve per column. ``missing``: "drop" incomplete curves (default) or
    "interpolate" interior gaps; both are counted in ``report``. ``grid``: a declared public grid
    ``"A,B,M"`` (or a triple): every curve is interpolated onto it (METHODS.md 24); a long file whose
    persons are seen at their own times needs one (their union of times is never the grid).
    Raises DataError with a specific message on bad input.

    The numeric block is read by pyarrow in one C-level call and validated with vectorised
    masks; whenever that fast path refuses a file, the cell-by-cell parser reads it again
    to accept it (unusual but valid spellings) or to name the offending row and column.

    Parameters
    ----------
    source : path, bytes or file object
        The file (CSV or Parquet; an upload's bytes with ``name`` telling the format).
    name : str, optional
        The name used in messages and provenance (default: the file's name).
    missing : {"drop", "interpolate"}
        Curves with missing cells are dropped, or their interior gaps interpolated.
    id_column, t_column, value_column : str, optional
        The columns of a long file (one observation per row).
    transpose : bool
        The file holds one curve per column (e.g. ``day,Halifax,Montreal,...``).

    Returns
    -------
    FunctionalData
        The curves, their grid, the metadata columns and a loading report.

    Examples
    --------
    >>> from pathlib import Path
    >>> fd = load_curves(Path(__file__).parents[2] / "data" / "example_curves.csv")
    >>> fd.data_matrix.shape, fd.report.n_dropped
    ((60, 27), 0)
    """
    check_choice("missing", missing, MISSING_POLICIES)
    public = parse_grid(grid)
    mapping = long_columns(id_column, t_column, value_column)
    src = data_source(source)
    name = clean_text(name or src.name, 80)
    if src.head(4) == b"PAR1" or name.lower().endswith((".parquet", ".pq")):
        if transpose:
            raise ParameterError("transpose applies to CSV files; a Parquet file's columns are already named")
        return on_public_grid(_load_parquet(src, name, missing, mapping, public), public)
    return on_public_grid(_load_csv(src, name, missing, mapping, transpose, public), public)


def on_public_grid(fd: FunctionalData, public) -> FunctionalData:
    """``fd`` on the declared public grid (a file with a grid of its own, wide or long on one shared
    grid, is interpolated onto it as well); the report records the declaration for replay."""
    if public is None:
        return fd
    points = grid_points(public)
    values = fd.data_matrix
    if not np.array_equal(fd.grid_points, points):
        values = np.vstack([interpolate_onto(points, fd.grid_points, row) for row in values])
    report = replace(fd.report, public_grid=public, dropped_metadata=raw_metadata(fd.report, "dropped_metadata"))
    return FunctionalData(points, values, raw_metadata(fd), report)


def from_arrays(grid, values, *, name: str = "array", metadata=None) -> FunctionalData:
    """Wrap arrays (e.g. a simulation) with the same validation as a file.

    Parameters
    ----------
    grid : array of shape (m,)
        The public grid points, strictly increasing.
    values : array of shape (n, m)
        One curve per row. scikit-fda's order ``from_arrays(values, grid)`` is recognised too
        (a 2-d first argument with a 1-d second one).
    name : str
        A label for messages and provenance.
    metadata : DataFrame or mapping of columns, optional
        One row per curve (e.g. a person column).

    Examples
    --------
    >>> import numpy as np
    >>> curves = np.outer([1.0, 2.0, 3.0], np.linspace(0, 1, 5))
    >>> fd = from_arrays(np.linspace(0, 1, 5), curves, metadata={"person": [1, 1, 2]})
    >>> fd.data_matrix.shape, list(fd.metadata.columns)
    ((3, 5), ['person'])
    >>> from_arrays(curves, np.linspace(0, 1, 5)).data_matrix.shape   # scikit-fda's order
    (3, 5)
    """
    import pandas as pd  # lazy: Python users' metadata; the command line's loader does without pandas

    if np.ndim(grid) == 2 and np.ndim(values) == 1:
        grid, values = values, grid
    if metadata is not None and not isinstance(metadata, pd.DataFrame):
        metadata = pd.DataFrame(metadata)
    grid = np.asarray(grid, dtype=float)
    labels = [f"{t:g}" for t in grid]
    check_grid(grid, labels, name)
    values = np.atleast_2d(np.array(values, dtype=float))  # a copy: the data set must not alias the caller's array
    meta = metadata if metadata is not None else pd.DataFrame(index=range(values.shape[0]))
    return _finish(grid, values, meta, name, "drop")


def to_wide_csv(fd: FunctionalData) -> str:
    """Wide CSV text of a data set (metadata first), readable by :func:`load_curves`."""
    import pandas as pd  # lazy: writing data sets is not on the command line's release path

    frame = pd.DataFrame(fd.data_matrix, columns=[repr(float(t)) for t in fd.grid_points])
    if not fd.metadata.empty:
        frame = pd.concat([fd.metadata.reset_index(drop=True), frame], axis=1)
    return frame.to_csv(index=False)


def to_skfda(grid_points, values, *, sample_names=None, dataset_name: str | None = None,
             argument_name: str | None = None, coordinate_name: str | None = None):
    """Curves (one per row of ``values``, on ``grid_points``) as a scikit-fda ``FDataGrid``.

    Parameters
    ----------
    grid_points : array of shape (m,)
    values : array of shape (m,) or (k, m)
        One curve, or one per row (released means, components as rows, synthetic curves).
    sample_names, dataset_name, argument_name, coordinate_name : optional
        Passed to scikit-fda for its plots and reprs.

    Examples
    --------
    >>> import numpy as np
    >>> fdg = to_skfda(np.linspace(0, 1, 4), np.zeros(4), dataset_name="a released mean")
    >>> fdg.data_matrix.shape
    (1, 4, 1)
    """
    try:
        import skfda  # lazy: the optional 'skfda' extra, only for a conversion
    except ModuleNotFoundError as exc:
        error = missing_extra(exc, "converting to scikit-fda")
        if error is None:
            raise
        raise error from None
    curves = np.atleast_2d(np.asarray(values, dtype=float))
    return skfda.FDataGrid(curves, np.asarray(grid_points, dtype=float), sample_names=sample_names,
                           dataset_name=dataset_name,
                           argument_names=None if argument_name is None else (argument_name,),
                           coordinate_names=None if coordinate_name is None else (coordinate_name,))
