"""Documented limits on every size and magnitude a user can set (one place, one table).

Each limit keeps a release finite and its run time bounded on a laptop; past it the
user gets a one-line ParameterError / DataError naming the limit, never an OverflowError,
a MemoryError or minutes of silence. Measured on a 2-core machine with one BLAS thread:

| quantity | limit | why |
|---|---|---|
| grid points m (curves, PCA bases, covariance) | 20,000 | a dense eigendecomposition is O(m^3) (1.1 s at 2,000, 81 s at 6,000): above 2,000 points only the kernel's top 200 eigenpairs are computed (METHODS.md 27; 0.5 s at 10,000), the rest a stated bias |
| absolute data value, range bound | 1e100 | squares (norms, errors) stay below the float64 maximum 1.8e308 |
| tau (L2 norm bound) | 1e100 | sensitivities scale with tau^2 in the paper bounds |
| Gibbs sweeps | 200,000 | about 20 s compiled; the chain keeps (sweeps x k) traces |
| trade-off sweep values (--values) | 200 | each value is a release per mechanism (and its Monte Carlo band): 10^5 values ran 56 s |
| Monte Carlo draws (trade-off bands) | 20,000 | draws x coefficients x sweep points floats in memory |
| Bernstein lattice size K | 1,000 | basis is m x (K + 1) binomial terms: 1 s at K = 1,000, 59 s at 100,000 |
| KDE evaluation grid | 2,000 points in 1-d, 128 x 128 in 2-d | evaluation cost and the release's size |
| epsilon (one release) | 1e6 | the guarantee is void long before (odds e^epsilon); beyond this the noise is below the rounding of the statistic (1e300 gave noise 6e-302): the "private" release would be the non-private one. The app cautions from epsilon > 10 |
| declared persons n_public | 100 x the persons loaded | persons without a curve count as zero curves: at 1e18 for 30 persons the release is the data's mean divided by 3e16, a wrong answer, not a private one |
| covariance components shown (--components) | the grid size m | the release has at most m eigenfunctions |
| eta (shrinkage exponent) | 50 | lambda^eta underflows long before this; larger values only overflow the bounds |
| covariance surface written | 1,000 points (all of a grid up to that; 500 evenly spread points of a longer one) | the release is the L x L coefficient matrix (L <= 200 on a long grid); its surface on q points is q^2 rows of release.csv, and an m x m surface at m = 20,000 would be 3.2 GB |
| reference curve points | 100,000 | a public curve interpolated onto the grid; more points are a file, not a curve |
| PCA components k | 5 | the samplers' cost and the budget split grow with k |
| private selection grid | 500 (penalties x rhos) | one score per grid point and fold |
| summed counts (count data) | 10,000,000 | expanded values are held in memory: 80 MB at this bound |
| long file on mixed grids | 2,000,000 cells | curves x union grid, 16 MB per copy |
| upload size (app, bytes, file objects) | 200 MB (FDP_MAX_UPLOAD_MB) | the whole file is held in memory |
| file size by path | 64 GB (FDP_MAX_PATH_MB) | pyarrow reads it from disk; bigger files belong to the streaming engine |
| cell-by-cell parser | 200 MB | it holds every cell as a Python string |
| columns of a data file (not transposed) | 25,000 | a wide file is at most 20,000 grid points plus metadata; refused from the header alone |
| bytes the Data page's diagnosis reads | 1 MB | the layout suggestion (long or transposed) looks at a preview, never the whole upload |
| columns of a long file (sparse route, CLI and app) | 1,000 | a long file has id, t, value and a few more; wider files are refused from the header, before the body is read |
| rows of a long file read in memory (sparse route) | 1,000,000 | three columns parsed as text, then typed: 2.9 s for 1,000,000 rows, 41 s for 3,000,000 (load 7) |
| columns the diagnosis types | 1,000 | a long file has a few columns; typing each costs pandas overhead, so wider files get no suggestion |
| visits per person assumed by the sparse commit's float-error bound | 1,000,000 | a public allowance (the observed counts are data): the bound, and so the exact sampler's grid, must not depend on them |
| output points of the sparse mean (--output-points) | 10,000 | the public grid the released curve is evaluated, drawn and stored on; 1e9 points held the CLI for minutes |
| YAML a user hands fdp (plan file, replay config, a combined site's config.yaml) | 256 KB | parsing costs about 1.7 s of CPU per MB even with libyaml (a 50 MB plan took 21 s); fdp's plans and configs are a few KB (100 statistics about 15 KB) |
| declared persons n of a plan (public.n) | 1,000,000 | the plan prices each statistic on n stand-in curves held in memory (n x grid floats) |
| declared persons x grid points of a plan | 20,000,000 | those stand-in values, 160 MB |
| nesting of that YAML | 50 levels | fdp's plans and configs nest four; the checks after parsing walk it recursively |
| statistics in one plan | 100 | each is priced (an accuracy search) and becomes a part of one bundle; 20,000 ran past a minute |
| persons n of a site to combine (its release.json) | 10^9 | a count in the site check's formulas (no n x m matrix is formed); 10^400 overflowed float64 with a traceback |
| sparse basis functions J | 60 | the private A is J x J: J^2 noise terms, and its l1 sensitivity grows with J |
| curves kept in a data set's content sketch | 4,096 | a fixed sample above it: the sketch stays small (341 KiB) and a comparison a few seconds |
| persons n (the app's commit) | at least 10; warned below 20 or below 10% of the curves | see below |

The persons limits are the app's plausibility checks of a person column (the CLI takes a
declared person column as it is): a column that groups the curves into a handful of
"persons" (sex -> 2) is a grouping, not a person id, and a release over so few persons is
either mostly noise or close to each person's own curve.
"""

