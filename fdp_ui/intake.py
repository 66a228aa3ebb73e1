"""Intake of files the loader does not take as they are: long files with other column names
and transposed wide files (grid points as rows, one curve per column).

The loader (fdp_core.data.loading.load_curves) reads a wide CSV (grid points as headers) or a long
CSV with the header id,t,value. A file such as ``station,day,temp`` is long with other
names; a file with days as rows and stations as columns is a wide file transposed. This
module looks at a refused file and suggests what it is; once the user confirms, the loader
reads it with its own column mapping (``id_column``, ``t_column``, ``value_column``) or
``transpose=True``, so its validation applies unchanged. A t column of dates is the one
case rewritten here (dates become days since the earliest date). Suggestions come from
column names and types only.

The diagnosis runs on every refused upload, on the server, so it is bounded whatever the
file's shape (fdp_core/limits.py): it reads at most MAX_DIAGNOSE_BYTES (whole rows of
them), counts the header's columns before anything else, types at most
MAX_DIAGNOSE_COLUMNS columns in one vectorised pass over at most PREVIEW_ROWS rows, and
tries dates on a few candidate columns only. The loader validates the whole file once the
user confirms, so a preview is enough for a suggestion.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fdp_core.data.loading import looks_transposed as _core_looks_transposed
from fdp_core.errors import DataError
from fdp_core.limits import MAX_DIAGNOSE_BYTES, MAX_DIAGNOSE_COLUMNS

if TYPE_CHECKING:
    import pandas as pd

PREVIEW_BYTES = 1 << 16  # the delimiter sniffer's sample
PREVIEW_ROWS = 200  # rows typed by the long-file suggestion
DATE_CANDIDATES = 20  # columns tried as dates (each try parses text one value at a time)
DATE_SAMPLE = 50  # values tried per candidate
ID_WORDS = ("id", "person", "subject", "patient", "participant", "station", "site", "name", "case", "unit",
            "individual", "curve", "code", "key")
T_WORDS = ("t", "time", "day", "date", "age", "week", "month", "year", "hour", "minute", "second", "x",
           "position", "pos", "arg", "argvals", "grid", "doy", "step", "visit")
VALUE_WORDS = ("value", "y", "temp", "temperature", "measurement", "measure", "obs", "reading", "level", "fa",
               "height", "weight", "score", "amount", "rate", "count")


@dataclass(frozen=True)
class Diagnosis:
    kind: str  # "long" (long with other names), "transposed", or "unknown"
    columns: tuple[str, ...]
    suggestion: dict  # long: {"id", "t", "value"}; transposed: {"t": first column}
    message: str


def _delimiter(text: str) -> str:
    try:
        return csv.Sniffer().sniff(text[:PREVIEW_BYTES], delimiters=",;\t").delimiter
    except csv.Error:
        return ","


def read_table(raw: bytes, nrows: int | None = None) -> pd.DataFrame:
    """The file (its first ``nrows`` rows) as a table of strings (CSV/TSV/semicolon);
    DataError if it is not one."""
    import pandas as pd  # lazy: an upload's table only; the first Data page starts without pandas

    if b"\x00" in raw[:PREVIEW_BYTES]:
        raise DataError("not a text CSV file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    try:
        frame = pd.read_csv(io.StringIO(text), sep=_delimiter(text), dtype=str, skip_blank_lines=True,
                            keep_default_na=False, nrows=nrows)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, csv.Error) as exc:
        raise DataError(f"not a readable table: {str(exc).splitlines()[0]}") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame


def _numeric(series: pd.Series) -> pd.Series:
    import pandas as pd  # lazy: an upload's table only; the first Data page starts without pandas

    return pd.to_numeric(series.str.strip().replace("", np.nan), errors="coerce")


def _is_numeric(series: pd.Series) -> bool:
    values = series.str.strip()
    filled = values[values != ""]
    return len(filled) > 0 and _numeric(filled).notna().all()


def _numeric_columns(frame: pd.DataFrame) -> np.ndarray:
    """_is_numeric of every column in one pass over the cells (not one pandas call per column:
    that overhead, about 1 ms a column, is what made wide uploads hold the server)."""
    import pandas as pd  # lazy: an upload's table only; the first Data page starts without pandas

    cells = frame.to_numpy(dtype=object)
    if cells.size == 0:
        return np.zeros(frame.shape[1], dtype=bool)
    flat = pd.Series(cells.ravel(), dtype=object).str.strip()
    filled = (flat != "").to_numpy().reshape(cells.shape)
    numbers = pd.to_numeric(flat.where(flat != "", np.nan), errors="coerce").to_numpy(dtype=float).reshape(cells.shape)
    return filled.any(axis=0) & (~filled | ~np.isnan(numbers)).all(axis=0)


def _is_date(series: pd.Series) -> bool:
    import pandas as pd  # lazy: an upload's table only; the first Data page starts without pandas

    values = series.str.strip()
    filled = values[values != ""].head(DATE_SAMPLE)
    if len(filled) == 0 or _numeric(filled).notna().all():
        return False
    if not filled.str.contains(r"\d").all():
        return False
    return pd.to_datetime(filled, errors="coerce", format="mixed").notna().all()


def _name_score(name: str, words: tuple[str, ...]) -> int:
    tokens = [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w]
    if name.lower() in words:
        return 3
    return 2 if any(t in words for t in tokens) else 0


def suggest_long(frame: pd.DataFrame) -> dict:
    """Suggested id, t and value columns of a long file (names first, then types)."""
    columns = list(frame.columns)
    numeric = dict(zip(columns, _numeric_columns(frame)))
    # Dates: a few candidate columns only, t-like names first (each try parses value by value).
    others = sorted((c for c in columns if not numeric[c]), key=lambda c: -_name_score(c, T_WORDS))
    dates = {c: _is_date(frame[c]) for c in others[:DATE_CANDIDATES]}
    position = {c: i for i, c in enumerate(columns)}

    def best(candidates, words, exclude):
        pool = [c for c in candidates if c not in exclude]
        if not pool:
            return None
        return max(pool, key=lambda c: (_name_score(c, words), -position[c]))

    t = best([c for c in columns if numeric[c] or dates.get(c, False)], T_WORDS, ())
    repeats = {c for c, n_distinct in zip(columns, _distinct_counts(frame)) if n_distinct < len(frame)}
    id_pool = [c for c in columns if c != t and c in repeats]
    ident = best(id_pool or [c for c in columns if c != t], ID_WORDS, ())
    value = best([c for c in columns if numeric[c]], VALUE_WORDS, (t, ident))
    if t is not None and _name_score(t, T_WORDS) == 0 and value is not None and _name_score(value, T_WORDS) > 0:
        t, value = value, t
    return {"id": ident, "t": t, "value": value}


def _distinct_counts(frame: pd.DataFrame) -> list[int]:
    cells = frame.to_numpy(dtype=object)
    return [len(set(cells[:, j])) for j in range(cells.shape[1])]


def _preview(raw: bytes) -> bytes:
    """The first MAX_DIAGNOSE_BYTES of the file, cut after its last complete line; empty when
    even the header line is longer than that."""
    if len(raw) <= MAX_DIAGNOSE_BYTES:
        return raw
    head = raw[:MAX_DIAGNOSE_BYTES]
    end = head.rfind(b"\n")
    return head[:end + 1] if end >= 0 else b""


def _header(preview: bytes) -> list[str]:
    """The header's cells: the first non-blank row, parsed alone (the body is not read)."""
    text = preview.decode("utf-8-sig", errors="replace")
    try:
        rows = csv.reader(io.StringIO(text), delimiter=_delimiter(text))
        return [c.strip() for c in next((r for r in rows if any(c.strip() for c in r)), [])]
    except csv.Error:
        return []


