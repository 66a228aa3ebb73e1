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
(bare_page.precompile).

Usage (repository root)::

    python benchmarks/bench_app_start.py [--repeats 3] [--sessions 3] [--baseline REV] [--bare] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
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


def measure(root: Path, browser, sessions: int) -> dict:
    start = time.monotonic()
    with harness.AppServer(root, startup_timeout=120) as server:
        healthy = time.monotonic() - start
        first = _rendered_after(browser, server.url + "/", start)
        warm = []
        for _ in range(sessions):
            warm.append(_rendered_after(browser, server.url + "/", time.monotonic()))
    return {"server_healthy_s": healthy, "first_page_s": first, "new_session_s": warm}


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
                                 "new_session_median_s": statistics.median(warm), "new_session_s": warm}
    print(json.dumps(result, indent=2))
    print(f"\nload average before {' '.join(result['loadavg_before'])}, after {' '.join(result['loadavg_after'])}")
    print(f"{'tree':<22} {'healthy s':>10} {'first page s':>13} {'new session s':>14}  target (< {TARGET_FIRST_S:g}, "
          f"< {TARGET_SESSION_S:g})")
    for name, r in result["trees"].items():
        ok = r["first_page_median_s"] < TARGET_FIRST_S and r["new_session_median_s"] < TARGET_SESSION_S
        print(f"{name:<22} {r['server_healthy_median_s']:>10.2f} {r['first_page_median_s']:>13.2f} "
              f"{r['new_session_median_s']:>14.2f}  {'met' if ok else 'MISSED'}")
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
            print(f"{name:<22} / {bare_name}: first page {first:.2f}x, new session {warm:.2f}x  target "
                  f"(<= {TARGET_BARE_RATIO:g}x) {'met' if max(first, warm) <= TARGET_BARE_RATIO else 'MISSED'}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
