"""Concurrent sessions: N real browser sessions against one local Streamlit server.

Starts ``streamlit run app.py`` on a free loopback port, opens N pages in one headless
Debian chromium (each page is its own Streamlit session: its own websocket and
session_state), gives every session its own data set (a simulation with n = 30 + k curves)
and its own epsilon, then for a bounded time moves sliders on the Mean page in all
sessions at once (burst rounds: every session sends a change, then all wait). Reports

- rerun latency percentiles: time from the slider key press until the page shows the
  server's new output (the sidebar's "phi = ..." caption) and the script run has ended,
  measured on the browser's clock; in burst rounds N reruns queue on the server together,
  so this is a worst case (and the N headless browsers share the server's two cores);
- peak resident memory of the server process (VmHWM from /proc/<pid>/status) before and
  after the load;
- errors (Streamlit exception boxes, timeouts) and cross-session leakage: at the end each
  session must still show its own n and its own epsilon.

Also the home of the app-driving helpers shared by the browser tests (tests/browser/):
``AppServer``, ``chromium_skip_reason``, ``launch_chromium``, ``new_context``,
``wait_idle``, ``interact``. Only loopback traffic: the browser's requests to anything
but the local server are aborted.

Target: 10 sessions, p95 rerun latency < 5 s, no errors, no leakage.

Usage (repository root)::

    python benchmarks/bench_load.py [--sessions 10] [--duration 25] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path(os.environ.get("FDP_CHROMIUM", "/usr/bin/chromium"))  # Debian's package; never a download
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TARGET_P95_S = 5.0

# Records every change of the app root's script state ("running" / "notRunning") with a
# browser timestamp, so a wait can tell a finished rerun from one that has not started yet.
# A short run's "running" and "notRunning" can both land before the observer's callback (a busy
# browser handles both messages in one task): reading the attribute then would record
# "notRunning" twice and lose the run. Each value is therefore taken from the next record's
# oldValue (the last one's from the attribute itself).
RECORDER_JS = """
window.__fdpRuns = [];
new MutationObserver(mutations => {
  const now = performance.now();
  mutations.forEach((m, i) => {
    const next = mutations.slice(i + 1).find(n => n.target === m.target);
    const value = next ? next.oldValue : m.target.getAttribute('data-test-script-state');
    window.__fdpRuns.push([value, now]);
  });
}).observe(document, {attributes: true, subtree: true, attributeOldValue: true,
                      attributeFilter: ['data-test-script-state']});
