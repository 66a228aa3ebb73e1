"""Ten (or thirty) concurrent browser sessions visiting the app, each with its own data (issues 26, 40).

Starts ``streamlit run app.py`` (benchmarks/bench_load.py: AppServer, with a throw-away
ledger), opens N pages in one headless Debian chromium (--no-sandbox --disable-gpu; each
page is its own Streamlit session), gives every session its own simulated data set
(n = 30 + k curves), then for ``--duration`` seconds every session walks the pages in its
own order through every page (Data, Mean, Density, Principal components, Covariance &
regression, Trade-offs, Plan, Release & audit) and, once per visit, moves the sidebar's epsilon
slider ("slider"), in burst rounds: every session does its next step, then all wait for their
runs to end.

Prints: errors (timeouts, exception boxes), cross-session leaks (each session must still
show its own n at the end), step-time percentiles overall and per page (from the click or key
press to the end of the script run, browser clock), the server's resident memory over time
(VmRSS after every round), its peak (VmHWM) and its CPU seconds, and the load average.
``--sessions 10 30`` runs each count against a fresh server.

Target (issue 40): 10 sessions, 0 errors, no leak, p95 <= 2.5 s, server peak <= 1,500 MB.
This is a benchmark, not a test: the machine is shared, so keep runs short.

Usage (repository root)::

    python benchmarks/bench_load_sessions.py [--sessions 10 30] [--duration 60] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_load import (AppServer, chromium_skip_reason, exception_texts, finish_interaction,  # noqa: E402
                        launch_chromium, new_context, sidebar_data_caption, wait_idle)

ROOT = Path(__file__).resolve().parents[1]
TARGET_P95_S = 2.5
TARGET_PEAK_MB = 1500.0
SLIDER = "slider"  # a step that moves the sidebar's epsilon slider on the page the session is on
VISIT = ["Mean", SLIDER, "Density", "Covariance & regression", "Data", "Trade-offs", SLIDER, "Principal components",
         "Plan", "Mean", "Release & audit", "Covariance & regression", SLIDER]
NAV = "[data-testid='stSidebarNav'] a"


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def _click_page(page, title: str) -> float:
    """Click the sidebar link of ``title``; the browser time just before the click."""
    link = page.locator(NAV).filter(has_text=re.compile(rf"^\W*{re.escape(title)}\s*$"))
    t0 = page.evaluate("performance.now()")
    link.first.click()
    return t0


def _move_slider(page, step: int) -> float:
    """Press an arrow key on the sidebar's epsilon slider (alternately right, left); the browser time
    just before."""
    slider = page.locator("[data-testid='stSidebar']").get_by_role("slider", name="epsilon").first
    t0 = page.evaluate("performance.now()")
    slider.press("ArrowRight" if step % 2 == 0 else "ArrowLeft")
    return t0


def _cpu_s(pid: int) -> float | None:
    """The server's user + system CPU seconds (/proc/<pid>/stat), children excluded."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def run(server: AppServer, *, sessions: int, duration_s: float, verbose: bool) -> dict:
    from playwright.sync_api import sync_playwright

    log = print if verbose else (lambda *a, **k: None)
    result = {"sessions": sessions, "duration_s": duration_s, "page_changes_s": [], "errors": [], "leaks": [],
              "rss_mb": [], "rounds": 0, "per_page_s": {}}
    start = time.monotonic()
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright, light=True)
        try:
            context = new_context(browser, width=1100, height=700)
            pages = [context.new_page() for _ in range(sessions)]
            pages[0].goto(server.url + "/")
            wait_idle(pages[0], 180_000)
            for page in pages[1:]:
                page.goto(server.url + "/", wait_until="commit")
            for page in pages:
                wait_idle(page, 180_000)
            # Own data per session: a simulation with n = 30 + k curves.
            expected_n = [30 + k for k in range(sessions)]
            for page in pages:
                page.get_by_role("radiogroup", name="Source").get_by_text("simulate").click()
            for page in pages:
                wait_idle(page, 180_000)
            for k, page in enumerate(pages):
                field = page.get_by_role("spinbutton", name="curves N")
                field.fill(str(expected_n[k]))
                field.press("Enter")
            for page in pages:
                wait_idle(page, 180_000)
            result["setup_s"] = round(time.monotonic() - start, 1)
            log(f"setup {result['setup_s']} s, server RSS {server.rss_mb():.0f} MB")

            load_start = time.monotonic()
            cpu_start = _cpu_s(server.process.pid)
            moves = [0] * sessions  # slider moves per session: alternately right and left
            on_page = ["Data"] * sessions  # the page each session shows
            while time.monotonic() - load_start < duration_s:
                r = result["rounds"]
                starts = []
                for k, page in enumerate(pages):  # each session on its own step of the visit
                    title = VISIT[(r + k) % len(VISIT)]
                    if title == on_page[k]:  # a click on the page shown starts no run: move the slider
                        title = SLIDER
                    on_page[k] = on_page[k] if title == SLIDER else title
                    try:
                        if title == SLIDER:
                            moves[k] += 1
                        starts.append((title, _move_slider(page, moves[k]) if title == SLIDER
                                       else _click_page(page, title)))
                    except Exception as exc:  # noqa: BLE001 - a failed click is a recorded error
                        result["errors"].append(f"round {r}, session {k}: click {title}: {exc}"[:300])
                        starts.append((title, None))
                for k, (page, (title, t0)) in enumerate(zip(pages, starts)):
                    if t0 is None:
                        continue
                    try:
                        # A run may start seconds after the click on a loaded machine: wait up to 15 s for it.
                        latency = finish_interaction(page, t0, timeout_ms=60_000, start_timeout_ms=15_000,
                                                     settle=False)
                    except Exception as exc:  # noqa: BLE001 - a timeout is a recorded error
                        result["errors"].append(f"round {r}, session {k}: {title}: {type(exc).__name__}"[:300])
                        continue
                    if latency is None:
                        result["no_run"] = result.get("no_run", 0) + 1  # the step started no script run
                        result.setdefault("no_run_steps", {}).setdefault(title, 0)
                        result["no_run_steps"][title] += 1
                    else:
                        result["page_changes_s"].append(latency)
                        result["per_page_s"].setdefault(title, []).append(latency)
                result["rounds"] += 1
                result["rss_mb"].append((round(time.monotonic() - load_start, 1), server.rss_mb()))
                log(f"round {r}: RSS {result['rss_mb'][-1][1]:.0f} MB")
            cpu_end = _cpu_s(server.process.pid)
            result["load_s"] = round(time.monotonic() - load_start, 1)
            result["server_cpu_s"] = None if cpu_start is None or cpu_end is None else round(cpu_end - cpu_start, 1)
            for page in pages:
                wait_idle(page, 120_000)
            for k, page in enumerate(pages):
                for text in exception_texts(page):
                    result["errors"].append(f"session {k}: exception box: {text[:300]}")
                caption = sidebar_data_caption(page)
                match = re.search(r"n = (\d+)", caption)
                if not match or int(match.group(1)) != expected_n[k]:
                    result["leaks"].append(f"session {k}: expected n = {expected_n[k]}, sidebar says {caption!r}")
        finally:
            browser.close()
    changes = result["page_changes_s"]
    result.update(p50_s=percentile(changes, 0.5), p95_s=percentile(changes, 0.95),
                  max_s=max(changes) if changes else None, server_peak_rss_mb=server.peak_rss_mb(),
                  target_p95_s=TARGET_P95_S, target_peak_mb=TARGET_PEAK_MB,
                  per_page={title: {"n": len(v), "p50_s": percentile(v, 0.5), "p95_s": percentile(v, 0.95)}
                            for title, v in sorted(result["per_page_s"].items())},
                  loadavg=Path("/proc/loadavg").read_text().split()[:3],
                  server_cpu_per_step_s=(round(result["server_cpu_s"] / len(changes), 3)
                                         if changes and result.get("server_cpu_s") is not None else None))
    return result


