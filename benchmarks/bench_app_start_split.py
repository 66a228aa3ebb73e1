"""Where a new session's first Data page spends its time, in headless Chromium.

For each session on one warm server: milliseconds after navigation start (browser clock) of
the HTML response, each JavaScript/CSS resource (bytes on the wire, decoded bytes, whether the
response was compressed), the websocket opening, its first message from the server, the first
Streamlit element, the first chart drawn (an SVG picture; Plotly or Vega-Lite in earlier
revisions) and the end of the first script run. Companion of bench_app_start.py (which times the same page from outside); the load
average (``uptime``) is printed with the figures.

Usage (repository root)::

    python benchmarks/bench_app_start_split.py [--sessions 3] [--root DIR] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_load as harness  # noqa: E402
from bench_app_start import CHARTS_DRAWN_JS  # noqa: E402

# Browser-side timestamps (performance.now(), ms after navigation start) of the milestones.
MILESTONES_JS = """
window.__fdpT = {};
(() => {
  const mark = (k) => { if (!(k in window.__fdpT)) window.__fdpT[k] = performance.now(); };
  const Native = window.WebSocket;
  window.WebSocket = function (...args) {
    const ws = new Native(...args);
    mark('ws_created');
    ws.addEventListener('open', () => mark('ws_open'));
    ws.addEventListener('message', () => mark('ws_first_message'));
    return ws;
  };
  window.WebSocket.prototype = Native.prototype;
  Object.assign(window.WebSocket, {CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3});
  new MutationObserver(() => {
    if (document.querySelector("[data-testid='stElementContainer']")) mark('first_element');
    if (document.querySelector("[data-testid='stMetric']")) mark('first_metric');
    const p = document.querySelector('.js-plotly-plot');
    if (p && p._fullData && p._fullData.length) mark('first_plotly_drawn');
    if (document.querySelector("[data-testid='stVegaLiteChart'] canvas, [data-testid='stVegaLiteChart'] svg"))
      mark('first_vega_drawn');
    const img = document.querySelector("[data-testid='stImage'] img[src^='data:image/svg+xml']");
    if (img && img.complete && img.naturalWidth > 0) mark('first_picture_drawn');
    if (""" + CHARTS_DRAWN_JS + """)
      mark('charts_drawn');
    const app = document.querySelector("[data-testid='stApp']");
    if (app && app.getAttribute('data-test-script-state') === 'running') mark('script_running');
    if ('script_running' in window.__fdpT && app && app.getAttribute('data-test-script-state') === 'notRunning')
      mark('script_done');
  }).observe(document, {attributes: true, childList: true, subtree: true});
})();
"""
# Done: the first script run has ended and the Data page's charts are drawn.
DONE_JS = """() => 'script_done' in window.__fdpT && 'charts_drawn' in window.__fdpT"""
RESOURCES_JS = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  return {html_response_end: nav.responseEnd, dom_content_loaded: nav.domContentLoadedEventEnd,
          load: nav.loadEventEnd,
          resources: performance.getEntriesByType('resource').map(r => ({
            name: r.name.split('/').pop().split('?')[0], type: r.initiatorType, start: r.startTime,
            request: r.requestStart, response: r.responseStart, end: r.responseEnd, transfer: r.transferSize, decoded: r.decodedBodySize}))};
}"""


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def one_session(browser, url: str) -> dict:
    context = harness.new_context(browser)
    encodings = {}
    try:
        context.add_init_script(MILESTONES_JS)
        page = context.new_page()
        page.on("response", lambda r: encodings.__setitem__(
            r.url.split("/")[-1].split("?")[0], r.headers.get("content-encoding", "none")))
        page.goto(url, wait_until="commit", timeout=120_000)
        page.wait_for_function(DONE_JS, timeout=120_000, polling=20)
        page.wait_for_timeout(300)  # late resource timing entries
        marks = page.evaluate("() => window.__fdpT")
        res = page.evaluate(RESOURCES_JS)
    finally:
        context.close()
    for r in res["resources"]:
        r["encoding"] = encodings.get(r["name"], "?")
    return {"marks": marks, **res}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--root", type=Path, default=ROOT, help="app tree to serve")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    reason = harness.chromium_skip_reason()
    if reason:
        print(reason)
        return 0
    from playwright.sync_api import sync_playwright

    up_before = uptime()
    with sync_playwright() as playwright, harness.AppServer(args.root, startup_timeout=120) as server:
        browser = harness.launch_chromium(playwright)
        try:
            sessions = [one_session(browser, server.url + "/") for _ in range(args.sessions)]
        finally:
            browser.close()
    result = {"uptime_before": up_before, "uptime_after": uptime(), "sessions": sessions}
    print(f"uptime before: {up_before}\nuptime after:  {result['uptime_after']}")
    keys = ["html_response_end", "dom_content_loaded", "ws_created", "ws_open", "ws_first_message", "script_running",
            "first_element", "first_metric", "first_plotly_drawn", "first_vega_drawn", "first_picture_drawn",
            "charts_drawn", "script_done"]
    print(f"{'milestone (ms after navigation start)':<40}" + "".join(f"{'s' + str(i + 1):>9}" for i in
                                                                      range(len(sessions))) + f"{'median':>9}")
    for key in keys:
        vals = [s["marks"].get(key, s.get(key)) for s in sessions]
        if all(v is None for v in vals):
            continue
        shown = "".join(f"{v:>9.0f}" if v is not None else f"{'-':>9}" for v in vals)
        med = statistics.median(v for v in vals if v is not None)
        print(f"{key:<40}{shown}{med:>9.0f}")
    print("\nresources of the last session (start-end ms, bytes on the wire / decoded, Content-Encoding):")
    for r in sorted(sessions[-1]["resources"], key=lambda r: r["start"]):
        if r["decoded"] > 20_000 or r["end"] - r["start"] > 50:
            print(f"  {r['name'][:44]:<44} {r['start']:>7.0f}-{r['end']:<7.0f} {r['transfer']:>9} / "
                  f"{r['decoded']:>9}  {r['encoding']}")
    total = sum(r["transfer"] for r in sessions[-1]["resources"])
    print(f"  total transferred: {total / 1e6:.2f} MB in {len(sessions[-1]['resources'])} resources")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
