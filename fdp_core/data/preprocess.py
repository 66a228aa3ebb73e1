"""The per-record transform every release applies first (METHODS.md sections 11-12).

For each curve X_i (a row of a block), in this order:

1. clip pointwise into a public value range [lo, hi] (when one is declared);
2. centre: Y_i = X_i - c, c = (lo + hi)/2 or a public reference curve r(t) (no centring,
   c = 0, without a declared range: the historical behaviour);
3. clip in L2([0, 1]) to the public norm bound tau (:func:`fdp_core.data.loading.clip_to_ball`);
4. average each person's clipped curves into one (norm <= tau by convexity), so a person
   moves one row of the person-level data however many curves they have.

Every mechanism then runs unchanged on the person-level rows with n = number of persons,
and adds c back after the noise (post-processing). n is a *declared public* input: the
number of persons *in the file* (rows, or distinct ids of the person column), usable or not
(the literature's replace-one assumption: replacing a person keeps the count, whereas which
persons have a usable curve is data), or the user's ``n_public``. Persons without a usable
curve count as the centre curve (a zero row), which keeps the replace-one sensitivity
2 tau / n exact (METHODS.md 11).

The functions work on a block of curves plus their person codes and return sums and
counts, so a streaming pipeline can apply them chunk by chunk (group by person first: a
person's rows must be in one block for step 4, or their sums carried across blocks).
Nothing here is private by itself: the counts it returns (curves clipped, curves per
person) are for the analyst view only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .loading import FunctionalData, beyond_tau, check_regular_file, clip_to_ball, file_positions, l2_norms
from .meta_columns import column_values, metadata_view, raw_metadata
from ..errors import DataError, ParameterError
from .. import limits
from ..limits import MAX_N_PUBLIC_FACTOR
from ..params import check_bound_value

if TYPE_CHECKING:
    import pandas as pd

N_POLICY_DECLARED = "declared public"
N_POLICY_FIXED = "declared public (fixed by the user)"
UNIT_CURVE = "curve (every curve is one person)"
NOT_DP_SUGGESTION = "data-derived suggestion: NOT differentially private, do not commit with it"
MAX_REFERENCE_POINTS = limits.MAX_REFERENCE_POINTS


# --------------------------------------------------------------------------- public inputs

def parse_value_range(text: str) -> tuple[float, float]:
    """``"LO,HI"`` -> (lo, hi), checked (finite, lo < hi)."""
    parts = [p.strip() for p in str(text).split(",")]
    if len(parts) != 2:
        raise ParameterError(f"--value-range needs two numbers LO,HI (e.g. 0,1 or 60,200), got {text!r}")
    try:
        lo, hi = float(parts[0]), float(parts[1])
    except ValueError:
        raise ParameterError(f"--value-range needs two numbers LO,HI, got {text!r}") from None
    return check_value_range((lo, hi))


def check_value_range(value_range) -> tuple[float, float] | None:
    """None, or a (lo, hi) pair of finite numbers with lo < hi and a finite width."""
    if value_range is None:
        return None
    try:
        lo, hi = (float(v) for v in value_range)
    except (TypeError, ValueError):
        raise ParameterError(f"the value range must be two numbers (lo, hi), got {value_range!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ParameterError(f"the value range must be finite, got [{lo!r}, {hi!r}]")
    if not lo < hi:
        raise ParameterError(f"the value range needs lo < hi, got [{lo:g}, {hi:g}]")
    if not math.isfinite(hi - lo):
        raise ParameterError(f"the value range [{lo:g}, {hi:g}] is too wide to represent its width")
    check_bound_value("lo of the value range", lo)
    check_bound_value("hi of the value range", hi)
    return lo, hi


def check_reference(reference) -> tuple[tuple[float, float], ...] | None:
    """None, or a public reference curve as sorted (t, value) pairs (strictly increasing t, finite)."""
    if reference is None:
        return None
    try:
        pairs = tuple((float(t), float(v)) for t, v in reference)
    except (TypeError, ValueError):
        raise ParameterError("the reference curve must be a list of (t, value) pairs") from None
    if len(pairs) < 2:
        raise ParameterError(f"the reference curve needs at least 2 points, got {len(pairs)}")
    if len(pairs) > MAX_REFERENCE_POINTS:
        raise ParameterError(f"the reference curve has {len(pairs)} points; the limit is {MAX_REFERENCE_POINTS}")
    arr = np.array(pairs)
    if not np.all(np.isfinite(arr)):
        raise ParameterError("the reference curve has non-finite t or values")
    if np.any(np.diff(arr[:, 0]) <= 0):
        raise ParameterError("the reference curve's t values must be strictly increasing")
    return pairs


def load_reference(path, *, name: str | None = None) -> tuple[tuple[float, float], ...]:
    """A public reference curve from a CSV with columns t,value (e.g. a published norm curve).

    ``path`` is a file path, or an open binary/text file (an upload) named ``name`` in messages."""
    if hasattr(path, "read"):
        source, name = path, name or "the reference file"
    else:
        source = Path(path)
        name = name or source.name
        if "\x00" in str(source) or not source.exists():
            raise DataError(f"reference file not found: {path}")
        check_regular_file(source, "reference file")  # a pipe or a device would block the read
    import pandas as pd  # lazy: reference curves only (not on the command line's plain mean)

    try:
        table = pd.read_csv(source)
    except Exception as exc:  # pandas raises many types on malformed files
        raise DataError(f"{name} could not be read as CSV: {' '.join(str(exc).split())}") from None
    if [str(c).strip().lower() for c in table.columns[:2]] != ["t", "value"]:
        raise DataError(f"{name}: a reference curve needs the columns t,value, got "
                        f"{', '.join(map(str, table.columns))}")
    try:
        values = table.iloc[:, :2].to_numpy(dtype=float)
    except ValueError:
        raise DataError(f"{name}: the reference curve has non-numeric cells") from None
    try:
        return check_reference(values.tolist())
    except ParameterError as exc:
        raise DataError(f"{name}: {exc}") from None


def reference_on_grid(reference, grid_points) -> np.ndarray:
    """The reference curve interpolated linearly at the data grid; it must cover the grid's domain."""
    pairs = np.array(check_reference(reference))
    grid = np.asarray(grid_points, dtype=float)
    if pairs[0, 0] > grid[0] or pairs[-1, 0] < grid[-1]:
        raise ParameterError(f"the reference curve covers t in [{pairs[0, 0]:g}, {pairs[-1, 0]:g}] but the data "
                             f"grid spans [{grid[0]:g}, {grid[-1]:g}]: it must cover the whole domain")
    return np.interp(grid, pairs[:, 0], pairs[:, 1])


