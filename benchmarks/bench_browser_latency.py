"""Slider change to updated plot, in Chromium, on the DTI data (Mean, Principal components, Trade-offs).

Starts ``streamlit run app.py`` on a free loopback port (benchmarks/bench_load.py: AppServer),
uploads /work/shared/data/dti_cca.csv (382 curves of 93 points) on the Data page, then on each
page moves the sidebar's epsilon slider one step (alternately right and left, so every change
is a new value and the page's caches do not answer for free) and measures, on the browser's
clock, the time from the key press until the page's first chart shows a new figure (its data
changed and was drawn) and the script run has ended. One browser, one session: this is the
latency a person feels, not a load test (bench_load.py is that).

Each change is split, with the websocket frames' times from Chromium's network stack
(DevTools protocol, so they do not wait for a busy page), into
- ``input``: key press to the rerun request leaving the browser (the slider's debounce);
- ``server``: from there to the arrival of the run's last message (the page script, the
  figures' serialisation, the transfer: all on the server's side of the socket);
- ``client``: from there to the chart showing the new figure and the run shown as ended
  (protobuf decoding, React, Plotly, WebGL contexts for Scattergl traces);
and ``kb``: the bytes received for the change (``largest_kb``: its largest message).

With ``--cpu N`` (default 8) every page also gets N quiet changes, split by CPU time (Linux
/proc, so the figures hold on a loaded machine where the wall-clock parts move 2-5x):
``server_cpu``, the Streamlit process's CPU, and ``browser_cpu``, all Chromium processes' CPU
(React, Plotly, painting), over a fixed wait after the key press with nothing polling the page
(the timed changes above poll it, and that polling would count). An idle page costs ~0-10 ms
over the same wait.

Targets: median < 400 ms, p90 < 800 ms per page.

With ``--baseline REV`` the app of revision REV (``git archive`` into a temporary folder)
runs on a second server and the two take turns on every page, so that before and after
share the machine's load (it is shared: the load average is printed with the figures).

Usage (repository root)::

    python benchmarks/bench_browser_latency.py [--data PATH] [--changes 15] [--cpu 8] [--baseline REV] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_load as harness  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "dti_cca.csv"
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


class FrameLog:
    """The page's websocket frames as Chromium's network stack saw them (DevTools protocol):
    their times do not wait for the page's busy main thread, unlike a JavaScript listener."""

    def __init__(self, page):
        self.frames: list[tuple[float, int, str]] = []  # (CDP monotonic ms, bytes, "in" | "out")
        self.offset_ms: float | None = None  # wall clock ms - CDP monotonic ms
        cdp = page.context.new_cdp_session(page)
        cdp.on("Network.webSocketWillSendHandshakeRequest", self._handshake)
        cdp.on("Network.webSocketFrameReceived", lambda e: self._frame(e, "in"))
        cdp.on("Network.webSocketFrameSent", lambda e: self._frame(e, "out"))
        cdp.send("Network.enable")
        self.page = page

    def _handshake(self, event) -> None:
        self.offset_ms = event["wallTime"] * 1000.0 - event["timestamp"] * 1000.0

    def _frame(self, event, direction: str) -> None:
        response = event["response"]
        payload = response.get("payloadData", "")
        size = len(payload) * 3 // 4 if response.get("opcode") == 2 else len(payload)  # binary frames are base64
        self.frames.append((event["timestamp"] * 1000.0, size, direction))

    def split(self, t0: float, done: float) -> dict:
        """input (key press to the rerun request leaving), server (to the run's last message
        arriving), client (from there to the chart drawn and the run shown ended), on the page's
        clock; kb: bytes received for the change, largest_kb: its largest message."""
        shift = self.offset_ms - self.page.evaluate("performance.timeOrigin")  # CDP ms -> page ms
        frames = [(t + shift, n, d) for t, n, d in self.frames if t0 < t + shift <= done + 1.0]
        sent = next((t for t, _, d in frames if d == "out"), t0)
        received = [(t, n) for t, n, d in frames if d == "in" and t >= sent]
        last = received[-1][0] if received else sent
        return {"input": sent - t0, "server": last - sent, "client": done - last,
                "kb": sum(n for _, n in received) / 1024, "largest_kb": max((n for _, n in received), default=0) / 1024}


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _proc_cpu(pid: int) -> float:
    """CPU seconds (user + system, all threads) of process ``pid``; 0 where /proc cannot tell."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK
    except (OSError, IndexError, ValueError):
        return 0.0


def _chromium_pids() -> list[int]:
    """Chromium's processes (the browser, renderers, GPU and utility processes) on this machine
    started under this benchmark (descendants of this process)."""
    parents, names = {}, {}
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else []:
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            names[int(entry.name)] = stat[stat.find("(") + 1:stat.rfind(")")]
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])

    def mine(pid: int) -> bool:
        while pid > 1:
            pid = parents.get(pid, 0)
            if pid == os.getpid():
                return True
        return False

    return [pid for pid, name in names.items() if name.startswith("chrom") and mine(pid)]


class CpuMeter:
    """CPU of one server process and of the benchmark's Chromium over one change."""

    def __init__(self, server_pid: int):
        self.server_pid = server_pid
        self.browser_pids: list[int] = []

    def snapshot(self, refresh: bool = False) -> tuple[float, float]:
        """(server, browser) CPU seconds so far; ``refresh``: look up Chromium's processes again."""
        if refresh:
            self.browser_pids = _chromium_pids()
        return _proc_cpu(self.server_pid), sum(_proc_cpu(pid) for pid in self.browser_pids)


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


