"""Fixtures of the browser end-to-end tests: one local app server and one headless chromium
per test session, a fresh browser context per test.

The server is ``python -m streamlit run app.py`` from the repository root on a free
127.0.0.1 port (benchmarks/bench_load.py: AppServer); it is always terminated at the end.
Everything skips cleanly, with the reason, when /usr/bin/chromium or playwright is absent.
The browser only talks to the local server: other requests are aborted.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_load as harness  # noqa: E402  (the shared app-driving helpers)

SKIP_REASON = harness.chromium_skip_reason()


def start_server(data_dir, ledger_path, log_name: str) -> harness.AppServer:
    """An app server whose data folder and ledger are the given ones (set only for its start)."""
    saved = {key: os.environ.get(key) for key in ("FDP_DATA_DIR", "FDP_LEDGER_URL")}
    os.environ["FDP_DATA_DIR"] = str(data_dir)
    os.environ["FDP_LEDGER_URL"] = f"sqlite:///{ledger_path}"
    server = harness.AppServer(ROOT, log_path=ARTIFACTS / log_name)
    try:
        server.start()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return server


@pytest.fixture(scope="session")
def app_server(tmp_path_factory):
    """The app served locally for the whole test session, with its own throw-away ledger
    (FDP_LEDGER_URL in the server's environment): browser tests never write to a user's
    real ledger. ``server.ledger_url`` says where it is."""
    if SKIP_REASON:
        pytest.skip(SKIP_REASON)
    ARTIFACTS.mkdir(exist_ok=True)
    server = harness.AppServer(ROOT, log_path=ARTIFACTS / "streamlit_e2e.log")
    server.ledger_url = f"sqlite:///{tmp_path_factory.mktemp('browser_ledger') / 'ledger.sqlite3'}"
    previous = os.environ.get("FDP_LEDGER_URL")
    os.environ["FDP_LEDGER_URL"] = server.ledger_url  # copied into the server's environment at start
    try:
        server.start()
    finally:
        if previous is None:
            os.environ.pop("FDP_LEDGER_URL", None)
        else:
            os.environ["FDP_LEDGER_URL"] = previous
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def browser(app_server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = harness.launch_chromium(playwright)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="session")
def browser_context(browser):
    """One browser context for the suite: its HTTP and code caches make every page after the
    first load the frontend quickly. Each test still gets its own page, and every page is
    its own Streamlit session (own websocket and session_state)."""
    context = harness.new_context(browser)
    try:
        yield context
    finally:
        context.close()


@pytest.fixture(scope="session")
def app_url(app_server, browser_context) -> str:
    """The server's URL, after one visit of the entry page.

    The first visit runs app.py, whose st.navigation call switches Streamlit out of its
    legacy pages/-folder mode for the whole process (see test_deep_link_on_a_fresh_server).
    """
    page = browser_context.new_page()
    try:
        page.goto(app_server.url + "/")
        harness.wait_idle(page, 120_000)
    finally:
        page.close()
    return app_server.url


@pytest.fixture
def page(browser_context, app_url):
    """A new page, so a new Streamlit session; JavaScript errors are collected."""
    page = browser_context.new_page()
    page.fdp_console_errors = []
    page.on("pageerror", lambda exc: page.fdp_console_errors.append(str(exc)))
    try:
        yield page
    finally:
        page.close()
