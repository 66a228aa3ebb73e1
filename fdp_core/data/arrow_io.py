"""The fast path of the loader: pyarrow reads the numeric block in one C-level call.

Contract with the cell-by-cell parser of loading.py: the fast path only ever *accepts*, and
only what that parser would accept with the same numbers. Whenever a block holds anything
the two could read differently (a cell pyarrow refuses, a NaN spelt other than the
missing-value tokens, an infinite value, a row of nothing but empty cells, an over-long
field) it returns None and data.py re-reads the file cell by cell, which accepts it or
names the row and column at fault. So every message of the bad-input corpus is the one the
cell-by-cell parser gives.

The same block conversion serves the streaming engine (fdp_core/engines/stream.py), batch by batch.
"""

from __future__ import annotations

import itertools
import sys

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from ..errors import DataError
from .layouts import check_grid, metadata_frame, read_layout
from .meta_columns import MetaColumns

# Every spelling of the loader's missing-value tokens (case-insensitive there; pyarrow
# matches exactly, so list the case variants).
_TOKENS = ("", "na", "nan", "null", "none", "n/a", "-")
NULL_VALUES = sorted({"".join(chars) for token in _TOKENS
                      for chars in itertools.product(*[(c.lower(), c.upper()) for c in token])})
FIELD_LIMIT = 131072  # the csv module's field_size_limit: longer metadata cells go to the slow path
CSV_BLOCK_BYTES = 16 * 2**20


class Refused(Exception):
    """The fast path cannot vouch for this block: re-read it cell by cell."""


def csv_options(layout, delimiter: str, columns=None):
    """pyarrow read/parse/convert options for a file whose header is ``layout``."""
    names = [f"c{i}" for i in range(layout.width)]
    if layout.kind == "wide":
        types = {names[i]: (pa.string() if i < layout.first_numeric else pa.float64()) for i in range(layout.width)}
        include = names
    else:
        i_id, i_t, i_v = layout.long_index
        types = {names[i_id]: pa.string(), names[i_t]: pa.float64(), names[i_v]: pa.float64()}
        include = [names[i_id], names[i_t], names[i_v]]
    read = pacsv.ReadOptions(column_names=names, skip_rows=1, block_size=CSV_BLOCK_BYTES, use_threads=True)
    parse = pacsv.ParseOptions(delimiter=delimiter, newlines_in_values=True, ignore_empty_lines=True)
    convert = pacsv.ConvertOptions(column_types=types, null_values=NULL_VALUES, strings_can_be_null=False,
                                   quoted_strings_can_be_null=True, include_columns=columns or include)
    return read, parse, convert


def float_column(column, nan_is_missing: bool = False) -> np.ndarray:
    """Float64 values of an arrow column, nulls as NaN. For CSV text a NaN that was not a null
    (text such as 'nan(1)' that pyarrow reads and Python's float() does not) is refused;
    in Parquet a stored NaN is a missing value (``nan_is_missing``)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if not pa.types.is_floating(column.type):
        column = column.cast(pa.float64())
    values = _float64_values(column) if column.type == pa.float64() else column.to_numpy(zero_copy_only=False)
    if values.dtype != np.float64:
        values = values.astype(np.float64)
    if nan_is_missing:
        return values
    nan = int(np.count_nonzero(np.isnan(values)))
    if nan != column.null_count:
        raise Refused("NaN text")
    return values


def _float64_values(column: pa.Array) -> np.ndarray:
    """A float64 array's values, NaN at nulls: what ``to_numpy(zero_copy_only=False)`` gives, read
    from its buffers because pyarrow's to_numpy imports pandas (a third of the command line's CPU)."""
    validity, data = column.buffers()[:2]
    n, offset = len(column), column.offset
    values = np.frombuffer(data, dtype=np.float64, count=n, offset=8 * offset) if n else np.empty(0)
    if column.null_count:
        bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")[offset:offset + n]
        values = np.where(bits.astype(bool), values, np.nan)
    return values


def _in_python(column) -> bool:
    """Whether a string column is read in Python: on the command line's files (pandas not loaded,
    up to 200,000 rows) that costs less than importing pyarrow.compute and pandas (about 0.25 s of
    CPU); pyarrow's own kernels and to_numpy (through pandas) are faster on big ones."""
    return "pandas" not in sys.modules and len(column) <= 200_000


def _longest(column) -> int:
    """The most characters (code points) in a cell of a string column."""
    if _in_python(column):
        return max((len(cell) for cell in column.to_pylist() if cell is not None), default=0)
    import pyarrow.compute as pc  # lazy: about 0.05 s of import, not needed for small files

    return int(pc.max(pc.utf8_length(column)).as_py() or 0)


