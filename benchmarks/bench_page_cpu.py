"""Server CPU of the app where people wait, measured in CPU seconds so that it holds on a loaded machine.

The wall-clock benchmarks (bench_app_start.py, bench_browser_latency.py) measure what a person
waits for, but on this shared 2-core machine their figures move 2-5x with the load average.
This one reports the process CPU time (all threads, ``time.process_time``) that the page
scripts cost, run through Streamlit's AppTest (no browser, no websocket), each measurement in
a fresh Python process:

- ``first run``: the app's first Data page run in a fresh server process (imports included,
  streamlit itself excluded);
- ``new session``: a later session's first Data page run (median of 4);
- ``epsilon change`` on Mean, Principal components and Trade-offs with DTI uploaded: the
  sidebar's epsilon moved 1.0 <-> 1.1 as bench_browser_latency.py does (median of 10);
- with ``--walk``, every page as a classroom session meets it (bench_load_sessions.py, issue 40):
  after a first session has warmed the server (imports, shared caches) on its own data, a second
  session with its own simulated data (n = 41) visits each page for the first time
  (``first visit``), moves the epsilon slider to a new value (``epsilon move``), and after the
  walk visits each page again (``revisit``); ``walk total`` is the CPU of the whole walk, what one
  session costs the server per tour of the app.

AppTest recompiles the page on every run, which a server does not; both trees pay it alike.
With ``--baseline REV`` the same runs use a copy of revision REV (``git archive``), alternating
tree by tree. With ``--bare`` the first run and the new session are also measured on a bare page
with the Data page's elements (benchmarks/bare_page.py), without and with reading the built-in example
into numpy, and printed as ratios (issue 42's pairing); ``--start-only`` skips the epsilon changes.
Every tree is byte-compiled first (bare_page.precompile: a deployed server does not compile its
modules at each start), and AppTest's scan of the installed packages for components runs once per
process, outside the figures (a server scans once when it starts).

Usage (repository root)::

    python benchmarks/bench_page_cpu.py [--baseline REV] [--data PATH] [--walk] [--bare] [--start-only]
                                        [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bare_page import data_page_inventory, element_count, precompile, widget_count, write_bare_app  # noqa: E402
from bench_browser_latency import DATA, export_revision  # noqa: E402

# The pairing of issue 42: a bare page with the Data page's elements, without and with reading the
# built-in example into numpy (the data loading any page that views the data needs).
BARE_PAGES = {"bare page": None, "bare page + data": ROOT / "data" / "example_curves.csv"}
PAGES = {"Mean": "pages/mean.py", "Principal components": "pages/components.py", "Trade-offs": "pages/tradeoffs.py"}
# Every page of a classroom session's tour (bench_load_sessions.py's visit, each page once).
WALK = [("Data", "pages/data.py"), ("Mean", "pages/mean.py"), ("Density", "pages/density.py"),
        ("Principal components", "pages/components.py"), ("Covariance & regression", "pages/covariance.py"),
        ("Trade-offs", "pages/tradeoffs.py"), ("Plan", "pages/plan.py"), ("Release & audit", "pages/release.py")]

# Runs inside a fresh interpreter with the tree's root as working directory and first on sys.path.
CHILD = r"""
import json, os, statistics, sys, time
mode, data = sys.argv[1], sys.argv[2]
import streamlit  # a server has imported it before its first session
from streamlit.testing.v1 import AppTest

# A server scans the installed packages for custom components once, when it starts; AppTest scans
# on each new AppTest's first run (~0.1 s of CPU here), which would count in every "new session" of
# every tree and hide what the pages cost. One scan, shared, before anything is measured.
try:
    from streamlit.components.v2.component_manager import BidiComponentManager
    COMPONENTS = BidiComponentManager()
    COMPONENTS.discover_and_register_components(start_file_watching=False)
except ImportError:  # a Streamlit without custom components v2
    COMPONENTS = None

def app():
    at = AppTest.from_file(os.path.join(os.getcwd(), "app.py"), default_timeout=600)
    if COMPONENTS is not None:
        at._bidi_component_manager = COMPONENTS
    return at

def cpu_of(action):
    start = time.process_time()
    action()
    return time.process_time() - start

if mode == "start":
    runs = [app() for _ in range(5)]
    cpus = [cpu_of(at.run) for at in runs]
    assert not any(at.exception for at in runs)
    print(json.dumps({"first run": cpus[0], "new session": statistics.median(cpus[1:])}))
