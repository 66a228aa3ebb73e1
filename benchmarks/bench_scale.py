"""Scale: wall time and peak memory of releases on big files, against a pyarrow floor.

For n in {10^3, ..., 10^7} curves and m in {93, 500} grid points, a synthetic wide Parquet
file is written (in chunks, to --dir; CSV too for n <= 10^6, m = 93, for the loader
comparison), then each measurement runs in its own subprocess (a wrapper process waits for
it and reads RUSAGE_CHILDREN, so the peak RSS is that child's alone):

- floor: pyarrow reads the file and takes the column means (the least any tool must do;
  above 10^8 values the whole table would not be "bounded memory", so the floor reads it
  batch by batch, the same I/O);
- release mean (Gaussian), release kde (ICLP, feature max), release pca (k = 1, exact):
  ``python -m fdp_core release ... --engine stream`` (what the default ``--engine auto`` picks
  when the values could exceed 384 MiB in memory) and, up to 10^6 rows, ``--engine local`` (the
  in-memory loader); ``--engines auto,stream`` measures the default itself;
- loader: ``load_curves`` of the CSV against ``pyarrow.csv.read_csv`` of the same file.

Combinations whose files would not fit on disk (--max-disk-gb) or take too long are
skipped, saying so. Usage::

    python benchmarks/bench_scale.py [--dir /tmp/fdp_scale] [--max-n 10000000] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from _util import ROOT  # first: sets the BLAS thread variables before numpy loads

import numpy as np  # noqa: E402

PY = sys.executable
SIZES_N = [10**3, 10**4, 10**5, 10**6, 10**7]
SIZES_M = [93, 500]

WRAPPER = textwrap.dedent("""
    import json, resource, subprocess, sys, time
    start = time.perf_counter()
    proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
    wall = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    print(json.dumps({"code": proc.returncode, "wall_s": wall, "rss_bytes": rss, "stderr": proc.stderr[-400:]}))
""")

FLOOR = textwrap.dedent("""
    import sys, numpy as np, pyarrow.parquet as pq
    path, whole = sys.argv[1], sys.argv[2] == "1"
    pf = pq.ParquetFile(path)
    cols = [c for c in pf.schema_arrow.names if c != "id"]
    if whole:
        table = pf.read(columns=cols)
        X = np.column_stack([table.column(c).to_numpy() for c in cols])
        del table
        print(X.mean(axis=0)[:2])
    else:
        total, n = 0.0, 0
        for batch in pf.iter_batches(batch_size=65536, columns=cols):
            X = np.column_stack([batch.column(i).to_numpy() for i in range(batch.num_columns)])
            total = total + X.sum(axis=0)
            n += X.shape[0]
        print((total / n)[:2])
""")

CSV_FLOOR = textwrap.dedent("""
    import sys, pyarrow.csv as pc
    t = pc.read_csv(sys.argv[1])
    print(t.num_rows)
""")

LOADER = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[2])
    from fdp_core.data.loading import load_curves
    fd = load_curves(sys.argv[1])
    print(fd.n)
""")


def measure(argv: list[str]) -> dict:
    out = subprocess.run([PY, "-c", WRAPPER] + argv, capture_output=True, text=True, cwd=ROOT)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if result["code"] != 0:
        raise RuntimeError(f"{' '.join(argv[:6])}... failed: {result['stderr']}")
    return result


