"""Two app replicas, one PostgreSQL ledger: concurrent commits land exactly in one budget (issue 40).

Starts a throw-away PostgreSQL cluster from Debian's server binaries (/usr/lib/postgresql/*/bin,
as the postgres user when run as root), registers a data set's budget in it with the CLI
(``ledger init``), then starts two ``streamlit run app.py`` replicas on loopback ports, both
with ``FDP_LEDGER_URL`` pointing at that one database, as a deployment behind a sticky proxy
would run them (README, "Several replicas").

Then ``--sessions`` browser sessions per replica (headless Debian chromium) each upload the same
file, declare its public range and open Release & audit; once every session is ready, all their
"Commit" buttons are clicked at once (alternating replicas) and every session's outcome is
read: committed or refused. The ledger is then read directly.

Pass when: the number of commits equals the number that fit (floor of the budget over one
commit's charge), the ledger holds exactly those complete entries and no reserved one, the
spent epsilon equals their sum and never exceeds the budget, and every other session was
refused with a message (not an exception). The result says how many commits each replica made.

Usage (repository root)::

    python benchmarks/bench_replicas.py [--sessions 3] [--fit 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

from bench_load import AppServer, chromium_skip_reason, exception_texts, interact, launch_chromium, new_context, \
    wait_idle  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "data" / "example_curves.csv"
COMMIT_BUTTON = re.compile(r"^Commit: draw fresh noise", re.I)


class PostgresCluster:
    """A throw-away cluster on 127.0.0.1:<free port>; ``url`` is its admin database's URL."""

    def __init__(self):
        found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), reverse=True)
        if not found:
            raise RuntimeError("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb)")
        self.bin = found[0].parent
        self.root = Path(tempfile.mkdtemp(prefix="fdp_pg_replicas_"))
        self.prefix = []
        if os.geteuid() == 0:  # initdb refuses root
            shutil.chown(self.root, "postgres", "postgres")
            self.prefix = ["runuser", "-u", "postgres", "--"]
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.data = self.root / "data"
        self.url = f"postgresql://fdp@127.0.0.1:{self.port}/postgres"

    def _run(self, *cmd):
        subprocess.run(self.prefix + [str(self.bin / cmd[0]), *cmd[1:]], check=True, capture_output=True, timeout=120)

    def __enter__(self) -> "PostgresCluster":
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "fdp", "-E", "UTF8", "--locale=C", "--no-sync")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-w", "-t", "60", "start", "-o",
                  f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off")
        return self

    def __exit__(self, *exc) -> None:
        with contextlib.suppress(Exception):
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


def _ready_on_release_page(page, url: str, data: Path) -> None:
    """Upload ``data``, declare the public range -1.5..1.5, open Release & audit."""
    page.goto(url + "/")
    wait_idle(page, 180_000)
    radio = page.get_by_role("radiogroup", name="Source").get_by_text("upload a file", exact=True)
    interact(page, lambda: radio.click(), timeout_ms=180_000)
    file_input = page.locator("[data-testid='stFileUploaderDropzoneInput']")
    interact(page, lambda: file_input.set_input_files(str(data)), timeout_ms=180_000)
    wait_idle(page, 180_000)
    for label, value in (("lowest possible value", "-1.5"), ("highest possible value", "1.5")):
        field = page.get_by_role("spinbutton", name=label)
        field.fill(value)
        interact(page, lambda: field.press("Enter"), timeout_ms=180_000)
    box = page.get_by_text(re.compile("I declare this range public")).first
    interact(page, lambda: box.click(), timeout_ms=180_000)
    wait_idle(page, 180_000)
    link = page.locator("[data-testid='stSidebarNav'] a").filter(has_text=re.compile(r"Release & audit\s*$"))
    interact(page, lambda: link.first.click(), timeout_ms=180_000)
    wait_idle(page, 180_000)
    # The default mean on this example is rated amber: its commit waits for the explicit
    # acknowledgement the Release page asks for (issue 38), as a person would tick it.
    verdict = page.get_by_text(re.compile(r"^I publish a release that is"))
    if verdict.count():
        interact(page, lambda: verdict.first.click(), timeout_ms=180_000)
        wait_idle(page, 180_000)


