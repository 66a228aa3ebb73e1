"""Trade-off benchmarks (DESIGN.md performance budget; issue "Trade-off explorer").

    python benchmarks/bench_tradeoffs.py

On DTI-size data (the real dti_cca.csv when ../shared/data is present, else synthetic
n = 382, m = 93), every mean mechanism of MEAN_MECHANISMS:
- all curves, 40 values of one parameter, closed forms: target < 100 ms median, per parameter
  (eigenbases cached, as after the first visit of the page)
- the epsilon curves with 500-draw Monte Carlo bands: target < 100 ms
- the rho sweep with a cold eigenbasis cache (40 eigendecompositions): informational, < 500 ms
- the (phi, rho) PCV heatmap, 30 x 30 with 10 folds: target < 1 s, warm and cold cache
- smallest epsilon for a target (expected squared L2 error; pointwise 95% half-width, which
  inverts the Laplace characteristic function at every grid point): informational
- PCA variance ratio vs epsilon, k = 1..3, 10 epsilons x 50 draws (the page's default):
  informational, < 5 s (when fdp_core.releases.pca is present)
"""

from __future__ import annotations

from _util import SHARED_DATA, report, synthetic_curves, timed  # first: sets the BLAS thread variables before numpy loads

import numpy as np  # noqa: E402

from fdp_core.data.loading import load_curves
from fdp_core.kernels import _eigenbasis_cached
from fdp_core.releases.mean import MEAN_MECHANISMS, MeanSettings
from fdp_core.explore.tuning import pcv_grid
from fdp_core.explore.sweeps import SWEEP_PARAMS, default_values, epsilon_for_accuracy, tradeoff_curves


def main() -> None:
    path = SHARED_DATA / "dti_cca.csv"
    fd = load_curves(path) if path.exists() else synthetic_curves(382, 93)
    label = f"{'DTI' if path.exists() else 'synthetic'} n={fd.n} m={fd.m}"
    settings = MeanSettings(kernel="matern52", rho=0.1, eta=1.5, phi=1e-3, epsilon=1.0, delta=1e-5, tau=0.6,
                            lo=0.0, hi=1.0)
    k = len(MEAN_MECHANISMS)
    rows = []
    for param in SWEEP_PARAMS:
        values = default_values(param, fd.n)[:40]
        rows.append({"name": f"{k} mechanisms x {values.size} {param} values ({label})", "target_ms": 100,
                     **timed(lambda: tradeoff_curves(fd, settings, param, values))})
    eps = default_values("epsilon", fd.n)
    rows.append({"name": f"{k} mechanisms x 40 epsilon values + 500-draw MC bands", "target_ms": 100,
                 **timed(lambda: tradeoff_curves(fd, settings, "epsilon", eps, mc_draws=500))})
    phis = default_values("phi", fd.n)
    rows.append({"name": f"{k} mechanisms x 40 phi values + 500-draw MC bands", "target_ms": 100,
                 **timed(lambda: tradeoff_curves(fd, settings, "phi", phis, mc_draws=500))})
    rhos = default_values("rho", fd.n)

    def cold_rho():
        _eigenbasis_cached.cache_clear()
        tradeoff_curves(fd, settings, "rho", rhos)

    rows.append({"name": f"{k} mechanisms x 40 rho values, cold eigenbasis cache", "target_ms": 500,
                 **timed(cold_rho, repeats=5)})
    phis, pcv_rhos = np.logspace(-8, 1, 30), np.logspace(-2.5, 0.3, 30)
    rows.append({"name": "PCV heatmap 30 x 30, 10 folds (warm eigenbasis cache)", "target_ms": 1000,
                 **timed(lambda: pcv_grid(fd, settings, phis, pcv_rhos, folds=10), repeats=10)})

    def cold_pcv():
        _eigenbasis_cached.cache_clear()
        pcv_grid(fd, settings, phis, pcv_rhos, folds=10)

    rows.append({"name": "PCV heatmap 30 x 30, 10 folds (cold eigenbasis cache)", "target_ms": 1000,
                 **timed(cold_pcv, repeats=5)})
    rows.append({"name": f"smallest epsilon, expected sq. L2 target, {k} mechanisms", "target_ms": 100,
                 **timed(lambda: epsilon_for_accuracy(fd, settings, "expected_sq_l2", 1e-3))})
    rows.append({"name": f"smallest epsilon, pointwise 95% target, {k} mechanisms", "target_ms": 3000,
                 **timed(lambda: epsilon_for_accuracy(fd, settings, "pointwise_95", 0.05), repeats=3)})
    try:
        from fdp_core.releases.pca import PcaSettings
    except ImportError:
        PcaSettings = None
    if PcaSettings is not None:
        from fdp_core.explore.sweeps import pca_variance_ratio_curves

        pca_settings = PcaSettings(kernel="matern52", rho=0.1, tau=0.6)
        rows.append({"name": "PCA variance ratio, k = 1..3, 10 epsilons x 50 draws", "target_ms": 5000,
                     **timed(lambda: pca_variance_ratio_curves(fd, pca_settings, np.logspace(-2, 2, 10), draws=50),
                             repeats=3)})
    report("tradeoffs", rows)


if __name__ == "__main__":
    main()
