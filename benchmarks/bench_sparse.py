"""Sparse curves (METHODS.md 20): private L2 error against the non-private pooled local-linear smoother.

    python benchmarks/bench_sparse.py [--replications 20]

Design: fdp_core.data.simulate.sparse_design (m_i uniform on 2..10 visits at Uniform(0, 1) times, known
mean sparse_true_mean), n in {500, 5000}, epsilon in {1, 4}, delta = 1e-5. Error: the root mean
square over [0, 1] of (estimate - true mean), averaged over replications (a fresh data set and a
fresh noise draw each). The reference is the pooled local-linear smoother with its bandwidth by
5-fold cross-validation over persons (Yao, Mueller & Wang 2005), not private.
Target: the Gaussian release within 1.5x of the smoother at epsilon = 4, n = 5000.
``--streamed``: n = 10^6 persons x 5 visits (a 5-million-row CSV written to a temporary folder) released
by ``release mean --sparse --engine stream`` in a child process; target peak memory < 2 GB.
The public settings are the library's defaults (Matern 5/2, rho 0.2, J = 8, phi 1e-3, gamma 0.25,
kappa 0.1) with the design's public range [-1, 2] and domain [0, 1].
"""

from __future__ import annotations

import argparse
import json
import time

from _util import ROOT  # noqa: F401  (first: sets the BLAS thread variables and the import path)

import numpy as np  # noqa: E402

from fdp_core.data.simulate import SPARSE_EXAMPLE, sparse_design, sparse_true_mean  # noqa: E402
from fdp_core.releases.smoother import pooled_local_linear  # noqa: E402
from fdp_core.releases.sparse import SparseSettings, plan_sparse_release  # noqa: E402

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


def streamed(n: int = 1_000_000, visits: int = 5, block: int = 100_000) -> dict:
    """Write n persons x ``visits`` visits as a long CSV, release it streamed, report time and peak memory."""
    import resource
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sparse_big.csv"
        with open(path, "w") as handle:
            handle.write("id,t,value\n")
            for k, start in enumerate(range(0, n, block)):
                d = sparse_design(min(block, n - start), visits=(visits, visits), seed=5000 + k)
                ids = np.char.add("q", (np.repeat(np.arange(start, start + min(block, n - start)), visits)).astype(str))
                np.savetxt(handle, np.column_stack([ids, d.t.astype(str), d.y.astype(str)]), fmt="%s", delimiter=",")
        size_mb = path.stat().st_size / 2**20
        cmd = [sys.executable, "-m", "fdp_core", "release", "mean", "--preview", "--data", str(path), "--sparse", "--domain", "0,1",
               "--value-range=-1,2", "--kernel", "matern52", "--rho", "0.2", "--epsilon", "4", "--engine", "stream",
               "--out", str(Path(tmp) / "out")]
        start = time.perf_counter()
        result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if result.returncode != 0:
            raise RuntimeError(result.stderr)
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        values = np.loadtxt(Path(tmp) / "out" / "release.csv", delimiter=",", skiprows=1)
        error = rms(values[:, 1], sparse_true_mean(values[:, 0]))
    return {"n": n, "visits": visits, "file_mb": size_mb, "seconds": seconds, "peak_rss_mb": peak_mb,
            "target_rss_mb": 2048, "ok": peak_mb < 2048, "private_l2_epsilon_4": error}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=20)
    parser.add_argument("--streamed", action="store_true", help="only the n = 10^6 streamed case")
    args = parser.parse_args()
    if args.streamed:
        print(json.dumps({"benchmark": "sparse streamed", "results": [streamed()]}, indent=2))
        return
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
