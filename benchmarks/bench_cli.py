"""Wall time of the command line where a person waits: ``--help``, a mean release on DTI, the library import.

Each measurement starts a fresh ``python`` process (that is what a user pays), from the
repository root, and reports the median and p90 over ``--repeats`` runs. With
``--baseline REV`` the same commands also run on a copy of revision REV (``git archive``
into a temporary folder), alternating with the working tree run by run, so that both
figures share the machine's load; the load average is printed with the figures (the
machine is shared).

Targets: ``--help`` < 0.5 s, ``release mean`` on DTI < 1 s, ``import fdp_core.releases.mean`` < 0.7 s.

Usage (repository root)::

    python benchmarks/bench_cli.py [--data PATH] [--repeats 7] [--baseline REV] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "dti_cca.csv"
TARGETS_S = {"fdp --help": 0.5, "fdp release mean --help": 1.0, "release mean on DTI": 1.0,
             "import fdp_core.releases.mean": 0.7}


def commands(data: Path, out: Path) -> dict[str, list[str]]:
    py = [sys.executable]
    return {
        "fdp --help": py + ["-m", "fdp_core", "--help"],
        "fdp release mean --help": py + ["-m", "fdp_core", "release", "mean", "--help"],
        "release mean on DTI": py + ["-m", "fdp_core", "release", "mean", "--preview", "--data", str(data), "--epsilon", "1",
                                     "--kernel", "gaussian", "--rho", "0.1", "--tau-from-data", "--seed", "1",
                                     "--out", str(out)],
        # fdp_core.mean before the concept packages (issue 27), so a --baseline of that time runs too
        "import fdp_core.releases.mean": py + ["-c", "try:\n import fdp_core.releases.mean\n"
                                                     "except ModuleNotFoundError:\n import fdp_core.mean"],
    }


def run_once(argv: list[str], cwd: Path) -> float:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="0")
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed in {cwd}: {done.stderr.decode()[-400:]}")
    return elapsed


def export_revision(rev: str, into: Path) -> Path:
    """The tree of ``rev`` as plain files (no checkout, no worktree)."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def summary(times: list[float]) -> dict:
    ordered = sorted(times)
    return {"median_s": round(statistics.median(ordered), 3),
            "p90_s": round(ordered[int(0.9 * (len(ordered) - 1))], 3), "runs": len(ordered)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--baseline", default=None, help="git revision to time side by side (e.g. main)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        trees = {"now": ROOT}
        if args.baseline:
            trees[f"baseline {args.baseline}"] = export_revision(args.baseline, Path(tmp) / "baseline")
        cmds = commands(args.data.resolve(), Path(tmp) / "out")
        times = {(tree, name): [] for tree in trees for name in cmds}
        load_before = Path("/proc/loadavg").read_text().split()[:3]
        for tree, cwd in trees.items():  # warm the bytecode caches and the page cache
            for argv in cmds.values():
                run_once(argv, cwd)
        for _ in range(args.repeats):
            for name, argv in cmds.items():
                for tree, cwd in trees.items():
                    times[(tree, name)].append(run_once(argv, cwd))
        load_after = Path("/proc/loadavg").read_text().split()[:3]

    rows = [{"tree": tree, "command": name, **summary(t), "target_s": TARGETS_S[name]}
            for (tree, name), t in times.items()]
    result = {"benchmark": "cli", "loadavg_before": load_before, "loadavg_after": load_after, "results": rows}
    print(json.dumps(result, indent=2))
    print(f"\nload average before {' '.join(load_before)}, after {' '.join(load_after)}")
    print(f"{'tree':22s} {'command':26s} {'median s':>9s} {'p90 s':>7s} {'target':>7s}  ok")
    for r in rows:
        ok = "yes" if r["median_s"] < r["target_s"] else "NO"
        print(f"{r['tree']:22s} {r['command']:26s} {r['median_s']:9.3f} {r['p90_s']:7.3f} {r['target_s']:7.1f}  {ok}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
