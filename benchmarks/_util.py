"""Shared helpers for benchmark scripts: timing, synthetic data, JSON + table output."""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

# Same BLAS threading as the app (app.py sets one thread before numpy loads).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def timed(fn, repeats: int = 20, warmup: int = 1) -> dict:
    """Median and p90 wall time of fn() in milliseconds."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000.0)
    times.sort()
    return {"median_ms": statistics.median(times), "p90_ms": times[int(0.9 * (len(times) - 1))],
            "repeats": repeats}


def synthetic_curves(n: int, m: int, seed: int = 0):
    """Smooth random curves on [0, 1] (for sizes the real data does not reach)."""
    from fdp_core.data.loading import from_arrays

    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, m)
    k = np.arange(1, 9)
    scores = rng.normal(size=(n, k.size)) / k
    values = 0.4 + 0.2 * np.sin(np.pi * t) + scores @ np.sin(np.pi * np.outer(k, t)) * 0.1
    return from_arrays(t, values, name=f"synthetic n={n} m={m}")


def report(name: str, rows: list[dict]) -> None:
    """Print results as JSON (machine-readable) and as a table (for people)."""
    print(json.dumps({"benchmark": name, "results": rows}, indent=2))
    print()
    print(f"{'measurement':58s} {'median ms':>10s} {'target ms':>10s}  ok")
    for r in rows:
        ok = "yes" if r["median_ms"] <= r["target_ms"] else "NO"
        print(f"{r['name']:58s} {r['median_ms']:10.1f} {r['target_ms']:10.1f}  {ok}")