def _outcome(page) -> str:
    """'committed', 'refused' (an error or warning box, e.g. over budget) or 'unknown'."""
    if page.get_by_text(re.compile(r"^Committed mean")).count():
        return "committed"
    if exception_texts(page):
        return "exception: " + exception_texts(page)[0][:200]
    alerts = page.locator("[data-testid='stAlertContentError'], [data-testid='stAlertContentWarning']")
    texts = [t for t in alerts.all_inner_texts() if re.search(r"budget|refused|not possible", t, re.I)]
    return "refused: " + texts[0][:200].replace("\n", " ") if texts else "unknown"


def run(*, sessions: int, fit: int, verbose: bool) -> dict:
    from playwright.sync_api import sync_playwright

    from fdp_core.budget.ledger_store import LedgerStore
    from fdp_core.data.fingerprint import fingerprint
    from fdp_core.data.loading import load_curves

    log = print if verbose else (lambda *a, **k: None)
    result = {"replicas": 2, "sessions_per_replica": sessions}
    with tempfile.TemporaryDirectory() as tmp, PostgresCluster() as pg:
        data = Path(tmp) / "cohort_replicas.csv"
        data.write_bytes(EXAMPLE.read_bytes())
        env = {**os.environ, "FDP_LEDGER_URL": pg.url}
        # One commit's charge, from a first budget-free probe: the default mean at the sidebar's
        # epsilon. The budget is set so that exactly ``fit`` commits fit, with half a commit to spare.
        probe_budget = 1000.0
        os.environ["FDP_LEDGER_URL"] = pg.url  # the replicas inherit it (AppServer passes os.environ on)
        servers = [AppServer(ROOT, log_path=Path(tmp) / f"replica{i}.log") for i in range(2)]
        for server in servers:
            server.start()
        try:
            with sync_playwright() as playwright:
                browser = launch_chromium(playwright, light=True)
                try:
                    # The probe: one commit on replica 0 against a throw-away budget of another file.
                    probe = Path(tmp) / "probe.csv"
                    fd_probe = load_curves(EXAMPLE)
                    probe.write_text(_other_csv(fd_probe))
                    subprocess.run([sys.executable, "-m", "fdp_core", "ledger", "init", "--data", str(probe),
                                    "--epsilon", str(probe_budget), "--delta", "0.5", "--value-range=-1.5,1.5"],
                                   cwd=ROOT, env=env, check=True, capture_output=True, timeout=120)
                    page = new_context(browser, width=1100, height=800).new_page()
                    _ready_on_release_page(page, servers[0].url, probe)
                    interact(page, lambda: page.get_by_role("button", name=COMMIT_BUTTON).click(), timeout_ms=180_000)
                    wait_idle(page, 180_000)
                    shown = LedgerStore(pg.url).show(fingerprint(load_curves(probe)))
                    cost = shown["spent"]["epsilon"]
                    delta_cost = shown["spent"]["delta"]
                    page.context.close()
                    if shown["spent"]["n_entries"] != 1 or not cost:
                        raise RuntimeError(f"the probe commit did not land: {shown['spent']}")
                    budget = (fit + 0.5) * cost
                    result.update(charge_epsilon=cost, budget_epsilon=budget, expected_commits=fit)
                    subprocess.run([sys.executable, "-m", "fdp_core", "ledger", "init", "--data", str(data),
                                    "--epsilon", repr(budget), "--delta", repr(min(0.5, 10 * (fit + 1) * delta_cost
                                                                                   or 1e-5)),
                                    "--value-range=-1.5,1.5",
                                    # the probe's data set is registered already: these are other people
                                    "--new-dataset", "--reason", "bench_replicas: the cohort, not the probe"],
                                   cwd=ROOT, env=env, check=True, capture_output=True,
                                   timeout=120)
                    log(f"one commit charges epsilon {cost:.6g}; budget {budget:.6g} (fits {fit})")

                    # 2 x sessions browser sessions, alternating replicas, all on the Release page.
                    pages = []
                    for k in range(2 * sessions):
                        page = new_context(browser, width=1100, height=800).new_page()
                        pages.append((k % 2, page))
                    for replica, page in pages:
                        _ready_on_release_page(page, servers[replica].url, data)
                    log("all sessions ready")
                    buttons = [page.get_by_role("button", name=COMMIT_BUTTON) for _, page in pages]
                    enabled = [b.is_enabled() for b in buttons]
                    start = time.monotonic()
                    for button in buttons:  # all at once: no wait between the clicks
                        button.click(no_wait_after=True)
                    for _, page in pages:
                        with contextlib.suppress(Exception):
                            page.wait_for_timeout(200)
                        wait_idle(page, 180_000)
                    result["commit_burst_s"] = round(time.monotonic() - start, 2)
                    outcomes = [_outcome(page) for _, page in pages]
                finally:
                    browser.close()
        finally:
            for server in servers:
                server.stop()
        shown = LedgerStore(pg.url).show(fingerprint(load_curves(data)))
    committed = [replica for (replica, _), o in zip(pages, outcomes) if o == "committed"]
    entries = shown["entries"]
    spent = shown["spent"]["epsilon"]
    result.update(
        buttons_enabled_before=sum(enabled), outcomes=outcomes, commits=len(committed),
        commits_per_replica=[committed.count(0), committed.count(1)],
        ledger_entries=len(entries), ledger_complete=sum(e["status"] == "complete" for e in entries),
        ledger_reserved=shown["spent"]["n_reserved"], spent_epsilon=spent,
        remaining_epsilon=shown["remaining"]["epsilon"])
    others = [o for o in outcomes if o != "committed"]
    result["ok"] = bool(
        len(committed) == fit == len(entries) == result["ledger_complete"] and result["ledger_reserved"] == 0
        and math.isclose(spent, fit * result["charge_epsilon"], rel_tol=1e-9) and spent <= result["budget_epsilon"]
        and all(o.startswith("refused") for o in others))
    return result


