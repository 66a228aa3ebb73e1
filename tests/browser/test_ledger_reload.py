"""The issue's browser case: commit a Gaussian mean that leaves too little budget for a second one,
press reload, upload the same data again under another file name, try the same commit again:
refused, and the meter still shows the first commit. The app server runs on a throw-away ledger
(conftest: FDP_LEDGER_URL)."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

from fdp_core.data.loading import from_arrays, load_curves, to_wide_csv  # noqa: E402
from fdp_core.budget.ledger_store import LedgerStore  # noqa: E402
from fdp_core.data.fingerprint import fingerprint  # noqa: E402

from .conftest import ROOT, harness  # noqa: E402
from .test_e2e import (acknowledge_verdict, assert_healthy, choose_radio, declare_value_range,  # noqa: E402
                       fill_number, open_app, register_if_unmatched, save_screenshot, upload)

wait_idle, interact = harness.wait_idle, harness.interact


def sidebar_text(page) -> str:
    return page.locator("[data-testid='stSidebar']").inner_text()


def upload_and_open_release(page, app_url, path) -> bool:
    """Upload ``path`` and open the Release page; True when the Data page asked to register the data as
    a new data set (they match none of the ledger's registrations) and they were, with a reason."""
    open_app(page, app_url)
    choose_radio(page, "Source", "upload a file")
    upload(page, path)
    assert path.name in harness.sidebar_data_caption(page)
    declare_value_range(page, "-1.5", "1.5")  # a mean is committed only with a declared public range
    registered = register_if_unmatched(page)
    harness.goto_page(page, "Release & audit")
    wait_idle(page)
    return registered


def commit(page) -> None:
    acknowledge_verdict(page)  # amber/red: "I publish ..." first (issue 38)
    button = page.get_by_role("button", name=re.compile(r"^Commit: draw fresh noise", re.I))
    interact(page, lambda: button.click())
    wait_idle(page)


def test_commit_reload_upload_again_and_the_repeat_commit_is_refused(page, app_url, app_server, tmp_path):
    # Data of this test only (the session's ledger is shared by the browser suite): curves of random
    # shapes, so no registered data set matches them (a shifted copy of the example would rightly be
    # matched to the example's data set, whose budget other tests spend).
    example = load_curves(ROOT / "data" / "example_curves.csv")
    rng = np.random.default_rng()
    t = example.grid_points
    freq, phase = rng.uniform(0.5, 3.0, (example.n, 1)), rng.uniform(0, 2 * np.pi, (example.n, 1))
    fd = from_arrays(t, 0.3 * np.sin(2 * np.pi * freq * t[None, :] + phase) + rng.normal(0, 0.02, (example.n, t.size)))
    first, second = tmp_path / "cohort_2026.csv", tmp_path / "cohort_2026 (copy).csv"
    first.write_text(to_wide_csv(fd))
    second.write_bytes(first.read_bytes())

    upload_and_open_release(page, app_url, first)
    assert "0 release(s)" in sidebar_text(page) and "draft budget 'default'" in sidebar_text(page)
    fill_number(page, "total epsilon", "1.5")  # room for one mean at epsilon 1 (it costs ~1.09), not two
    commit(page)
    assert_healthy(page)
    assert page.get_by_text(re.compile(r"^Committed mean")).count() >= 1
    after_commit = sidebar_text(page)
    assert "(1 release(s))" in after_commit
    spent = re.search(r"spent epsilon ([\d.]+) of 1.5", after_commit).group(1)

    page.reload()  # a new Streamlit session: its state (and the uploaded data) is gone
    wait_idle(page)
    # The same data under another name match their registration: nothing to register this time.
    assert not upload_and_open_release(page, app_url, second)
    reloaded = sidebar_text(page)
    assert f"spent epsilon {spent} of 1.5" in reloaded and "(1 release(s))" in reloaded
    assert "budget 'default' of this data set, fixed since" in reloaded
    assert page.get_by_role("spinbutton", name="total epsilon").is_disabled()
    # The repeat would exceed what is left: the button is disabled and says why before any click.
    assert page.get_by_role("button", name=re.compile(r"^Commit: draw fresh noise", re.I)).is_disabled()
    refusals = page.locator("[data-testid='stAlert']").filter(has_text="Commit not possible yet").all_inner_texts()
    assert refusals and "over budget" in refusals[0], refusals
    assert "(1 release(s))" in sidebar_text(page)
    shot = save_screenshot(page, "ledger_reload_refused")
    assert shot.stat().st_size > 10_000
    # The server's ledger holds exactly the one release, under the data set's fingerprint.
    shown = LedgerStore(app_server.ledger_url).show(fingerprint(load_curves(first)))
    assert [(e["status"], e["source"]) for e in shown["entries"]] == [("complete", "app")]
