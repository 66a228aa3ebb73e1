"""Per-session memory and CPU of each page run (issue 40), measured without a browser.

What ten people on one server cost is, per page, (a) the transient memory one session's run
allocates on top of what the process already holds (ten sessions reaching a page together
stack ten of these) and (b) its CPU seconds. Both are measured through Streamlit's AppTest in
one fresh process per data set, page by page:

- ``cold``: the first session to open the page (shared caches empty);
- ``warm``: a second, new session opening the same page with the same settings (what
  every later student pays: everything in st.cache_data / st.cache_resource is shared).

``--data sim`` gives every session its own simulated data set (KL design, m = 100, n = 30, 31, ...),
as bench_load_sessions.py does: then "warm" shares only what does not depend on the curves.

``--concurrent N`` instead opens N sessions of one server (threads, as Streamlit runs one script
thread per session) and sends all N to each page at the same moment: the process's resident
memory peak above its level just before (VmHWM after resetting it), the wall time until the last
run ends and the CPU seconds per session. This is the spike a classroom makes.

Memory is tracemalloc's peak during the run above the allocations live before it (numpy
registers its buffers with tracemalloc), in MB; CPU is ``time.process_time`` of the run.
On a loaded machine the CPU figures hold better than wall-clock ones.

Usage (repository root)::

    python benchmarks/bench_page_memory.py [--data example|sim|PATH] [--concurrent N] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DTI = ROOT.parent / "shared" / "data" / "dti_cca.csv"
PAGES = ["pages/mean.py", "pages/density.py", "pages/components.py", "pages/covariance.py", "pages/tradeoffs.py",
         "pages/plan.py", "pages/release.py", "pages/data.py"]

# Runs in a fresh interpreter with the tree's root as working directory and first on sys.path.
CHILD = r"""
import gc, json, os, sys, time, tracemalloc
data, pages = sys.argv[1], sys.argv[2:]
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
from streamlit.testing.v1 import AppTest

N_SESSION = iter(range(30, 10**6))

def session():
    at = AppTest.from_file(os.path.join(os.getcwd(), "app.py"), default_timeout=600)
    at.run()
    if data == "sim":  # own data per session, as in bench_load_sessions.py: the KL design, n = 30, 31, ...
        from fdp_ui.state import simulated_dataset
        at.session_state["dataset"] = simulated_dataset("kl", {"n": next(N_SESSION), "m": 100, "p": 4.0, "seed": 0})
        at.run()
    elif data != "example":
        from pathlib import Path
        from fdp_ui.state import uploaded_dataset
        at.session_state["dataset"] = uploaded_dataset(Path(data).read_bytes(), Path(data).name, "drop")
        at.run()
    return at

def measure(at, page):
    at.switch_page(page)
    gc.collect()
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    cpu = time.process_time()
    at.run()
    cpu = time.process_time() - cpu
    peak = tracemalloc.get_traced_memory()[1]
    assert not at.exception, (page, [e.value for e in at.exception])
    return {"peak_mb": round((peak - before) / 2**20, 1), "cpu_s": round(cpu, 3)}

tracemalloc.start()
rows = {}
for page in pages:
    cold = measure(session(), page)
    warm = measure(session(), page)
    rows[page] = {"cold": cold, "warm": warm}
print(json.dumps(rows))
"""


# N sessions of one server reaching each page at the same moment (threads, as Streamlit runs one
# script thread per session): the server's resident-memory peak above its level before (VmHWM,
# reset through /proc/self/clear_refs), the wall time until the last run ends, and the CPU.
CONCURRENT = r"""
import gc, json, os, sys, threading, time
data, n_sessions, pages = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
""" + CHILD.split("tracemalloc.start()")[0].split('data, pages = sys.argv[1], sys.argv[2:]')[1] + r"""
def status_kb(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])

sessions = [session() for _ in range(n_sessions)]
rows = {}
for page in pages:
    for at in sessions:
        at.switch_page(page)
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS
    base = status_kb("VmRSS")
    barrier = threading.Barrier(n_sessions)
    errors = []
    def visit(at):
        barrier.wait()
        at.run()
        if at.exception:
            errors.append(str([e.value for e in at.exception])[:300])
    threads = [threading.Thread(target=visit, args=(at,)) for at in sessions]
    wall, cpu = time.perf_counter(), time.process_time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rows[page] = {"peak_above_mb": round((status_kb("VmHWM") - base) / 1024, 1),
                  "rss_before_mb": round(base / 1024), "wall_s": round(time.perf_counter() - wall, 2),
                  "cpu_s_per_session": round((time.process_time() - cpu) / n_sessions, 3), "errors": errors}
print(json.dumps(rows))
"""


def measure_concurrent(data: str, sessions: int, pages: list[str], root: Path = ROOT) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root), OPENBLAS_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", CONCURRENT, data, str(sessions), *pages], cwd=root, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(data: str, pages: list[str], root: Path = ROOT) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root), OPENBLAS_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", CHILD, data, *pages], cwd=root, env=env, capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(rows: dict) -> str:
    lines = [f"{'page':<22} {'cold MB':>8} {'cold CPU s':>10} {'warm MB':>8} {'warm CPU s':>10}"]
    for page, r in rows.items():
        lines.append(f"{Path(page).stem:<22} {r['cold']['peak_mb']:>8.1f} {r['cold']['cpu_s']:>10.2f} "
                     f"{r['warm']['peak_mb']:>8.1f} {r['warm']['cpu_s']:>10.2f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="example", help="'example' (built in), 'sim' (own data per session) or a CSV path, e.g. DTI")
    parser.add_argument("--pages", nargs="*", default=PAGES)
    parser.add_argument("--concurrent", type=int, default=0,
                        help="N sessions of one server open each page at the same moment (0: per session, as above)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    if args.data not in ("example", "sim") and not Path(args.data).exists():
        print(f"skipped: {args.data} not found")
        return 0
    data = args.data if args.data in ("example", "sim") else str(Path(args.data).resolve())
    if args.concurrent:
        rows = measure_concurrent(data, args.concurrent, args.pages)
        print(f"data: {args.data}; {args.concurrent} sessions at once; load average "
              f"{open('/proc/loadavg').read().split()[:3]}")
        print(f"{'page':<22} {'peak above MB':>13} {'wall s':>7} {'CPU s/session':>13} errors")
        for page, r in rows.items():
            print(f"{Path(page).stem:<22} {r['peak_above_mb']:>13.1f} {r['wall_s']:>7.2f} {r['cpu_s_per_session']:>13.3f} "
                  f"{len(r['errors'])}")
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
        return 0 if not any(r["errors"] for r in rows.values()) else 1
    rows = measure(data, args.pages)
    print(f"data: {args.data}; load average {open('/proc/loadavg').read().split()[:3]}")
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