elif mode == "walk":
    from fdp_core.data.simulate import SIMULATIONS
    from fdp_ui.state import simulated_dataset
    design = next(iter(SIMULATIONS))
    pages = json.loads(sys.argv[3])

    def session(n):
        at = app()
        at.run()
        at.session_state["dataset"] = simulated_dataset(
            design, {p.name: (n if p.name == "n" else p.default) for p in SIMULATIONS[design].parameters})
        at.run()
        return at

    def step(at, action):
        cpu = cpu_of(action)
        assert not at.exception, at.exception
        return cpu

    def walk(at, out):
        for title, path in pages:
            at.switch_page(path)
            out[f"{title}: first visit"] = step(at, at.run)
            out[f"{title}: epsilon move"] = step(at, lambda: at.select_slider(key="g_epsilon").set_value(1.1).run())
            at.select_slider(key="g_epsilon").set_value(1.0).run()
        for title, path in pages:
            at.switch_page(path)
            out[f"{title}: revisit"] = step(at, at.run)

    walk(session(30), {})  # the server warmed by an earlier session on other data
    at, out = session(41), {}
    start = time.process_time()
    walk(at, out)
    out["walk total"] = time.process_time() - start
    print(json.dumps(out))
else:
    from pathlib import Path
    from fdp_ui.state import uploaded_dataset
    at = app()
    at.run()
    at.session_state["dataset"] = uploaded_dataset(Path(data).read_bytes(), Path(data).name, "drop")
    at.run()
    at.switch_page(mode)
    at.run()
    cpus = [cpu_of(lambda e=e: at.select_slider(key="g_epsilon").set_value(e).run()) for e in [1.1, 1.0] * 6]
    assert not at.exception, at.exception
    print(json.dumps({"epsilon change": statistics.median(cpus[2:])}))
"""


# The server's BLAS threading: app.py sets one thread before numpy loads, but here numpy is loaded (by the
# child's own imports) before app.py runs, so the child needs it from its environment. Without it the pages'
# small matrices ran on two OpenBLAS threads, whose spin-waits counted several times the server's CPU.
BLAS_ONE_THREAD = {var: os.environ.get(var, "1") for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}


def _child(root: Path, mode: str, data: Path, *extra: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root), **BLAS_ONE_THREAD)
    done = subprocess.run([sys.executable, "-c", CHILD, mode, str(data), *extra], cwd=root, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{mode} failed in {root}: {done.stderr[-600:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(trees: dict[str, Path], data: Path, walk: bool = False,
            start_only: bool = False) -> dict[str, dict[str, float]]:
    out = {name: {} for name in trees}
    for name, root in trees.items():
        out[name].update(_child(root, "start", data))
    for title, path in ({} if start_only else PAGES).items():
        for name, root in trees.items():
            out[name][f"epsilon change, {title}"] = _child(root, path, data)["epsilon change"]
    if walk:
        for name, root in trees.items():
            out[name].update(_child(root, "walk", data, json.dumps(WALK)))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--baseline", default=None, help="git revision measured in turns with the working tree")
    parser.add_argument("--walk", action="store_true", help="also every page's first visit, epsilon move and "
                                                             "revisit in a session with its own data")
    parser.add_argument("--bare", action="store_true", help="also a bare page with the Data page's widgets")
    parser.add_argument("--start-only", action="store_true", help="only the first run and the new session")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="fdp_cpu_") as tmp:
        trees = {"now": ROOT}
        if args.baseline:
            trees[f"baseline {args.baseline}"] = export_revision(args.baseline, Path(tmp) / "baseline")
        for root in trees.values():
            precompile(root)
        result = measure(trees, args.data.resolve(), args.walk, args.start_only)
        bares = {}
        if args.bare:
            inventory = data_page_inventory(ROOT)
            print(f"bare page: {widget_count(inventory)} widgets, {element_count(inventory)} elements")
            for name, data in BARE_PAGES.items():
                root = write_bare_app(Path(tmp) / name.replace(" ", "_"), inventory, ROOT, data)
                precompile(root)
                bares[name] = _child(root, "start", args.data.resolve())
    load_after = os.getloadavg()
    print(f"load average before {' '.join(f'{v:.2f}' for v in load_before)}, "
          f"after {' '.join(f'{v:.2f}' for v in load_after)}")
    rows = list(next(iter(result.values())))
    print(f"{'process CPU ms':40s}" + "".join(f"{name:>22s}" for name in result))
    for row in rows:
        print(f"{row:40s}" + "".join(f"{1000 * result[name][row]:22.0f}" for name in result))
    for bare_name, bare in bares.items():
        for row in ("first run", "new session"):
            print(f"{row + ', ' + bare_name:40s}{1000 * bare[row]:22.0f}   "
                  + ", ".join(f"{name} {result[name][row] / bare[row]:.2f}x" for name in result))
    result.update(bares)
    if args.json:
        args.json.write_text(json.dumps({"load_before": load_before, "load_after": load_after, "cpu_s": result},
                                        indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
