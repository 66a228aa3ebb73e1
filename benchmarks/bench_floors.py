"""Issue 42's figures against their floors, side by side in one run, with the load average.

Every measurement is a fresh child process, run through a wrapper that reports the child's
own wall time, CPU time (user + system, RUSAGE_CHILDREN) and peak RSS; the pairs alternate run
by run so that both sides share the machine's load, and the best of ``--repeats`` is kept
(the machine is shared: the best run is the one least disturbed by the others).

- stream: the default engine (``--engine auto``'s choice, the streamed sums of ``release mean``)
  on a 10^6 x 93 Parquet file against a streaming pyarrow floor that decodes row group by row
  group, computes the row norms and the clipped column sums, and copies no whole table. Both
  are ``python -c`` children (the same start-up; each side's imports count in its wall time) and
  also print their in-process phase (file opened to sums). Target: wall <= 1.25x the floor, peak
  <= 1 GB. The whole ``release mean --preview`` command (planning, the accuracy radius, the files
  added) is measured in the same run. ``--big`` adds 10^7 x 93 (about 7 GB of disk, deleted
  afterwards unless ``--keep``): flat memory and linear time, and Dask on a LocalCluster of 2
  workers against the default engine (sums to relative 1e-12, counts equal).
- long grid: ``release mean`` of 300 curves x 10,000 grid points (CSV) against one numpy
  ``eigh`` of a 2,000 x 2,000 matrix; ``release covariance`` (with a released mean) and
  ``release pca`` (k = 2) of the same file (``--preview``: the uncharged path, no ledger touched).
  Target: CPU <= 2x each.
- command line: ``release mean`` on DTI (``--preview`` when the CLI has it, the uncharged path)
  against ``import numpy``. Target: CPU <= 3x.

Usage (repository root)::

    python benchmarks/bench_floors.py [--dir /tmp/fdp_floors] [--repeats 5] [--only stream,long,cli]
                                      [--big] [--keep] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from _util import ROOT, SHARED_DATA  # first: sets the BLAS thread variables before numpy loads

import numpy as np  # noqa: E402

PY = sys.executable

WRAPPER = textwrap.dedent("""
    import json, resource, subprocess, sys, time
    start = time.perf_counter()
    proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
    wall = time.perf_counter() - start
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"code": proc.returncode, "wall_s": wall, "cpu_s": use.ru_utime + use.ru_stime,
                      "rss_mb": use.ru_maxrss / 1024, "stderr": proc.stderr[-400:], "stdout": proc.stdout[-400:]}))
""")

STREAM_FLOOR = textwrap.dedent("""
    import sys, time, numpy as np, pyarrow.parquet as pq
    start = time.perf_counter()
    pf = pq.ParquetFile(sys.argv[1], pre_buffer=False, buffer_size=1 << 20)
    cols = [c for c in pf.schema_arrow.names if c != "id"]
    t = np.array([float(c) for c in cols])
    t = (t - t[0]) / (t[-1] - t[0])
    w = np.zeros(t.size)
    w[:-1] += np.diff(t) / 2
    w[1:] += np.diff(t) / 2
    tau, total, n = 1.0, np.zeros(t.size), 0
    for g in range(pf.num_row_groups):  # one row group decoded at a time, its columns read in place
        table = pf.read_row_group(g, columns=cols)
        xs = [table.column(j).chunk(0).to_numpy() for j in range(t.size)]
        norm2 = np.zeros(table.num_rows)
        for j, x in enumerate(xs):
            norm2 += w[j] * x * x
        factor = np.minimum(1.0, tau / np.sqrt(np.maximum(norm2, 1e-300)))
        for j, x in enumerate(xs):
            total[j] += factor @ x
        n += table.num_rows
    print(n, total[:2] / n)
    print("phase_s", time.perf_counter() - start)
""")

# The default engine alone, started as the floor is (``python -c``): --engine auto's choice for the
# file (it must stream), then the streamed sums of ``release mean --tau 1`` (validation, range and
# L2 clipping, raw and clipped sums); not the planning, the accuracy radius or the files, which
# ``release mean`` adds (measured next to it). "phase_s": from just before opening the file to the sums,
# as "phase_s" of the floor (both without the interpreter's start and the imports).
STREAM_ENGINE = textwrap.dedent("""
    import sys, time
    import numpy as np
    from fdp_core.engines.stream import choose_engine, stream_mean_sums
    from fdp_core.releases.mean import MeanSettings
    start = time.perf_counter()
    assert choose_engine("auto", sys.argv[1]) == "stream"
    sums = stream_mean_sums(sys.argv[1], MeanSettings(kernel="matern52", rho=0.1, epsilon=1.0, tau=1.0))
    print(sums.n, sums.total[:2] / sums.n)
    print("phase_s", time.perf_counter() - start)
