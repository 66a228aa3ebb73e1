"""Per-curve scalar features for density estimation (METHODS.md section 4).

A KDE needs one scalar (or one pair) per individual. For curves it must be a *fixed,
data-independent* functional, so that one individual's feature depends on that
individual's curve only (then replacing one curve moves one KDE observation and the
KDE sensitivities apply):

==========================  ======================================================
spec                        feature of the curve X on its grid
==========================  ======================================================
``value:T0``                X(T0), linear interpolation between grid points
``mean:U:V``                (1 / (V - U)) * integral_U^V X(t) dt
``l2norm``                  ||X|| = sqrt(sum_j w_j X(t_j)^2)
``max``                     max_j X(t_j)
``column:NAME``             the numeric metadata column NAME of the uploaded file
==========================  ======================================================

T0, U and V are in the units of the **original** grid (ages, arc length, ...). The
average integrates the piecewise-linear interpolant of X over [U, V] exactly
(trapezoid rule on the original grid with U and V inserted as nodes). The L2 norm
uses :attr:`FunctionalData.weights`, i.e. the trapezoid rule on the grid rescaled to
[0, 1]: it is the same norm as the clipping bound tau of the mean and PCA pages, so a
norm of 1 means the same thing everywhere (on a domain of length b - a it equals the
original-units norm divided by sqrt(b - a)).

A 2-d feature is two specs joined by a comma, e.g. ``"value:0.25,value:0.75"``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import DataError, ParameterError
from ..releases.box import box_centre, clip_to_box
from .preprocess import PublicBounds, clip_values, file_persons, mechanism_n, person_average

FEATURE_KINDS = ("value", "mean", "l2norm", "max", "column")

_USAGE = ("a feature is one of value:T0, mean:U:V, l2norm, max or column:NAME "
          "(two of them joined by ',' for a 2-d density)")


@dataclass(frozen=True)
class Feature:
    """One per-curve functional. ``params`` holds (T0,), (U, V), () or (NAME,)."""

    kind: str
    params: tuple = ()

    @property
    def spec(self) -> str:
        """Canonical spec string (parses back to an equal Feature)."""
        if self.kind in ("value", "mean"):
            return ":".join([self.kind] + [repr(float(p)) for p in self.params])
        if self.kind == "column":
            return f"column:{self.params[0]}"
        return self.kind

    @property
    def label(self) -> str:
        """Plain-language name for axes and reports."""
        if self.kind == "value":
            return f"X(t = {self.params[0]:g})"
        if self.kind == "mean":
            return f"average of X over [{self.params[0]:g}, {self.params[1]:g}]"
        if self.kind == "l2norm":
            return "L2 norm of X (grid rescaled to [0, 1])"
        if self.kind == "max":
            return "maximum of X over the grid"
        return str(self.params[0])


def _number(text: str, what: str, spec: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise ParameterError(f"feature '{spec}': {what} must be a number, got {text!r}") from None
    if not math.isfinite(x):
        raise ParameterError(f"feature '{spec}': {what} must be finite, got {text!r}")
    return x


def parse_feature(spec: str) -> Feature:
    """Parse one spec such as ``"value:0.5"`` or ``"column:age"``."""
    if not isinstance(spec, str) or not spec.strip():
        raise ParameterError(f"empty feature; {_USAGE}")
    spec = spec.strip()
    kind, _, rest = spec.partition(":")
    kind = kind.strip().lower()
    parts = [p.strip() for p in rest.split(":")] if rest else []
    if kind == "value":
        if len(parts) != 1:
            raise ParameterError(f"feature '{spec}': write value:T0, e.g. value:0.5")
        return Feature("value", (_number(parts[0], "T0", spec),))
    if kind == "mean":
        if len(parts) != 2:
            raise ParameterError(f"feature '{spec}': write mean:U:V, e.g. mean:0.2:0.8")
        u, v = _number(parts[0], "U", spec), _number(parts[1], "V", spec)
        if not u < v:
            raise ParameterError(f"feature '{spec}': the interval needs U < V, got [{u:g}, {v:g}]")
        return Feature("mean", (u, v))
    if kind in ("l2norm", "max"):
        if parts:
            raise ParameterError(f"feature '{spec}': {kind} takes no argument")
        return Feature(kind)
    if kind == "column":
        name = rest.strip()
        if not name:
            raise ParameterError(f"feature '{spec}': write column:NAME, e.g. column:age")
        return Feature("column", (name,))
    raise ParameterError(f"unknown feature '{kind}' in '{spec}'; {_USAGE}")


def parse_feature_spec(spec: str) -> tuple[Feature, ...]:
    """Parse a 1-d spec (``"max"``) or a 2-d spec (``"value:0.25,value:0.75"``)."""
    if not isinstance(spec, str) or not spec.strip():
        raise ParameterError(f"empty feature; {_USAGE}")
    features = tuple(parse_feature(part) for part in spec.split(","))
    if len(features) > 2:
        raise ParameterError(f"feature '{spec}' has {len(features)} parts; a density is 1-d or 2-d "
                             "(at most two features joined by ',')")
    return features


def _check_inside(t: float, grid: np.ndarray, spec: str) -> None:
    lo, hi = float(grid[0]), float(grid[-1])
    if not lo <= t <= hi:
        raise ParameterError(f"feature '{spec}': t = {t:g} is outside the curves' domain [{lo:g}, {hi:g}]")


def interpolation_weights(grid: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Matrix P (len(t), m) with P @ X = linear interpolant of X at the points t."""
    grid = np.asarray(grid, dtype=float)
    t = np.atleast_1d(np.asarray(t, dtype=float))
    right = np.clip(np.searchsorted(grid, t, side="right"), 1, grid.size - 1)
    left = right - 1
    frac = np.clip((t - grid[left]) / (grid[right] - grid[left]), 0.0, 1.0)
    P = np.zeros((t.size, grid.size))
    rows = np.arange(t.size)
    P[rows, left] += 1.0 - frac
    P[rows, right] += frac
    return P