def _text_values(column) -> np.ndarray:
    """A string column's cells as an object array of str (None at nulls)."""
    if not _in_python(column):
        return column.to_numpy(zero_copy_only=False)
    values = np.empty(len(column), dtype=object)
    values[:] = column.to_pylist()
    return values


def _metadata(table, names, meta_names) -> MetaColumns:
    """The metadata cells as read (str); the loader's DataFrame is built from them only on access."""
    columns = {}
    for arrow_name, meta_name in zip(names, meta_names):
        col = table.column(arrow_name)
        if len(col) and _longest(col) > FIELD_LIMIT:
            raise Refused("field limit")
        columns[meta_name] = _text_values(col)
    return MetaColumns({name: columns[name] for name in meta_names}, table.num_rows)


def wide_block(table, layout, *, strict_inf: bool = True):
    """(values (n, m), metadata DataFrame) of a wide batch or table whose columns are c0..c{w-1}."""
    values, meta = wide_columns(table, layout, strict_inf=strict_inf)
    return values, meta.to_frame()


def wide_columns(table, layout, *, strict_inf: bool = True) -> tuple[np.ndarray, MetaColumns]:
    """wide_block with the metadata as MetaColumns (no pandas: the loader's DataFrame is lazy)."""
    n, m = table.num_rows, layout.grid.size
    values = np.empty((n, m), order="F")  # column by column: contiguous writes
    for j, column in enumerate(layout.grid_columns):  # ascending grid order, whatever the file's
        values[:, j] = float_column(table.column(f"c{column}"))
    if strict_inf and np.count_nonzero(np.isinf(values)):
        raise Refused("infinite value")  # the cell-by-cell parser words it (or a field-limit error first)
    if n and np.any(np.all(values == layout.grid, axis=1)):
        raise Refused("a row equal to the grid")  # maybe a repeated header line: the parser compares the text
    present = set(table.schema.names)
    kept = [i for i in range(layout.first_numeric) if f"c{i}" in present]  # the streaming reader may skip some
    meta = _metadata(table, [f"c{i}" for i in kept], [layout.meta_names[i] for i in kept])
    nan_rows = np.isnan(values)
    if nan_rows.any():
        empty = np.flatnonzero(nan_rows.all(axis=1))
        # A row without any value is a curve with every value missing (dropped, counted) only if
        # it names something in a metadata column; otherwise it may be a blank line (",,,"),
        # which the csv reader skips: let the cell-by-cell parser decide.
        if empty.size and (len(kept) < layout.first_numeric or not kept or not _all_named(meta, empty)):
            raise Refused("row without values")
    return values, meta


def _all_named(meta: MetaColumns, rows: np.ndarray) -> bool:
    """Whether each of ``rows`` has a non-blank cell in some metadata column (str of each converted
    cell, stripped, as the DataFrame's ``astype(str).str.strip()`` saw it)."""
    columns = [meta.column(name)[rows] for name in meta.names]
    return all(any(str(col[k]).strip() != "" for col in columns) for k in range(rows.size))