def report(result: dict) -> str:
    fmt = (lambda v: "n/a" if v is None else f"{v:.2f} s")
    rss = result["rss_mb"]
    third = max(1, len(rss) // 3)
    lines = [
        f"sessions {result['sessions']}, duration {result['duration_s']:.0f} s, rounds {result['rounds']}, "
        f"page changes {len(result['page_changes_s'])}, setup {result.get('setup_s')} s",
        f"errors {len(result['errors'])}, leaks {len(result['leaks'])}, steps that started no run "
        f"{result.get('no_run', 0)} {result.get('no_run_steps', {})}",
        f"step p50 {fmt(result['p50_s'])}, p95 {fmt(result['p95_s'])} (target <= {TARGET_P95_S} s), "
        f"max {fmt(result['max_s'])}",
        f"server peak RSS {result['server_peak_rss_mb']:.0f} MB (target <= {TARGET_PEAK_MB:.0f} MB), server CPU "
        f"{result.get('server_cpu_s')} s in {result.get('load_s')} s of load "
        f"({result.get('server_cpu_per_step_s')} s a step), "
        f"load average {' '.join(result['loadavg'])}",
        *(f"  {title:<24} n {v['n']:>4}  p50 {fmt(v['p50_s'])}  p95 {fmt(v['p95_s'])}"
          for title, v in result["per_page"].items()),
        "server RSS (s: MB): " + ", ".join(f"{t:.0f}: {mb:.0f}" for t, mb in rss if mb is not None),
    ]
    if len(rss) >= 3 and rss[third][1] and rss[-1][1]:
        lines.append(f"RSS after warm-up (first third of the rounds) {rss[third][1]:.0f} MB -> end {rss[-1][1]:.0f} MB")
    lines += [f"  error: {e}" for e in result["errors"][:10]] + [f"  leak: {e}" for e in result["leaks"][:10]]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[10], help="one run per count, e.g. 10 30")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of page changes after the setup")
    parser.add_argument("--json", default=None, help="also write the raw figures to this file")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    reason = chromium_skip_reason()
    if reason:
        print(f"skipped: {reason}")
        return 0
    results = []
    for count in args.sessions:
        with tempfile.TemporaryDirectory() as tmp:
            os.environ["FDP_LEDGER_URL"] = f"sqlite:///{Path(tmp) / 'ledger.sqlite3'}"  # never a real ledger
            with AppServer(ROOT, log_path=Path(tmp) / "streamlit.log") as server:
                results.append(run(server, sessions=count, duration_s=args.duration, verbose=args.verbose))
        print(report(results[-1]), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results if len(results) > 1 else results[0], indent=1))
    return 0 if not any(r["errors"] or r["leaks"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