"""
APP_ROOT = "[data-testid='stApp']"
# The sidebar's line "phi = <value>" (written by the server on every run of every page; small text
# in the markdown above the Randomness settings, fdp_ui/sidebar.py).
PHI_CAPTION_JS = """() => (Array.from(document.querySelectorAll(
    "[data-testid='stSidebar'] [data-testid='stMarkdownContainer']"))
    .flatMap(e => e.innerText.split('\\n')).map(t => t.trim())
    .find(t => t.startsWith('phi = ')) || '')"""
# Browser time once the caption differs from ``before`` and no script run is in progress.
RERUN_DONE_JS = """before => {
  const caption = (""" + PHI_CAPTION_JS + """)();
  const app = document.querySelector("[data-testid='stApp']");
  if (!caption || caption === before || !app) return false;
  return app.getAttribute('data-test-script-state') === 'notRunning' ? performance.now() : false;
}"""


# --------------------------------------------------------------------------- server

def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class AppServer:
    """``streamlit run app.py`` on 127.0.0.1:<free port> as a child process.

    Use as a context manager: waits for /_stcore/health, always terminates the process
    (SIGTERM, then SIGKILL after 10 s). Output goes to ``log_path``.
    """

    def __init__(self, root: Path = ROOT, *, port: int | None = None, log_path: Path | None = None,
                 startup_timeout: float = 60.0):
        self.root = Path(root)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = Path(log_path) if log_path else Path(tempfile.mkstemp(prefix="fdp_app_", suffix=".log")[1])
        self.startup_timeout = startup_timeout
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> "AppServer":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
               "--server.port", str(self.port), "--server.address", "127.0.0.1",
               "--browser.gatherUsageStats", "false"]
        env = {**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false", "PYTHONUNBUFFERED": "1"}
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen(cmd, cwd=self.root, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.stop()
                raise RuntimeError(f"streamlit exited with {self.process.returncode}:\n{self.log_tail()}")
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as response:
                    if response.status == 200:
                        return
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"streamlit did not become healthy within {self.startup_timeout} s:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if getattr(self, "_log", None) is not None:
            self._log.close()
            self._log = None

    def log_tail(self, n_chars: int = 4000) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")[-n_chars:]
        return ""

    def _status_kb(self, field: str) -> int | None:
        """A memory figure (kB) from /proc/<pid>/status (Linux); None elsewhere."""
        with contextlib.suppress(OSError, AttributeError):
            for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        return None

    def peak_rss_mb(self) -> float | None:
        kb = self._status_kb("VmHWM")
        return None if kb is None else kb / 1024

    def rss_mb(self) -> float | None:
        kb = self._status_kb("VmRSS")
        return None if kb is None else kb / 1024


# --------------------------------------------------------------------------- browser

def chromium_skip_reason() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is not installed (apt-get install chromium; or set FDP_CHROMIUM); browser tests skipped"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -r requirements-dev.txt)"
    return None


# Load runs share the machine with the server, unlike real users' browsers: skip WebGL
# (software-rendered here) so the browsers' rendering does not inflate the server's latency.
LIGHT_ARGS = ["--disable-webgl", "--disable-3d-apis", "--blink-settings=imagesEnabled=false"]


def launch_chromium(playwright, *, light: bool = False):
    """Debian's chromium, headless; playwright gives it a fresh temporary profile
    (user-data-dir) per launch. Never a downloaded browser."""
    args = CHROMIUM_ARGS + (LIGHT_ARGS if light else [])
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=args, headless=True)


def _only_loopback(route):
    url = route.request.url
    if re.match(r"^(https?|wss?)://(127\.\d+\.\d+\.\d+|localhost|\[::1\])(:\d+)?/", url) or url.startswith(
            ("data:", "blob:", "about:")):
        route.continue_()
    else:  # e.g. the material-icon favicon Streamlit loads from a font CDN
        route.abort()


def new_context(browser, *, width: int = 1400, height: int = 900, **kwargs):
    """A fresh browser context (own cookies and storage): external requests aborted,
    script-state recorder installed in every page."""
    context = browser.new_context(viewport={"width": width, "height": height}, accept_downloads=True, **kwargs)
    context.route("**/*", _only_loopback)
    context.add_init_script(RECORDER_JS)
    context.set_default_timeout(30_000)
    return context


CHARTS_DRAWN_JS = """() => Array.from(document.querySelectorAll("[data-testid='stBidiComponentRegular']"))
    .every(box => {  // every live chart (fdp_ui/live_chart.py) shows its latest figure
        const plot = box.querySelector('.fdp-live-chart');
        return plot && plot.__fdpDrawn === plot.__fdpSpec;
    })"""


def _wait_charts_drawn(page, timeout_ms: int) -> None:
    """Let the live charts draw their latest figures (plotly.js loads and draws after the run ends).
    Bounded and not an error when it runs out: a check that needs the charts asserts on them itself,
    and a load test with many tabs in one browser must not stall on one that is slow to paint."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout  # lazy: only where a browser runs

    try:
        page.wait_for_function(CHARTS_DRAWN_JS, timeout=timeout_ms, polling=100)
    except PlaywrightTimeout:
        pass


