"""Streamed sufficient statistics: releases from data that need not fit in memory (METHODS.md 17).

Every release reads the data only through sums over records of a per-record transform:

=========================  =============================================================
release                    statistic summed over records (persons)
=========================  =============================================================
mean (Gaussian, ICLP, FRL) the curve clipped to the L2 ball of radius tau (m values)
mean (Bernstein)           the range-clipped curve read off at the lattice (K + 1 values)
KDE, ICLP                  observations per grid node (box-clipped, snapped)
KDE, Gaussian, fixed h     the Gaussian bumps on the grid
KDE, Gaussian, default h   the box-clipped feature itself (h depends on n: kept, d floats
                           per person, 1/m of the data)
PCA                        x x^T of the final coefficient row (p x p)
=========================  =============================================================

So a release is map (per chunk: validate, clip, sum) -> reduce (add, in float64) -> the
planning code of mean.py / kde.py / pca.py, unchanged, on the driver (noise, calibration and
the ledger happen once, there). The result equals the in-memory release up to the order of
floating-point summation (tests: relative 1e-10 with the same seed).

Sources: a FunctionalData, an (n, m) array with its grid, a chunk iterator (arrays, or
(array, metadata DataFrame) pairs, with ``grid=``), or a file path (wide CSV read with
pyarrow's streaming reader, Parquet row group by row group). A Parquet chunk reaches the
mean's accumulator as its m columns, views of the decoded row group: no (r, m) block is
built, each column is read from memory twice (its sums and squares, then the clipped sum),
and the whole-file checks stop costing anything once two curves differ; a chunk with a
missing or infinite value is validated as a block instead (MeanAccumulator.update_columns).
Long files and transposed files are loaded in memory (they are re-shaped as a whole). Every
chunk is validated as the loader validates a file (infinite values, missing values dropped or
interpolated, counted); the whole-file checks (at least 2 curves, not all identical, not all
constant) run on running minima and maxima. A chunk the fast reader refuses (a non-numeric cell, a ragged row) sends
the file to the loader, which names the row and column (fdp_core/data/loading.py).

Per-record transform: the one of fdp_core/data/preprocess.py (METHODS.md 11-12), applied chunk
by chunk with its own functions: pointwise clip into the public value range, centring at
(lo + hi)/2 or the reference curve, L2 clip at tau (default (hi - lo)/2), person average,
n = persons or the declared n_public. For the linear statistics (mean, Bernstein, PCA) a
person's average summed over persons is the sum of the rows weighted by 1 / (rows of that
person), so with a person column a first pass counts each person's rows (keyed by a hash of
the id: 8 bytes per person) and the second pass sums; a person's rows may be anywhere in the
file, in any chunk. The source must therefore be readable twice: a path, an array, a
FunctionalData, or a zero-argument callable returning a fresh chunk iterator (a one-shot
iterator is refused with a clear message). The KDE averages each person's box-clipped
features (a non-linear step before the bumps) from per-person running sums (d + 1 floats
per person).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..data.layouts import check_grid, clean_text, read_layout
from ..data.sketch import sketch_of_chunks
from ..data.loading import (DATA_DEPENDENT_TAU, MAX_SLOW_BYTES, beyond_tau, MISSING_POLICIES, FunctionalData, LoadReport,
                            check_dialect, clip_factors, csv_head, data_source, handle_missing, l2_norms, load_curves,
                            long_columns)
from ..errors import DataError, ParameterError
from ..kernels import trapezoid_weights
from ..params import check_choice
from ..registry import mean_mechanism
from ..data.loading import file_positions
from ..data.preprocess import centre_block, check_value_range, clip_values, mechanism_n as declared_n
from ..releases.estimators import lattice_interpolation_matrix
from ..releases.mean import MeanSums
from ..releases.box import (KdeSums, box_centre, check_box, check_grid_size, check_points, kde_grids, node_counts,
                            snap_to_grid)

if TYPE_CHECKING:  # annotations only: pandas is imported where metadata or persons are read
    import pandas as pd


# The engine choice and chunk sizes live in engines/choice.py (the command line reads them without
# importing this engine); re-exported here.
from .choice import (AUTO_STREAM_BYTES, CHUNK_BYTES, CSV_VALUE_BYTES_PER_BYTE, DEFAULT_CHUNK_ROWS, ENGINES,  # noqa: F401
                     choose_engine, value_bytes_bound)
ROW_GROUP_BYTES = 4 * CHUNK_BYTES  # Parquet row groups up to this many bytes of values are decoded whole


def auto_chunk_rows(m: int, chunk_rows: int | None = None) -> int:
    """Rows per chunk: the caller's choice, else about CHUNK_BYTES of float64 values."""
    if chunk_rows is not None:
        return int(chunk_rows)
    return int(max(1024, min(DEFAULT_CHUNK_ROWS, CHUNK_BYTES // (8 * max(1, int(m))))))


class Fallback(Exception):
    """The fast reader refused a chunk: the loader must read (or word) the file."""


# --------------------------------------------------------------------------- chunk readers

@dataclass
class Chunk:
    values: np.ndarray  # (r, m), finite after missing-value handling
    metadata: pd.DataFrame
    first_row: int  # 0-based index of the chunk's first data row in the source


class Tally:
    """The loader's per-chunk validation and its counts; mergeable (one per Dask partition)."""

    def __init__(self, m: int):
        self.n_read = self.n_kept = self.n_interp = self.n_missing = 0
        self.dropped: list[int] = []
        self.dropped_meta: list[pd.DataFrame] = []  # every dropped row's metadata: its person still counts in n
        self.col_min = np.full(m, np.inf)
        self.col_max = np.full(m, -np.inf)
        self.any_varying = False
        self.distinct = False  # two curves of the file differ somewhere: the minima and maxima have served
        self.label = ""  # Dask: "partition 3, " (row numbers are then partition-local)

    def add(self, values: np.ndarray, meta: pd.DataFrame, reader: "BlockReader"):
        r = values.shape[0]
        if r == 0:
            return None
        # Column minima and maxima propagate NaN and show infinities: finite ones mean a clean chunk
        # (the usual case), which skips the NaN and infinity masks (each a full pass and a temporary).
        col_min, col_max = values.min(axis=0), values.max(axis=0)
        if not (np.isfinite(col_min).all() and np.isfinite(col_max).all()):
            values, meta = self._missing_and_infinite(values, meta, reader)
            if values.shape[0]:
                col_min, col_max = values.min(axis=0), values.max(axis=0)
        first = self.n_read
        self.n_read += r
        if not values.shape[0]:
            return None
        np.minimum(self.col_min, col_min, out=self.col_min)
        np.maximum(self.col_max, col_max, out=self.col_max)
        self.distinct = self.distinct or bool(np.any(self.col_max != self.col_min))
        if not self.any_varying:  # once one curve varies, the whole file passes this check
            self.any_varying = bool(np.any(values.max(axis=1) != values.min(axis=1)))
        self.n_kept += values.shape[0]
        return Chunk(values, meta, first)

    def add_finite(self, columns: list) -> None:
        """add()'s bookkeeping for a chunk given as its columns and known to hold only finite values
        (their sums are finite). The running minima and maxima serve only the whole-file check that
        not every curve is the same: they stop once two curves differ (the first chunk, as a rule),
        as the check that some curve varies over t stops at the first such curve."""
        r = columns[0].shape[0]
        self.n_read += r
        self.n_kept += r
        if not self.distinct:
            np.minimum(self.col_min, [np.min(x) for x in columns], out=self.col_min)
            np.maximum(self.col_max, [np.max(x) for x in columns], out=self.col_max)
            self.distinct = bool(np.any(self.col_max != self.col_min))
        if not self.any_varying:
            self.any_varying = any(bool(np.any(x != columns[0])) for x in columns[1:])

    def _missing_and_infinite(self, values: np.ndarray, meta: pd.DataFrame, reader: "BlockReader"):
        """The loader's checks of a chunk holding NaN or infinities: refuse an infinite value,
        count the missing ones, drop or interpolate their curves (rows numbered from n_read)."""
        finite = np.isfinite(values)
        nan = np.isnan(values)
        if not np.all(finite | nan):
            i, c = np.argwhere(~(finite | nan))[0]
            row = self.n_read + int(i) + 1
            raise DataError(f"{reader.name}: {self.label}curve {row} (data row {row}) has an infinite value at "
                            f"t = {reader.grid[c]:g}; remove or fix infinite values")
        self.n_missing += int(np.count_nonzero(nan))
        values, keep, k_interp = handle_missing(reader.grid, values, reader.missing)
        self.n_interp += k_interp
        if not keep.all():
            self.dropped.extend((self.n_read + np.flatnonzero(~keep) + 1).tolist()[:max(0, 1000 - len(self.dropped))])
            self.dropped_meta.append(meta[~keep].reset_index(drop=True))
            values, meta = values[keep], meta[keep].reset_index(drop=True)
        return values, meta

    @property
    def n_dropped(self) -> int:
        return self.n_read - self.n_kept

    def merge(self, other: "Tally") -> "Tally":
        self.n_read += other.n_read
        self.n_kept += other.n_kept
        self.n_interp += other.n_interp
        self.n_missing += other.n_missing
        self.dropped.extend(other.dropped[:max(0, 1000 - len(self.dropped))])
        self.dropped_meta.extend(other.dropped_meta)
        np.minimum(self.col_min, other.col_min, out=self.col_min)
        np.maximum(self.col_max, other.col_max, out=self.col_max)
        self.any_varying = self.any_varying or other.any_varying
        self.distinct = self.distinct or other.distinct
        return self

    def finish(self, name: str, missing: str) -> LoadReport:
        """The loader's whole-file checks, and its report."""
        import pandas as pd  # lazy: metadata and persons only; a plain streamed mean never loads pandas

        if self.n_read == 0:
            raise DataError(f"{name} has a header but no data rows")
        if self.n_kept == 0:
            hint = "" if missing == "interpolate" else " (try interpolating interior gaps)"
            raise DataError(f"{name}: all {self.n_read} curves have missing values and were dropped{hint}")
        if self.n_kept < 2:
            raise DataError(f"{name}: only {self.n_kept} complete curve; a mean, density or PCA "
                            "release needs at least 2 curves")
        if np.all(self.col_max == self.col_min):
            raise DataError(f"{name}: all {self.n_kept} curves are identical; there is nothing to estimate")
        if not self.any_varying:
            raise DataError(f"{name}: every curve is constant over t, so these are scalars, not functions; "
                            "use a numeric column on the density page instead")
        messages = []
        if self.n_dropped:
            messages.append(f"{self.n_dropped} curve(s) with missing values dropped")
        if self.n_interp:
            messages.append(f"{self.n_interp} curve(s) had interior gaps filled by linear interpolation")
        dropped_meta = pd.concat(self.dropped_meta, ignore_index=True) if self.dropped_meta else None
        return LoadReport(name, self.n_read, self.n_dropped, self.n_interp, self.n_missing, tuple(self.dropped),
                          tuple(messages), dropped_meta)


class BlockReader:
    """Validated chunks of curves on one grid, with the loader's bookkeeping."""

    # Metadata columns the release needs (None: all). Building the others for every chunk
    # (strings -> numbers) would cost more than the numeric block for a mean.
    meta_columns: tuple | None = None

    def __init__(self, name: str, grid: np.ndarray, missing: str):
        check_choice("missing", missing, MISSING_POLICIES)
        self.name, self.grid, self.missing = name, np.asarray(grid, dtype=float), missing
        a, b = float(self.grid[0]), float(self.grid[-1])
        self.unit_grid = (self.grid - a) / (b - a)
        self.weights = trapezoid_weights(self.unit_grid)
        self.m = self.grid.size

    # subclasses yield (values, metadata) of raw chunks (NaN = missing)
    def raw_chunks(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def chunks(self, tally: "Tally | None" = None):
        """Validated chunks; afterwards ``report`` holds the loader's counts (``tally`` given:
        the counts stay in it and the whole-file checks are left to its owner, e.g. Dask's driver)."""
        own = tally is None
        tally = Tally(self.m) if own else tally
        for values, meta in self.raw_chunks():
            chunk = tally.add(values, meta, self)
            if chunk is not None:
                yield chunk
        if own:
            self.report = tally.finish(self.name, self.missing)

    def fallback(self) -> FunctionalData:
        raise DataError(f"{self.name}: a chunk could not be read")


class _FdReader(BlockReader):
    """A FunctionalData: already validated, read in chunks of rows."""

    def __init__(self, fd: FunctionalData, chunk_rows: int):
        super().__init__(fd.report.source, fd.grid_points, "drop")
        self.fd, self.chunk_rows = fd, auto_chunk_rows(fd.m, chunk_rows)

    def chunks(self, tally=None):
        for start in range(0, self.fd.n, self.chunk_rows):
            meta = self.fd.metadata.iloc[start:start + self.chunk_rows].reset_index(drop=True)
            yield Chunk(self.fd.data_matrix[start:start + self.chunk_rows], meta, start)
        self.report = self.fd.report


class _IterReader(BlockReader):
    """Chunks from an iterator (or a callable returning one): arrays or (array, metadata)."""

    def __init__(self, make_iter, grid, missing: str, name: str):
        grid = np.asarray(grid, dtype=float)
        check_grid(grid, [f"{t:g}" for t in grid], name)
        super().__init__(name, grid, missing)
        self.make_iter = make_iter
        self._used = False

    def raw_chunks(self):
        if self._used and not callable(self.make_iter):
            raise ParameterError("this chunk iterator was already consumed; a second pass (persons) needs a list "
                                 "or a zero-argument callable returning a fresh iterator")
        self._used = True
        source = self.make_iter() if callable(self.make_iter) else self.make_iter
        for item in source:
            values, meta = item if isinstance(item, tuple) else (item, None)
            values = np.array(values, dtype=float, ndmin=2)
            if values.ndim != 2 or values.shape[1] != self.m:
                raise DataError(f"{self.name}: a chunk of shape {values.shape} does not match the grid of "
                                f"{self.m} points")
            if meta is None:
                import pandas as pd  # lazy: metadata only; a plain streamed mean never loads pandas

                meta = pd.DataFrame(index=pd.RangeIndex(values.shape[0]))
            yield values, meta.reset_index(drop=True)


class CsvReader(BlockReader):
    """A wide CSV file in blocks of about ``chunk_bytes`` (pyarrow's streaming reader)."""

    def __init__(self, src, layout, delimiter, missing, chunk_bytes, name):
        super().__init__(name, layout.grid, missing)
        self.src, self.layout, self.delimiter, self.chunk_bytes = src, layout, delimiter, chunk_bytes

    def raw_chunks(self):
        import pyarrow as pa
        import pyarrow.csv as pacsv

        from ..data import arrow_io  # lazy: pyarrow, loaded with the first file read

        layout = self.layout
        columns = None
        if self.meta_columns is not None:
            keep = [i for i, meta in enumerate(layout.meta_names) if meta in self.meta_columns]
            columns = [f"c{i}" for i in keep + list(range(layout.first_numeric, layout.width))]
        read, parse, convert = arrow_io.csv_options(layout, self.delimiter, columns)
        read.block_size = self.chunk_bytes
        try:
            reader = pacsv.open_csv(self.src.arrow_input(), read_options=read, parse_options=parse,
                                    convert_options=convert)
            for batch in reader:
                yield arrow_io.wide_block(batch, self.layout, strict_inf=False)
        except (pa.ArrowException, arrow_io.Refused, ValueError):
            raise Fallback() from None

    def fallback(self) -> FunctionalData:
        return load_or_locate(self.src, self.name, self.missing)


class ParquetReader(BlockReader):
    """A wide Parquet file in record batches of ``chunk_rows`` rows."""

    def __init__(self, src, pf, layout, columns, missing, chunk_rows, name):
        super().__init__(name, layout.grid, missing)
        self.src, self.pf, self.layout, self.columns = src, pf, layout, columns
        self.chunk_rows = auto_chunk_rows(layout.grid.size, chunk_rows)

    def raw_chunks(self):
        for columns, meta in self.column_chunks():
            values = np.empty((columns[0].shape[0], self.m), order="F")
            for j, column in enumerate(columns):
                values[:, j] = column
            yield values, self.metadata_frame(meta)

    def column_chunks(self):
        """(columns, metadata) of each chunk: the m grid columns as float64 arrays that are views
        of the decoded row group (nothing copied for float64 columns without nulls; nulls and
        stored NaN read as NaN), and the wanted metadata columns as an Arrow table
        (:meth:`metadata_frame` turns it into the loader's strings, only for a consumer that reads it)."""
        from ..data import arrow_io  # lazy: pyarrow, loaded with the first file read

        first = self.layout.first_numeric
        wanted = [i for i, meta in enumerate(self.layout.meta_names)
                  if self.meta_columns is None or meta in self.meta_columns]
        self._meta_names = [self.layout.meta_names[i] for i in wanted]
        columns = [self.columns[i] for i in wanted] + list(self.columns[first:])
        k = len(wanted)
        for batch in self._batches(columns):
            # grid_columns: the file's numeric columns in ascending grid order (a descending header is sorted)
            yield ([arrow_io.float_column(batch.column(k + column - first), True) for column in self.layout.grid_columns],
                   batch.select(list(range(k))).rename_columns([f"c{i}" for i in range(k)]))

    def metadata_frame(self, meta):
        from ..data import arrow_io  # lazy: pyarrow, loaded with the first file read

        return arrow_io.string_metadata(meta, self._meta_names)

    def _batches(self, columns):
        """Tables of at most chunk_rows rows. A row group of at most ROW_GROUP_BYTES of values is
        decoded whole and sliced (zero-copy): 2-3x less CPU than iter_batches, which re-slices the
        decoded pages into batches (measured 0.5 against 1.3-2.4 s of CPU on 10^6 x 93); bigger
        row groups go through iter_batches, so that memory stays about one chunk."""
        metadata = self.pf.metadata
        if any(metadata.row_group(g).num_rows * len(columns) * 8 > ROW_GROUP_BYTES
               for g in range(metadata.num_row_groups)):
            yield from self.pf.iter_batches(batch_size=self.chunk_rows, columns=columns)
            return
        for g in range(metadata.num_row_groups):
            table = self.pf.read_row_group(g, columns=columns)
            for start in range(0, table.num_rows, self.chunk_rows):
                yield table.slice(start, self.chunk_rows)
            del table


def load_or_locate(src, name, missing) -> FunctionalData:
    """The loader reads what the streaming reader refused: it names the bad row and column
    (cell-by-cell parser, or the streaming error locator above MAX_SLOW_BYTES)."""
    return load_curves(src.path if src.raw is None else src.raw, name=name, missing=missing)


def open_source(source, *, grid=None, missing: str = "drop", chunk_rows: int | None = None,
                name: str | None = None, id_column=None, t_column=None, value_column=None,
                transpose: bool = False) -> BlockReader:
    """A chunk reader for any supported source (see the module docstring)."""
    check_choice("missing", missing, MISSING_POLICIES)
    if chunk_rows is not None:
        chunk_rows = int(chunk_rows)
        if chunk_rows < 1:
            raise ParameterError(f"chunk_rows must be a positive integer, got {chunk_rows}")
    if isinstance(source, FunctionalData):
        return _FdReader(source, chunk_rows)
    if isinstance(source, np.ndarray):
        if grid is None:
            raise ParameterError("an array source needs its grid (grid=...)")
        return _IterReader([source], grid, missing, name or "array")
    if isinstance(source, (str, Path)) and isinstance(grid, str):
        # A declared public grid "A,B,M" (METHODS.md 24): the curves are interpolated onto it in memory.
        # (An array ``grid`` is the grid points of an array or chunk source, below; a file has its own.)
        return _FdReader(load_curves(source, name=name, missing=missing, id_column=id_column, t_column=t_column,
                                     value_column=value_column, transpose=transpose, grid=grid), chunk_rows)
    if isinstance(source, (str, Path)):
        return _open_path(Path(source), missing, chunk_rows, name, long_columns(id_column, t_column, value_column),
                          transpose)
    if grid is None:
        raise ParameterError("a chunk iterator needs the grid of its curves (grid=...)")
    return _IterReader(source, grid, missing, name or "chunks")


def sketch_of_stream(source, *, missing: str = "drop", chunk_rows: int | None = None, **read_options) -> np.ndarray:
    """The content sketch of a file (fdp_core.data.sketch) read chunk by chunk, as ``sketch_of`` gives for
    the loaded curves."""
    reader = open_source(source, missing=missing, chunk_rows=chunk_rows, **read_options)
    return sketch_of_chunks(reader.grid, (chunk.values for chunk in reader.chunks()))


def _open_path(path: Path, missing, chunk_rows, name, mapping, transpose) -> BlockReader:
    from ..data import arrow_io  # lazy: pyarrow, loaded with the first file read

    src = data_source(path)
    name = clean_text(name or src.name, 80)
    def in_memory():
        return _FdReader(load_curves(path, name=name, missing=missing, id_column=mapping and mapping.id,
                                     t_column=mapping and mapping.t, value_column=mapping and mapping.value,
                                     transpose=transpose), chunk_rows)
    if src.head(4) == b"PAR1" or name.lower().endswith((".parquet", ".pq")):
        try:
            pf = arrow_io.parquet_file(src)
            layout, columns = arrow_io.parquet_layout(pf, name, mapping)
        except DataError:
            raise
        except Exception as exc:
            raise DataError(f"{name} could not be read as Parquet: {arrow_io.one_line(exc)}") from None
        grid_ok = layout.kind == "wide" and all(arrow_io.numeric_field(pf.schema_arrow.field(c))
                                                 for c in columns[layout.first_numeric:])
        if not grid_ok:
            return in_memory()  # long layout, or grid columns stored as text: the loader reshapes them
        return ParquetReader(src, pf, layout, columns, missing, chunk_rows, name)
    head = None if transpose else csv_head(src, name)
    if head is None:
        return in_memory()
    sample, delimiter, rows = head
    check_dialect(sample, rows[:50], delimiter, name, mapping)
    layout = read_layout(rows[0], name, mapping, rows[1:51] if src.size <= 4 * 65536 else ())
    if layout.kind != "wide":
        return in_memory()
    # Chunk size in bytes from the header's width: about chunk_rows rows per block.
    row_bytes = max(16, len(sample.encode()) // max(1, len(rows)))
    chunk_bytes = int(min(max(row_bytes * auto_chunk_rows(layout.grid.size, chunk_rows), 1 << 16), 1 << 30))
    return CsvReader(src, layout, delimiter, missing, chunk_bytes, name)


# --------------------------------------------------------------------------- persons

def person_keys(meta: pd.DataFrame, person_column: str, name: str) -> np.ndarray:
    """uint64 hash of each row's person id (its text, stripped, as preprocess.person_codes reads it)."""
    import pandas as pd  # lazy: metadata and persons only; a plain streamed mean never loads pandas

    if person_column not in meta.columns:
        available = ", ".join(map(str, meta.columns)) or "none"
        raise DataError(f"the data have no column '{person_column}' to group curves by person "
                        f"(metadata columns: {available})")
    ids = meta[person_column]
    text = ids.astype(str).str.strip()
    blank = ids.isna() | (text == "")
    if blank.any():
        raise DataError(f"person column '{person_column}' is empty in {int(blank.sum())} row(s) of {name}; every "
                        "curve needs a person id")
    return pd.util.hash_array(text.to_numpy(object), categorize=False)


def count_persons(reader: BlockReader, person_column: str) -> pd.Series:
    """First pass: usable rows per person, indexed by the id hash; a person whose rows were all
    dropped (missing values) is there with 0 rows, so the index counts the persons of the file."""
    import pandas as pd  # lazy: metadata and persons only; a plain streamed mean never loads pandas

    parts = [pd.Series(person_keys(c.metadata, person_column, reader.name)).value_counts() for c in reader.chunks()]
    parts.append(dropped_person_counts(reader.report.dropped_metadata, person_column, reader.name))
    return pd.concat(parts).groupby(level=0).sum()


def dropped_person_counts(dropped: pd.DataFrame | None, person_column: str, name: str) -> pd.Series:
    """0 usable rows for each person id among the dropped rows (they count in n, METHODS.md 11)."""
    import pandas as pd  # lazy: metadata and persons only; a plain streamed mean never loads pandas

    if dropped is None or not len(dropped):
        return pd.Series(dtype="int64")
    keys = np.unique(person_keys(dropped, person_column, name))
    return pd.Series(np.zeros(keys.size, dtype="int64"), index=keys)


def file_rows(reader: BlockReader) -> int:
    """Curves in the file, usable or not: n without a person column (METHODS.md 11)."""
    if isinstance(reader, _FdReader):
        return file_positions(reader.fd)[1]
    return int(reader.report.n_read)


def person_weights(keys: np.ndarray, counts: pd.Series) -> np.ndarray:
    """w_i = 1 / (rows of row i's person): sum_i w_i x_i = sum over persons of their average."""
    return 1.0 / counts.reindex(keys).to_numpy(dtype=float)


def mechanism_n(bounds, n_persons: int) -> int:
    return declared_n(bounds.n_public, n_persons)


# --------------------------------------------------------------------------- accumulators
# Each applies fdp_core.data.preprocess's per-record transform to a chunk and adds the result to
# running sums; merge() adds two accumulators (Dask's reduction).

@dataclass
class MeanAccumulator:
    """Sum of person-level clipped centred curves (or Bernstein lattice values) over chunks."""

    settings: object  # MeanSettings, validated
    grid: np.ndarray
    unit_grid: np.ndarray
    weights: np.ndarray
    total: np.ndarray | None = None
    raw_sum: np.ndarray | None = None
    n_rows: int = 0
    n_clipped: int = 0
    n_range_clipped: int = 0
    max_norm: float = 0.0
    _lattice: np.ndarray | None = field(default=None, repr=False)
    _buffers: tuple | None = field(default=None, repr=False)  # update_columns' scratch

    def __post_init__(self):
        s = self.settings
        self.raw_sum = np.zeros(self.grid.size)
        bounds = s.bounds
        if not mean_mechanism(s.mechanism).basis.kernel:
            self._lattice = lattice_interpolation_matrix(self.unit_grid, int(s.K))
            self.total = np.zeros(int(s.K) + 1)
            self.centre = np.zeros(self.grid.size)
            self.tau = None
        else:
            self.total = np.zeros(self.grid.size)
            self.centre = bounds.centre(self.grid)
            self.tau = None if s.tau_from_data else (float(s.tau) if s.tau is not None
                                                      else float(bounds.default_tau(self.grid)))

    def update(self, values: np.ndarray, row_weights: np.ndarray | None = None) -> None:
        s = self.settings
        self.n_rows += values.shape[0]
        # NON-PRIVATE (analyst view): with a person column the rows carry 1 / (their person's curves), so
        # the raw sum averages persons, as in memory (releases.mean._raw_sum)
        self.raw_sum += np.add.reduce(values, axis=0) if row_weights is None else row_weights @ values
        if not mean_mechanism(s.mechanism).basis.kernel:
            lo, hi = (float(v) for v in s.bernstein_range)
            clipped = np.clip(values, lo, hi)
            outside = int(np.sum(np.any(clipped != values, axis=1)))
            self.n_clipped += outside
            self.n_range_clipped += outside
            if s.value_range is not None:
                clipped = np.clip(clipped, *s.value_range)
            lattice = clipped @ self._lattice
            self.total += np.add.reduce(lattice, axis=0) if row_weights is None else row_weights @ lattice
            return
        clipped, n_range = clip_values(values, s.bounds.value_range)
        self.n_range_clipped += n_range
        Y = centre_block(clipped, self.centre) if np.any(self.centre) else clipped
        norms = l2_norms(Y, self.weights)
        if self.tau is None:
            # Clipping at tau = the largest norm leaves every curve unchanged (factor min(1, tau/||Y||) = 1).
            self.max_norm = max(self.max_norm, float(norms.max(initial=0.0)))
            factor = np.ones(values.shape[0])
        else:
            factor = clip_factors(norms, self.tau)
            self.n_clipped += int(np.sum(beyond_tau(norms, self.tau)))
        if row_weights is not None:
            factor = factor * row_weights
        self.total += factor @ Y

    def update_columns(self, columns: list, row_weights: np.ndarray | None = None) -> bool:
        """update() for a chunk given as its m columns (views of the decoded file: nothing is copied).

        A first pass over the columns sums each one (the raw sum) and adds its weighted squares to
        the norms; a second adds the clipped curves' columns. Each column is transformed (range
        clip, centring) while it is in cache, into a reused buffer, exactly as update() transforms
        the block; the sums differ from update()'s only by the order of summation. Returns False,
        having added nothing, when a column holds a NaN or an infinity (its sum is then not finite;
        an overflow too) or the mechanism has no kernel basis: the caller validates the chunk as a
        block instead."""
        s = self.settings
        if not mean_mechanism(s.mechanism).basis.kernel:
            return False
        r = columns[0].shape[0]
        norm2, y, sq, moved, diff = self._scratch(r)
        raw = np.empty(len(columns))
        for j, x in enumerate(columns):
            raw[j] = np.add.reduce(x) if row_weights is None else row_weights @ x
            yj = self._transformed(x, j, y, moved, diff)
            np.multiply(yj, yj, out=sq)
            sq *= self.weights[j]
            norm2 += sq
        if not np.isfinite(raw).all():
            return False
        self.n_rows += r
        self.raw_sum += raw
        if moved is not None:
            self.n_range_clipped += int(np.count_nonzero(moved))
        norms = np.sqrt(np.maximum(norm2, 0.0, out=norm2), out=norm2)  # as l2_norms
        if self.tau is None:
            self.max_norm = max(self.max_norm, float(norms.max(initial=0.0)))
            factor = np.ones(r)
        else:
            factor = clip_factors(norms, self.tau)
            self.n_clipped += int(np.count_nonzero(beyond_tau(norms, self.tau)))
        if row_weights is not None:
            factor = factor * row_weights
        for j, x in enumerate(columns):
            self.total[j] += factor @ self._transformed(x, j, y, None, diff)
        return True

    def _transformed(self, x, j, y, moved, diff):
        """Column j after the range clip and the centring, in ``y`` unless neither applies; the
        rows the clip moved are marked in ``moved`` (when given)."""
        if self._range is None:
            return np.subtract(x, self.centre[j], out=y) if self._centred else x
        np.clip(x, *self._range, out=y)
        if moved is not None:
            np.logical_or(moved, np.not_equal(y, x, out=diff), out=moved)
        if self._centred:
            y -= self.centre[j]
        return y

    def _scratch(self, r: int):
        """(norms^2 zeroed, y, squares, moved rows cleared or None, a boolean temporary) for a chunk of r
        rows: buffers reused from chunk to chunk (fresh ones would cost a page fault per 4 KiB)."""
        if self._buffers is None or self._buffers[0].shape[0] < r:
            self._buffers = (np.empty(r), np.empty(r), np.empty(r), np.empty(r, dtype=bool), np.empty(r, dtype=bool))
            self._range = check_value_range(self.settings.bounds.value_range)
            self._centred = bool(np.any(self.centre))
        norm2, y, sq, moved, diff = (b[:r] for b in self._buffers)
        norm2[:] = 0.0
        if self._range is None:
            return norm2, y, sq, None, diff
        moved[:] = False
        return norm2, y, sq, moved, diff

    def merge(self, other: "MeanAccumulator") -> "MeanAccumulator":
        self.total = self.total + other.total
        self.raw_sum = self.raw_sum + other.raw_sum
        self.n_rows += other.n_rows
        self.n_clipped += other.n_clipped
        self.n_range_clipped += other.n_range_clipped
        self.max_norm = max(self.max_norm, other.max_norm)
        return self

    def sums(self, n_persons: int, n_dropped: int, n_usable: int | None = None):
        s = self.settings
        n = mechanism_n(s.bounds, n_persons)
        usable = n_persons if n_usable is None else int(n_usable)
        total = self.total
        if not mean_mechanism(s.mechanism).basis.kernel and n > usable:
            # Persons without a usable curve, and those up to n_public, count at lo (as in memory).
            total = total + (n - usable) * float(s.bernstein_range[0])
        if self.tau is None and mean_mechanism(s.mechanism).basis.kernel and not self.max_norm > 0:
            raise DataError("every centred curve is zero: tau from the data would be 0")
        common = dict(grid_points=self.grid, unit_grid=self.unit_grid, weights=self.weights, n=n,
                      n_dropped=n_dropped, n_unusable=n_persons - usable, n_curves=self.n_rows, raw_sum=self.raw_sum,
                      raw_count=usable if s.bounds.person_column else None, offset=self.centre,
                      n_range_clipped=self.n_range_clipped, n_clipped=self.n_clipped, total=total)
        if not mean_mechanism(s.mechanism).basis.kernel:
            return MeanSums(**common)
        if self.tau is None:
            return MeanSums(tau=self.max_norm, data_dependent_flags=(DATA_DEPENDENT_TAU,), **common)
        return MeanSums(tau=self.tau, **common)


@dataclass
class PcaAccumulator:
    """sum_i w_i x_i x_i^T of the final coefficient rows (range-clipped, centred, / tau, clipped)."""

    settings: object  # PcaSettings, validated
    basis: object  # PcaBasis
    grid: np.ndarray
    weights: np.ndarray
    centre: np.ndarray | None = None
    gram: np.ndarray | None = None
    n_rows: int = 0
    n_clipped: int = 0
    n_range_clipped: int = 0
    max_norm: float = 0.0

    def __post_init__(self):
        from ..releases.pca import pca_tau  # lazy: scipy.linalg (via releases.pca), only for a streamed PCA

        self.gram = np.zeros((self.basis.p, self.basis.p))
        self._projector = self.weights[:, None] * self.basis.functions
        self.tau = pca_tau(self.settings, self.grid)

    def update(self, values: np.ndarray, row_weights: np.ndarray | None = None) -> None:
        from ..releases.pca import coefficient_matrix  # lazy: scipy.linalg (via releases.pca), only for a streamed PCA

        self.n_rows += values.shape[0]
        values, n_range = clip_values(values, self.settings.bounds.value_range)
        self.n_range_clipped += n_range
        if self.tau is None:
            # tau = the largest coefficient row (after range clip and centring): no row is clipped,
            # so X^T X = (sum c c^T) / tau^2 once tau is known.
            centred = values if self.centre is None else values - self.centre[None, :]
            X = centred @ self._projector
            self.max_norm = max(self.max_norm, float(np.sqrt(np.einsum("ij,ij->i", X, X)).max(initial=0.0)))
        else:
            X, clipped = coefficient_matrix(values, self.basis.functions, self.weights, self.tau, self.centre)
            self.n_clipped += clipped
        self.gram += X.T @ X if row_weights is None else (X * row_weights[:, None]).T @ X

    def merge(self, other: "PcaAccumulator") -> "PcaAccumulator":
        self.gram = self.gram + other.gram
        self.n_rows += other.n_rows
        self.n_clipped += other.n_clipped
        self.n_range_clipped += other.n_range_clipped
        self.max_norm = max(self.max_norm, other.max_norm)
        return self

    def sums(self, n_persons: int, flags=()):
        from ..releases.pca import PcaSums  # lazy: scipy.linalg (via releases.pca), only for a streamed PCA

        flags = list(flags)
        tau, gram = self.tau, self.gram
        if tau is None:
            if not self.max_norm > 0:
                raise DataError("every centred curve has zero coefficients: tau from the data would be 0")
            tau = self.max_norm
            gram = gram / (tau * tau)
            flags.append(DATA_DEPENDENT_TAU)
        return PcaSums(self.grid, self.basis, gram, mechanism_n(self.settings.bounds, n_persons), self.n_clipped,
                       tau, self.n_rows, self.n_range_clipped, tuple(flags))


@dataclass
class KdeAccumulator:
    """Box-clipped features: per-node counts (ICLP), bump sums (Gaussian, fixed h) or the points."""

    settings: object  # KdeSettings
    box: tuple
    grid_size: int
    mode: str  # "counts" | "bumps" | "points"
    n_rows: int = 0
    n_clipped: int = 0
    total: np.ndarray | None = None
    points: list = field(default_factory=list)
    person_sums: list = field(default_factory=list)  # (keys, sums (r, d), counts) per chunk

    def __post_init__(self):
        d = len(self.box)
        if self.mode in ("counts", "bumps"):
            self.total = np.zeros((self.grid_size,) * d)

    def clip(self, points: np.ndarray) -> tuple[np.ndarray, int]:
        x = check_points(points, len(self.box))
        lo = np.array([b[0] for b in self.box])
        hi = np.array([b[1] for b in self.box])
        outside = np.any((x < lo) | (x > hi), axis=1)
        return np.clip(x, lo, hi), int(outside.sum())

    def update(self, points: np.ndarray, keys: np.ndarray | None = None) -> None:
        import pandas as pd  # lazy: metadata and persons only; a plain streamed mean never loads pandas

        x, outside = self.clip(points)
        self.n_rows += x.shape[0]
        self.n_clipped += outside
        if keys is not None:
            frame = pd.DataFrame(x).groupby(keys).agg(["sum", "count"])
            d = x.shape[1]
            sums = np.column_stack([frame[(j, "sum")].to_numpy() for j in range(d)])
            self.person_sums.append((frame.index.to_numpy(), sums, frame[(0, "count")].to_numpy()))
            return
        self._add(x)

    def _add(self, x: np.ndarray) -> None:
        from ..mechanisms.hall_kde import hall_bump_sums  # lazy: density pieces, not for `release mean --help`

        if self.mode == "counts":
            self.total += node_counts(snap_to_grid(x, self.box, self.grid_size), self.grid_size)
        elif self.mode == "bumps":
            self.total += hall_bump_sums(x, kde_grids(self.box, self.grid_size), float(self.settings.bandwidth))
        else:
            self.points.append(x)

    def merge(self, other: "KdeAccumulator") -> "KdeAccumulator":
        self.n_rows += other.n_rows
        self.n_clipped += other.n_clipped
        if self.total is not None:
            self.total = self.total + other.total
        self.points.extend(other.points)
        self.person_sums.extend(other.person_sums)
        return self

    def sums(self, n_persons: int | None = None):
        """KdeSums of the person-level observations (already inside the box: n_clipped_box = 0,
        as for the in-memory path, which clips before planning; the count is in ``n_clipped``).

        ``n_persons``: the persons of the file (or the declared n_public); those without a usable
        curve are observed at the box centre, as in features.person_features."""
        import pandas as pd  # lazy: metadata and persons only; a plain streamed mean never loads pandas

        if self.n_rows and self.n_clipped == self.n_rows:
            limits = " x ".join(f"[{a:g}, {b:g}]" for a, b in self.box)
            raise DataError(f"all {self.n_rows} observations lie outside the box {limits}; choose a (public) box "
                            "that covers the range of the feature")
        if self.person_sums:
            keys = np.concatenate([k for k, _, _ in self.person_sums])
            sums = np.concatenate([s for _, s, _ in self.person_sums])
            counts = np.concatenate([c for _, _, c in self.person_sums])
            frame = pd.DataFrame(sums).groupby(keys).sum()
            total = pd.Series(counts).groupby(keys).sum().reindex(frame.index).to_numpy(dtype=float)
            averaged = frame.to_numpy() / total[:, None]  # inside the box: averages of box points
            self.person_sums = []
            self._add(averaged)
            n = averaged.shape[0]
        else:
            n = self.n_rows
        if n_persons is not None and n_persons > n:
            self._add(np.tile(box_centre(self.box), (n_persons - n, 1)))
            n = n_persons
        common = dict(box=self.box, grid_size=self.grid_size, n=n, n_clipped_box=0)
        if self.mode == "counts":
            return KdeSums(node_counts=self.total, **common)
        if self.mode == "bumps":
            return KdeSums(bump_sums=self.total, bandwidth=float(self.settings.bandwidth), **common)
        points = np.concatenate(self.points) if self.points else np.empty((0, len(self.box)))
        return KdeSums(points=points, **common)


def kde_mode(settings) -> str:
    """The sufficient statistic a chunk adds: the mechanism's registry entry decides (fdp_core/registry/kde.py)."""
    from ..registry.kde import kde_mechanism  # lazy: density pieces, not for `release mean --help`

    return kde_mechanism(settings.mechanism).stream_mode(settings)


def kde_features(chunk_fd: FunctionalData, features, value_range):
    """The per-curve features of a chunk, curves first clipped to the public value range
    (as fdp_core.data.features.person_features does)."""
    from dataclasses import replace as _replace

    from ..data.features import extract_features  # lazy: density pieces, not for `release mean --help`

    if value_range is not None and any(f.kind != "column" for f in features):
        chunk_fd = _replace(chunk_fd, data_matrix=clip_values(chunk_fd.data_matrix, value_range)[0])
    return extract_features(chunk_fd, features)[0]


# --------------------------------------------------------------------------- drivers

class Persons(NamedTuple):
    """The persons of a streamed file: ``n`` all of them (public, the mechanism's n before
    n_public), ``usable`` those with at least one usable curve (NON-PRIVATE: the others count
    as the centre, or the Bernstein lower bound, or the box centre, never as nobody)."""

    n: int
    usable: int


def persons_of(counts: pd.Series | None, n_rows: int, n_kept: int) -> Persons:
    if counts is None:
        return Persons(int(n_rows), int(n_kept))
    return Persons(int(counts.size), int(np.count_nonzero(counts.to_numpy() > 0)))


def _run(reader: BlockReader, person_column: str | None, consume, consume_columns=None) -> Persons:
    """Feed the chunks to ``consume(chunk, keys, weights)``; returns the persons of the file.
    ``consume_columns(columns, weights)``: a faster consumer of a chunk given as its columns, for
    the readers that decode columns (Parquet); it returns False, having added nothing, to have the
    chunk validated as a block and given to ``consume``."""
    counts = count_persons(reader, person_column) if person_column else None
    if consume_columns is not None and isinstance(reader, ParquetReader):
        from ..threads import single_blas_thread  # lazy: threadpoolctl, only when a Parquet file is streamed

        # The column pass makes ~2m dot products of one column each per chunk: BLAS threads only add hand-offs
        # (a library caller's two threads made a 10^6 x 93 person-column stream take ~1.7x the CPU under load).
        with single_blas_thread():
            return _run_columns(reader, person_column, counts, consume, consume_columns)
    n_kept = 0
    for chunk in reader.chunks():
        keys = weights = None
        if person_column:
            keys = person_keys(chunk.metadata, person_column, reader.name)
            weights = person_weights(keys, counts)
        consume(chunk, keys, weights)
        n_kept += chunk.values.shape[0]
    return persons_of(counts, file_rows(reader), n_kept)


def _run_columns(reader: "ParquetReader", person_column, counts, consume, consume_columns) -> Persons:
    """_run over a Parquet file's column chunks: a chunk of finite values is consumed as its
    columns (no block is built), any other is validated as a block, as by ``reader.chunks()``."""
    tally = Tally(reader.m)
    n_kept = 0
    for columns, meta in reader.column_chunks():
        if not columns[0].shape[0]:
            continue
        frame = keys = weights = None
        if person_column:
            frame = reader.metadata_frame(meta)
            keys = person_keys(frame, person_column, reader.name)
            with np.errstate(divide="ignore"):
                # A person without a usable row weighs inf here: their rows hold missing values, so the
                # chunk's sums are not finite and it goes to the block path, which drops those rows.
                weights = person_weights(keys, counts)
        if consume_columns(columns, weights):
            tally.add_finite(columns)
            n_kept += columns[0].shape[0]
            continue
        chunk = tally.add(np.column_stack(columns), reader.metadata_frame(meta) if frame is None else frame, reader)
        if chunk is None:
            continue
        if person_column:  # rows may have been dropped
            keys = person_keys(chunk.metadata, person_column, reader.name)
            weights = person_weights(keys, counts)
        consume(chunk, keys, weights)
        n_kept += chunk.values.shape[0]
    reader.report = tally.finish(reader.name, reader.missing)
    return persons_of(counts, file_rows(reader), n_kept)


def _with_fallback(reader: BlockReader, make, person_column):
    """Run ``make(reader)`` -> (accumulator, consume); on a chunk the fast reader refuses, the
    loader reads the file (naming the bad row, or accepting an unusual spelling) and the
    accumulator is rebuilt over it."""
    try:
        acc, *consumers = make(reader)
        n = _run(reader, person_column, *consumers)
        return reader, acc, n
    except Fallback:
        fd = reader.fallback()
        reader = _FdReader(fd, None)
        acc, *consumers = make(reader)
        n = _run(reader, person_column, *consumers)
        return reader, acc, n


def stream_mean_sums(source, settings, **options):
    """:class:`fdp_core.releases.mean.MeanSums` of ``source`` in one pass (two with a person column)."""
    settings = settings.validated()
    person_column = settings.bounds.person_column
    reader = open_source(source, **options)
    reader.meta_columns = (person_column,) if person_column else ()

    def make(r):
        acc = MeanAccumulator(settings, r.grid, r.unit_grid, r.weights)
        # The kernel means' sums are taken column by column from a Parquet file; Bernstein's lattice from blocks.
        columns = acc.update_columns if mean_mechanism(settings.mechanism).basis.kernel else None
        return acc, lambda chunk, keys, w: acc.update(chunk.values, w), columns

    reader, acc, persons = _with_fallback(reader, make, person_column)
    return acc.sums(persons.n, reader.report.n_dropped, persons.usable)


def stream_pca_sums(source, settings, *, released_mean=None, with_report: bool = False, **options):
    """:class:`fdp_core.releases.pca.PcaSums` of ``source`` (centring public, by a released mean, or none)."""
    from ..mechanisms.bingham import single_blas_thread  # lazy: scipy.linalg (via releases.pca), only for a streamed PCA
    from ..releases.pca import pca_basis, pca_centre  # lazy: scipy.linalg (via releases.pca), only for a streamed PCA

    settings = settings.validated()
    person_column = settings.bounds.person_column
    reader = open_source(source, **options)
    reader.meta_columns = (person_column,) if person_column else ()
    centre, flags = pca_centre(settings, reader.grid, released_mean)

    def make(r):
        acc = PcaAccumulator(settings, pca_basis(settings, r.unit_grid, r.weights), r.grid, r.weights, centre)
        return acc, lambda chunk, keys, w: acc.update(chunk.values, w)

    with single_blas_thread():  # many small p x p products; threads would only add overhead
        reader, acc, persons = _with_fallback(reader, make, person_column)
    sums = acc.sums(persons.n, flags)
    return (sums, reader.report.n_dropped) if with_report else sums


@dataclass(frozen=True)
class StreamedFeatures:
    """What stream_kde_sums returns: the sums and the analyst-view counts of the in-memory path."""

    sums: object  # KdeSums
    features: tuple
    n_dropped: int
    n_curves: int
    n_outside_box: int  # NON-PRIVATE
    n_unusable: int = 0  # NON-PRIVATE: persons of the file without a usable curve


def kde_feature_inputs(settings, feature) -> tuple[tuple, tuple, int]:
    """(features, box, grid size) of a streamed or Dask density release, checked against each other."""
    from ..data.features import parse_feature_spec  # lazy: density pieces, not for `release mean --help`

    features = parse_feature_spec(feature) if isinstance(feature, str) else tuple(feature)
    box = check_box(settings.box)
    if len(box) != len(features):
        raise ParameterError(f"a {len(features)}-d feature needs a box with {2 * len(features)} numbers, "
                             f"got {2 * len(box)}")
    return features, box, check_grid_size(settings.grid_size, len(box))


def stream_kde_sums(source, settings, feature, **options) -> StreamedFeatures:
    """Density sufficient statistics for a per-curve feature (see the module docstring)."""
    features, box, grid_size = kde_feature_inputs(settings, feature)
    person_column = getattr(settings, "person_column", None)
    value_range = getattr(settings, "value_range", None)
    reader = open_source(source, **options)
    reader.meta_columns = tuple(f.params[0] for f in features if f.kind == "column") + (
        (person_column,) if person_column else ())

    def make(r):
        acc = KdeAccumulator(settings, box, grid_size, kde_mode(settings))

        def consume(chunk, keys, weights):
            acc.update(kde_features(FunctionalData(r.grid, chunk.values, chunk.metadata), features, value_range),
                       keys)
        return acc, consume

    reader, acc, persons = _with_fallback(reader, make, person_column)
    n = mechanism_n_public(getattr(settings, "n_public", None), persons.n)
    return StreamedFeatures(acc.sums(n), features, reader.report.n_dropped, acc.n_rows, acc.n_clipped,
                            persons.n - persons.usable)


def mechanism_n_public(n_public, n_persons: int) -> int:
    return declared_n(n_public, n_persons)


__all__ = ["ENGINES", "AUTO_STREAM_BYTES", "MAX_SLOW_BYTES", "open_source", "stream_mean_sums", "stream_pca_sums",
           "stream_kde_sums", "choose_engine", "value_bytes_bound", "MeanAccumulator", "PcaAccumulator", "KdeAccumulator"]


def load_with_progress(source, progress=None, **options) -> FunctionalData:
    """Read ``source`` chunk by chunk into memory, calling ``progress(fraction, rows)`` after
    every chunk (the app's progress bar for big server-side files). Same validation and the
    same numbers as :func:`fdp_core.data.loading.load_curves`; memory is the numeric block plus one chunk."""
    import pandas as pd  # lazy: metadata and persons only; a plain streamed mean never loads pandas

    reader = open_source(source, **options)
    total = _row_estimate(reader)
    for _attempt in range(2):
        values, metas, rows = [], [], 0
        try:
            for chunk in reader.chunks():
                values.append(chunk.values)
                metas.append(chunk.metadata)
                rows += chunk.values.shape[0]
                if progress is not None:
                    progress(min(1.0, rows / total) if total else 0.0, rows)
            break
        except Fallback:
            reader = _FdReader(reader.fallback(), options.get("chunk_rows"))
    matrix = np.concatenate(values) if len(values) > 1 else values[0]
    meta = pd.concat(metas, ignore_index=True) if metas else pd.DataFrame()
    if progress is not None:
        progress(1.0, rows)
    return FunctionalData(reader.grid, matrix, meta, reader.report)


def _row_estimate(reader: BlockReader) -> int | None:
    if isinstance(reader, ParquetReader):
        return int(reader.pf.metadata.num_rows)
    if isinstance(reader, CsvReader):
        head = reader.src.head(1 << 20)
        lines = max(1, head.count(b"\n") - 1)
        return max(1, int(reader.src.size / (len(head) / (lines + 1))))
    if isinstance(reader, _FdReader):
        return reader.fd.n
    return None