@dataclass(frozen=True)
class PublicBounds:
    """The public inputs of the per-record transform (all of them go into the record).

    ``value_range``: (lo, hi) in data units, or None (no pointwise clip, centre 0).
    ``reference``: optional public reference curve, (t, value) pairs; replaces the centre c.
    ``person_column``: metadata column grouping curves into persons, or None (curve = person).
    ``n_public``: a declared number of persons, or None (the number of persons in the file,
    usable or not, declared public).
    """

    value_range: tuple | None = None
    reference: tuple | None = None
    person_column: str | None = None
    n_public: int | None = None

    def validated(self) -> "PublicBounds":
        check_value_range(self.value_range)
        check_reference(self.reference)
        if self.reference is not None and self.value_range is None:
            raise ParameterError("a reference curve needs a public value range [lo, hi] too (--value-range)")
        if self.person_column is not None and (not isinstance(self.person_column, str) or not self.person_column):
            raise ParameterError(f"the person column must be a column name, got {self.person_column!r}")
        if self.n_public is not None:
            if isinstance(self.n_public, bool) or float(self.n_public) != int(self.n_public) or self.n_public < 1:
                raise ParameterError(f"n_public must be a positive integer, got {self.n_public!r}")
        return self

    @property
    def declared(self) -> bool:
        """True when a public value range is declared (what a commit from the app requires)."""
        return self.value_range is not None

    def centre(self, grid_points) -> np.ndarray:
        """c(t) on the grid: the reference curve, (lo + hi)/2, or 0 without a declared range."""
        grid = np.asarray(grid_points, dtype=float)
        if self.reference is not None:
            return reference_on_grid(self.reference, grid)
        if self.value_range is not None:
            lo, hi = check_value_range(self.value_range)
            return np.full(grid.size, lo / 2.0 + hi / 2.0)
        return np.zeros(grid.size)

    def default_tau(self, grid_points) -> float | None:
        """The norm bound the range implies: (hi - lo)/2, or max_t max(hi - r, r - lo) with a
        reference (the largest |Y(t)|, hence the largest L2 norm on the domain rescaled to [0, 1]);
        None without a declared range."""
        if self.value_range is None:
            return None
        lo, hi = check_value_range(self.value_range)
        if self.reference is None:
            return hi / 2.0 - lo / 2.0
        r = reference_on_grid(self.reference, grid_points)
        return float(np.max(np.maximum(hi - r, r - lo)))

    def n_policy(self) -> str:
        return N_POLICY_DECLARED if self.n_public is None else N_POLICY_FIXED

    def unit(self) -> str:
        return f"person (column '{self.person_column}')" if self.person_column else UNIT_CURVE

    def describe(self, grid_points=None) -> dict:
        """Publishable description: only public inputs."""
        out = {"unit_of_privacy": self.unit(), "person_column": self.person_column,
               "value_range": None if self.value_range is None else list(check_value_range(self.value_range)),
               "centre": ("public reference curve" if self.reference is not None else
                          "(lo + hi) / 2" if self.value_range is not None else "none (0)"),
               "reference_curve": None if self.reference is None else [list(p) for p in self.reference],
               "n_policy": self.n_policy()}
        if self.value_range is not None and self.reference is None:
            out["centre_value"] = float(self.centre([0.0, 1.0])[0])
        return out