def long_arrays(table, layout) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ids (object, stripped), t, value) of a long batch or table."""
    names = [f"c{i}" for i in layout.long_index]
    ids = table.column(names[0])
    import pyarrow.compute as pc  # lazy: long files only (the wide reader's small files do without it)

    if len(ids) and int(pc.max(pc.utf8_length(ids)).as_py() or 0) > FIELD_LIMIT:
        raise Refused("field limit")
    ids = pc.utf8_trim_whitespace(ids).to_numpy(zero_copy_only=False)
    t = float_column(table.column(names[1]))
    value = float_column(table.column(names[2]))
    if not np.all(np.isfinite(t)) or np.count_nonzero(np.isinf(value)):
        raise Refused("missing t or infinite value")
    return ids, t, value


def long_matrix(ids, t, value):
    """Curves from long rows when every curve has the same grid and no (id, t) repeats;
    curves in order of first appearance (as the cell-by-cell parser's dict)."""
    if ids.size == 0:
        raise Refused("no rows")
    import pandas as pd  # lazy: long files only (the wide reader's metadata stays numpy)

    codes, uniques = pd.factorize(ids, sort=False)
    order = np.lexsort((t, codes))
    t_sorted, c_sorted = t[order], codes[order]
    if np.any((t_sorted[1:] == t_sorted[:-1]) & (c_sorted[1:] == c_sorted[:-1])):
        raise Refused("duplicate t")
    counts = np.bincount(codes)
    if np.any(counts != counts[0]):
        raise Refused("different grids")
    T = t_sorted.reshape(uniques.size, counts[0])
    if np.any(T != T[0]):
        raise Refused("different grids")
    values = value[order].reshape(uniques.size, counts[0])
    return T[0].copy(), values, pd.DataFrame({"id": list(uniques)})


def read_csv_block(src, layout, delimiter: str):
    """(grid, values, metadata, messages) or None when the cell-by-cell parser must decide."""
    read, parse, convert = csv_options(layout, delimiter)
    try:
        table = pacsv.read_csv(src.arrow_input(), read_options=read, parse_options=parse, convert_options=convert)
        if table.num_rows == 0:
            return None
        if layout.kind == "wide":
            values, meta = wide_columns(table, layout)
            return layout.grid, values, meta, ()
        ids, t, value = long_arrays(table, layout)
        del table
        grid, values, meta = long_matrix(ids, t, value)
        check_grid(grid, [f"{x:g}" for x in grid], src.name)
        return grid, values, meta, ()
    except (pa.ArrowException, Refused, ValueError, OverflowError):
        return None


# --------------------------------------------------------------------------- Parquet

def parquet_file(src) -> "pyarrow.parquet.ParquetFile":
    import pyarrow.parquet as pq  # lazy: ~0.05 s of CPU that a CSV release (the command line's usual case) never needs

    # No pre-buffering, small read buffer: otherwise pyarrow holds far more than the row
    # group being decoded (measured: 880 MB against 550 MB peak RSS streaming 500k x 93).
    return pq.ParquetFile(src.arrow_input(), pre_buffer=False, buffer_size=1 << 20)


def parquet_columns(pf) -> list[str]:
    """Data columns of a Parquet file (pandas' stored index columns left out, as pandas does)."""
    names = list(pf.schema_arrow.names)
    meta = pf.schema_arrow.pandas_metadata or {}
    index = {c for c in meta.get("index_columns", []) if isinstance(c, str)}
    return [c for c in names if c not in index]


def numeric_field(field) -> bool:
    """True for an arrow field of floats or integers (read straight into float64)."""
    return pa.types.is_floating(field.type) or pa.types.is_integer(field.type)


def parquet_layout(pf, name: str, mapping):
    """(Layout, arrow column names in file order) of a Parquet file; raises DataError on a
    bad header exactly as a CSV with the same header would."""
    columns = parquet_columns(pf)
    return read_layout([str(c) for c in columns], name, mapping), columns


def read_parquet_block(src, name: str, mapping):
    """(grid, values, metadata, messages) read straight from the Parquet columns, or a
    DataFrame of the file for the cell-by-cell parser (string-typed grid columns, ...)."""
    try:
        pf = parquet_file(src)
        columns = parquet_columns(pf)
        schema = pf.schema_arrow
        if pf.metadata.num_rows == 0:
            raise DataError(f"{name} has no rows")
        layout, columns = parquet_layout(pf, name, mapping)
        if layout.kind == "wide":
            grid_cols = columns[layout.first_numeric:]
            if all(numeric_field(schema.field(c)) for c in grid_cols):
                table = pf.read(columns=columns)
                renamed = table.rename_columns([f"c{i}" for i in range(len(columns))])
                del table
                meta_cols = [f"c{i}" for i in range(layout.first_numeric)]
                values = np.empty((renamed.num_rows, layout.grid.size), order="F")
                for j, column in enumerate(layout.grid_columns):
                    values[:, j] = float_column(renamed.column(f"c{column}"), True)
                meta = string_metadata(renamed.select(meta_cols), layout.meta_names)
                return layout.grid, values, meta, ()
        else:
            picked = [columns[i] for i in layout.long_index]
            if all(numeric_field(schema.field(c)) for c in picked[1:]):
                table = pf.read(columns=picked)
                ids = string_metadata(table.select([0]), ["id"])["id"].astype(str).str.strip().to_numpy(object)
                t = float_column(table.column(1), True)
                value = float_column(table.column(2), True)
                if np.all(np.isfinite(t)):
                    try:
                        grid, values, meta = long_matrix(ids, t, value)
                        check_grid(grid, [f"{x:g}" for x in grid], name)
                        return grid, values, meta, ()
                    except Refused:
                        pass
        return pf.read(columns=columns).to_pandas()
    except DataError:
        raise
    except Refused:
        return pf.read(columns=columns).to_pandas()
    except Exception as exc:  # pyarrow raises many types for corrupt files
        raise DataError(f"{name} could not be read as Parquet: {one_line(exc)}") from None


def string_metadata(table, meta_names):
    """Metadata columns as the cell-by-cell path sees them (str of each cell, missing -> "")."""
    import pandas as pd  # lazy: Parquet metadata goes through pandas (the CSV reader's stays numpy)

    if not meta_names:
        return pd.DataFrame(index=pd.RangeIndex(table.num_rows))
    frame = table.to_pandas()
    frame.columns = meta_names
    frame = frame.astype(object).where(frame.notna(), "").astype(str)
    return metadata_frame(frame)


def one_line(exc) -> str:
    """An exception's text on one line of at most 200 characters (pyarrow's can span many)."""
    text = " ".join(str(exc).split())
    return text if len(text) <= 200 else text[:197] + "..."