def average_weights(grid: np.ndarray, u: float, v: float) -> np.ndarray:
    """Vector a (m,) with a @ X = (1/(v-u)) integral_u^v of the linear interpolant of X.

    The interpolant is linear between the nodes {u, grid points in (u, v), v}, so the
    trapezoid rule on those nodes integrates it exactly.
    """
    grid = np.asarray(grid, dtype=float)
    inner = grid[(grid > u) & (grid < v)]
    nodes = np.concatenate([[u], inner, [v]])
    gaps = np.diff(nodes)
    w = np.zeros(nodes.size)
    w[:-1] += gaps / 2.0
    w[1:] += gaps / 2.0
    return (w @ interpolation_weights(grid, nodes)) / (v - u)


def _column_values(metadata: pd.DataFrame, name: str, spec: str) -> np.ndarray:
    if name not in metadata.columns:
        available = ", ".join(map(str, metadata.columns)) or "none"
        raise DataError(f"feature '{spec}': the data has no column '{name}' (metadata columns: {available})")
    raw = metadata[name]
    values = pd.to_numeric(raw, errors="coerce")
    bad = values.isna() & raw.notna() & (raw.astype(str).str.strip() != "")
    if bad.any():
        first = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(f"feature '{spec}': column '{name}' is not numeric ({int(bad.sum())} non-numeric "
                        f"value(s), e.g. {raw.iloc[first]!r} in data row {first + 1})")
    missing = values.isna().to_numpy()
    if missing.any():
        rows = ", ".join(str(i + 1) for i in np.flatnonzero(missing)[:5])
        raise DataError(f"feature '{spec}': column '{name}' has {int(missing.sum())} missing value(s) "
                        f"(data rows {rows}{'...' if missing.sum() > 5 else ''}); fill or remove them first")
    out = values.to_numpy(dtype=float)
    if not np.all(np.isfinite(out)):
        raise DataError(f"feature '{spec}': column '{name}' has infinite values")
    return out


def feature_values(data, feature: Feature) -> np.ndarray:
    """The feature of every curve of ``data`` (a FunctionalData), shape (n,)."""
    spec = feature.spec
    grid = np.asarray(data.grid_points, dtype=float)
    X = np.asarray(data.data_matrix, dtype=float)
    if feature.kind == "column":
        return _column_values(data.metadata, feature.params[0], spec)
    if feature.kind == "value":
        t0 = feature.params[0]
        _check_inside(t0, grid, spec)
        out = X @ interpolation_weights(grid, [t0])[0]
    elif feature.kind == "mean":
        u, v = feature.params
        _check_inside(u, grid, spec)
        _check_inside(v, grid, spec)
        out = X @ average_weights(grid, u, v)
    elif feature.kind == "l2norm":
        out = np.sqrt(np.maximum((X**2) @ np.asarray(data.weights, dtype=float), 0.0))
    elif feature.kind == "max":
        out = X.max(axis=1)
    else:  # Feature built by hand with a bad kind
        raise ParameterError(f"unknown feature '{feature.kind}'; {_USAGE}")
    if not np.all(np.isfinite(out)):
        raise DataError(f"feature '{spec}' is not finite for {int(np.sum(~np.isfinite(out)))} curve(s)")
    return out


