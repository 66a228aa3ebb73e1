"""Small wide CSV files read without pyarrow: the same numbers, the same metadata (issue 42).

Importing pyarrow costs more CPU than reading a file of about a megabyte in Python, so the loader
tries this reader first on small wide files. It follows the contract of arrow_io.py's fast
path: it only ever *accepts*, and only files the pyarrow reader accepts, with bit-for-bit the
same values and the same metadata cells. Anything it cannot vouch for (a quote character, a
lone carriage return, a cell that is not a plain decimal number or a missing-value token, a
ragged row, an infinite value, a row without values, a row equal to the grid, an over-long
metadata cell, text that is not UTF-8) returns None and the file goes the usual way (pyarrow,
then the cell-by-cell parser), which accepts it or names the problem. So no message changes.

Why the numbers agree: a cell is accepted only when it matches the decimal grammar below
(digits, one optional point, an optional exponent: no spaces, '_', 'inf' or 'nan'), and for
those Python's float() and pyarrow's parser are both correctly rounded (tests/test_small_csv.py
compares them bit for bit on random decimal strings). The missing-value tokens are those of
arrow_io.NULL_VALUES (exact spellings), read as NaN by both.
"""

from __future__ import annotations

import math
import re

import numpy as np

from .meta_columns import MetaColumns

# Files up to this size are read here; larger ones by pyarrow, whose import (~35 ms of CPU) then
# pays off. Measured (issue 42): float() costs ~30 ms per MB of 17-digit decimals against pyarrow's
# ~6 ms per MB, so the two break even near 1.2 MB (shorter numbers favour this reader).
SMALL_CSV_BYTES = 2**20

# The loader's missing-value tokens in every case spelling (arrow_io.NULL_VALUES, built the same
# way; a test checks that the two sets are equal, since importing arrow_io would import pyarrow).
_TOKENS = ("", "na", "nan", "null", "none", "n/a", "-")


def _case_variants(token: str) -> set[str]:
    variants = {""}
    for char in token:
        variants = {v + c for v in variants for c in {char.lower(), char.upper()}}
    return variants


NULL_VALUES = frozenset().union(*(_case_variants(t) for t in _TOKENS))
FIELD_LIMIT = 131072  # arrow_io.FIELD_LIMIT: longer metadata cells are refused there, so here too

# One way only to match each number (the fraction is optional as a whole): "[0-9]+\.?[0-9]*" could
# split a run of digits in quadratically many ways, so a long digit run ending in another character
# held the interpreter for hours before failing (a denial of service on the shared server).
_NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"


def _cells_pattern(delimiter: str) -> re.Pattern:
    """One row's grid cells (joined by the delimiter): each a plain decimal or a missing-value token."""
    nulls = "|".join(re.escape(t) for t in sorted(NULL_VALUES, key=len, reverse=True) if t)
    cell = f"(?:{_NUMBER}|{nulls}|)"
    sep = re.escape(delimiter)
    return re.compile(f"{cell}(?:{sep}{cell})*")


def _text(raw: bytes) -> str | None:
    """The body (lines after the header) as text, or None when this reader cannot vouch for it."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    end = text.find("\n")
    if end < 0:
        return None
    body = text[end + 1:]
    if "\r" in body:
        body = body.replace("\r\n", "\n")
        if "\r" in body:  # a lone carriage return: a line break to pyarrow, not to this split
            return None
    if '"' in body:  # quoted cells: pyarrow's quoting rules decide
        return None
    return body


def read_wide(raw: bytes, layout, delimiter: str):
    """(grid, values (n, m), MetaColumns, ()) of a small wide CSV, as arrow_io.read_csv_block gives
    them, or None when the usual readers must decide."""
    if layout.kind != "wide" or layout.width < 2 or len(delimiter) != 1:
        return None
    body = _text(raw)
    if body is None:
        return None
    width, first = layout.width, layout.first_numeric
    sep = re.escape(delimiter)
    # A row whose grid cells hold only digits, '.', 'e', 'E', signs and delimiters needs no
    # grammar check: float() accepts such a cell exactly when it is a plain decimal (its other
    # spellings, 'inf', 'nan', spaces, '_', other scripts' digits, need other characters), and
    # refuses '' and '-' (missing-value tokens). Other rows are checked cell by cell.
    unusual = re.compile(f"[^0-9.eE+\\-{sep}]").search
    check = None  # the full grammar, compiled (~1 ms) only for a file with such a row
    numbers: list[float] = []
    meta_rows: list[list[str]] = []
    for line in body.split("\n"):
        if not line:
            continue  # empty lines are skipped (pyarrow's ignore_empty_lines)
        cells = line.split(delimiter)
        if len(cells) != width:
            return None
        if first:
            meta = cells[:first]
            if max(map(len, meta)) > FIELD_LIMIT:
                return None
            meta_rows.append(meta)
            grid_text = line[sum(map(len, meta)) + first:]
        else:
            grid_text = line
        if unusual(grid_text) is not None:
            check = check or _cells_pattern(delimiter).fullmatch
            if check(grid_text) is None:
                return None
        row = cells[first:]
        try:
            parsed = list(map(float, row))
        except ValueError:  # a missing-value token, or a cell such as '1e' or '+' (the usual readers name it)
            try:
                parsed = [math.nan if cell in NULL_VALUES else float(cell) for cell in row]
            except ValueError:
                return None
        numbers.extend(parsed)
    return _block(layout, numbers, meta_rows)


def _block(layout, numbers: list[float], meta_rows: list[list[str]]):
    m = layout.width - layout.first_numeric  # grid columns (read_wide: layout.width >= 2)
    n = len(numbers) // m
    if n == 0:
        return None
    block = np.array(numbers, dtype=np.float64).reshape(n, m)
    if np.count_nonzero(np.isinf(block)):
        return None
    values = np.empty((n, m), order="F")  # as the pyarrow reader builds it: column by column
    for j, column in enumerate(layout.grid_columns):  # ascending grid order, whatever the file's
        values[:, j] = block[:, column - layout.first_numeric]
    if np.any(np.all(values == layout.grid, axis=1)):
        return None  # maybe a repeated header line: the cell-by-cell parser words it
    if np.any(np.all(np.isnan(values), axis=1)):
        return None  # a row without values: the pyarrow reader decides whether it names a curve
    columns = {}
    for k, name in enumerate(layout.meta_names):
        cells = np.empty(n, dtype=object)
        cells[:] = [row[k] for row in meta_rows]
        columns[name] = cells
    return layout.grid, values, MetaColumns(columns, n), ()
