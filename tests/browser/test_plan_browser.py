"""Browser: a sealed plan committed from the Plan page (issue 29) in the real app.

The officer declares the private file in sealed mode (simulated stand-in), sets the budget on
the Release page, states the plan on the Plan page and commits it: the private file is read
once, at the click, and the whole plan becomes one bundle. Its own server, because
FDP_DATA_DIR must be set when the server starts.
"""

from __future__ import annotations

import re

import pytest

pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

from .conftest import ROOT, harness, start_server  # noqa: E402
from .test_e2e import assert_healthy, choose_select, fill_number, goto_via_sidebar, open_app, save_screenshot  # noqa: E402

wait_idle = harness.wait_idle


def sealed_plan_commit(page, url: str, *, private: str, n: int, points: int, lo: str, hi: str,
                       person: str = "", budget_epsilon: str = "20") -> None:
    """Sealed mode on ``private`` (simulated stand-in), a budget, then the Plan page's commit."""
    open_app(page, url)
    panel = page.get_by_text("Sealed mode: explore on a public stand-in")
    harness.interact(page, lambda: panel.first.click())
    choose_select(page, "Private file (server data folder)", private)
    fill_number(page, "Declared n (persons)", str(n))
    if person:
        box = page.get_by_role("textbox", name="Person column (empty: one curve per person)")
        box.fill(person)
        harness.interact(page, lambda: box.press("Enter"))
    fill_number(page, "Grid points", str(points))
    fill_number(page, "Range lower", lo)
    fill_number(page, "Range upper", hi)
    harness.interact(page, lambda: page.get_by_role("button", name="Start sealed mode").click())
    wait_idle(page)
    assert page.get_by_text("private file read: never").count() >= 1
    goto_via_sidebar(page, "Release & audit")
    wait_idle(page)
    fill_number(page, "total epsilon", budget_epsilon)
    goto_via_sidebar(page, "Plan")
    wait_idle(page)
    assert_healthy(page, allow_errors=True)
    button = page.get_by_role("button", name=re.compile("Commit the plan"))
    assert button.is_enabled(), page.locator("[data-testid='stAlert']").all_inner_texts()
    harness.interact(page, lambda: button.click())
    wait_idle(page)


@pytest.fixture(scope="module")
def plan_url(tmp_path_factory):
    server = start_server(ROOT / "data", tmp_path_factory.mktemp("plan_ledger") / "ledger.sqlite3",
                          "streamlit_plan.log")
    try:
        yield server.url
    finally:
        server.stop()


def test_sealed_plan_commits_as_one_bundle_from_the_plan_page(browser, plan_url):
    context = harness.new_context(browser)
    page = context.new_page()
    page.fdp_console_errors = []
    page.on("pageerror", lambda exc: page.fdp_console_errors.append(str(exc)))
    try:
        sealed_plan_commit(page, plan_url, private="example_curves.csv", n=60, points=27, lo="-1.5", hi="1.5",
                           budget_epsilon="60")
        assert_healthy(page)
        assert page.get_by_text(re.compile("Committed the plan: 3 parts")).count() >= 1
        assert page.get_by_role("button", name=re.compile("Download the committed plan")).count() == 1
        save_screenshot(page, "sealed_plan_page")
    finally:
        context.close()