def bounds_of(settings) -> PublicBounds:
    """The PublicBounds of a settings object with value_range / reference / person_column / n_public fields."""
    return PublicBounds(getattr(settings, "value_range", None), getattr(settings, "reference", None),
                        getattr(settings, "person_column", None), getattr(settings, "n_public", None)).validated()


# --------------------------------------------------------------------------- block transforms

def clip_values(block: np.ndarray, value_range) -> tuple[np.ndarray, int]:
    """Pointwise clip into [lo, hi]; returns (clipped block, rows with at least one value moved)."""
    block = np.asarray(block, dtype=float)
    if value_range is None:
        return block, 0
    lo, hi = check_value_range(value_range)
    clipped = np.clip(block, lo, hi)
    return clipped, int(np.sum(np.any(clipped != block, axis=1)))


def centre_block(block: np.ndarray, centre: np.ndarray) -> np.ndarray:
    return np.asarray(block, dtype=float) - np.asarray(centre, dtype=float)[None, :]


def person_codes(metadata, person_column: str | None, n_rows: int) -> tuple[np.ndarray, int]:
    """Integer person code per row (0..P-1, in order of first appearance) and P.

    Without a person column every row is its own person. A missing person id is refused:
    such a row could belong to anyone, and guessing would break the unit of privacy.
    ``metadata``: a DataFrame or the loader's MetaColumns (the same values, no pandas).
    """
    if person_column is None:
        return np.arange(int(n_rows)), int(n_rows)
    if person_column not in metadata.columns:
        available = ", ".join(map(str, metadata.columns)) or "none"
        raise DataError(f"the data have no column '{person_column}' to group curves by person "
                        f"(metadata columns: {available})")
    return _codes_of_ids(column_values(metadata, person_column), person_column, n_rows)


def _codes_of_ids(ids: np.ndarray, person_column: str, n_rows: int) -> tuple[np.ndarray, int]:
    """person_codes on the column's values as an object array."""
    # Python's str per id, not pandas' astype(str).str.strip(): the same labels, 25x faster on
    # Arrow-backed columns (7 ms -> 0.3 ms for 400 curves; every page rerun groups by person).
    labels = np.array([str(v).strip() for v in ids], dtype=object)
    blank = _missing(ids) | (labels == "")
    if blank.any():
        raise DataError(f"person column '{person_column}' is empty in {int(blank.sum())} row(s) (first: data row "
                        f"{int(np.flatnonzero(blank)[0]) + 1}); every curve needs a person id")
    codes, n_uniques = _first_appearance_codes(labels)
    if codes.size != n_rows:
        raise DataError(f"person column '{person_column}' has {codes.size} rows for {n_rows} curves")
    return codes, n_uniques


def _missing(ids: np.ndarray) -> np.ndarray:
    """pd.isna of an object array. Without pandas loaded no cell can be one of pandas' own missing
    markers (pd.NA, NaT), so None and float NaN are all there is to find."""
    if "pandas" in sys.modules:
        return np.asarray(sys.modules["pandas"].isna(ids), dtype=bool)
    return np.fromiter((v is None or (isinstance(v, float) and v != v) for v in ids.tolist()), bool, ids.size)


