"""Sparse curves (METHODS.md 20): private L2 error against the non-private pooled local-linear smoother.

    python benchmarks/bench_sparse.py [--replications 20]

Design: fdp_core.simulate.sparse_design (m_i uniform on 2..10 visits at Uniform(0, 1) times, known
mean sparse_true_mean), n in {500, 5000}, epsilon in {1, 4}, delta = 1e-5. Error: the root mean
square over [0, 1] of (estimate - true mean), averaged over replications (a fresh data set and a
fresh noise draw each). The reference is the pooled local-linear smoother with its bandwidth by
5-fold cross-validation over persons (Yao, Mueller & Wang 2005), not private.
Target: the Gaussian release within 1.5x of the smoother at epsilon = 4, n = 5000.
The public settings are the library's defaults (Matern 5/2, rho 0.2, J = 8, phi 1e-3, gamma 0.25,
kappa 0.1) with the design's public range [-1, 2] and domain [0, 1].
"""

from __future__ import annotations

import argparse
import json
import time

from _util import ROOT  # noqa: F401  (first: sets the BLAS thread variables and the import path)

import numpy as np  # noqa: E402

from fdp_core.simulate import SPARSE_EXAMPLE, sparse_design, sparse_true_mean  # noqa: E402
from fdp_core.smoother import pooled_local_linear  # noqa: E402
from fdp_core.sparse import SparseSettings, plan_sparse_release  # noqa: E402

TARGET_RATIO = 1.5


def rms(values, truth) -> float:
    return float(np.sqrt(np.mean((np.asarray(values) - truth) ** 2)))


def run(replications: int) -> list[dict]:
    rows = []
    for n in (500, 5000):
        datasets = [sparse_design(n, seed=1000 + r) for r in range(replications)]
        base = SparseSettings(domain=SPARSE_EXAMPLE["domain"], value_range=SPARSE_EXAMPLE["value_range"])
        grid = base.output_grid()
        truth = sparse_true_mean(grid)
        start = time.perf_counter()
        smoother = [rms(pooled_local_linear(d, grid, domain=base.domain).values, truth) for d in datasets]
        smooth_s = (time.perf_counter() - start) / replications
        for noise in ("gaussian", "laplace"):
            for eps in (1.0, 4.0):
                settings = SparseSettings(domain=base.domain, value_range=base.value_range, epsilon=eps, noise=noise)
                errors, noiseless, seconds = [], [], []
                for r, d in enumerate(datasets):
                    start = time.perf_counter()
                    plan = plan_sparse_release(d, settings)
                    values = plan.sample(np.random.default_rng(r), 1)[0]
                    seconds.append(time.perf_counter() - start)
                    errors.append(rms(values, truth))
                    noiseless.append(rms(plan.nonprivate_curve(), truth))
                ratio = float(np.mean(errors) / np.mean(smoother))
                target = noise == "gaussian" and eps == 4.0 and n == 5000
                rows.append({"n": n, "epsilon": eps, "noise": noise, "private_l2": float(np.mean(errors)),
                             "private_l2_se": float(np.std(errors) / np.sqrt(replications)),
                             "noiseless_l2": float(np.mean(noiseless)), "smoother_l2": float(np.mean(smoother)),
                             "ratio": ratio, "target": TARGET_RATIO if target else None,
                             "ok": (ratio <= TARGET_RATIO) if target else None,
                             "release_seconds": float(np.median(seconds)), "smoother_seconds": smooth_s,
                             "replications": replications})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=20)
    args = parser.parse_args()
    rows = run(args.replications)
    print(json.dumps({"benchmark": "sparse", "results": rows}, indent=2))
    print()
    print(f"{'n':>6s} {'eps':>4s} {'noise':9s} {'private L2':>11s} {'(se)':>8s} {'noiseless':>10s} "
          f"{'smoother':>9s} {'ratio':>6s}  target")
    for r in rows:
        target = "" if r["target"] is None else f"<= {r['target']:g}: {'yes' if r['ok'] else 'NO'}"
        print(f"{r['n']:6d} {r['epsilon']:4g} {r['noise']:9s} {r['private_l2']:11.4f} {r['private_l2_se']:8.4f} "
              f"{r['noiseless_l2']:10.4f} {r['smoother_l2']:9.4f} {r['ratio']:6.2f}  {target}")


if __name__ == "__main__":
    main()