def measure_page(page, title: str, changes: int, frames: FrameLog) -> tuple[list[float], list[dict]]:
    harness.goto_page(page, title)
    harness.wait_idle(page, 120_000)
    slider = page.locator("[data-testid='stSidebar']").get_by_role("slider", name="epsilon")
    latencies, splits = [], []
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
        harness.wait_idle(page, 60_000, settle_ms=100)
        if i:
            latencies.append(max(changed - t0, run * 1000))
            splits.append(frames.split(t0, max(changed, t0 + run * 1000)))
    return latencies, splits


def measure_cpu(page, changes: int, cpu: CpuMeter, wait_s: float = 2.5) -> list[tuple[float, float]]:
    """(server, browser) CPU ms of ``changes`` epsilon moves, each over ``wait_s`` seconds in
    which nothing polls the page (the first move warms the caches and is not counted)."""
    slider = page.locator("[data-testid='stSidebar']").get_by_role("slider", name="epsilon")
    out = []
    for i in range(changes + 1):
        before = cpu.snapshot(refresh=True)
        slider.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
        time.sleep(wait_s)
        after = cpu.snapshot()
        harness.wait_idle(page, 60_000, settle_ms=50)  # a slow run still going: not counted as a next one
        if i:
            out.append((1000 * (after[0] - before[0]), 1000 * (after[1] - before[1])))
    return out


def _open_session(browser, server, data: Path):
    context = harness.new_context(browser, width=1400, height=900)
    page = context.new_page()
    frames = FrameLog(page)
    cpu = CpuMeter(server.process.pid)
    page.goto(server.url + "/")
    harness.wait_idle(page, 120_000)
    _upload(page, data)
    caption = page.locator("[data-testid='stSidebar']").get_by_text("Data:").first.inner_text()
    if data.name not in caption:
        raise RuntimeError(f"the upload of {data} was not loaded: {caption}")
    return context, page, frames, caption, cpu


