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
| columns of a data file (not transposed) | 10,000 | a wide file is at most 2,000 grid points plus metadata; refused from the header alone |
| bytes the Data page's diagnosis reads | 1 MB | the layout suggestion (long or transposed) looks at a preview, never the whole upload |
| columns the diagnosis types | 1,000 | a long file has a few columns; typing each costs pandas overhead, so wider files get no suggestion |
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
MAX_FILE_COLUMNS = 10_000
MAX_DIAGNOSE_BYTES = 1 << 20
MAX_DIAGNOSE_COLUMNS = 1_000


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