""")

# --big: Dask on a LocalCluster of 2 workers against the default engine, on the same file: the
# streamed sums (before any noise) agree to relative 1e-12, counts exactly.
DASK_CHECK = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    from fdp_core.engines.dask_engine import client_for, dask_mean_sums
    from fdp_core.engines.stream import stream_mean_sums
    from fdp_core.releases.mean import MeanSettings
    settings = MeanSettings(kernel="matern52", rho=0.1, epsilon=1.0, tau=1.0)
    start = time.perf_counter()
    local = stream_mean_sums(sys.argv[1], settings)
    local_s = time.perf_counter() - start
    client, cluster = client_for(None, n_workers=2)
    start = time.perf_counter()
    remote = dask_mean_sums(sys.argv[1], settings, client=client)
    dask_s = time.perf_counter() - start
    client.close()
    cluster.close()
    def rel(a, b):
        return float(np.max(np.abs(a - b)) / np.max(np.abs(a)))
    print(json.dumps({"n": local.n, "counts_equal": (local.n, local.n_dropped, local.n_clipped, local.n_curves)
                      == (remote.n, remote.n_dropped, remote.n_clipped, remote.n_curves),
                      "total_rel_diff": rel(local.total, remote.total),
                      "raw_rel_diff": rel(local.raw_sum, remote.raw_sum),
                      "local_s": round(local_s, 2), "dask_s": round(dask_s, 2)}))
""")

EIGH = textwrap.dedent("""
    import numpy as np
    a = np.random.default_rng(0).standard_normal((2000, 2000))
    np.linalg.eigh(a + a.T)
""")

MEAN = ["release", "mean", "--kernel", "matern52", "--rho", "0.1", "--epsilon", "1", "--seed", "1"]


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 3)[:3].__str__()


def measure(argv: list[str]) -> dict:
    out = subprocess.run([PY, "-c", WRAPPER] + argv, capture_output=True, text=True, cwd=ROOT)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if result["code"] != 0:
        raise RuntimeError(f"{' '.join(argv[:8])}... failed: {result['stderr']}")
    return result


def phase(result: dict) -> float | None:
    """The "phase_s" a child printed (its work without start-up and imports), if any."""
    for line in result.get("stdout", "").splitlines():
        if line.startswith("phase_s "):
            return float(line.split()[1])
    return None


def paired(named: dict[str, list[str]], repeats: int) -> dict:
    """Best (lowest) wall and CPU of each command over ``repeats`` alternating runs, max RSS
    (and the best in-process phase, for the children that print one)."""
    runs = {name: [] for name in named}
    for _ in range(repeats):
        for name, argv in named.items():
            runs[name].append(measure(argv))
    figures = {}
    for name, rs in runs.items():
        figures[name] = {"wall_s": round(min(r["wall_s"] for r in rs), 3),
                         "cpu_s": round(min(r["cpu_s"] for r in rs), 3),
                         "rss_mb": round(max(r["rss_mb"] for r in rs), 1), "runs": len(rs)}
        phases = [p for p in map(phase, rs) if p is not None]
        if phases:
            figures[name]["phase_s"] = round(min(phases), 3)
    return figures


def stream(folder: Path, n: int, repeats: int) -> dict:
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_scale import write_parquet

    path = folder / f"curves_{n}_93.parquet"
    if not path.exists():
        write_parquet(path, n, 93)
    out = folder / "out_stream"
    # --preview: the streamed path (a charged release reads the file in memory, and a plain run without a
    # budget first loads it to look the budget up); --seed is accepted only with it.
    figures = paired({"floor": [PY, "-c", STREAM_FLOOR, str(path)],
                      "default engine": [PY, "-c", STREAM_ENGINE, str(path)],
                      "release mean --preview": [PY, "-m", "fdp_core", *MEAN, "--preview", "--tau", "1", "--data",
                                                 str(path), "--out", str(out)]}, repeats)
    floor = figures["floor"]
    for name in ("default engine", "release mean --preview"):
        figures[f"ratio_wall {name}"] = round(figures[name]["wall_s"] / floor["wall_s"], 2)
    figures["ratio_phase default engine"] = round(figures["default engine"]["phase_s"] / floor["phase_s"], 2)
    figures["file_mb"] = round(path.stat().st_size / 2**20)
    return figures


