"""Browser: sealed mode (issue 29) in the real app.

The officer declares the private file (data/example_curves.csv in the server data folder),
n, grid and range on the Data page; the sidebar then shows the public stand-in, the panel
says the private file was never read, and the Mean page is computed on the stand-in. Its
own server, because FDP_DATA_DIR must be set when the server starts.
"""

from __future__ import annotations


import pytest

pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

from .conftest import ROOT, harness, start_server  # noqa: E402
from .test_e2e import assert_healthy, choose_select, fill_number, goto_via_sidebar, open_app, save_screenshot  # noqa: E402

wait_idle = harness.wait_idle


@pytest.fixture(scope="module")
def sealed_url(tmp_path_factory):
    server = start_server(ROOT / "data", tmp_path_factory.mktemp("sealed_ledger") / "ledger.sqlite3",
                          "streamlit_sealed.log")
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def sealed_page(browser, sealed_url):
    context = harness.new_context(browser)
    page = context.new_page()
    page.fdp_console_errors = []
    page.on("pageerror", lambda exc: page.fdp_console_errors.append(str(exc)))
    try:
        yield page
    finally:
        context.close()


def test_sealed_flow_shows_only_the_stand_in_before_commit(sealed_page, sealed_url):
    page = sealed_page
    open_app(page, sealed_url)
    panel = page.get_by_text("Sealed mode: explore on a public stand-in")
    harness.interact(page, lambda: panel.first.click())
    choose_select(page, "Private file (server data folder)", "example_curves.csv")
    fill_number(page, "Declared n (persons)", "60")
    fill_number(page, "Grid points", "27")
    fill_number(page, "Range lower", "-1.5")
    fill_number(page, "Range upper", "1.5")
    harness.interact(page, lambda: page.get_by_role("button", name="Start sealed mode").click())
    wait_idle(page)
    assert_healthy(page)
    assert page.get_by_text("private file read: never").count() >= 1
    caption = harness.sidebar_data_caption(page)
    assert "public stand-in for example_curves.csv" in caption and "n = 60" in caption, caption
    save_screenshot(page, "sealed_data_page")
    goto_via_sidebar(page, "Mean")
    wait_idle(page)
    assert_healthy(page, allow_errors=True)
    assert "public stand-in" in harness.sidebar_data_caption(page)
    save_screenshot(page, "sealed_mean_page")