def diagnose(raw: bytes) -> Diagnosis:
    """What a refused upload looks like (long with other names, transposed, or unknown); its
    cost is bounded by limits.MAX_DIAGNOSE_BYTES and MAX_DIAGNOSE_COLUMNS, whatever the file."""
    import pandas as pd  # lazy: an upload's table only; the first Data page starts without pandas

    preview = _preview(raw)
    if not preview:
        return Diagnosis("unknown", (), {}, f"the header line is longer than {MAX_DIAGNOSE_BYTES:,} bytes")
    header = _header(preview)
    if not header:
        return Diagnosis("unknown", (), {}, "no header line with a column name")
    if _core_looks_transposed(preview):
        columns = tuple(header)
        return Diagnosis("transposed", columns, {"t": columns[0]},
                         f"This looks transposed: '{columns[0]}' runs down the rows and each of the other "
                         f"{len(columns) - 1} columns looks like one curve. Transpose it so that each curve is "
                         "one row.")
    if len(header) > MAX_DIAGNOSE_COLUMNS:
        return Diagnosis("unknown", (), {}, f"{len(header):,} columns: too many to suggest a layout")
    try:
        frame = read_table(preview, nrows=PREVIEW_ROWS)
    except DataError as exc:
        return Diagnosis("unknown", (), {}, str(exc))
    columns = tuple(frame.columns)
    numeric_headers = pd.to_numeric(pd.Series(columns), errors="coerce").notna().sum()
    suggestion = suggest_long(frame)
    if len(columns) >= 3 and numeric_headers <= len(columns) // 2 and all(suggestion.values()) and len(set(suggestion.values())) == 3:
        return Diagnosis("long", columns, suggestion,
                         f"This looks like a long file (one row per observation) with the columns "
                         f"{', '.join(columns[:6])}{' ...' if len(columns) > 6 else ''}. Say which column holds the "
                         "curve (or person) id, the time point t and the measured value.")
    return Diagnosis("unknown", columns, {}, "")


