"""Browser: what you see is what you commit (issue 38).

Per kind (mean with its bands, density of a feature, components, sparse mean): explore on the
page, commit "the ... you explored" on the Release page, download the bundle and compare its
release.json and config.yaml with what the page showed. The red Canadian release (the long
weather file, range -50..40 degrees, epsilon 1): its verdict on the Release page before the
commit, the "I publish" acknowledgement, and the same red verdict after it and in the bundle.
Screenshots go to artifacts/screenshots/ (drafts_*).
"""

from __future__ import annotations

import io
import json
import re
import zipfile

import pytest
import yaml

pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

from .conftest import harness  # noqa: E402
from .test_e2e import (FIXTURES, acknowledge_verdict, assert_healthy, choose_radio, declare_value_range,  # noqa: E402
                       goto_via_sidebar, open_app, register_if_unmatched, save_screenshot, upload)

wait_idle, interact = harness.wait_idle, harness.interact
COMMIT = re.compile(r"^Commit: draw fresh noise")


@pytest.fixture(scope="module")
def app_url(browser_context, tmp_path_factory):
    """This file's own server and ledger: its commits of the built-in example spend that example's
    budget, which the other browser files' commits (on the session's server) must still find whole."""
    from pathlib import Path

    from .conftest import start_server

    server = start_server(Path(__file__).resolve().parents[2] / "data",
                          tmp_path_factory.mktemp("drafts_ledger") / "ledger.sqlite3", "streamlit_drafts.log")
    try:
        first = browser_context.new_page()
        try:
            first.goto(server.url + "/")
            harness.wait_idle(first, 120_000)  # the first visit leaves the pages/-folder mode (as app_url)
        finally:
            first.close()
        yield server.url
    finally:
        server.stop()


def _bundle(page, tmp_path) -> dict:
    """The committed release's bundle, downloaded as a user would: {file name: bytes}."""
    button = page.locator("[data-testid='stDownloadButton'] button").filter(has_text="release bundle")
    with page.expect_download() as info:
        button.first.click()
    target = tmp_path / "bundle.zip"
    info.value.save_as(str(target))
    with zipfile.ZipFile(io.BytesIO(target.read_bytes())) as archive:
        return {name.rsplit("/", 1)[-1]: archive.read(name) for name in archive.namelist()}


def _commit_draft(page, what: str, tmp_path) -> tuple[dict, dict, str]:
    """On the Release page: choose the draft ``what``, acknowledge its verdict, commit, download.
    Returns (release.json, config.yaml's settings, the success message)."""
    goto_via_sidebar(page, "Release & audit")
    wait_idle(page)
    choose_radio(page, "what to commit", what)
    wait_idle(page)
    assert page.get_by_text(re.compile(re.escape(what))).count() >= 2  # the choice and the summary line
    acknowledge_verdict(page)
    button = page.get_by_role("button", name=COMMIT)
    assert button.first.is_enabled()
    interact(page, lambda: button.first.click())
    wait_idle(page)
    assert_healthy(page)
    done = page.locator("[data-testid='stAlertContentSuccess']").filter(has_text="Committed").first.inner_text()
    files = _bundle(page, tmp_path)
    return json.loads(files["release.json"]), yaml.safe_load(files["config.yaml"])["settings"], done


def test_the_mean_with_bands_explored_is_the_mean_committed(page, app_url, tmp_path):
    open_app(page, app_url)
    declare_value_range(page, "-1.5", "1.5")
    goto_via_sidebar(page, "Mean")
    wait_idle(page)
    band = page.get_by_text("Uncertainty bands: privacy band and confidence band")
    interact(page, lambda: band.first.click())
    wait_idle(page)
    # The accuracy box speaks of the mean's own epsilon: 0.8 of 1 with the default 20% share.
    titles = page.evaluate("() => Array.from(document.querySelectorAll('.js-plotly-plot'))"
                           ".map(el => (el._fullLayout.title || {}).text || '')")
    assert any("epsilon = 0.8" in t for t in titles), titles
    record, settings, done = _commit_draft(page, "the mean you explored", tmp_path)
    assert settings["confidence_band"] == 0.95 and settings["band_share"] == 0.2 and settings["epsilon"] == 1.0
    assert record["verdict"]["word"] in done
    save_screenshot(page, "drafts_mean_committed")