def _other_csv(fd) -> str:
    """Curves of random shapes on the example's grid, as many: another data set with its own budget
    (a shifted copy of the example would rightly be matched to the example's data set)."""
    import numpy as np

    from fdp_core.data.loading import from_arrays, to_wide_csv

    rng = np.random.default_rng(40)
    t = fd.grid_points
    freq, phase = rng.uniform(0.5, 3.0, (fd.n, 1)), rng.uniform(0, 2 * np.pi, (fd.n, 1))
    return to_wide_csv(from_arrays(t, 0.3 * np.sin(2 * np.pi * freq * t[None, :] + phase)
                                   + rng.normal(0, 0.02, (fd.n, t.size))))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=3, help="browser sessions per replica")
    parser.add_argument("--fit", type=int, default=3, help="commits the budget has room for")
    parser.add_argument("--json", default=None)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    reason = chromium_skip_reason()
    if reason:
        print(f"skipped: {reason}")
        return 0
    if args.fit >= 2 * args.sessions:
        parser.error("--fit must be below the number of sessions (2 x --sessions): some must be refused")
    result = run(sessions=args.sessions, fit=args.fit, verbose=args.verbose)
    print(json.dumps(result, indent=1))
    print(f"two replicas, one PostgreSQL ledger: {result['commits']} of {2 * args.sessions} concurrent commits landed "
          f"(replica 0: {result['commits_per_replica'][0]}, replica 1: {result['commits_per_replica'][1]}; "
          f"{result['expected_commits']} fit); ledger entries {result['ledger_entries']}, spent epsilon "
          f"{result['spent_epsilon']:.6g} of {result['budget_epsilon']:.6g}: {'PASS' if result['ok'] else 'FAIL'}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