def extract_features(data, spec) -> tuple[np.ndarray, tuple[Feature, ...]]:
    """Evaluate a spec string (or parsed features) on ``data``.

    Returns (points, features): points has shape (n,) for one feature, (n, 2) for two.
    """
    features = parse_feature_spec(spec) if isinstance(spec, str) else tuple(spec)
    columns = [feature_values(data, f) for f in features]
    points = columns[0] if len(columns) == 1 else np.column_stack(columns)
    return points, features


def features_label(features: tuple[Feature, ...]) -> str:
    """Canonical spec of parsed features (parses back to the same features)."""
    return ",".join(f.spec for f in features)


# --------------------------------------------------------------------------- one observation per person

@dataclass(frozen=True)
class PersonFeatures:
    """The KDE observations, one per person (METHODS.md 11): each curve's feature is clipped to
    the public box, then a person's clipped features are averaged (inside the box by convexity).

    ``points`` is what the mechanism sees (n = number of persons). The counts are computed
    from the data: analyst view only.
    """

    points: np.ndarray
    features: tuple
    n_curves: int
    n_persons: int
    n_outside_box: int  # NON-PRIVATE: curves whose feature lay outside the box
    n_unusable: int = 0  # NON-PRIVATE: persons of the file without a usable curve (at the box centre)


def person_features(data, spec, box, *, person_column: str | None = None, value_range=None,
                    n_public: int | None = None) -> PersonFeatures:
    """Features of every curve (curves first clipped pointwise to the public ``value_range``
    when one is declared), clipped to ``box``, averaged per person of ``person_column``.

    A person of the file without a usable curve (all their curves dropped for missing values),
    and every person up to a declared ``n_public``, is observed at the box's centre: a
    data-free point, so n is the number of persons in the file and a dropped curve changes one
    observation, never n or the bandwidth rule (METHODS.md 11).

    Parameters
    ----------
    data : FunctionalData
        The curves (NON-PRIVATE).
    spec : str or tuple of Feature
        The per-curve feature(s), e.g. ``"mean:0:1"``, ``"value:0.5"``, ``"l2norm"`` or a column name.
    box : Box
        The public box the features are clipped to, e.g. ``((0.0, 1.0),)``.
    person_column : str, optional
    value_range : (lo, hi), optional
    n_public : int, optional

    Returns
    -------
    PersonFeatures
        ``points`` (one per person; n = the persons of the file) and analyst-view counts.

    Examples
    --------
    >>> import numpy as np
    >>> from fdp_core.data.loading import from_arrays
    >>> t = np.linspace(0, 1, 5)
    >>> fd = from_arrays(t, np.outer([0.2, 0.4, 0.9], np.ones(5)) + 0.01 * t, metadata={"id": [1, 1, 2]})
    >>> np.round(person_features(fd, "mean:0:1", ((0.0, 1.0),), person_column="id").points, 3).tolist()
    [0.305, 0.905]
    """
    from dataclasses import replace as _replace

    features = parse_feature_spec(spec) if isinstance(spec, str) else tuple(spec)
    if value_range is not None and any(f.kind != "column" for f in features):
        data = _replace(data, data_matrix=clip_values(data.data_matrix, value_range)[0])
    points, _ = extract_features(data, features)
    clip = clip_to_box(points, box)
    persons = file_persons(data, person_column)
    codes, positions = persons.compact()
    averaged = clip.points if person_column is None else person_average(clip.points, codes, positions.size)
    n = mechanism_n(PublicBounds(n_public=n_public).validated().n_public, persons.n_persons)
    if n > averaged.shape[0]:
        averaged = np.vstack([averaged, np.tile(box_centre(box), (n - averaged.shape[0], 1))])
    out = averaged[:, 0] if averaged.shape[1] == 1 else averaged
    return PersonFeatures(out, features, int(clip.points.shape[0]), n, clip.n_clipped, persons.n_unusable)
