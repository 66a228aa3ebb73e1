"""Densities from counts (METHODS.md 15): ``value,count`` tables (deaths per age, income brackets).

Each count unit is one individual with that value: n = sum of the counts, and the KDE is
f = (1/n) sum_v c_v K(., v). Replacing one individual moves one unit of count from one value
to another, which is exactly replace-one on the expanded list of n values, so every KDE
sensitivity of METHODS 4 holds with that n, and the Hall and ICLP density releases run
unchanged on the expanded values. n is treated as public (as in every fdp release).
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import DataError
from .. import limits

MAX_TOTAL_COUNT = limits.MAX_TOTAL_COUNT  # expanded values are held in memory: 80 MB at this bound


def read_counts(source) -> pd.DataFrame:
    """Read a two-column ``value,count`` CSV (header required; extra columns refused)."""
    try:
        if isinstance(source, (bytes, bytearray)):
            frame = pd.read_csv(io.BytesIO(source))
            name = "uploaded counts"
        else:
            frame = pd.read_csv(Path(source))
            name = Path(source).name
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(f"counts file is not a readable CSV: {' '.join(str(exc).split())[:200]}") from None
    columns = [str(c).strip().lower() for c in frame.columns]
    if columns != ["value", "count"]:
        raise DataError(f"{name}: a counts table needs exactly the columns value,count (got "
                        f"{', '.join(map(str, frame.columns))[:120]})")
    frame.columns = columns
    return frame


def count_points(frame: pd.DataFrame) -> np.ndarray:
    """Expanded values, one per count unit, shape (n, 1); validated."""
    values = pd.to_numeric(frame["value"], errors="coerce").to_numpy(dtype=float)
    counts = pd.to_numeric(frame["count"], errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(values) | ~np.isfinite(counts))
    if bad.size:
        raise DataError(f"counts table row {int(bad[0]) + 2} has a missing or non-numeric value or count "
                        f"({bad.size} such row(s))")
    wrong = np.flatnonzero((counts < 0) | (counts != np.round(counts)))
    if wrong.size:
        raise DataError(f"counts table row {int(wrong[0]) + 2}: count {counts[wrong[0]]:g} is not a non-negative "
                        "integer (one count unit = one individual)")
    total = float(counts.sum())
    if total < 1:
        raise DataError("the counts add up to 0: no individuals")
    if total > MAX_TOTAL_COUNT:
        raise DataError(f"the counts add up to {total:.0f}, more than {MAX_TOTAL_COUNT}: aggregate to fewer units")
    return np.repeat(values, counts.astype(np.int64))[:, None]


def load_counts(source) -> np.ndarray:
    """``value,count`` file -> expanded points (n, 1) for :func:`fdp_core.releases.kde.plan_kde_release`.

    Parameters
    ----------
    source : path or bytes
        A CSV with the columns ``value,count`` (counts are non-negative integers).

    Returns
    -------
    ndarray (n, 1)
        Each value repeated count times: one observation per person.

    Examples
    --------
    >>> from pathlib import Path
    >>> points = load_counts(Path(__file__).parents[2] / "data" / "example_counts.csv")
    >>> points.shape[1]
    1
    """
    return count_points(read_counts(source))