from __future__ import annotations

import math
import os

from .errors import ParameterError

MAX_GRID_POINTS = 20_000
MAX_DENSE_EIGH_POINTS = 2_000  # above this the kernel's top eigenpairs only (fdp_core/long_grid.py)
MAX_ABS_VALUE = 1e100
MAX_TAU = 1e100
MAX_GIBBS_SWEEPS = 200_000
MAX_MC_DRAWS = 20_000
MAX_SWEEP_VALUES = 200
MAX_BERNSTEIN_K = 1_000
MIN_PERSONS_COMMIT = 10  # the app refuses to commit a release over fewer persons
MIN_PERSONS_WARN = 20  # fewer persons than this: a warning on the Data and Release pages
MIN_PERSON_SHARE = 0.1  # a person column making fewer persons than this share of the curves: a warning
MAX_ETA = 50.0
MAX_COVARIANCE_GRID = 1_000  # covariance surface points written (fdp_core/releases/covariance.py surface_index)
MAX_KDE_GRID_SIZE = {1: 2000, 2: 128}
MAX_REFERENCE_POINTS = 100_000
MAX_PCA_COMPONENTS = 5
MAX_SELECTION_GRID = 500
MAX_TOTAL_COUNT = 10_000_000
MAX_REGRID_CELLS = 2_000_000
MAX_SLOW_BYTES = 200 * 1024 * 1024
MAX_EPSILON = 1e6
MAX_N_PUBLIC_FACTOR = 100
MAX_FILE_COLUMNS = 25_000
MAX_DIAGNOSE_BYTES = 1 << 20
MAX_DIAGNOSE_COLUMNS = 1_000
MAX_LONG_COLUMNS = 1_000
MAX_LONG_ROWS = 1_000_000
MAX_SPARSE_BASIS = 60
MAX_OUTPUT_POINTS = 10_000
MAX_YAML_BYTES = 256 * 1024
MAX_YAML_DEPTH = 50
MAX_PLAN_STATISTICS = 100
MAX_PLAN_PERSONS = 1_000_000
MAX_PLAN_CELLS = 20_000_000
MAX_SITE_PERSONS = 10**9
MAX_SKETCH_CURVES = 4096
MIN_SKETCH_FILE_CURVES = 20  # public minimum: smaller files are matched by their exact fingerprint only (METHODS.md 24)
MAX_VISITS_FOR_BOUND = 10**6


def check_at_most(name: str, value, limit, why: str) -> None:
    """Refuse ``value`` above ``limit`` with the reason (limits are documented in this module)."""
    if value is not None and math.isfinite(float(value)) and float(value) > limit:
        raise ParameterError(f"{name} = {value:g} is above the limit of {limit:g} ({why})")


def grid_limit_message(m: int) -> str:
    """Why a grid of m > MAX_GRID_POINTS points is refused, and what to do (loader and kernels alike)."""
    return (f"the grid has {m} points; the limit is {MAX_GRID_POINTS} (a release holds m x L basis values): "
            f"thin the grid, e.g. keep one point in {math.ceil(m / MAX_GRID_POINTS)}, or average into bins")


def check_grid_points(m: int) -> None:
    if m > MAX_GRID_POINTS:
        raise ParameterError(grid_limit_message(m))


def env_megabytes(variable: str, default_mb: int) -> int:
    """A size limit in bytes from an environment variable in MB (a deployment setting)."""
    text = os.environ.get(variable, "").strip()
    try:
        mb = float(text) if text else float(default_mb)
    except ValueError:
        mb = float(default_mb)
    return int(mb * 2**20) if math.isfinite(mb) and mb > 0 else default_mb * 2**20


# In-memory uploads (the app's browser uploads, bytes, file objects): the whole file is held
# in memory, so this stays modest; FDP_MAX_UPLOAD_MB raises it for a deployment.
MAX_FILE_BYTES = env_megabytes("FDP_MAX_UPLOAD_MB", 200)
# Files named by path are read by pyarrow straight from disk (memory about 2x the numeric
# block, see SECURITY.md); bigger ones belong to the streaming engine (fdp_core/engines/stream.py).
MAX_PATH_BYTES = env_megabytes("FDP_MAX_PATH_MB", 64 * 1024)
# Imhof's inversion of a weighted chi-square (fdp_core/mechanisms/weighted_chi2.py): at most this many
# quadrature panels; beyond, the integral stops and its (larger, still bounded) tail error is charged
# to the radius, so a radius stays an upper bound whatever the variances.
MAX_IMHOF_PANELS = 10_000