def wait_idle(page, timeout_ms: int = 60_000, settle_ms: int = 250) -> None:
    """Wait until the app is connected, no script run is in progress or about to start, and
    lazily loaded widgets have replaced their skeletons."""
    deadline = time.monotonic() + timeout_ms / 1000
    page.wait_for_selector(f"{APP_ROOT}[data-test-connection-state='CONNECTED']", state="attached",
                           timeout=timeout_ms)
    while True:
        remaining = max(1, int((deadline - time.monotonic()) * 1000))
        page.wait_for_function(
            """() => {
                const app = document.querySelector("[data-testid='stApp']");
                return app && app.getAttribute('data-test-script-state') === 'notRunning'
                    && !document.querySelector("[data-testid='stStatusWidget']")
                    && !document.querySelector("[data-testid='stSkeleton']");
            }""", timeout=remaining, polling=100)
        # A run may start right after another (a page switch, a callback's rerun): settle.
        n_events = page.evaluate("(window.__fdpRuns || []).length")
        page.wait_for_timeout(settle_ms)
        state = page.evaluate(
            "() => [(window.__fdpRuns || []).length, document.querySelector(\"[data-testid='stApp']\")"
            ".getAttribute('data-test-script-state')]")
        if state == [n_events, "notRunning"]:
            _wait_charts_drawn(page, min(5_000, max(1, int((deadline - time.monotonic()) * 1000))))
            return
        if time.monotonic() > deadline:
            raise TimeoutError("the app did not settle")


def interact(page, action, *, timeout_ms: int = 60_000, start_timeout_ms: int = 5_000) -> float | None:
    """Do ``action()`` and wait for the rerun it causes to finish.

    Returns the rerun latency in seconds (from just before the action to the end of the
    run, browser clock), or None if no run started within ``start_timeout_ms``.
    """
    t0 = page.evaluate("performance.now()")
    action()
    return finish_interaction(page, t0, timeout_ms=timeout_ms, start_timeout_ms=start_timeout_ms)


def finish_interaction(page, t0: float, *, timeout_ms: int = 60_000, start_timeout_ms: int = 5_000,
                       settle: bool = True):
    """Wait for the run started after browser time ``t0`` to end; its latency in seconds, or
    None if no run started within ``start_timeout_ms``. ``settle=False`` skips the final
    idle check (follow-up runs, lazy widgets): the load loop measures, it does not inspect."""
    started = page.evaluate("t0 => (window.__fdpRuns || []).some(r => r[1] > t0 && r[0] === 'running')", t0)
    if not started:
        try:
            page.wait_for_function("t0 => (window.__fdpRuns || []).some(r => r[1] > t0 && r[0] === 'running')",
                                   arg=t0, timeout=start_timeout_ms, polling=50)
        except Exception:  # playwright's TimeoutError: the action caused no rerun
            if settle:
                wait_idle(page, timeout_ms)
            return None
    page.wait_for_function(
        """t0 => { const runs = (window.__fdpRuns || []).filter(r => r[1] > t0);
                   const i = runs.findIndex(r => r[0] === 'running');
                   return i >= 0 && runs.slice(i).some(r => r[0] === 'notRunning'); }""",
        arg=t0, timeout=timeout_ms, polling=50)
    end = page.evaluate(
        """t0 => { const runs = (window.__fdpRuns || []).filter(r => r[1] > t0);
                   const i = runs.findIndex(r => r[0] === 'running');
                   return runs.slice(i).find(r => r[0] === 'notRunning')[1]; }""", t0)
    if settle:
        wait_idle(page, timeout_ms)
    return (end - t0) / 1000


def exception_texts(page) -> list[str]:
    return page.locator("[data-testid='stException']").all_inner_texts()


def sidebar_data_caption(page) -> str:
    """The sidebar's 'Data: <label> — n = .., m = ..' caption."""
    return page.locator("[data-testid='stSidebar']").get_by_text(re.compile(r"n = \d+( persons)?, m = \d+")).first.inner_text()


def goto_page(page, title: str) -> None:
    """Client-side navigation through the sidebar (keeps the session and its state)."""
    link = page.locator("[data-testid='stSidebarNav'] a").filter(has_text=re.compile(rf"^\W*{re.escape(title)}\s*$"))
    if link.count() == 0:
        link = page.locator("[data-testid='stSidebarNav'] a").filter(has_text=title)
    interact(page, lambda: link.first.click())
    wait_idle(page)


# --------------------------------------------------------------------------- load

