"""Documented limits on every size and magnitude a user can set (one place, one table).

Each limit keeps a release finite and its run time bounded on a laptop; past it the
user gets a one-line ParameterError / DataError naming the limit, never an OverflowError,
a MemoryError or minutes of silence. Measured on a 2-core machine with one BLAS thread:

| quantity | limit | why |
|---|---|---|
| grid points m (curves, PCA bases) | 2,000 | eigendecomposition is O(m^3): 1.1 s at 2,000, 81 s at 6,000 |
| absolute data value, range bound | 1e100 | squares (norms, errors) stay below the float64 maximum 1.8e308 |
| tau (L2 norm bound) | 1e100 | sensitivities scale with tau^2 in the paper bounds |
| Gibbs sweeps | 200,000 | about 20 s compiled; the chain keeps (sweeps x k) traces |
| Monte Carlo draws (trade-off bands) | 20,000 | draws x coefficients x sweep points floats in memory |
| Bernstein lattice size K | 1,000 | basis is m x (K + 1) binomial terms: 1 s at K = 1,000, 59 s at 100,000 |
| KDE evaluation grid | see box.MAX_GRID_SIZE | 2,000 points in 1-d, 128 x 128 in 2-d |
| persons n (the app's commit) | at least 10; warned below 20 or below 10% of the curves | see below |

The persons limits are the app's plausibility checks of a person column (the CLI takes a
declared person column as it is): a column that groups the curves into a handful of
"persons" (sex -> 2) is a grouping, not a person id, and a release over so few persons is
either mostly noise or close to each person's own curve.
"""

from __future__ import annotations

import math

from .errors import ParameterError

MAX_GRID_POINTS = 2_000
MAX_ABS_VALUE = 1e100
MAX_TAU = 1e100
MAX_GIBBS_SWEEPS = 200_000
MAX_MC_DRAWS = 20_000
MAX_BERNSTEIN_K = 1_000
MIN_PERSONS_COMMIT = 10  # the app refuses to commit a release over fewer persons
MIN_PERSONS_WARN = 20  # fewer persons than this: a warning on the Data and Release pages
MIN_PERSON_SHARE = 0.1  # a person column making fewer persons than this share of the curves: a warning


def check_at_most(name: str, value, limit, why: str) -> None:
    """Refuse ``value`` above ``limit`` with the reason (limits are documented in this module)."""
    if value is not None and math.isfinite(float(value)) and float(value) > limit:
        raise ParameterError(f"{name} = {value:g} is above the limit of {limit:g} ({why})")


def grid_limit_message(m: int) -> str:
    """Why a grid of m > MAX_GRID_POINTS points is refused, and what to do (loader and kernels alike)."""
    return (f"the grid has {m} points; the limit is {MAX_GRID_POINTS} (the eigendecomposition grows as m^3): "
            f"thin the grid, e.g. keep one point in {math.ceil(m / MAX_GRID_POINTS)}, or average into bins")


def check_grid_points(m: int) -> None:
    if m > MAX_GRID_POINTS:
        raise ParameterError(grid_limit_message(m))
