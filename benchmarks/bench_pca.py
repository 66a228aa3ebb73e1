"""Private PCA benchmarks (DESIGN.md performance budget, principal components page).

    python benchmarks/bench_pca.py

Data: the Awan et al. FPCA design with n = 500 curves on 100 points, Fourier basis with
p = 40, C = diag(j^-3), gamma = 1, epsilon = 1, tau = 1; and DTI (../shared/data/dti_cca.csv,
376 curves on 93 points) with the Components page's defaults (kernel eigenfunctions of the
Matern 5/2 kernel, rho = 0.1, p = 14 from the 99% trace rule; gamma = 1, epsilon = 1, tau = 1),
whose mechanism matrix has one dominant eigenvalue (a concentrated spectrum), and DTI with the
simulation's Fourier basis (p = 40). Each measurement is a full
release (basis, clipped coefficients, mechanism matrix, sampler, analyst metrics):
- k = 1, exact vector Bingham: target < 50 ms median
- k = 3, sequential deflation (exact): target < 100 ms median
- k = 3, matrix Bingham by Gibbs, 20,000 sweeps: target < 2 s median (compiled chain, DESIGN.md)
  (the R reference, rstiefel's Gibbs sampler, takes about 6.7 s for k = 1 and 24 s for
  k = 3 at this size; k = 1 by Gibbs is timed too for that comparison). k = 2 has no R
  figure of its own: its reference, 14.7 s, is 40,000 column updates at the mean cost per
  column update of those two runs (335 us at k = 1, 400 us at k = 3), marked "interpolated".
  Each Gibbs row gives its CPU ratio to that reference ("x rstiefel", CPU median of the whole
  release against R's time) and the share of column updates whose envelope fell back to an
  eigendecomposition (the small-k chain: to its safe shift).
"""

from __future__ import annotations

import os
import statistics
import time

from _util import SHARED_DATA, report, timed  # first: sets the BLAS thread variables before numpy loads

import numpy as np  # noqa: E402

from fdp_core.data.loading import from_arrays, load_curves
from fdp_core.mechanisms import gibbs_compiled
from fdp_core.releases.pca import PcaSettings, private_pca, simulate_fpca_awan


def _release(fd, settings, fallbacks=None):
    """One release per call; ``fallbacks`` collects the Gibbs chain's share of column updates
    whose envelope needed an eigendecomposition (n_spectral_solves / (sweeps * k))."""
    rng = np.random.default_rng(0)

    def run():
        result = private_pca(fd, settings, rng)
        if fallbacks is not None:
            fallbacks.append(result.diagnostics["n_spectral_solves"] / (settings.gibbs_sweeps * settings.k))
    return run


def _gibbs_rows(design: str, fd, common: dict) -> list[dict]:
    # The ratio to rstiefel only where the design has R's size (p = 40): not on DTI's page
    # defaults (p = 14), whose rows still carry the p = 40 reference figures for context.
    rows = []
    for k, (rstiefel_s, how) in RSTIEFEL_S.items():
        fallbacks = []
        settings = PcaSettings(k=k, sampler="gibbs", gibbs_sweeps=20_000, **common)
        row = {"name": f"k={k} Gibbs release, 20,000 sweeps, {design} (R rstiefel at n=500, p=40: ~{rstiefel_s} s, "
                       f"{how})",
               "target_ms": 2000 if k == 3 else 5000,
               **_timed_both(_release(fd, settings, fallbacks), repeats=3, warmup=0),
               "fallback_rate": statistics.median(fallbacks)}
        if common.get("p") == 40:
            row["x_rstiefel_cpu"] = rstiefel_s * 1000.0 / row["cpu_median_ms"]
        rows.append(row)
    return rows


# rstiefel's Gibbs sampler in R at n = 500, p = 40, 20,000 sweeps (seconds): measured for k = 1
# and 3; k = 2 interpolated per column update (module docstring).
RSTIEFEL_S = {3: (24.0, "measured"), 2: (14.7, "interpolated"), 1: (6.7, "measured")}


def _timed_both(fn, repeats, warmup=1) -> dict:
    """Wall-clock timing (as every benchmark) plus the median CPU time of the process.

    On a shared machine the wall time includes waiting for a core; the CPU time is what
    the computation itself costs. Both are reported, with the load average.
    """
    wall = timed(fn, repeats=repeats, warmup=warmup)
    cpu = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        cpu.append((time.process_time() - start) * 1000.0)
    return {**wall, "cpu_median_ms": statistics.median(cpu), "load_average_1min": os.getloadavg()[0]}


def main() -> None:
    # The compiled chain is loaded first (from numba's disk cache, or compiled once): the
    # measurements time the sampler, not the one-off loading (gibbs_warm_up.py handles that).
    gibbs_compiled.gibbs_chain(np.array([2.0, 1.0, 0.0]), np.eye(3), np.eye(3)[:, :1], np.random.default_rng(0), 1, 0, 1)
    grid, values, _ = simulate_fpca_awan(500, seed=1)
    fd = from_arrays(grid, values)
    common = dict(basis="fourier", p=40, epsilon=1.0, gamma=1.0, tau=1.0)
    rows = [
        {"name": "k=1 exact release (n=500, p=40)", "target_ms": 50,
         **_timed_both(_release(fd, PcaSettings(k=1, sampler="exact", **common)), repeats=30)},
        {"name": "k=3 deflation release (n=500, p=40)", "target_ms": 100,
         **_timed_both(_release(fd, PcaSettings(k=3, sampler="deflation", **common)), repeats=30)},
        *_gibbs_rows("simulation", fd, common),
    ]
    dti = SHARED_DATA / "dti_cca.csv"
    if dti.exists():
        dti_fd = load_curves(dti)
        rows += _gibbs_rows("DTI", dti_fd, dict(epsilon=1.0, gamma=1.0, tau=1.0))
        rows += _gibbs_rows("DTI Fourier p=40", dti_fd, dict(basis="fourier", p=40, epsilon=1.0, gamma=1.0, tau=1.0))
    report("pca", rows)
    print()
    for r in rows:
        fallback = f", fallback {r['fallback_rate']:.1%}" if "fallback_rate" in r else ""
        ratio = f", {r['x_rstiefel_cpu']:.1f}x rstiefel" if "x_rstiefel_cpu" in r else ""
        print(f"{r['name']:58s} cpu median {r['cpu_median_ms']:10.1f} ms (load average "
              f"{r['load_average_1min']:.1f}{fallback}{ratio})")


if __name__ == "__main__":
    main()
