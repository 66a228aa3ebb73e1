"""Private KDE benchmarks (DESIGN.md performance budget, density page).

    python benchmarks/bench_kde.py

After caching (eigendecompositions and ICLP sensitivities are cached per public
setting), one page rerun computes the non-private estimate, the sensitivity and sigma or
the Laplace scales, and 20 sanitized draws:
- 1-d, n = 10,000 observations, 512-point grid: target < 150 ms median (each mechanism)
- 2-d, n = 10,000 observations, 64 x 64 grid: target < 400 ms median (each mechanism)
The one-off cached steps are timed too (uncached), with the targets they should meet so
that a first visit stays bearable.
"""

from __future__ import annotations

from _util import report, timed  # first: sets the BLAS thread variables before numpy loads

import numpy as np  # noqa: E402

from fdp_core.releases import kde
from fdp_core import sensitivity
from fdp_core.kernels import _eigenbasis_cached
from fdp_core.mechanisms import hall_kde, iclp_kde
from fdp_core.data.simulate import hall_mixture_points, mixture_2d_points


def _rerun(points, settings):
    def run():
        release = kde.plan_kde_release(points, settings)
        release.sample(np.random.default_rng(0), 20)
    return run


def _uncached(fn, *caches):
    def run():
        for cache in caches:
            cache.cache_clear()
        fn()
    return run


def main() -> None:
    rows = []
    rng = np.random.default_rng(0)
    pts1 = hall_mixture_points(10_000, seed=1)
    pts2 = mixture_2d_points(10_000, seed=2)
    box1, box2 = ((0.0, 1.0),), ((0.0, 1.0), (0.0, 1.0))
    hall1 = kde.KdeSettings("gaussian", box1, epsilon=1.0, delta=1e-5, bandwidth=0.05, grid_size=512)
    iclp1 = kde.KdeSettings("iclp", box1, epsilon=1.0, grid_size=512, kernel="matern32", rho=0.1, eta=1.5)
    hall2 = kde.KdeSettings("gaussian", box2, epsilon=1.0, delta=1e-5, bandwidth=0.05, grid_size=64)
    iclp2 = kde.KdeSettings("iclp", box2, epsilon=1.0, grid_size=64, kernel="matern32", rho=0.1, eta=1.5)

    rows.append({"name": "1-d Hall GP-KDE rerun (n=10k, G=512, 20 draws)", "target_ms": 150,
                 **timed(_rerun(pts1, hall1), repeats=20)})
    rows.append({"name": "1-d ICLP-KDE rerun (n=10k, G=512, 20 draws)", "target_ms": 150,
                 **timed(_rerun(pts1, iclp1), repeats=20)})
    rows.append({"name": "2-d Hall GP-KDE rerun (n=10k, 64x64, 20 draws)", "target_ms": 400,
                 **timed(_rerun(pts2, hall2), repeats=10)})
    rows.append({"name": "2-d ICLP-KDE rerun (n=10k, 64x64, 20 draws)", "target_ms": 400,
                 **timed(_rerun(pts2, iclp2), repeats=10)})

    small = rng.uniform(0, 1, 50)
    rows.append({"name": "uncached: Hall Gram eigh, G=512", "target_ms": 1000,
                 **timed(_uncached(_rerun(small, hall1), hall_kde._rbf_gram_eigh_cached), repeats=3)})
    rows.append({"name": "uncached: ICLP eigenbasis + exact Delta_1, G=512", "target_ms": 1500,
                 **timed(_uncached(_rerun(small, iclp1), iclp_kde._iclp_axis_cached,
                                   sensitivity._iclp_unit_sensitivity_cached, _eigenbasis_cached), repeats=3)})
    rows.append({"name": "uncached: ICLP 2-d exact Delta_1 (branch and bound), 64x64", "target_ms": 2000,
                 **timed(_uncached(_rerun(small[:, None].repeat(2, 1), iclp2),
                                   sensitivity._iclp_unit_sensitivity_cached), repeats=3)})
    report("kde", rows)


if __name__ == "__main__":
    main()