def run(data: Path, changes: int, trees: dict[str, Path], rounds: int = 2, cpu_changes: int = 8) -> dict:
    """Every tree's app on its own server, one browser; per page the trees take turns
    (``rounds`` turns of changes / rounds changes each), so they share the machine's load."""
    from playwright.sync_api import sync_playwright

    result = {"data": str(data), "changes_per_page": changes, "cpu_changes_per_page": cpu_changes, "trees": {}}
    with sync_playwright() as playwright, contextlib.ExitStack() as stack:
        servers = {name: stack.enter_context(harness.AppServer(root)) for name, root in trees.items()}
        browser = harness.launch_chromium(playwright)
        stack.callback(browser.close)
        sessions = {name: _open_session(browser, server, data) for name, server in servers.items()}
        per_turn = max(1, changes // rounds)
        for title in PAGES:
            got = {name: ([], [], time.monotonic()) for name in trees}
            for _ in range(rounds):
                for name, (_, page, frames, _, _) in sessions.items():
                    ms, splits = measure_page(page, title, per_turn, frames)
                    got[name][0].extend(ms)
                    got[name][1].extend(splits)
            cpus = {name: [] for name in trees}
            for _ in range(rounds if cpu_changes else 0):  # the trees take turns here too
                for name, (_, page, _, _, cpu) in sessions.items():
                    cpus[name].extend(measure_cpu(page, max(1, cpu_changes // rounds), cpu))
            for name, (ms, splits, start) in got.items():
                page = sessions[name][1]
                split = {k: statistics.median(s[k] for s in splits)
                         for k in ("input", "server", "client", "kb", "largest_kb")}
                if cpus[name]:
                    split["server_cpu"] = statistics.median(c[0] for c in cpus[name])
                    split["browser_cpu"] = statistics.median(c[1] for c in cpus[name])
                result["trees"].setdefault(name, {"data_caption": sessions[name][3], "pages": {}})["pages"][title] = {
                    "split_median": {k: round(v, 1) for k, v in split.items()},
                    "n": len(ms), "median_ms": statistics.median(ms), "p90_ms": _percentile(ms, 0.9),
                    "max_ms": max(ms), "exceptions": harness.exception_texts(page),
                    "meets_target": statistics.median(ms) < TARGET_MEDIAN_MS and _percentile(ms, 0.9) < TARGET_P90_MS}
        for context, *_ in sessions.values():
            context.close()
    return result


def export_revision(rev: str, into: Path) -> Path:
    """The tree of ``rev`` as plain files (no checkout, no worktree)."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--changes", type=int, default=15, help="measured slider changes per page")
    parser.add_argument("--cpu", type=int, default=8, help="quiet changes per page split by CPU time (0: none)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--baseline", default=None,
                        help="git revision whose app is measured side by side, turn by turn (e.g. main)")
    args = parser.parse_args(argv)
    reason = harness.chromium_skip_reason()
    if reason:
        print(reason)
        return 0
    if not args.data.exists():
        print(f"{args.data} not found: nothing measured")
        return 0
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"now": ROOT}
        if args.baseline:
            trees[f"baseline {args.baseline}"] = export_revision(args.baseline, Path(tmp) / "baseline")
        result = run(args.data, args.changes, trees, cpu_changes=args.cpu)
    result["loadavg_before"], result["loadavg_after"] = load_before, Path("/proc/loadavg").read_text().split()[:3]
    print(json.dumps(result, indent=2))
    print(f"\nload average before {' '.join(result['loadavg_before'])}, after {' '.join(result['loadavg_after'])}")
    print(f"{'tree: page':<36} {'n':>3} {'median ms':>10} {'p90 ms':>8} {'max ms':>8}  {'input':>6} {'server':>7} "
          f"{'client':>7} {'KB':>6} {'max KB':>7} {'srv CPU':>8} {'brw CPU':>8}  "
          f"target (median < {TARGET_MEDIAN_MS:.0f}, p90 < {TARGET_P90_MS:.0f})")
    for tree, pages in result["trees"].items():
        for title, r in pages["pages"].items():
            sp = r["split_median"]
            print(f"{tree[:18] + ': ' + title[:16]:<36} {r['n']:>3} {r['median_ms']:>10.0f} {r['p90_ms']:>8.0f} "
                  f"{r['max_ms']:>8.0f}  {sp['input']:>6.0f} {sp['server']:>7.0f} {sp['client']:>7.0f} {sp['kb']:>6.0f} "
                  f"{sp['largest_kb']:>7.0f} {sp.get('server_cpu', float('nan')):>8.0f} "
                  f"{sp.get('browser_cpu', float('nan')):>8.0f}  {'met' if r['meets_target'] else 'MISSED'}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
