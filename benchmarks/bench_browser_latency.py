"""Slider change to updated plot, in Chromium, on the DTI data (Mean, Principal components, Trade-offs).

Starts ``streamlit run app.py`` on a free loopback port (benchmarks/bench_load.py: AppServer),
uploads /work/shared/data/dti_cca.csv (382 curves of 93 points) on the Data page, then on each
page moves the sidebar's epsilon slider one step (alternately right and left, so every change
is a new value and the page's caches do not answer for free) and measures, on the browser's
clock, the time from the key press until the page's first chart shows a new figure (its data
changed and was drawn) and the script run has ended. One browser, one session: this is the
latency a person feels, not a load test (bench_load.py is that).

Targets: median < 400 ms, p90 < 800 ms per page.

Usage (repository root)::

    python benchmarks/bench_browser_latency.py [--data PATH] [--changes 15] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_load as harness  # noqa: E402

DATA = Path("/work/shared/data/dti_cca.csv")
PAGES = ("Mean", "Principal components", "Trade-offs")
TARGET_MEDIAN_MS, TARGET_P90_MS = 400.0, 800.0

# A signature of the first chart's drawn figure: changes when plotly has re-rendered new data.
WATCH_JS = """() => {
  const sig = () => {
    const el = document.querySelector('.js-plotly-plot');
    if (!el || !el._fullData) return '';
    const l = el._fullLayout || {};
    return JSON.stringify([(l.title && l.title.text) || '', el._fullData.map(d => {
        const y = d.y || d.z || [];
        return [d.name, y.length, Array.from(y).slice(0, 40)];
    })]);
  };
  window.__fdpSig = sig;
  window.__fdpBefore = sig();
  window.__fdpChanged = null;
  const poll = () => {
    if (window.__fdpChanged === null && sig() !== window.__fdpBefore) window.__fdpChanged = performance.now();
    if (window.__fdpChanged === null) requestAnimationFrame(poll);
  };
  requestAnimationFrame(poll);
}"""


def _percentile(values, q):
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def _upload(page, path: Path) -> None:
    radio = page.get_by_role("radiogroup", name="Source").get_by_text("upload a file", exact=True)
    harness.interact(page, lambda: radio.click())
    file_input = page.locator("[data-testid='stFileUploaderDropzoneInput']")
    harness.interact(page, lambda: file_input.set_input_files(str(path)), timeout_ms=120_000)
    harness.wait_idle(page, 120_000)


def measure_page(page, title: str, changes: int) -> list[float]:
    harness.goto_page(page, title)
    harness.wait_idle(page, 120_000)
    slider = page.locator("[data-testid='stSidebar']").get_by_role("slider", name="epsilon")
    latencies, parts = [], []
    for i in range(changes + 1):  # the first change warms the page's caches and is not counted
        key = "ArrowRight" if i % 2 == 0 else "ArrowLeft"
        for _attempt in range(2):  # a key press landing during a re-render can be lost: press again
            page.evaluate(WATCH_JS)
            t0 = page.evaluate("performance.now()")
            slider.press(key)
            run = harness.finish_interaction(page, t0, timeout_ms=120_000, settle=False)
            if run is not None:
                break
            harness.wait_idle(page, 60_000)
        if run is None:
            page.screenshot(path=str(ROOT / "artifacts" / "latency_failure.png"), full_page=True)
            raise RuntimeError(f"{title}: the slider change started no rerun (artifacts/latency_failure.png)")
        page.wait_for_function("window.__fdpChanged !== null", timeout=60_000, polling=20)
        changed = page.evaluate("window.__fdpChanged")
        if i:
            latencies.append(max(changed - t0, run * 1000))
            parts.append((run * 1000, changed - t0))
        harness.wait_idle(page, 60_000, settle_ms=100)
    measure_page.parts = parts  # (script run ended, chart redrawn) per change, ms
    return latencies


def run(data: Path, changes: int) -> dict:
    from playwright.sync_api import sync_playwright

    result = {"data": str(data), "changes_per_page": changes, "pages": {}}
    with harness.AppServer(ROOT) as server, sync_playwright() as playwright:
        browser = harness.launch_chromium(playwright)
        try:
            context = harness.new_context(browser, width=1400, height=900)
            page = context.new_page()
            page.goto(server.url + "/")
            harness.wait_idle(page, 120_000)
            _upload(page, data)
            caption = page.locator("[data-testid='stSidebar']").get_by_text("Data:").first.inner_text()
            if data.name not in caption:
                raise RuntimeError(f"the upload of {data} was not loaded: {caption}")
            result["data_caption"] = caption
            for title in PAGES:
                start = time.monotonic()
                ms = measure_page(page, title, changes)
                errors = harness.exception_texts(page)
                parts = measure_page.parts
                result.setdefault("run_end_vs_chart_ms", {})[title] = [
                    statistics.median(p[0] for p in parts), statistics.median(p[1] for p in parts)]
                result["pages"][title] = {
                    "n": len(ms), "median_ms": statistics.median(ms), "p90_ms": _percentile(ms, 0.9),
                    "max_ms": max(ms), "wall_s": time.monotonic() - start, "exceptions": errors,
                    "meets_target": statistics.median(ms) < TARGET_MEDIAN_MS and _percentile(ms, 0.9) < TARGET_P90_MS}
            context.close()
        finally:
            browser.close()
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--changes", type=int, default=15, help="measured slider changes per page")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    reason = harness.chromium_skip_reason()
    if reason:
        print(reason)
        return 0
    if not args.data.exists():
        print(f"{args.data} not found: nothing measured")
        return 0
    result = run(args.data, args.changes)
    print(json.dumps(result, indent=2))
    print(f"\n{'page':<22} {'n':>3} {'median ms':>10} {'p90 ms':>8} {'max ms':>8}  target (median < "
          f"{TARGET_MEDIAN_MS:.0f}, p90 < {TARGET_P90_MS:.0f})")
    for title, r in result["pages"].items():
        print(f"{title:<22} {r['n']:>3} {r['median_ms']:>10.0f} {r['p90_ms']:>8.0f} {r['max_ms']:>8.0f}  "
              f"{'met' if r['meets_target'] else 'MISSED'}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
