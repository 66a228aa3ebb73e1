"""Coverage of the confidence band for a released mean (METHODS.md 18, 25, validation).

    python benchmarks/bench_coverage.py [--replications 500] [--designs s1 s2] [--mechanism gaussian]
                                        [--smoothness-factor 2] [--rough-replications 40]

For each design of fdp_core/data/simulate.py (Gaussian-process designs, known mean and covariance),
n in {200, 1000, 10^4} and epsilon in {0.5, 1, 4} (band share 0.2, level 0.95): the share of
replications whose band contains the population's smoothed mean m_S on the whole grid, the
privacy band's coverage of the non-private estimate, and the band's mean half-width relative
to the oracle band (the same construction with the true covariance). The sufficient
statistics are drawn directly (exact for these designs: fdp_core/explore/band_coverage.py).
Contract: 0.93-0.985 for n >= 1000.

With a smoothness bound B = factor * ||E[Y] - c||_H (METHODS 25) each cell also reports the mean band's
coverage of E[Y] itself and the median half-widths of both bands over the non-private oracle band's (the
raw mean +- its simultaneous 95% quantile, known covariance), the last replication's mean band split into privacy
noise, sampling and bias, and the pointwise floor of any affine interval over the B-ball (fdp_core/explore/
band_floor.py: the least width the band's construction could reach). Then the same for a rough design that is not
a Gaussian process (fdp_core/explore/rough_design.py: Poisson jumps and a Student-t level shift), where
every replication draws n curves and runs the release path itself.
"""

from __future__ import annotations

import argparse
import json
import time

import _util  # noqa: F401  (first: sets the BLAS thread variables before numpy loads)

from fdp_core.explore.band_coverage import coverage_cell  # noqa: E402
from fdp_core.explore.rough_design import rough_cell  # noqa: E402

NS = (200, 1000, 10_000)
EPSILONS = (0.5, 1.0, 4.0)
# The mean band's half-width split (fdp_core/explore/band_floor.py), over the oracle band's: privacy noise alone,
# sampling alone, both (one joint quantile: what the band uses), the bias bound; and the pointwise floor of any
# affine interval valid over the B-ball (no band, simultaneous or not, of that form is narrower on average).
PARTS_HEADER = f"{'noise':>6} {'samp':>5} {'joint':>6} {'bias':>6} {'floor':>6}"


def parts(cell) -> str:
    if cell.floor_ratio is None:
        return ""
    return (f"{cell.noise_ratio:>6.2f} {cell.sampling_ratio:>5.2f} {cell.joint_ratio:>6.2f} {cell.bias_ratio:>6.2f} "
            f"{cell.floor_ratio:>6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=500)
    parser.add_argument("--designs", nargs="*", default=["s1", "s2"],
                        help="shipped designs (none: the rough design only)")
    parser.add_argument("--mechanism", default="gaussian")
    parser.add_argument("--n-draws", type=int, default=2000, help="simulated draws per band quantile")
    parser.add_argument("--smoothness-factor", type=float, default=2.0,
                        help="B = this times ||E[Y] - c||_H (0: no mean band)")
    parser.add_argument("--rough-replications", type=int, default=40, help="replications on the rough design (0: skip)")
    parser.add_argument("--rough-n", type=int, nargs="+", default=[2000])
    args = parser.parse_args()
    factor = args.smoothness_factor or None
    rows = []
    print(f"{'design':6} {'n':>6} {'eps':>4} {'coverage':>8} {'privacy':>8} {'oracle':>7} {'width/oracle':>12} "
          f"{'E[Y] cov':>8} {'ci E[Y]':>7} {'ci/raw':>7} {'mean/raw':>8} {'s':>5} {PARTS_HEADER}")
    for design in args.designs:
        for n in NS:
            for eps in EPSILONS:
                start = time.perf_counter()
                # One seed per cell: cells drawing the same stream would share their Monte Carlo error.
                cell = coverage_cell(design, n, eps, args.replications, mechanism=args.mechanism,
                                     n_draws=args.n_draws, seed=1000 * len(rows), smoothness_factor=factor)
                seconds = time.perf_counter() - start
                mean = ("" if cell.mean_coverage is None else
                        f"{cell.mean_coverage:>8.3f} {cell.ci_mean_coverage:>7.3f} {cell.ci_raw_width_ratio:>7.2f} "
                        f"{cell.mean_width_ratio:>8.2f}")
                print(f"{design:6} {n:>6} {eps:>4g} {cell.coverage:>8.3f} {cell.privacy_coverage:>8.3f} "
                      f"{cell.oracle_coverage:>7.3f} {cell.width_ratio:>12.3f} {mean:>33} {seconds:>5.0f} {parts(cell)}", flush=True)
                rows.append({**cell.__dict__, "seconds": seconds})
    for n in args.rough_n if args.rough_replications and factor else ():
        for eps in EPSILONS:
            start = time.perf_counter()
            cell = rough_cell(n, eps, args.rough_replications, smoothness_factor=factor, seed=1000 * len(rows),
                              n_draws=args.n_draws, mechanism=args.mechanism)
            seconds = time.perf_counter() - start
            print(f"{'rough':6} {n:>6} {eps:>4g} {cell.coverage:>8.3f} {'':>8} {'':>7} {'':>12} "
                  f"{cell.mean_coverage:>8.3f} {cell.ci_mean_coverage:>7.3f} {cell.ci_raw_width_ratio:>7.2f} "
                  f"{cell.mean_width_ratio:>8.2f} "
                  f"{seconds:>5.0f} {parts(cell)}", flush=True)
            rows.append({"design": "rough", **cell.__dict__, "seconds": seconds})
    print(json.dumps({"benchmark": "bench_coverage", "mechanism": args.mechanism, "replications": args.replications,
                      "smoothness_factor": factor, "rough_replications": args.rough_replications, "cells": rows}))


if __name__ == "__main__":
    main()