def _first_appearance_codes(labels: np.ndarray) -> tuple[np.ndarray, int]:
    """(code of each str label, 0..U-1 in order of first appearance; U): pd.factorize(sort=False)."""
    if "pandas" in sys.modules:  # already paid for: its hash table is the fastest
        codes, uniques = sys.modules["pandas"].factorize(labels, sort=False)
        return codes.astype(np.int64), int(len(uniques))
    seen: dict = {}
    codes = np.fromiter((seen.setdefault(label, len(seen)) for label in labels.tolist()), np.int64, labels.size)
    return codes, len(seen)


@dataclass(frozen=True)
class FilePersons:
    """The persons of the file, usable or not (METHODS.md 11: n counts persons, not usable curves).

    ``index``: for each usable row of the data, its person's position among all persons of the
    file (0..P-1, in order of first appearance in the file, dropped rows included); ``n_persons``
    (P): rows of the file without a person column, distinct ids with one. Both are public
    (replacing one person keeps the file's persons and their order); which persons have a usable
    curve is data (``n_unusable``, analyst view only).
    """

    index: np.ndarray
    n_persons: int

    @property
    def n_unusable(self) -> int:
        return int(self.n_persons - np.count_nonzero(self._present()))

    def compact(self) -> tuple[np.ndarray, np.ndarray]:
        """(code 0..U-1 of each usable row's person, file position of each of the U usable persons)."""
        # np.unique(index, return_inverse=True) for codes in 0..P-1, without np.unique (which imports
        # numpy.ma: ~7 ms of the command line's CPU)
        present = self._present()
        rank = np.cumsum(present, dtype=np.int64) - 1
        return rank[np.asarray(self.index, dtype=np.int64)], np.flatnonzero(present)

    def _present(self) -> np.ndarray:
        present = np.zeros(int(self.n_persons), dtype=bool)
        present[np.asarray(self.index, dtype=np.int64)] = True
        return present


def file_persons(fd: FunctionalData, person_column: str | None) -> FilePersons:
    """Every person of the file, including those whose curves were all dropped (missing values)."""
    positions, n_rows = file_positions(fd)
    if person_column is None:
        return FilePersons(positions, n_rows)
    metadata = metadata_view(fd)  # the loader's columns: no DataFrame built here
    person_codes(metadata, person_column, fd.n)  # the checks and messages of the usable rows
    dropped = raw_metadata(fd.report, "dropped_metadata")
    if n_rows == fd.n or dropped is None or person_column not in dropped.columns:
        codes, P = person_codes(metadata, person_column, fd.n)
        return FilePersons(codes, P)
    ids = np.empty(n_rows, dtype=object)
    ids[positions] = column_values(metadata, person_column)
    missing = np.ones(n_rows, dtype=bool)
    missing[positions] = False
    ids[missing] = column_values(dropped, person_column)
    codes, P = _codes_of_ids(ids, person_column, n_rows)
    return FilePersons(codes[positions], P)


def person_counts(codes: np.ndarray, n_persons: int) -> np.ndarray:
    return np.bincount(codes, minlength=n_persons)


def person_sums(block: np.ndarray, codes: np.ndarray, n_persons: int) -> np.ndarray:
    """(P, m) per-person sums of the rows of ``block`` (add blocks' sums to stream)."""
    block = np.asarray(block, dtype=float)
    out = np.zeros((n_persons, block.shape[1]))
    np.add.at(out, codes, block)
    return out


def person_average(block: np.ndarray, codes: np.ndarray, n_persons: int) -> np.ndarray:
    """(P, m) average of each person's rows. Rows of norm <= tau average to norm <= tau.

    Parameters
    ----------
    block : array (N, m)
        One row per curve.
    codes : array of int (N,)
        Each row's person, coded 0 .. P - 1 (every code used).
    n_persons : int
        P.

    Returns
    -------
    ndarray (P, m)

    Examples
    --------
    >>> import numpy as np
    >>> person_average(np.array([[1.0, 1.0], [3.0, 3.0], [5.0, 5.0]]), np.array([0, 0, 1]), 2).tolist()
    [[2.0, 2.0], [5.0, 5.0]]
    """
    counts = person_counts(codes, n_persons)
    if np.any(counts == 0):
        raise DataError("a person code has no curve (codes must be 0..P-1, each used)")
    return person_sums(block, codes, n_persons) / counts[:, None]


