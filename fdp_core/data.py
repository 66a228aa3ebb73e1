"""Functional data in: loading, validation, missing values, clipping (METHODS.md section 0).

A data set is n curves on one common grid. The L2 inner product used everywhere is the
trapezoid rule on the grid rescaled to [0, 1] (``unit_grid``), so tau and every norm are
in L2([0, 1]); the original grid (ages, positions along a tract) is kept for display.

Parsing is done cell by cell with the csv module rather than pandas so every problem can
be reported with its row and column: pandas silently pads short rows with NaN and turns
stray text into object columns.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import DataError
from .kernels import trapezoid_weights
from .limits import MAX_ABS_VALUE, MAX_GRID_POINTS
from .params import check_choice, check_positive

MAX_FILE_BYTES = 200 * 1024 * 1024
MAX_REGRID_CELLS = 2_000_000  # long format on mixed grids: n_curves x union-grid size (16 MB per copy)
MISSING_POLICIES = ("drop", "interpolate")
_MISSING_TOKENS = {"", "na", "nan", "null", "none", "n/a", "-"}
_LONG_COLUMNS = ("id", "t", "value")
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


@dataclass(frozen=True)
class FunctionalData:
    """n curves observed on a common, strictly increasing grid."""

    grid_points: np.ndarray
    data_matrix: np.ndarray
    metadata: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)
    report: LoadReport = field(default_factory=lambda: LoadReport("array", 0))

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
        a, b = self.domain
        return (self.grid_points - a) / (b - a)

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
        return int(np.sum(self._norms > check_positive("tau", tau)))

    def clipped_mean(self, tau: float) -> np.ndarray:
        """Mean of the curves after clipping each to the L2 ball of radius tau.

        Equal to clip_to_ball(...).values.mean(axis=0), computed as one matrix-vector
        product with the cached norms instead of materialising the clipped matrix.
        """
        factor = _clip_factors(self._norms, check_positive("tau", tau))
        return factor @ self.data_matrix / self.n


# --------------------------------------------------------------------------- clipping

@dataclass(frozen=True)
class ClipResult:
    values: np.ndarray
    n_clipped: int
    norms: np.ndarray  # norms before clipping


def l2_norms(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    return np.sqrt(np.maximum((np.asarray(values) ** 2) @ np.asarray(weights), 0.0))


def _clip_factors(norms: np.ndarray, tau: float) -> np.ndarray:
    factor = np.minimum(1.0, tau / np.where(norms > 0, norms, np.inf))
    # Rounding can leave tau * (1 + 1e-16); shrink by one ulp so the bound holds exactly.
    return np.where(factor < 1.0, np.nextafter(factor, 0.0), factor)


def clip_to_ball(values: np.ndarray, weights: np.ndarray, tau: float) -> ClipResult:
    """X_i <- X_i min(1, tau / ||X_i||): after this every curve has L2 norm <= tau."""
    tau = check_positive("tau", tau)
    norms = l2_norms(values, weights)
    return ClipResult(values * _clip_factors(norms, tau)[:, None], int(np.sum(norms > tau)), norms)


def data_derived_tau(fd: FunctionalData) -> float:
    """max_i ||X_i||: a teaching convenience only. Anything using it must carry
    ``DATA_DEPENDENT_TAU`` in its flags."""
    return float(fd.norms().max())


# --------------------------------------------------------------------------- parsing

def _parse_number(cell: str) -> float | None:
    """float value, NaN for a missing-value token, None if the cell is not numeric."""
    text = cell.strip()
    if text.lower() in _MISSING_TOKENS:
        return math.nan
    try:
        return float(text)
    except ValueError:
        return None


def _read_bytes(source) -> tuple[bytes, str]:
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.exists():
            raise DataError(f"file not found: {path}")
        if path.stat().st_size > MAX_FILE_BYTES:
            raise DataError(f"{path.name} is {path.stat().st_size / 2**20:.0f} MB; the limit is "
                            f"{MAX_FILE_BYTES // 2**20} MB")
        return path.read_bytes(), path.name
    if isinstance(source, (bytes, bytearray)):
        raw, name = bytes(source), "uploaded data"
    else:  # file-like (Streamlit UploadedFile, BytesIO, open file)
        name = getattr(source, "name", "uploaded file")
        size = getattr(source, "size", None)
        if size is not None and size > MAX_FILE_BYTES:
            raise DataError(f"{name} is {size / 2**20:.0f} MB; the limit is {MAX_FILE_BYTES // 2**20} MB")
        if hasattr(source, "seek"):
            source.seek(0)
        raw = source.read(MAX_FILE_BYTES + 1)
        if isinstance(raw, str):
            raw = raw.encode("utf-8")
    if len(raw) > MAX_FILE_BYTES:
        raise DataError(f"{name} exceeds the {MAX_FILE_BYTES // 2**20} MB limit")
    return raw, name


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


def _csv_rows(text: str, name: str) -> list[list[str]]:
    if not text.strip():
        raise DataError(f"{name} is empty")
    sample = text[:65536]
    try:
        dialect = csv.Sniffer().sniff(sample, delimiters=",;\t")
        delimiter = dialect.delimiter
    except csv.Error:
        delimiter = ","
    try:
        rows = [row for row in csv.reader(io.StringIO(text), delimiter=delimiter) if any(c.strip() for c in row)]
    except csv.Error as exc:
        raise DataError(f"{name} is not valid CSV: {exc}") from None
    if not rows:
        raise DataError(f"{name} is empty")
    return rows


def _is_long_header(header: list[str]) -> bool:
    return [h.strip().lower() for h in header] == list(_LONG_COLUMNS)


def _clean(text, limit: int = 40) -> str:
    """User-supplied text for a message: control characters escaped, long text cut, so every
    message stays one line (the CLI prints exactly one line on stderr)."""
    text = str(text)
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _fmt_cols(cols: list[str], limit: int = 5) -> str:
    shown = ", ".join(_clean(c) for c in cols[:limit])
    return shown + (f" and {len(cols) - limit} more" if len(cols) > limit else "")


def _check_grid(grid: np.ndarray, labels: list[str], name: str) -> None:
    if grid.size < 2:
        raise DataError(f"{name}: a curve needs at least 2 grid points, found {grid.size}")
    if grid.size > MAX_GRID_POINTS:
        raise DataError(f"{name}: the grid has {grid.size} points; the limit is {MAX_GRID_POINTS} (the "
                        "eigendecomposition grows as m^3): thin the grid, e.g. keep one point "
                        f"in {-(-grid.size // MAX_GRID_POINTS)}, or average into bins")
    if not np.all(np.isfinite(grid)):
        raise DataError(f"{name}: grid point headers must be finite numbers")
    if np.any(np.diff(grid) <= 0):
        # Name the culprits only now (a set keeps this linear in m even for huge headers).
        seen: set = set()
        dup = [lab for lab, g in zip(labels, grid) if g in seen or seen.add(g)]
        if dup:
            raise DataError(f"{name}: duplicate grid points in the header ({_fmt_cols(dup)})")
        i = int(np.argmax(np.diff(grid) <= 0)) + 1
        raise DataError(f"{name}: grid points must be strictly increasing; column '{_clean(labels[i])}' "
                        f"comes after '{_clean(labels[i - 1])}'")
    span = grid[-1] - grid[0]
    if not np.isfinite(span) or np.any(np.diff((grid - grid[0]) / span) <= 0):
        raise DataError(f"{name}: the grid spans {_clean(labels[0])} to {_clean(labels[-1])}, too wide or too "
                        "unevenly spaced to rescale to [0, 1] in floating point; rescale the t values")


def _parse_wide(rows: list[list[str]], name: str) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    header = [h.strip() for h in rows[0]]
    numeric = [_parse_number(h) for h in header]
    first_numeric = next((i for i, v in enumerate(numeric) if v is not None and not math.isnan(v)), None)
    if first_numeric is None:
        raise DataError(f"{name}: no numeric column headers found. A wide CSV needs the grid points as "
                        "headers (e.g. 0, 0.25, 0.5); a long CSV needs the header id,t,value")
    grid_labels = header[first_numeric:]
    bad_headers = [h for h, v in zip(grid_labels, numeric[first_numeric:]) if v is None or math.isnan(v)]
    if bad_headers:
        raise DataError(f"{name}: metadata columns must come before the grid columns; non-numeric "
                        f"header(s) {_fmt_cols(bad_headers)} appear among the grid points")
    grid = np.array([float(h) for h in grid_labels])
    _check_grid(grid, grid_labels, name)
    body = rows[1:]
    if not body:
        raise DataError(f"{name} has a header but no data rows")
    width = len(header)
    values = np.empty((len(body), grid.size))
    for r, row in enumerate(body, start=2):  # file line numbers: header is line 1
        if len(row) != width:
            raise DataError(f"{name}: row {r} has {len(row)} fields but the header has {width} (ragged rows)")
        cells = row[first_numeric:]
        parsed = [_parse_number(c) for c in cells]
        bad = [grid_labels[j] for j, v in enumerate(parsed) if v is None]
        if bad:
            raise DataError(f"{name}: row {r} has {len(bad)} non-numeric cell(s) (column(s) {_fmt_cols(bad)})")
        values[r - 2] = parsed
    meta_names = [h or f"column{i + 1}" for i, h in enumerate(header[:first_numeric])]
    repeated = sorted({h for h in meta_names if meta_names.count(h) > 1})
    if repeated:
        raise DataError(f"{name}: duplicate metadata column name(s) {_fmt_cols(repeated)}; rename them")
    meta = pd.DataFrame([row[:first_numeric] for row in body], columns=meta_names)
    for col in meta.columns:
        converted = pd.to_numeric(meta[col], errors="coerce")
        if converted.notna().all():
            meta[col] = converted
    return grid, values, meta


def _parse_long(rows: list[list[str]], name: str) -> tuple[np.ndarray, np.ndarray, pd.DataFrame, int]:
    body = rows[1:]
    if not body:
        raise DataError(f"{name} has a header but no data rows")
    records: dict[str, dict[float, float]] = {}
    for r, row in enumerate(body, start=2):
        if len(row) != 3:
            raise DataError(f"{name}: row {r} has {len(row)} fields; a long CSV has exactly id,t,value")
        curve_id, t_cell, v_cell = row[0].strip(), _parse_number(row[1]), _parse_number(row[2])
        if t_cell is None or math.isnan(t_cell) or not math.isfinite(t_cell):
            raise DataError(f"{name}: row {r} has a non-numeric or missing t ({_clean(row[1])!r})")
        if v_cell is None:
            raise DataError(f"{name}: row {r} has a non-numeric value ({_clean(row[2])!r})")
        curve = records.setdefault(curve_id, {})
        if t_cell in curve:
            raise DataError(f"{name}: curve '{_clean(curve_id)}' has two values at t = {t_cell:g} (row {r})")
        curve[t_cell] = v_cell
    grids = {tuple(sorted(c)) for c in records.values()}
    n_regridded = 0
    if len(grids) == 1:
        grid = np.array(next(iter(grids)))
        values = np.array([[records[i][t] for t in grid] for i in records])
    else:
        # Curves on different grids: interpolate linearly onto the union of their points
        # inside the range every curve covers (no extrapolation).
        lo = max(min(c) for c in records.values())
        hi = min(max(c) for c in records.values())
        if not lo < hi:
            raise DataError(f"{name}: the curves' t ranges do not overlap, so there is no common grid")
        grid = np.array(sorted({t for c in records.values() for t in c if lo <= t <= hi}))
        if len(records) * grid.size > MAX_REGRID_CELLS:
            raise DataError(f"{name}: the {len(records)} curves are observed at {grid.size} different t values in "
                            f"all; interpolating every curve onto all of them would need {len(records) * grid.size:,} "
                            "cells. Resample the curves onto a common grid first")
        values = np.empty((len(records), grid.size))
        for k, curve in enumerate(records.values()):
            ts = np.array(sorted(curve))
            vs = np.array([curve[t] for t in ts])
            ok = np.isfinite(vs)
            values[k] = np.interp(grid, ts[ok], vs[ok]) if ok.sum() >= 2 else np.nan
        n_regridded = len(records)
    _check_grid(grid, [f"{t:g}" for t in grid], name)
    meta = pd.DataFrame({"id": list(records)})
    return grid, values, meta, n_regridded


def _handle_missing(grid: np.ndarray, values: np.ndarray, policy: str) -> tuple[np.ndarray, np.ndarray, int]:
    """Returns (values, keep mask, n_interpolated). Interior gaps can be interpolated
    (linearly in t); a curve missing its first or last point cannot (no extrapolation) and
    is dropped."""
    missing = np.isnan(values)
    keep = ~missing.any(axis=1)
    n_interp = 0
    if policy == "interpolate":
        values = values.copy()
        for i in np.flatnonzero(~keep):
            ok = ~missing[i]
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
    if np.isinf(values).any():
        r, c = np.argwhere(np.isinf(values))[0]
        raise DataError(f"{name}: curve {r + 1} (data row {r + 1}) has an infinite value at t = {grid[c]:g}; "
                        "remove or fix infinite values")
    _check_magnitudes(grid, values, name)
    n_read = values.shape[0]
    n_missing_cells = int(np.isnan(values).sum())
    values, keep, n_interp = _handle_missing(grid, values, missing)
    n_dropped = int((~keep).sum())
    if keep.sum() == 0:
        hint = "" if missing == "interpolate" else " (try interpolating interior gaps)"
        raise DataError(f"{name}: all {n_read} curves have missing values and were dropped{hint}")
    values, meta = values[keep], meta[keep].reset_index(drop=True)
    if values.shape[0] < 2:
        raise DataError(f"{name}: only {values.shape[0]} complete curve; a mean, density or PCA "
                        "release needs at least 2 curves")
    if np.all(np.ptp(values, axis=0) == 0):
        raise DataError(f"{name}: all {values.shape[0]} curves are identical; there is nothing to estimate")
    if np.all(np.ptp(values, axis=1) == 0):
        raise DataError(f"{name}: every curve is constant over t, so these are scalars, not functions; "
                        "use a numeric column on the density page instead")
    messages = list(extra_messages)
    if n_dropped:
        messages.append(f"{n_dropped} curve(s) with missing values dropped")
    if n_interp:
        messages.append(f"{n_interp} curve(s) had interior gaps filled by linear interpolation")
    report = LoadReport(name, n_read, n_dropped, n_interp, n_missing_cells,
                        tuple(int(i) + 1 for i in np.flatnonzero(~keep)), tuple(messages))
    return FunctionalData(grid, values, meta, report)


def _load_parquet(raw: bytes, name: str, missing: str) -> FunctionalData:
    try:
        frame = pd.read_parquet(io.BytesIO(raw))
    except Exception as exc:  # pyarrow raises many types for corrupt files
        raise DataError(f"{name} could not be read as Parquet: {exc}") from None
    if frame.empty:
        raise DataError(f"{name} has no rows")
    header = [str(c) for c in frame.columns]
    cells = frame.astype(object).where(frame.notna(), "").astype(str).values.tolist()
    return _from_rows([header] + cells, name, missing)


def _from_rows(rows, name, missing) -> FunctionalData:
    if _is_long_header(rows[0]):
        grid, values, meta, n_regridded = _parse_long(rows, name)
        extra = ([f"{n_regridded} curves were on different grids and were interpolated onto a common "
                  f"grid of {grid.size} points"] if n_regridded else [])
        return _finish(grid, values, meta, name, missing, extra)
    grid, values, meta = _parse_wide(rows, name)
    return _finish(grid, values, meta, name, missing)


def load_curves(source, *, name: str | None = None, missing: str = "drop") -> FunctionalData:
    """Load curves from a path, bytes or an uploaded file object.

    Formats: wide CSV (numeric headers are grid points; leading non-numeric columns are
    metadata), long CSV (header ``id,t,value``), Parquet (either layout). ``missing``:
    "drop" incomplete curves (default) or "interpolate" interior gaps; both are counted
    in ``report``. Raises DataError with a specific message on bad input.
    """
    check_choice("missing", missing, MISSING_POLICIES)
    raw, default_name = _read_bytes(source)
    name = _clean(name or default_name, 80)
    if raw[:4] == b"PAR1" or name.lower().endswith((".parquet", ".pq")):
        return _load_parquet(raw, name, missing)
    return _from_rows(_csv_rows(_decode(raw, name), name), name, missing)


def from_arrays(grid, values, *, name: str = "array", metadata: pd.DataFrame | None = None) -> FunctionalData:
    """Wrap arrays (e.g. a simulation) with the same validation as a file."""
    grid = np.asarray(grid, dtype=float)
    labels = [f"{t:g}" for t in grid]
    _check_grid(grid, labels, name)
    values = np.atleast_2d(np.asarray(values, dtype=float))
    meta = metadata if metadata is not None else pd.DataFrame(index=range(values.shape[0]))
    return _finish(grid, values, meta, name, "drop")


def to_wide_csv(fd: FunctionalData) -> str:
    """Wide CSV text of a data set (metadata first), readable by :func:`load_curves`."""
    frame = pd.DataFrame(fd.data_matrix, columns=[repr(float(t)) for t in fd.grid_points])
    if not fd.metadata.empty:
        frame = pd.concat([fd.metadata.reset_index(drop=True), frame], axis=1)
    return frame.to_csv(index=False)


def with_values(fd: FunctionalData, values: np.ndarray) -> FunctionalData:
    """Same grid and bookkeeping, new values (e.g. after clipping)."""
    return replace(fd, data_matrix=np.asarray(values, dtype=float))
