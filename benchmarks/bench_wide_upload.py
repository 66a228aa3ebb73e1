"""Issue 39 item 2: an upload of 80,001 columns against one of 10 columns, on the Data page.

Each side uploads its file into a fresh AppTest session of the app (what the server does for
one upload: the loader, the sparse check, the diagnosis of a refusal, then the page's run)
and times that one rerun, wall and CPU (this process). The two sides alternate, the best of
``--repeats`` is kept. Target: the 80,001-column upload within 2x the 10-column one + 1 s.

Usage (repository root)::

    python benchmarks/bench_wide_upload.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from _util import ROOT  # first: sets the BLAS thread variables before numpy loads

from streamlit.testing.v1 import AppTest  # noqa: E402


def spectrum(n_columns: int, run: int = 0) -> bytes:
    """The issue's shape: numeric headers 0..n-1 and two rows (a flat and a rising curve, so the
    10-column file is accepted and its page drawn). ``run`` changes the values, so that no run
    reads the app's cache of a previous one's load."""
    numbers, ones = ",".join(map(str, range(n_columns))), ",".join("1" * n_columns)
    rising = ",".join(str(k / 2 + run / 1000) for k in range(n_columns))
    return f"{numbers}\n{ones}\n{rising}\n".encode()


def one_upload(raw: bytes, name: str) -> dict:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.run()
    at.radio(key="data_source").set_value("upload a file").run()
    wall, cpu = time.perf_counter(), time.process_time()
    at.file_uploader(key="data_upload").set_value((name, raw, "text/csv")).run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    outcome = at.error[0].value[:80] if at.error else "loaded"
    return {"wall_s": wall, "cpu_s": cpu, "outcome": outcome, "exception": bool(at.exception)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    widths = {"10 columns": 10, "80,001 columns": 80_001}
    runs = {name: [] for name in widths}
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    for run in range(args.repeats):
        for name, width in widths.items():
            runs[name].append(one_upload(spectrum(width, run), f"{name.split()[0]}.csv"))
    best = {name: {"wall_s": round(min(r["wall_s"] for r in rs), 3), "cpu_s": round(min(r["cpu_s"] for r in rs), 3),
                   "outcome": rs[0]["outcome"], "exception": any(r["exception"] for r in rs)}
            for name, rs in runs.items()}
    small, wide = best["10 columns"], best["80,001 columns"]
    report = {"load_before": load_before, **best,
              "bound_wall_s": round(2 * small["wall_s"] + 1, 3),
              "within_bound": wide["wall_s"] <= 2 * small["wall_s"] + 1,
              "load_after": Path("/proc/loadavg").read_text().split()[:3]}
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