def person_row_weights(codes: np.ndarray, n_persons: int) -> np.ndarray:
    """w_i = 1 / (number of rows of row i's person): sum_i w_i x_i x_i^T = sum_p M_p (PCA)."""
    return 1.0 / person_counts(codes, n_persons)[codes]


# --------------------------------------------------------------------------- whole data sets

@dataclass(frozen=True)
class PreparedCurves:
    """Person-level, centred and clipped curves ready for a mean mechanism.

    ``values`` (U, m): each usable person's average clipped centred curve (norm <= tau).
    ``n``: the n the mechanism uses (P, the persons of the file, usable or not, or the declared
    ``n_public``); the mean is ``values.sum(0) / n``, so a person without a usable curve counts
    as the centre c (a zero row). Counts below ``n`` are for the analyst view only.
    """

    values: np.ndarray = field(repr=False)
    centre: np.ndarray = field(repr=False)
    tau: float | None
    n: int
    n_persons: int
    n_curves: int
    n_range_clipped: int
    n_norm_clipped: int
    curves_per_person: np.ndarray = field(repr=False)
    # File position (among all persons of the file) of each row of ``values``: folds and any
    # other per-person assignment use it, so a dropped curve never moves anyone else.
    person_index: np.ndarray | None = field(default=None, repr=False)
    n_unusable: int = 0  # NON-PRIVATE: persons of the file without a usable curve (analyst view)

    def mean(self) -> np.ndarray:
        """(1/n) sum_p Z_p: the centred, clipped, person-level mean (add ``centre`` back for data units)."""
        return self.values.sum(axis=0) / self.n


def _n_for(bounds: PublicBounds, n_persons: int) -> int:
    return declared_n(bounds.n_public, n_persons)


def mechanism_n(n_public: int | None, n_persons: int) -> int:
    """The n a mechanism uses: the persons of the file (usable or not), or the declared ``n_public``."""
    return declared_n(n_public, n_persons)


def declared_n(n_public, n_persons: int) -> int:
    """The n a mechanism divides by: the persons in the data, or the declared n_public, which
    may not be below them nor above limits.MAX_N_PUBLIC_FACTOR times them (persons without a
    curve count as zero curves, so a wild n_public silently shrinks the release towards 0)."""
    if n_public is None:
        return n_persons
    n = int(n_public)
    if n < n_persons:
        raise DataError(f"the declared number of persons n = {n} is smaller than the {n_persons} persons in the "
                        "file: declare the true public number")
    if n > MAX_N_PUBLIC_FACTOR * n_persons:
        raise DataError(f"the declared number of persons n = {n:,} is more than {MAX_N_PUBLIC_FACTOR} times the "
                        f"{n_persons} persons in the file; the {n - n_persons:,} persons without a curve would count "
                        "as zero curves and shrink the release towards 0: declare the true public number")
    return n


def range_clipped_centred(fd: FunctionalData, bounds: PublicBounds) -> tuple[np.ndarray, np.ndarray, int]:
    """(Y = clip(X, lo, hi) - c per curve, c on the grid, number of curves the range clip moved)."""
    clipped, n_range = clip_values(fd.data_matrix, bounds.value_range)
    centre = bounds.centre(fd.grid_points)
    return centre_block(clipped, centre), centre, n_range


def prepare_curves(fd: FunctionalData, bounds: PublicBounds, tau: float | None) -> PreparedCurves:
    """Steps 1-4 on a whole data set. ``tau=None`` skips the L2 clip (Bernstein clips values only)."""
    bounds = bounds.validated()
    Y, centre, n_range = range_clipped_centred(fd, bounds)
    n_norm = 0
    if tau is not None:
        clip = clip_to_ball(Y, fd.weights, tau)
        Y, n_norm = clip.values, clip.n_clipped
    persons = file_persons(fd, bounds.person_column)
    codes, positions = persons.compact()
    P = positions.size  # persons with a usable curve; the others count as the centre (a zero row)
    Z = Y
    if bounds.person_column is not None:
        Z = person_average(Y, codes, P)
        # Exact arithmetic keeps the average in the tau ball (convexity); clipping the computed
        # average again makes that hold in floating point too, whatever the rounding.
        if tau is not None:
            Z = clip_to_ball(Z, fd.weights, tau).values
        elif bounds.value_range is not None:
            Z = clip_values(Z, bounds.value_range)[0]
    return PreparedCurves(Z, centre, tau, _n_for(bounds, persons.n_persons), persons.n_persons, fd.n, n_range, n_norm,
                          person_counts(codes, P), positions, persons.n_unusable)


