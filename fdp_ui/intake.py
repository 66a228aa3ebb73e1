"""Intake of files the loader does not take as they are: long files with other column names
and transposed wide files (grid points as rows, one curve per column).

The loader (fdp_core.data.load_curves) reads a wide CSV (grid points as headers) or a long
CSV with the header id,t,value. A file such as ``station,day,temp`` is long with other
names; a file with days as rows and stations as columns is a wide file transposed. This
module looks at a refused (or suspicious) file, suggests what it is, and rewrites it into
the loader's layout once the user confirms: the loader's own validation then applies
unchanged. Suggestions come from column names and types only.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fdp_core.errors import DataError

PREVIEW_BYTES = 1 << 16
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


def read_table(raw: bytes) -> pd.DataFrame:
    """The file as a table of strings (CSV/TSV/semicolon); DataError if it is not one."""
    if b"\x00" in raw[:PREVIEW_BYTES]:
        raise DataError("not a text CSV file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    try:
        frame = pd.read_csv(io.StringIO(text), sep=_delimiter(text), dtype=str, skip_blank_lines=True,
                            keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, csv.Error) as exc:
        raise DataError(f"not a readable table: {str(exc).splitlines()[0]}") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame


def _numeric(series: pd.Series) -> pd.Series:
    return pd.to_numeric(series.str.strip().replace("", np.nan), errors="coerce")


def _is_numeric(series: pd.Series) -> bool:
    values = series.str.strip()
    filled = values[values != ""]
    return len(filled) > 0 and _numeric(filled).notna().all()


def _is_date(series: pd.Series) -> bool:
    values = series.str.strip()
    filled = values[values != ""].head(200)
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
    numeric = {c: _is_numeric(frame[c]) for c in columns}
    dates = {c: (not numeric[c]) and _is_date(frame[c]) for c in columns}

    def best(candidates, words, exclude):
        pool = [c for c in candidates if c not in exclude]
        if not pool:
            return None
        return max(pool, key=lambda c: (_name_score(c, words), -pool.index(c)))

    t = best([c for c in columns if numeric[c] or dates[c]], T_WORDS, ())
    id_pool = [c for c in columns if c != t and frame[c].nunique() < len(frame)]
    ident = best(id_pool or [c for c in columns if c != t], ID_WORDS, ())
    value = best([c for c in columns if numeric[c]], VALUE_WORDS, (t, ident))
    if t is not None and _name_score(t, T_WORDS) == 0 and value is not None and _name_score(value, T_WORDS) > 0:
        t, value = value, t
    return {"id": ident, "t": t, "value": value}


def looks_transposed(frame: pd.DataFrame) -> bool:
    """Grid points as rows: a first column of strictly increasing numbers (or dates) and
    numeric columns after it whose headers are names, not grid points."""
    if frame.shape[1] < 3 or frame.shape[0] < 2:
        return False
    first, rest = frame.columns[0], list(frame.columns[1:])
    header_numbers = pd.to_numeric(pd.Series(rest), errors="coerce")
    if header_numbers.notna().all():
        return False  # numeric headers: a wide file, or a transposed one with numbered curves (asked separately)
    grid = _grid_values(frame[first])
    if grid is None or not np.all(np.diff(grid) > 0):
        return False
    return sum(_is_numeric(frame[c]) for c in rest) >= max(2, len(rest) // 2)


def _grid_values(series: pd.Series) -> np.ndarray | None:
    if _is_numeric(series):
        values = _numeric(series)
        return None if values.isna().any() else values.to_numpy(dtype=float)
    if _is_date(series):
        days = pd.to_datetime(series.str.strip(), errors="coerce", format="mixed")
        return None if days.isna().any() else ((days - days.min()).dt.total_seconds() / 86400).to_numpy()
    return None


def diagnose(raw: bytes) -> Diagnosis:
    try:
        frame = read_table(raw)
    except DataError as exc:
        return Diagnosis("unknown", (), {}, str(exc))
    columns = tuple(frame.columns)
    if looks_transposed(frame):
        return Diagnosis("transposed", columns, {"t": columns[0]},
                         f"This looks transposed: '{columns[0]}' runs down the rows and each of the other "
                         f"{len(columns) - 1} columns looks like one curve. Transpose it so that each curve is one "
                         "row.")
    numeric_headers = pd.to_numeric(pd.Series(columns), errors="coerce").notna().sum()
    suggestion = suggest_long(frame)
    if len(columns) >= 3 and numeric_headers <= len(columns) // 2 and all(suggestion.values()) and len(set(suggestion.values())) == 3:
        return Diagnosis("long", columns, suggestion,
                         f"This looks like a long file (one row per observation) with the columns "
                         f"{', '.join(columns[:6])}{' ...' if len(columns) > 6 else ''}. Say which column holds the "
                         "curve (or person) id, the time point t and the measured value.")
    return Diagnosis("unknown", columns, {}, "")


def _t_text(series: pd.Series) -> pd.Series:
    """t values as numbers in text; dates become days since the first date."""
    if _is_numeric(series):
        return series.str.strip()
    values = _grid_values(series)
    if values is None:
        raise DataError(f"the t column '{series.name}' has values that are neither numbers nor dates")
    return pd.Series([repr(float(v)) for v in values], index=series.index)


def long_to_loader_csv(raw: bytes, id_column: str, t_column: str, value_column: str) -> bytes:
    """The mapped columns as a long CSV with the loader's header id,t,value."""
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


def transpose_to_wide_csv(raw: bytes) -> bytes:
    """Rows = grid points, columns = curves  ->  one row per curve (id, then the grid)."""
    frame = read_table(raw)
    first = frame.columns[0]
    grid = _t_text(frame[first])
    body = frame.drop(columns=[first])
    wide = pd.DataFrame(body.to_numpy().T, columns=list(grid))
    wide.insert(0, "id", [str(c) for c in body.columns])
    return wide.to_csv(index=False).encode()