def is_date_column(raw: bytes, column: str) -> bool:
    frame = read_table(_preview(raw), nrows=PREVIEW_ROWS)
    return column in frame.columns and not _is_numeric(frame[column]) and _is_date(frame[column])


def loader_options(raw: bytes, id_column: str, t_column: str, value_column: str) -> tuple[bytes, dict]:
    """What to hand the loader for a confirmed mapping: the file and load_curves' keyword
    arguments (the loader's own column mapping; a date t column is rewritten first)."""
    if len({id_column, t_column, value_column}) != 3:
        raise DataError("choose three different columns for id, t and value")
    if is_date_column(raw, t_column):
        return long_to_loader_csv(raw, id_column, t_column, value_column), {}
    return raw, {"id_column": id_column, "t_column": t_column, "value_column": value_column}


def long_to_loader_csv(raw: bytes, id_column: str, t_column: str, value_column: str) -> bytes:
    """The mapped columns as a long CSV with the loader's header id,t,value."""
    import pandas as pd  # lazy: an upload's table only; the first Data page starts without pandas

    if len({id_column, t_column, value_column}) != 3:
        raise DataError("choose three different columns for id, t and value")
    frame = read_table(raw)
    missing = [c for c in (id_column, t_column, value_column) if c not in frame.columns]
    if missing:
        raise DataError(f"no column named {missing[0]!r} in the file")
    times = frame[t_column]
    if not _is_numeric(times):
        # Dates: days since the earliest date of the whole file (one origin for every curve).
        stamps = pd.to_datetime(times.str.strip(), errors="coerce", format="mixed")
        if stamps.isna().any():
            raise DataError(f"the t column '{t_column}' has values that are neither numbers nor dates")
        times = ((stamps - stamps.min()).dt.total_seconds() / 86400).map(repr)
    out = pd.DataFrame({"id": frame[id_column], "t": times, "value": frame[value_column]})
    return out.to_csv(index=False).encode()
