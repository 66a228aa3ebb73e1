"""App start in headless Chromium: ``streamlit run`` to the first rendered Data page, and a new
session on the warm server to its rendered Data page.

"Rendered" means the Data page's charts have been drawn (SVG pictures; Plotly or Vega-Lite in
earlier revisions) and the script run has ended. The first figure includes the server's start (Python imports, the first run of the
page) and the browser's first load of the frontend; the second is what every later visitor
waits for. With ``--baseline REV`` the app of revision REV (``git archive`` into a temporary
folder) is measured in turns with the working tree, so both share the machine's load (the load
average is printed with the figures).

Targets: first rendered Data page < 4 s after start; a new session on a warm server < 2 s; with
``--bare``, both within 1.25x of a bare Streamlit page with the Data page's elements (issue 42;
benchmarks/bare_page.py: the same widgets and texts in the same places, the same number of pages in
the navigation), without and with reading the built-in example into numpy, measured in turns on the
same machine and printed as ratios. Every tree is byte-compiled before it is served
(bare_page.precompile). CPU seconds (user + system, /proc) are printed with the wall-clock
figures: the server process's from its start to the first drawn page and per new session, and the
browser's (Playwright's driver and Chromium's processes) over the same spans; on a loaded machine
they hold where the wall clock moves with the load. The browser's figure includes Playwright's
polling for the drawn page every 20 ms, so it still grows with the time waited.

Usage (repository root)::

    python benchmarks/bench_app_start.py [--repeats 3] [--sessions 3] [--baseline REV] [--bare] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_load as harness  # noqa: E402
from bare_page import data_page_inventory, element_count, precompile, widget_count, write_bare_app  # noqa: E402
from bench_page_cpu import BARE_PAGES  # noqa: E402
from bench_browser_latency import export_revision  # noqa: E402

TARGET_FIRST_S, TARGET_SESSION_S = 4.0, 2.0
TARGET_BARE_RATIO = 1.25
# Every chart of the Data page drawn (its curves preview and norms histogram: SVG pictures since
# issue 25's last step; earlier revisions, measured with --baseline, drew them with Plotly, a trace
# laid out, or Vega-Lite, its SVG or canvas in place) and the script run ended. Charts carry no key
# class in the page, so all charts of the main area count.
CHARTS_DRAWN_JS = """(() => {
  const charts = Array.from(document.querySelectorAll(
      "[data-testid='stMain'] .js-plotly-plot, [data-testid='stMain'] [data-testid='stVegaLiteChart'], "
      + "[data-testid='stMain'] [data-testid='stImage'] img[src^='data:image/svg+xml']"));
  return charts.length >= 2 && charts.every(c => c.tagName === 'IMG' ? c.complete && c.naturalWidth > 0
      : c.classList.contains('js-plotly-plot') ? !!(c._fullData && c._fullData.length)
      : !!c.querySelector('svg, canvas'));
})()"""
DRAWN_JS = """() => {
  const app = document.querySelector("[data-testid='stApp']");
  return """ + CHARTS_DRAWN_JS + """ && !!app && app.getAttribute('data-test-script-state') === 'notRunning';
}"""


def _rendered_after(browser, url: str, start: float) -> float:
    """Seconds from ``start`` (time.monotonic) until a new session shows the drawn Data page."""
    context = harness.new_context(browser)
    try:
        page = context.new_page()
        page.goto(url, wait_until="commit", timeout=120_000)
        page.wait_for_function(DRAWN_JS, timeout=120_000, polling=20)
        return time.monotonic() - start
    finally:
        context.close()


def server_cpu_s(pid: int) -> float:
    """CPU seconds (user + system, all threads) the server process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def browser_cpu_s(server_pid: int) -> float:
    """CPU seconds used so far by this process's descendants other than the server: Playwright's
    driver and Chromium's processes (a renderer that has exited counts in its parent's reaped-children
    time). Its change over a session is the client's side: loading the frontend, drawing the page."""
    stats = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:  # exited meanwhile
                continue
            stats[int(entry.name)] = (int(fields[1]), sum(int(f) for f in fields[11:15]))
    children = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0, [p for p in children.get(os.getpid(), []) if p != server_pid]
    while todo:
        pid = todo.pop()
        total += stats[pid][1]
        todo.extend(children.get(pid, []))
    return total / os.sysconf("SC_CLK_TCK")