def test_the_density_explored_is_the_density_committed(page, app_url, tmp_path):
    open_app(page, app_url)
    declare_value_range(page, "-1.5", "1.5")
    goto_via_sidebar(page, "Density")
    wait_idle(page)
    choose_radio(page, "observations", "features of the current curves")
    wait_idle(page)
    assert_healthy(page, allow_errors=True)
    feature = page.get_by_text(re.compile(r"observations of \S+ \(one per curve")).first.inner_text()
    spec = re.search(r"observations of (\S+) \(one per curve", feature).group(1)
    what = f"the density of {spec} you explored"
    record, settings, done = _commit_draft(page, what, tmp_path)
    assert record["feature"] == spec
    assert record["verdict"]["word"] in done
    save_screenshot(page, "drafts_density_committed")


def test_the_components_explored_are_the_components_committed(page, app_url, tmp_path):
    open_app(page, app_url)
    declare_value_range(page, "-1.5", "1.5")
    goto_via_sidebar(page, "Principal components")
    wait_idle(page)
    assert_healthy(page, allow_errors=True)
    verdict = page.get_by_text(re.compile(r"Variance missed")).first.inner_text()
    shown = page.get_by_text(re.compile(r"k = \d+, p = \d+")).first.inner_text()  # the page's guarantee
    k = int(re.search(r"k = (\d+), p = ", shown).group(1))
    record, settings, done = _commit_draft(page, "the components you explored", tmp_path)
    assert settings["k"] == k and settings["centring"] == "public", (settings, shown)
    assert record["verdict"]["level"] is None and "not published" in record["verdict"]["basis"]
    word = re.match(r"(Useful|Rough|Not useful)", verdict).group(1).lower()
    assert f"({word})" in done, (verdict, done)
    save_screenshot(page, "drafts_components_committed")


def test_the_sparse_mean_explored_is_the_sparse_mean_committed(page, app_url, tmp_path):
    open_app(page, app_url)
    interact(page, lambda: page.get_by_role("button", name=re.compile("Load the built-in sparse example")).first.click())
    wait_idle(page)
    interact(page, lambda: page.get_by_text(re.compile("I declare this domain public")).first.click())
    wait_idle(page)
    declare_value_range(page, "-1", "2")
    register_if_unmatched(page)  # a ledger holding other registrations: a new data set, with a reason
    goto_via_sidebar(page, "Mean")
    wait_idle(page)
    record, settings, done = _commit_draft(page, "the sparse mean you explored", tmp_path)
    assert settings["value_range"] == [-1.0, 2.0] and "2 ledger entries (A and b)" in done
    save_screenshot(page, "drafts_sparse_committed")


def test_the_red_canadian_mean_stays_red_through_the_commit(page, app_url, tmp_path):
    open_app(page, app_url)
    choose_radio(page, "Source", "upload a file")
    upload(page, FIXTURES / "weather_long.csv")
    interact(page, lambda: page.get_by_role("button", name="Load with this mapping").click())
    wait_idle(page)
    declare_value_range(page, "-50", "40")
    register_if_unmatched(page)  # a ledger holding other registrations: a new data set, with a reason
    goto_via_sidebar(page, "Mean")
    wait_idle(page)
    red = page.locator("[data-testid='stAlertContentError']").filter(has_text="Not useful at this epsilon")
    assert red.count() >= 1
    # The value axis is the declared range (padded by a tenth), whatever the draws: epsilon moves the curves.
    ranges = page.evaluate("() => Array.from(document.querySelectorAll('.js-plotly-plot'))"
                           ".map(el => (el._fullLayout.yaxis || {}).range)")
    assert [-59.0, 49.0] in [[round(v, 6) for v in r] for r in ranges if r], ranges
    save_screenshot(page, "drafts_red_canadian_mean_page")
    goto_via_sidebar(page, "Release & audit")
    wait_idle(page)
    assert page.locator("[data-testid='stAlertContentError']").filter(has_text="Not useful").count() >= 1
    assert page.get_by_role("button", name=COMMIT).first.is_disabled()
    assert page.get_by_text("I publish a release that is red: not useful", exact=True).count() == 1
    save_screenshot(page, "drafts_red_canadian_before_commit")
    record, settings, done = _commit_draft(page, "the mean you explored", tmp_path)
    assert "Verdict: red (not useful)" in done and record["verdict"]["colour"] == "red"
    after = page.locator("[data-testid='stAlertContentError']").filter(has_text="the verdict of the release just")
    assert after.count() == 1
    save_screenshot(page, "drafts_red_canadian_after_commit")
