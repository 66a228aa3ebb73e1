"""A file's layout from its header: wide or long, its grid, and the cell and message helpers
the two readers share (METHODS.md section 17).

The cell-by-cell parser (fdp_core/data/loading.py) and the pyarrow fast path
(fdp_core/data/arrow_io.py, also the streaming engine's block reader) both read the header
here, so a header is accepted, refused and worded the same way by every path. Nothing here
imports a reader: loading.py and arrow_io.py both import this module, never each other's
internals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import DataError, ParameterError
from ..limits import MAX_FILE_COLUMNS, MAX_GRID_POINTS, grid_limit_message

_MISSING_TOKENS = {"", "na", "nan", "null", "none", "n/a", "-"}
_LONG_COLUMNS = ("id", "t", "value")


def parse_number(cell: str) -> float | None:
    """float value, NaN for a missing-value token, None if the cell is not numeric.

    Python's float() also reads '1_000' (digit grouping) as 1000; a data file's '1_000'
    is far more likely a typo or an export quirk than a number, so it is refused."""
    text = cell.strip()
    if text.lower() in _MISSING_TOKENS:
        return math.nan
    if "_" in text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def check_width(n_columns: int, name: str) -> None:
    """Refuse a file wider than limits.MAX_FILE_COLUMNS from its header alone."""
    if n_columns > MAX_FILE_COLUMNS:
        raise DataError(f"{name}: the header has {n_columns:,} columns; the limit is {MAX_FILE_COLUMNS:,} (a wide file "
                        f"holds at most {MAX_GRID_POINTS:,} grid points plus its metadata columns); if each column is "
                        "one curve, load it transposed")


def _is_long_header(header: list[str]) -> bool:
    return [h.strip().lower() for h in header] == list(_LONG_COLUMNS)


def clean_text(text, limit: int = 40) -> str:
    """User-supplied text for a message: control characters escaped, long text cut, so every
    message stays one line (the CLI prints exactly one line on stderr)."""
    text = str(text)
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def format_columns(cols: list[str], limit: int = 5) -> str:
    """The first ``limit`` column names for a message (cleaned), and how many more there are."""
    shown = ", ".join(clean_text(c) for c in cols[:limit])
    return shown + (f" and {len(cols) - limit} more" if len(cols) > limit else "")


def check_grid(grid: np.ndarray, labels: list[str], name: str) -> None:
    """Refuse a grid (from a header or a long file's t values) that is too short, too long,
    not finite, not strictly increasing or too wide to rescale to [0, 1]."""
    if grid.size < 2:
        raise DataError(f"{name}: a curve needs at least 2 grid points, found {grid.size}")
    if grid.size > MAX_GRID_POINTS:
        raise DataError(f"{name}: {grid_limit_message(grid.size)}")
    if not np.all(np.isfinite(grid)):
        raise DataError(f"{name}: grid point headers must be finite numbers")
    with np.errstate(over="ignore", invalid="ignore"):  # -1e308,1e308: the span overflows, refused below
        _check_increasing(grid, labels, name)


def ascending_grid(grid: np.ndarray, labels: list[str], name: str) -> tuple[np.ndarray, tuple]:
    """A wide header's grid in ascending order, and the permutation that sorts it.

    The grid is the file's public column headers, so reading its columns in another order
    reveals nothing: a grid written in descending (or any distinct) order is sorted, and every
    reader takes the value columns in the returned order (Layout.grid_columns), so each row's
    values follow their grid points. Returns ``(grid, ())`` when the header is already
    ascending (the common case costs one comparison pass). Duplicates and every other problem
    are refused by check_grid, as for an ascending header."""
    order: tuple = ()
    if grid.size > 1 and np.all(np.isfinite(grid)) and np.any(grid[1:] <= grid[:-1]):  # (no diff: it can overflow)
        index = np.argsort(grid, kind="stable")
        grid, labels = grid[index], [labels[k] for k in index]
        order = tuple(int(k) for k in index)
    check_grid(grid, labels, name)
    return grid, order


def _check_increasing(grid: np.ndarray, labels: list[str], name: str) -> None:
    if np.any(np.diff(grid) <= 0):
        # Name the culprits only now (a set keeps this linear in m even for huge headers).
        seen: set = set()
        dup = [lab for lab, g in zip(labels, grid) if g in seen or seen.add(g)]
        if dup:
            raise DataError(f"{name}: duplicate grid points in the header ({format_columns(dup)})")
        i = int(np.argmax(np.diff(grid) <= 0)) + 1
        raise DataError(f"{name}: grid points must be strictly increasing; column '{clean_text(labels[i])}' "
                        f"comes after '{clean_text(labels[i - 1])}'")
    span = grid[-1] - grid[0]
    if not np.isfinite(span) or np.any(np.diff((grid - grid[0]) / span) <= 0):
        raise DataError(f"{name}: the grid spans {clean_text(labels[0])} to {clean_text(labels[-1])}, too wide or too "
                        "unevenly spaced to rescale to [0, 1] in floating point; rescale the t values")


# --------------------------------------------------------------------------- layouts

@dataclass(frozen=True)
class LongColumns:
    """Which columns of a long file hold the curve id, the grid point t and the value."""

    id: str = "id"
    t: str = "t"
    value: str = "value"


def long_columns(id_column=None, t_column=None, value_column=None) -> LongColumns | None:
    """The long-file column mapping, or None when no column was named (header id,t,value)."""
    given = {"id_column": id_column, "t_column": t_column, "value_column": value_column}
    if all(v is None for v in given.values()):
        return None
    missing = [k for k, v in given.items() if v is None or not str(v).strip()]
    if missing:
        raise ParameterError(f"a long-file column mapping needs all three of id_column, t_column and value_column "
                             f"(missing: {', '.join(missing)})")
    names = [str(v).strip() for v in given.values()]
    if len(set(names)) < 3:
        raise ParameterError(f"id, t and value columns must be three different columns, got {', '.join(names)}")
    return LongColumns(*names)


@dataclass(frozen=True)
class Layout:
    """What the header says: a wide file (grid points as headers) or a long file."""

    kind: str  # "wide" | "long"
    header: tuple  # stripped column names
    first_numeric: int = 0  # wide: index of the first grid column (metadata before it)
    grid: np.ndarray | None = None  # wide, ascending
    long_index: tuple = ()  # long: positions of the id, t and value columns
    # wide: the grid columns' offsets (after first_numeric) in ascending grid order when the
    # header is not ascending (ascending_grid); () when it is, the file order.
    grid_order: tuple = ()

    @property
    def width(self) -> int:
        return len(self.header)

    @property
    def grid_columns(self) -> list[int]:
        """File positions of the grid columns, in ascending grid order: value j of every reader
        comes from column grid_columns[j] (so a descending header's rows are permuted alike)."""
        offsets = self.grid_order or range(self.width - self.first_numeric)
        return [self.first_numeric + k for k in offsets]

    def ascending(self, values: np.ndarray) -> np.ndarray:
        """Rows parsed in the file's column order (n, m), with columns in ascending grid order."""
        return values[:, list(self.grid_order)] if self.grid_order else values

    @property
    def meta_names(self) -> list[str]:
        return [h or f"column{i + 1}" for i, h in enumerate(self.header[:self.first_numeric])]


def read_layout(header: list[str], name: str, mapping: LongColumns | None, rows=()) -> Layout:
    """Read the header (shared by the fast and the cell-by-cell paths, so the messages agree)."""
    check_width(len(header), name)
    header = [h.strip() for h in header]
    if mapping is not None:
        lowered = [h.lower() for h in header]
        index = []
        for role, col in zip(("id", "t", "value"), (mapping.id, mapping.t, mapping.value)):
            if col in header:
                index.append(header.index(col))
            elif col.lower() in lowered:
                index.append(lowered.index(col.lower()))
            else:
                raise DataError(f"{name}: no column '{clean_text(col)}' for the {role} "
                                f"(columns: {format_columns(header, 8)})")
        return Layout("long", tuple(header), long_index=tuple(index))
    if _is_long_header(header):
        return Layout("long", tuple(header), long_index=(0, 1, 2))
    numeric = [parse_number(h) for h in header]
    first_numeric = next((i for i, v in enumerate(numeric) if v is not None and not math.isnan(v)), None)
    if first_numeric is None:
        hint = _transposed_hint(header, rows)
        raise DataError(f"{name}: no numeric column headers found{hint}. A wide CSV needs the grid points as "
                        "headers (e.g. 0, 0.25, 0.5); a long CSV needs the header id,t,value (or name its "
                        "columns: --id-column, --t-column, --value-column)")
    grid_labels = header[first_numeric:]
    bad_headers = [h for h, v in zip(grid_labels, numeric[first_numeric:]) if v is None or math.isnan(v)]
    if bad_headers:
        raise DataError(f"{name}: metadata columns must come before the grid columns; non-numeric "
                        f"header(s) {format_columns(bad_headers)} appear among the grid points")
    grid, order = ascending_grid(np.array([float(h) for h in grid_labels]), grid_labels, name)
    layout = Layout("wide", tuple(header), first_numeric, grid, grid_order=order)
    names = layout.meta_names
    repeated = sorted({h for h in names if names.count(h) > 1})
    if repeated:
        raise DataError(f"{name}: duplicate metadata column name(s) {format_columns(repeated)}; rename them")
    return layout


# --------------------------------------------------------------------------- transposed files

def transposed_rows(rows: list[list[str]]) -> bool:
    """Grid as rows, curves as columns: the first column holds increasing or decreasing numbers
    (the grid; a descending one is sorted on reading, as a descending header is), the header names
    the curves and the other cells are numbers."""
    if len(rows) < 3 or len(rows[0]) < 3 or any(len(r) != len(rows[0]) for r in rows):
        return False
    first = [parse_number(r[0]) for r in rows[1:]]
    if any(v is None or not math.isfinite(v) for v in first):
        return False
    steps = np.diff(first)
    if not (np.all(steps > 0) or np.all(steps < 0)):
        return False
    cells = [parse_number(c) for r in rows[1:] for c in r[1:]]
    return all(v is not None for v in cells) and any(not math.isnan(v) for v in cells)


def _transposed_hint(header, rows) -> str:
    rows = [list(header)] + [list(r) for r in rows]
    if transposed_rows(rows):
        return (" (the file looks transposed: grid points down the first column, one curve per column; "
                "load it with transpose=True or --transpose)")
    return ""


def metadata_frame(meta):
    """Metadata columns as read (strings), each turned numeric when every cell of it is a number."""
    import pandas as pd  # lazy: only where a DataFrame of metadata is built (not the command line's mean)

    for col in meta.columns:
        converted = pd.to_numeric(meta[col], errors="coerce")
        if converted.notna().all():
            meta[col] = converted
    return meta