def write_parquet(path: Path, n: int, m: int, seed: int = 0, csv_path: Path | None = None) -> None:
    """Smooth random curves in chunks of 200k rows (row groups), never the whole matrix."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, m)
    names = [repr(float(x)) for x in t]
    k = np.arange(1, 9)
    shapes = np.sin(np.pi * np.outer(k, t))
    writer = None
    csv_handle = open(csv_path, "w") if csv_path else None
    if csv_handle:
        csv_handle.write("id," + ",".join(names) + "\n")
    try:
        for start in range(0, n, 200_000):
            rows = min(200_000, n - start)
            scores = rng.normal(size=(rows, k.size)) / k
            X = 0.4 + 0.2 * np.sin(np.pi * t) + 0.1 * (scores @ shapes)
            ids = np.arange(start, start + rows)
            table = pa.table({"id": ids, **{c: X[:, j] for j, c in enumerate(names)}})
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema)
            # Row groups of at most ~64 MB of values: a streamed reader decodes one row group at a time.
            writer.write_table(table, row_group_size=max(1000, min(100_000, (64 << 20) // (8 * m))))
            if csv_handle:
                np.savetxt(csv_handle, np.column_stack([ids, X]), delimiter=",",
                           fmt=["%d"] + ["%.17g"] * m)
    finally:
        if writer is not None:
            writer.close()
        if csv_handle:
            csv_handle.close()


RELEASES = {
    "mean": ["release", "mean", "--preview", "--kernel", "matern52", "--rho", "0.1", "--tau", "1", "--epsilon", "1"],
    "kde": ["release", "kde", "--preview", "--mechanism", "iclp", "--feature", "max", "--box", "0,1.5", "--epsilon", "1"],
    "pca": ["release", "pca", "--preview", "--tau", "1", "--k", "1", "--epsilon", "1"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default="/tmp/fdp_scale")
    parser.add_argument("--max-n", type=int, default=10**7)
    parser.add_argument("--max-disk-gb", type=float, default=None,
                        help="skip files above this size (default: half the free space of --dir)")
    parser.add_argument("--local-max-n", type=int, default=10**6, help="largest n run with --engine local")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--reuse", action="store_true", help="reuse a file of the same name left in --dir")
    parser.add_argument("--ns", default=None, help="comma list of n (default 1e3..1e7)")
    parser.add_argument("--ms", default=None, help="comma list of m (default 93,500)")
    parser.add_argument("--engines", default="stream,local",
                        help="comma list from auto, stream, local (local only up to --local-max-n rows)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    root = Path(args.dir)
    root.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(root).free
    max_disk = args.max_disk_gb * 2**30 if args.max_disk_gb else free / 2
    rows, skipped = [], []
    sizes_n = [int(float(x)) for x in args.ns.split(",")] if args.ns else SIZES_N
    sizes_m = [int(x) for x in args.ms.split(",")] if args.ms else SIZES_M
    for m in sizes_m:
        for n in sizes_n:
            if n > args.max_n:
                skipped.append(f"n={n:.0e} m={m}: above --max-n")
                continue
            size = n * m * 8 * 1.02
            if size > max_disk:
                skipped.append(f"n={n:.0e} m={m}: the Parquet file (~{size / 2**30:.1f} GB) exceeds the disk "
                               f"allowance ({max_disk / 2**30:.1f} GB)")
                continue
            if n * m > 10**9:
                skipped.append(f"n={n:.0e} m={m}: {n * m:.0e} cells (~{size / 2**30:.0f} GB); a streamed pass "
                               "would take over an hour on this 2-core machine")
                continue
            path = root / f"curves_{n}_{m}.parquet"
            csv_path = root / f"curves_{n}_{m}.csv" if (m == 93 and n <= 10**6) else None
            start = time.perf_counter()
            if args.reuse and path.exists() and (csv_path is None or csv_path.exists()):
                print(f"# reusing {path}", flush=True)
            else:
                write_parquet(path, n, m, csv_path=csv_path)
            print(f"# wrote n={n} m={m} ({path.stat().st_size / 2**20:.0f} MB) in {time.perf_counter() - start:.0f} s",
                  flush=True)
            block = n * m * 8
            floor = measure([PY, "-c", FLOOR, str(path), "1" if n * m <= 10**8 else "0"])
            row = {"n": n, "m": m, "block_mb": block / 2**20, "file_mb": path.stat().st_size / 2**20,
                   "floor_s": floor["wall_s"], "floor_mb": floor["rss_bytes"] / 2**20}
            local_fits = n <= args.local_max_n and n * m <= 10**8
            engines = [e for e in args.engines.split(",") if e != "local" or local_fits]
            for kind, argv in RELEASES.items():
                for engine in engines:
                    out = root / f"out_{kind}_{engine}"
                    r = measure([PY, "-m", "fdp_core"] + argv + ["--data", str(path), "--engine", engine,
                                                                 "--seed", "1", "--out", str(out)])
                    row[f"{kind}_{engine}_s"] = r["wall_s"]
                    row[f"{kind}_{engine}_mb"] = r["rss_bytes"] / 2**20
            if csv_path is not None:
                arrow = measure([PY, "-c", CSV_FLOOR, str(csv_path)])
                loader = measure([PY, "-c", LOADER, str(csv_path), str(ROOT)])
                row.update(csv_mb=csv_path.stat().st_size / 2**20, arrow_csv_s=arrow["wall_s"],
                           arrow_csv_mb=arrow["rss_bytes"] / 2**20, load_curves_s=loader["wall_s"],
                           load_curves_mb=loader["rss_bytes"] / 2**20)
            rows.append(row)
            print(json.dumps(row), flush=True)
            if not args.keep:
                path.unlink()
                if csv_path is not None:
                    csv_path.unlink()
    table(rows, skipped)
    if args.json:
        Path(args.json).write_text(json.dumps({"results": rows, "skipped": skipped}, indent=2))


def table(rows: list[dict], skipped: list[str]) -> None:
    print()
    for engine in ("auto", "stream"):  # the bounded-memory engines, against the floor
        measured = [r for r in rows if f"mean_{engine}_s" in r]
        if not measured:
            continue
        print(f"{'n':>9s} {'m':>4s} {'block MB':>9s} {'floor s':>8s} {'floor MB':>9s}  "
              + "  ".join(f"{k + ' s (x)':>14s} {k + ' MB (x)':>15s}" for k in RELEASES))
        for r in measured:
            cells = []
            for kind in RELEASES:
                s, mb = r[f"{kind}_{engine}_s"], r[f"{kind}_{engine}_mb"]
                cells.append(f"{s:8.1f} ({s / r['floor_s']:4.1f}) {mb:8.0f} ({mb / r['floor_mb']:4.1f})")
            print(f"{r['n']:9d} {r['m']:4d} {r['block_mb']:9.0f} {r['floor_s']:8.1f} {r['floor_mb']:9.0f}  "
                  + "  ".join(cells))
        print(f"(--engine {engine}; x = ratio to the floor: pyarrow read + column means, same run)")
        print()
    local = [r for r in rows if "mean_local_s" in r]
    if local:
        print()
        print(f"{'n':>9s} {'m':>4s}  " + "  ".join(f"{k + ' local s':>14s} {k + ' local MB':>15s}" for k in RELEASES))
        for r in local:
            print(f"{r['n']:9d} {r['m']:4d}  " + "  ".join(
                f"{r[f'{k}_local_s']:14.1f} {r[f'{k}_local_mb']:15.0f}" for k in RELEASES))
    loads = [r for r in rows if "load_curves_s" in r]
    if loads:
        print()
        print(f"{'n':>9s} {'CSV MB':>8s} {'pyarrow s':>10s} {'load_curves s':>14s} {'ratio':>6s} "
              f"{'pyarrow MB':>11s} {'load MB':>8s} {'MB / block':>11s}")
        for r in loads:
            print(f"{r['n']:9d} {r['csv_mb']:8.0f} {r['arrow_csv_s']:10.2f} {r['load_curves_s']:14.2f} "
                  f"{r['load_curves_s'] / r['arrow_csv_s']:6.2f} {r['arrow_csv_mb']:11.0f} {r['load_curves_mb']:8.0f} "
                  f"{r['load_curves_mb'] / r['block_mb']:11.2f}")
    for s in skipped:
        print(f"skipped: {s}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