def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def run_load(server: AppServer, *, sessions: int = 10, duration_s: float = 25.0, distinct_epsilon: bool = True,
             verbose: bool = False) -> dict:
    """Drive ``sessions`` concurrent sessions for ``duration_s`` seconds; see the module doc.

    ``distinct_epsilon=False`` skips giving each session its own epsilon (saves the setup's
    slowest stage); isolation is then checked on the data sets alone.
    """
    from playwright.sync_api import sync_playwright

    result = {"sessions": sessions, "duration_s": duration_s, "latencies_s": [], "errors": [], "leaks": [],
              "rounds": 0, "reruns": 0}
    result["server_rss_before_mb"] = server.rss_mb()
    log = print if verbose else (lambda *a, **k: None)
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright, light=True)
        try:
            # One context, N pages: each page is its own Streamlit session (own websocket and
            # session_state); sharing the context only shares the HTTP/code cache of the
            # static frontend, as tabs of one user's browser would.
            context = new_context(browser, width=1100, height=700)
            pages = [context.new_page() for _ in range(sessions)]
            setup_start = time.monotonic()

            def stage(label, act, wait=None):
                """Do ``act(k, page)`` in every session, then wait for every session's rerun."""
                t = time.monotonic()
                starts = []
                for k, page in enumerate(pages):
                    starts.append(page.evaluate("performance.now()"))
                    act(k, page)
                for page, t0 in zip(pages, starts):
                    (wait or (lambda pg, t0: finish_interaction(pg, t0, timeout_ms=180_000)))(page, t0)
                log(f"  {label}: {time.monotonic() - t:.1f} s")

            pages[0].goto(server.url + "/")  # the first visit warms the server's caches and the browser's
            wait_idle(pages[0], 180_000)
            log(f"  first session: {time.monotonic() - setup_start:.1f} s")
            for page in pages[1:]:  # the others connect at once
                page.goto(server.url + "/", wait_until="commit")
            stage("connect", lambda k, page: None, lambda page, t0: wait_idle(page, 180_000))
            # Own epsilon per session (k steps left of the default on the select slider; the
            # Data page reruns cheaply) and own data set (a simulation with n = 30 + k curves).
            expected_n = [30 + k for k in range(sessions)]

            def own_epsilon_and_simulate(k, page):
                slider = page.get_by_role("slider", name="epsilon")
                for _ in range(k if distinct_epsilon else 0):
                    slider.press("ArrowLeft")
                    page.wait_for_timeout(150)  # quicker presses can be merged into one change
                page.get_by_role("radiogroup", name="Source").get_by_text("simulate").click()

            stage("own epsilon, simulate", own_epsilon_and_simulate)

            def set_n(k, page):
                field = page.get_by_role("spinbutton", name="curves N")
                field.fill(str(expected_n[k]))
                field.press("Enter")

            stage("own n", set_n)
            nav = "[data-testid='stSidebarNav'] a"
            stage("to Mean page", lambda k, page: page.locator(nav).filter(has_text=re.compile(r"Mean\s*$")).first.click())
            expected_eps = [page.get_by_role("slider", name="epsilon").get_attribute("aria-valuetext")
                            for page in pages]
            result["distinct_epsilons"] = len(set(expected_eps))
            result["setup_s"] = round(time.monotonic() - setup_start, 1)
            log(f"setup done in {result['setup_s']} s")

            # Load: burst rounds until the time is up. Every session moves the penalty slider
            # (alternately right and left); a rerun counts as done when the sidebar's
            # server-rendered "phi = ..." caption shows the new value AND the script has
            # finished. (The app root's running/notRunning attribute alone can miss a run whose
            # start and end messages reach a busy browser together.)
            load_start = time.monotonic()
            while time.monotonic() - load_start < duration_s:
                r = result["rounds"]
                key = "ArrowRight" if r % 2 == 0 else "ArrowLeft"
                starts = []
                for page in pages:
                    before = page.evaluate(PHI_CAPTION_JS)
                    t0 = page.evaluate("performance.now()")
                    page.get_by_role("slider", name="log10 phi (penalty)").press(key)
                    starts.append((t0, before))
                for k, (page, (t0, before)) in enumerate(zip(pages, starts)):
                    try:
                        end = page.wait_for_function(RERUN_DONE_JS, arg=before, timeout=60_000, polling=50).json_value()
                    except Exception as exc:  # a timeout is a failure of the run, recorded
                        result["errors"].append(f"round {r}, session {k}: {type(exc).__name__}: {exc}"[:300])
                        continue
                    result["latencies_s"].append((end - t0) / 1000)
                    result["reruns"] += 1
                result["rounds"] += 1
            result["load_s"] = round(time.monotonic() - load_start, 1)
            for page in pages:
                wait_idle(page, 120_000)

            # Checks: no exception boxes, each session sees only its own data and epsilon.
            for k, page in enumerate(pages):
                for text in exception_texts(page):
                    result["errors"].append(f"session {k}: exception box: {text[:300]}")
                caption = sidebar_data_caption(page)
                match = re.search(r"n = (\d+)", caption)
                if not match or int(match.group(1)) != expected_n[k]:
                    result["leaks"].append(f"session {k}: expected n = {expected_n[k]}, sidebar says {caption!r}")
                if not distinct_epsilon:
                    continue
                shown = page.get_by_role("slider", name="epsilon").get_attribute("aria-valuetext")
                if shown != expected_eps[k]:
                    result["leaks"].append(f"session {k}: expected epsilon {expected_eps[k]}, slider shows {shown}")
                titles = page.evaluate("() => Array.from(document.querySelectorAll('.js-plotly-plot'))"
                                       ".map(e => (e._fullLayout && e._fullLayout.title && e._fullLayout.title.text) || '')")
                if not any(f"epsilon = {expected_eps[k]}," in t for t in titles):
                    result["leaks"].append(f"session {k}: no chart titled epsilon = {expected_eps[k]}: {titles}")
        finally:
            browser.close()
    latencies = result["latencies_s"]
    result.update({
        "p50_s": _percentile(latencies, 0.5), "p95_s": _percentile(latencies, 0.95),
        "max_s": max(latencies) if latencies else None,
        "mean_s": statistics.fmean(latencies) if latencies else None,
        "server_peak_rss_mb": server.peak_rss_mb(), "server_rss_after_mb": server.rss_mb(),
        "target_p95_s": TARGET_P95_S,
    })
    return result