def data_tau(fd: FunctionalData, bounds: PublicBounds) -> float:
    """max_i ||clip(X_i) - c||: the largest norm the L2 clip actually sees (NOT DP: a teaching
    convenience; anything using it carries the data-dependent flag)."""
    Y, _, _ = range_clipped_centred(fd, bounds.validated())
    return float(np.max(l2_norms(Y, fd.weights)))


def n_norm_clipped(fd: FunctionalData, bounds: PublicBounds, tau: float) -> int:
    """How many curves the L2 clip at tau shrinks, measured after the range clip and centring (analyst view)."""
    Y, _, _ = range_clipped_centred(fd, bounds.validated())
    return int(np.sum(beyond_tau(l2_norms(Y, fd.weights), tau)))


def suggested_value_range(fd: FunctionalData) -> tuple[float, float]:
    """min and max of the data: a preview convenience only (NOT DP, see NOT_DP_SUGGESTION)."""
    return float(np.min(fd.data_matrix)), float(np.max(fd.data_matrix))


def repeated_id_columns(metadata: pd.DataFrame) -> list[str]:
    """Metadata columns that look like person ids: values repeat, yet there are many distinct ones
    (at least max(3, n/20)), so a grouping such as sex, case or visit number is not mistaken for one.
    ``metadata``: a DataFrame or the loader's MetaColumns (the Data page asks before pandas is loaded)."""
    out = []
    n = len(metadata)
    for column in metadata.columns:
        k = _distinct_labels(metadata, column, strip=True)
        if max(3, n // 20) <= k < n:
            out.append(str(column))
    return out


def _distinct_labels(metadata, column, strip: bool) -> int:
    """``metadata[column].astype(str)[.str.strip()].nunique()`` without pandas: distinct labels
    among the cells that are not missing (pandas' str dtype keeps a missing cell missing)."""
    values = column_values(metadata, column)
    present = values[~_missing(values)].tolist()
    return len({str(v).strip() for v in present} if strip else {str(v) for v in present})


def likely_person_column(metadata: pd.DataFrame) -> str | None:
    """The repeated column most likely to be a person id: a name like subject/id/person first,
    else the repeated column with the most distinct values. ``metadata``: a DataFrame or MetaColumns."""
    candidates = repeated_id_columns(metadata)
    if not candidates:
        return None
    hints = ("subject", "person", "patient", "participant", "individual", "id", "child", "station")
    for hint in hints:
        for column in candidates:
            if hint in column.lower():
                return column
    return max(candidates, key=lambda c: _distinct_labels(metadata, c, strip=False))


ID_NAME_HINTS = ("subject", "person", "patient", "participant", "individual", "child", "station", "id")


def identifier_columns(metadata: pd.DataFrame, person_column: str | None = None) -> set[str]:
    """Columns that identify rather than describe: the person column, columns that look like person
    ids (:func:`repeated_id_columns`), text columns with a distinct value in every row, and columns named
    like an id (``subject``, ``id``, ``child_id``, ...). Never a default covariate or density feature:
    an id's numeric code means nothing, and regressing on it clips every covariate row."""
    out = set(repeated_id_columns(metadata))
    if person_column:
        out.add(str(person_column))
    n = len(metadata)
    for column in metadata.columns:
        name = str(column).strip().lower()
        words = [w for w in name.replace("-", "_").replace(" ", "_").split("_") if w]
        text = not _numeric_dtype(metadata[column])  # a numeric column may be a measurement
        if text and n > 1 and metadata[column].astype(str).str.strip().nunique() == n:
            out.add(str(column))
        elif any(w in ID_NAME_HINTS for w in words):
            out.add(str(column))
    return out


def _numeric_dtype(series) -> bool:
    import pandas as pd  # lazy: metadata already in a DataFrame (pages, covariates), pandas is loaded

    return pd.api.types.is_numeric_dtype(series)


def curves_per_person(metadata: pd.DataFrame, person_column: str) -> pd.Series:
    """Distribution of curves per person: index = curves, value = number of persons with that many."""
    import pandas as pd  # lazy: pages only


    codes, P = person_codes(metadata, person_column, len(metadata))
    counts = person_counts(codes, P)
    return pd.Series(counts).value_counts().sort_index()