def long_grid(folder: Path, repeats: int) -> dict:
    path = folder / "long_300x10000.csv"
    if not path.exists():
        rng = np.random.default_rng(5)
        t = np.linspace(0, 1, 10_000)
        values = (0.5 * rng.normal(size=(300, 1)) * np.sin(2 * np.pi * t) + 0.3 * rng.normal(size=(300, 1))
                  * np.cos(6 * np.pi * t) + 0.05 * rng.normal(size=(300, t.size)).cumsum(axis=1) / 100)
        np.savetxt(path, np.clip(values, -2, 2), delimiter=",", fmt="%.5f",
                   header=",".join(str(k) for k in range(1, 10_001)), comments="")
    common = ["--kernel", "matern52", "--rho", "0.1", "--epsilon", "1", "--seed", "1", "--preview",
              "--value-range", "-2,2", "--data", str(path), "--out", str(folder / "out_long")]
    figures = paired({"eigh(2000)": [PY, "-c", EIGH],
                      "release mean 300 x 10,000": [PY, "-m", "fdp_core", *MEAN,
                                                    *([] if "--preview" in MEAN else ["--preview"]),  # --seed needs it
                                                    "--value-range", "-2,2", "--data", str(path), "--out",
                                                    str(folder / "out_long")],
                      "release covariance 300 x 10,000": [PY, "-m", "fdp_core", "release", "covariance", *common,
                                                          "--centring", "released-mean"],
                      "release pca 300 x 10,000": [PY, "-m", "fdp_core", "release", "pca", *common, "--k", "2"]},
                     repeats)
    for kind in ("mean", "covariance", "pca"):
        name = f"release {kind} 300 x 10,000"
        figures[f"ratio_cpu_{kind}" if kind != "mean" else "ratio_cpu"] = round(
            figures[name]["cpu_s"] / figures["eigh(2000)"]["cpu_s"], 2)
    return figures


def cli(folder: Path, repeats: int) -> dict:
    data = SHARED_DATA / "dti_cca.csv"
    if not data.exists():
        return {"skipped": f"{data} is absent"}
    preview = ["--preview"] if "--preview" in subprocess.run(
        [PY, "-m", "fdp_core", "release", "mean", "--help"], capture_output=True, text=True, cwd=ROOT).stdout else []
    figures = paired({"import numpy": [PY, "-c", "import numpy"],
                      "release mean DTI": [PY, "-m", "fdp_core", *MEAN, *preview, "--data", str(data),
                                           "--person-column", "subject", "--value-range", "0,1",
                                           "--out", str(folder / "out_dti")]}, repeats)
    figures["ratio_cpu"] = round(figures["release mean DTI"]["cpu_s"] / figures["import numpy"]["cpu_s"], 2)
    figures["path"] = "preview (--preview)" if preview else "default (no --preview in this CLI)"
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/fdp_floors"))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", default="stream,long,cli")
    parser.add_argument("--big", action="store_true", help="also stream 10^7 x 93 (about 7 GB of disk)")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(","))
    report = {"load_before": loadavg()}
    if "stream" in only:
        report["stream 10^6 x 93"] = stream(args.dir, 10**6, args.repeats)
        print(json.dumps(report["stream 10^6 x 93"]), flush=True)
    if "long" in only:
        report["long grid"] = long_grid(args.dir, args.repeats)
        print(json.dumps(report["long grid"]), flush=True)
    if "cli" in only:
        report["command line"] = cli(args.dir, args.repeats)
        print(json.dumps(report["command line"]), flush=True)
    if args.big:
        report["stream 10^7 x 93"] = stream(args.dir, 10**7, 1)
        print(json.dumps(report["stream 10^7 x 93"]), flush=True)
        check = measure([PY, "-c", DASK_CHECK, str(args.dir / f"curves_{10**7}_93.parquet")])
        report["dask 10^7 x 93"] = {**json.loads(check["stdout"].strip().splitlines()[-1]),
                                    "rss_mb": round(check["rss_mb"], 1)}
        print(json.dumps(report["dask 10^7 x 93"]), flush=True)
        if not args.keep:
            (args.dir / f"curves_{10**7}_93.parquet").unlink(missing_ok=True)
    report["load_after"] = loadavg()
    print(json.dumps(report, indent=1))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    if not args.keep:  # only what this script wrote
        for name in ("curves_1000000_93.parquet", "long_300x10000.csv"):
            (args.dir / name).unlink(missing_ok=True)
        for name in ("out_stream", "out_long", "out_dti"):
            shutil.rmtree(args.dir / name, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