def measure(root: Path, browser, sessions: int) -> dict:
    start = time.monotonic()
    with harness.AppServer(root, startup_timeout=120) as server:
        healthy = time.monotonic() - start
        pid = server.process.pid
        cpu_healthy, client_before = server_cpu_s(pid), browser_cpu_s(pid)
        first = _rendered_after(browser, server.url + "/", start)
        cpu_first, client_first = server_cpu_s(pid), browser_cpu_s(pid) - client_before
        warm, warm_cpu, warm_client = [], [], []
        for _ in range(sessions):
            before, client_before = server_cpu_s(pid), browser_cpu_s(pid)
            warm.append(_rendered_after(browser, server.url + "/", time.monotonic()))
            warm_cpu.append(server_cpu_s(pid) - before)
            warm_client.append(browser_cpu_s(pid) - client_before)
    return {"server_healthy_s": healthy, "first_page_s": first, "new_session_s": warm,
            "server_cpu_start_s": cpu_healthy, "server_cpu_first_page_s": cpu_first,
            "server_cpu_new_session_s": warm_cpu, "browser_cpu_first_page_s": client_first,
            "browser_cpu_new_session_s": warm_client}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="server starts per tree")
    parser.add_argument("--sessions", type=int, default=3, help="new sessions per warm server")
    parser.add_argument("--baseline", default=None, help="git revision measured in turns with the working tree")
    parser.add_argument("--bare", action="store_true", help="also a bare page with the Data page's widgets, in turns")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    reason = harness.chromium_skip_reason()
    if reason:
        print(reason)
        return 0
    from playwright.sync_api import sync_playwright

    load_before = Path("/proc/loadavg").read_text().split()[:3]
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        trees = {"now": ROOT}
        if args.baseline:
            trees[f"baseline {args.baseline}"] = export_revision(args.baseline, Path(tmp) / "baseline")
        if args.bare:
            inventory = data_page_inventory(ROOT)
            print(f"bare page: {widget_count(inventory)} widgets, {element_count(inventory)} elements {inventory}")
            for name, data in BARE_PAGES.items():
                trees[name] = write_bare_app(Path(tmp) / name.replace(" ", "_"), inventory, ROOT, data)
        for root in trees.values():
            precompile(root)
        browser = harness.launch_chromium(playwright)
        runs = {name: [] for name in trees}
        try:
            for repeat in range(args.repeats):
                order = list(trees.items())
                for name, root in (order if repeat % 2 == 0 else order[::-1]):  # neither always goes first
                    runs[name].append(measure(root, browser, args.sessions))
        finally:
            browser.close()
    result = {"benchmark": "app_start", "loadavg_before": load_before,
              "loadavg_after": Path("/proc/loadavg").read_text().split()[:3], "trees": {}}
    for name, got in runs.items():
        firsts = [r["first_page_s"] for r in got]
        warm = [s for r in got for s in r["new_session_s"]]
        result["trees"][name] = {"first_page_median_s": statistics.median(firsts), "first_page_s": firsts,
                                 "server_healthy_median_s": statistics.median(r["server_healthy_s"] for r in got),
                                 "new_session_median_s": statistics.median(warm), "new_session_s": warm,
                                 "server_cpu_first_page_median_s": statistics.median(
                                     r["server_cpu_first_page_s"] for r in got),
                                 "server_cpu_new_session_median_s": statistics.median(
                                     s for r in got for s in r["server_cpu_new_session_s"]),
                                 "browser_cpu_first_page_median_s": statistics.median(
                                     r["browser_cpu_first_page_s"] for r in got),
                                 "browser_cpu_new_session_median_s": statistics.median(
                                     s for r in got for s in r["browser_cpu_new_session_s"])}
    print(json.dumps(result, indent=2))
    print(f"\nload average before {' '.join(result['loadavg_before'])}, after {' '.join(result['loadavg_after'])}")
    print(f"{'tree':<22} {'healthy s':>10} {'first page s':>13} {'new session s':>14}  target (< {TARGET_FIRST_S:g}, "
          f"< {TARGET_SESSION_S:g})")
    for name, r in result["trees"].items():
        ok = r["first_page_median_s"] < TARGET_FIRST_S and r["new_session_median_s"] < TARGET_SESSION_S
        print(f"{name:<22} {r['server_healthy_median_s']:>10.2f} {r['first_page_median_s']:>13.2f} "
              f"{r['new_session_median_s']:>14.2f}  {'met' if ok else 'MISSED'}")
    print(f"\nCPU seconds (user + system; the primary evidence on a loaded machine), server process and browser:\n"
          f"{'tree':<22} {'server to first page':>21} {'per new session':>16} {'browser first page':>19} "
          f"{'per new session':>16}")
    for name, r in result["trees"].items():
        print(f"{name:<22} {r['server_cpu_first_page_median_s']:>21.2f} {r['server_cpu_new_session_median_s']:>16.3f} "
              f"{r['browser_cpu_first_page_median_s']:>19.2f} {r['browser_cpu_new_session_median_s']:>16.3f}")
    for bare_name in BARE_PAGES:
        bare = result["trees"].get(bare_name)
        if not bare:
            continue
        for name, r in result["trees"].items():
            if name in BARE_PAGES:
                continue
            first = r["first_page_median_s"] / bare["first_page_median_s"]
            warm = r["new_session_median_s"] / bare["new_session_median_s"]
            r.setdefault("ratio_to_bare", {})[bare_name] = {"first_page": first, "new_session": warm}
            cpu_first = r["server_cpu_first_page_median_s"] / bare["server_cpu_first_page_median_s"]
            cpu_warm = r["server_cpu_new_session_median_s"] / bare["server_cpu_new_session_median_s"]
            both = [sum(t[k] for k in ("server_cpu_first_page_median_s", "browser_cpu_first_page_median_s"))
                    for t in (r, bare)]
            both_warm = [sum(t[k] for k in ("server_cpu_new_session_median_s", "browser_cpu_new_session_median_s"))
                         for t in (r, bare)]
            r["ratio_to_bare"][bare_name].update(server_cpu_first_page=cpu_first, server_cpu_new_session=cpu_warm,
                                                 cpu_first_page=both[0] / both[1],
                                                 cpu_new_session=both_warm[0] / both_warm[1])
            print(f"{name:<22} / {bare_name}: first page {first:.2f}x, new session {warm:.2f}x  target "
                  f"(<= {TARGET_BARE_RATIO:g}x) {'met' if max(first, warm) <= TARGET_BARE_RATIO else 'MISSED'}; "
                  f"CPU: server {cpu_first:.2f}x, {cpu_warm:.2f}x; server + browser {both[0] / both[1]:.2f}x, "
                  f"{both_warm[0] / both_warm[1]:.2f}x")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