def summary_table(result: dict) -> str:
    def fmt(v, unit=""):
        return "n/a" if v is None else (f"{v:.2f}{unit}" if isinstance(v, float) else f"{v}{unit}")

    rows = [("sessions", fmt(result["sessions"])), ("load duration", fmt(result.get("load_s"), " s")),
            ("burst rounds", fmt(result["rounds"])), ("reruns measured", fmt(result["reruns"])),
            ("rerun latency p50", fmt(result["p50_s"], " s")), ("rerun latency p95", fmt(result["p95_s"], " s")),
            ("rerun latency max", fmt(result["max_s"], " s")),
            ("server RSS before load", fmt(result["server_rss_before_mb"], " MB")),
            ("server peak RSS (VmHWM)", fmt(result["server_peak_rss_mb"], " MB")),
            ("errors", fmt(len(result["errors"]))), ("cross-session leaks", fmt(len(result["leaks"])))]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--duration", type=float, default=25.0, help="seconds of load (bounded)")
    parser.add_argument("--json", type=Path, default=None, help="also write the JSON result here")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    reason = chromium_skip_reason()
    if reason:
        print(json.dumps({"skipped": reason}))
        return 0
    with AppServer() as server:
        result = run_load(server, sessions=args.sessions, duration_s=min(args.duration, 300.0), verbose=args.verbose)
    compact = {k: v for k, v in result.items() if k != "latencies_s"}
    print(json.dumps(compact, indent=2))
    print(summary_table(result))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))
    ok = not result["errors"] and not result["leaks"] and result["p95_s"] is not None \
        and result["p95_s"] < TARGET_P95_S
    print("target met" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
