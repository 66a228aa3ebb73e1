"""Browser tests of the guided app: intake of files nobody prepared for the loader (a long
file with other column names, a transposed file), the step bar, tutorial mode on every
page (kept across a reload), the exported HTML report at two widths, and a full tour that
must not send a single request to another host.
"""

from __future__ import annotations

import re
from urllib.parse import urlparse

import pytest

pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

from fdp_core.data.loading import load_curves  # noqa: E402

from .conftest import ARTIFACTS, harness  # noqa: E402
from .test_e2e import (FIXTURES, PAGES, PICTURE, acknowledge_verdict, assert_healthy,  # noqa: E402
                       assert_plots_rendered, choose_radio,
                       declare_value_range, error_alerts, metric, open_app, picture_texts, register_if_unmatched,
                       save_screenshot, upload)

interact, wait_idle = harness.interact, harness.wait_idle


def _axis_titles(page) -> list[tuple[str, str]]:
    return page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(el => {
        const l = el._fullLayout || {};
        return [(l.xaxis && l.xaxis.title && l.xaxis.title.text) || '', (l.yaxis && l.yaxis.title && l.yaxis.title.text) || ''];
    })""")


def test_long_file_with_other_column_names(page, app_url):
    """station,day,temp (plus a province column): refused as it is, mapped in two clicks."""
    open_app(page, app_url)
    choose_radio(page, "Source", "upload a file")
    upload(page, FIXTURES / "weather_long.csv")
    # The panel can load it: an instruction in the app's words, no red refusal naming CLI options (issue 28).
    assert not error_alerts(page), error_alerts(page)
    info = page.locator("[data-testid='stAlert']").filter(has_text="is not loaded yet").first.inner_text()
    assert "check the three columns" in info and "built-in example" in info and "--" not in info, info
    panel = page.locator(".st-key-intake_panel")
    assert "looks like a long file" in panel.inner_text()
    for label, suggested in (("curve id (one person or unit per id)", "station"), ("t (time point)", "day"),
                             ("value (measurement)", "temp")):
        assert page.get_by_role("combobox", name=label).input_value() == suggested, label
    save_screenshot(page, "intake_long_mapping")
    interact(page, lambda: page.get_by_role("button", name="Load with this mapping").click())
    expected = load_curves(FIXTURES / "weather_long.csv", id_column="station", t_column="day", value_column="temp")
    assert metric(page, "curves n") == str(expected.n) == "10"
    assert metric(page, "grid points m") == str(expected.m)
    assert not error_alerts(page)
    assert "weather_long.csv" in harness.sidebar_data_caption(page)
    # The column names become the axis names, here (on the preview picture) and on the other pages.
    assert page.get_by_role("textbox", name="t label").input_value() == "day"
    preview = picture_texts(page.locator(PICTURE).first.get_attribute("src"))
    assert "day" in preview and "temp" in preview, preview
    harness.goto_page(page, "Mean")
    assert _axis_titles(page)[0] == ["day", "temp"]
    assert_plots_rendered(page)
    assert_healthy(page)
    harness.goto_page(page, "Data")
    field = page.get_by_role("textbox", name="value unit")
    field.fill("temperature (deg C)")
    interact(page, lambda: field.press("Enter"))
    harness.goto_page(page, "Principal components")
    assert all(t[0] == "day" for t in _axis_titles(page)[:1]), _axis_titles(page)
    harness.goto_page(page, "Mean")
    assert _axis_titles(page)[0] == ["day", "temperature (deg C)"]
    save_screenshot(page, "intake_long_mean")


def test_transposed_file(page, app_url):
    open_app(page, app_url)
    choose_radio(page, "Source", "upload a file")
    upload(page, FIXTURES / "weather_transposed.csv")
    panel = page.locator(".st-key-intake_panel")
    assert "looks transposed" in panel.inner_text()
    assert not error_alerts(page) and page.get_by_text(re.compile("click 'Transpose and load'")).count() >= 1
    save_screenshot(page, "intake_transposed_instruction")
    interact(page, lambda: page.get_by_role("button", name="Transpose and load").click())
    expected = load_curves(FIXTURES / "weather_transposed.csv", transpose=True)
    assert metric(page, "curves n") == str(expected.n) == "10"
    assert metric(page, "grid points m") == str(expected.m) == "73"
    assert not error_alerts(page)
    assert_plots_rendered(page, minimum=2)
    assert_healthy(page)
    save_screenshot(page, "intake_transposed")


def test_refused_upload_folds_the_old_data_away(page, app_url):
    open_app(page, app_url)
    choose_radio(page, "Source", "upload a file")
    upload(page, FIXTURES / "bad_ragged.csv")
    errors = error_alerts(page)
    assert len(errors) == 1 and "built-in example" in errors[0] and "still loaded" in errors[0]
    folded = page.locator("[data-testid='stExpander']").filter(has_text="Still loaded: built-in example")
    assert folded.count() == 1
    assert not folded.locator("details").first.get_attribute("open")  # closed: not shown as the upload's result
    assert page.locator("[data-testid='stMetric']").filter(has_text="curves n").first.is_hidden()


def _step_bar(page):
    return page.locator(".st-key-step_bar")


def test_step_bar_guides_and_says_why_next_is_disabled(page, app_url):
    open_app(page, app_url)
    for _path, title, url in PAGES:
        if url:
            harness.goto_page(page, title)
        bar = _step_bar(page)
        assert bar.count() == 1, title
        text = bar.inner_text()
        for step in ("1. Data", "2. Unit & bounds", "3. Explore", "4. Release"):
            assert step in text, (title, text)
    harness.goto_page(page, "Data")
    text = _step_bar(page).inner_text()
    assert "still missing" in text and "no public value range declared yet" in text
    nxt = _step_bar(page).locator("a").filter(has_text="Next: Explore")
    assert nxt.count() >= 1 and all(a.get_attribute("disabled") is not None for a in nxt.all())
    # The reason is told where the link is: as its tooltip (and as the step's caption above).
    nxt.first.hover()
    tooltip = page.locator("[data-testid='stTooltipContent']")
    tooltip.first.wait_for(state="visible", timeout=5_000)
    assert "Unit & bounds" in tooltip.first.inner_text() and "value range" in tooltip.first.inner_text()
    save_screenshot(page, "steps_data_before")
    declare_value_range(page, "-1.5", "1.5")  # the range starts empty (issue 30): typed, then declared
    text = _step_bar(page).inner_text()
    assert "Step 2 (Unit & bounds) is done" in text, text
    assert "✓ 2. Unit & bounds" in text
    link = _step_bar(page).locator("a").filter(has_text="Next: Explore")
    assert all(a.get_attribute("disabled") is None for a in link.all())
    interact(page, lambda: link.first.click())
    wait_idle(page)
    assert page.get_by_role("heading", name="Mean function").count() == 1
    assert "✓ 3. Explore" in _step_bar(page).inner_text()
    # A tau typed by hand (not the declared range's) must be declared public on the Data page.
    from_range = page.locator("[data-testid='stSidebar'] [data-testid='stCheckbox']").filter(
        has_text="from the declared range").locator("label").first
    interact(page, lambda: from_range.click())
    assert "✓ 2. Unit & bounds" not in _step_bar(page).inner_text()
    assert "declare tau public" in _step_bar(page).inner_text() or "Before" in _step_bar(page).inner_text()
    assert_healthy(page)
    save_screenshot(page, "steps_mean_after")


def _tutorial_switch(page):
    return page.locator("[data-testid='stCheckbox']").filter(has_text="tutorial mode").locator("label").first


@pytest.mark.parametrize("spec", PAGES, ids=[p.split("/")[-1][:-3] for p, _, _ in PAGES])
def test_tutorial_text_on_every_page_survives_a_reload(page, app_url, spec):
    path, title, url = spec
    page.goto(f"{app_url}/{url}?tutorial=1")
    wait_idle(page)
    tutorial = page.locator("[data-testid='stExpander']").filter(has_text="Tutorial: what this page does")
    assert tutorial.count() == 1, title
    text = tutorial.inner_text()
    assert "Try this in class" in text and len(text) > 300, text
    assert page.get_by_role("switch", name="tutorial mode").is_checked()
    page.reload()
    wait_idle(page)
    assert "tutorial=1" in page.url
    assert page.locator("[data-testid='stExpander']").filter(has_text="Tutorial: what this page does").count() == 1
    assert_healthy(page)
    if url == "":  # turning it off removes it from the address too
        interact(page, lambda: _tutorial_switch(page).click())
        assert page.locator("[data-testid='stExpander']").filter(has_text="Tutorial: what this").count() == 0
        assert "tutorial=1" not in page.url


def test_tutorial_toggle_sets_the_address(page, app_url):
    open_app(page, app_url, "mean")
    assert page.locator("[data-testid='stExpander']").filter(has_text="Tutorial: what this").count() == 0
    interact(page, lambda: _tutorial_switch(page).click())
    assert "tutorial=1" in page.url
    harness.goto_page(page, "Density")
    assert "tutorial=1" in page.url
    page.reload()
    wait_idle(page)
    assert page.locator("[data-testid='stExpander']").filter(has_text="Tutorial: what this page does").count() == 1


# --------------------------------------------------------------------------- the HTML report

TICKS_INSIDE_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(el => {
  const box = el.getBoundingClientRect();
  const texts = Array.from(el.querySelectorAll('.xtick text, .ytick text, .g-xtitle text, .g-ytitle text, .gtitle'));
  const out = texts.filter(t => { const r = t.getBoundingClientRect();
      return r.width > 0 && (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5
                              || r.bottom > box.bottom + 0.5); }).map(t => t.textContent);
  // Axis titles must not overlap the tick labels of their axis.
  const overlap = (a, b) => !(a.right <= b.left || b.right <= a.left || a.bottom <= b.top || b.bottom <= a.top);
  const clash = [];
  for (const [title, ticks] of [['.g-ytitle text', '.ytick text'], ['.g-xtitle text', '.xtick text']]) {
    const t = el.querySelector(title);
    if (!t) continue;
    const r = t.getBoundingClientRect();
    for (const k of el.querySelectorAll(ticks)) if (overlap(r, k.getBoundingClientRect())) clash.push(k.textContent);
  }
  return {outside: out, clash: clash, n_texts: texts.length};
})"""


def _declare_range(page) -> None:
    """Commits of curves need a declared public value range (Data page)."""
    harness.goto_page(page, "Data")
    declare_value_range(page, "-50", "50")  # the range starts empty (issue 30): typed, then declared


def _commit_and_download_report(page, app_url, tmp_path):
    open_app(page, app_url)
    _declare_range(page)
    register_if_unmatched(page)  # another file's commit may have registered other data in this ledger
    harness.goto_page(page, "Release & audit")
    acknowledge_verdict(page)
    commit = page.get_by_role("button", name=re.compile(r"^Commit", re.I))
    interact(page, lambda: commit.first.click())
    wait_idle(page)
    assert_healthy(page)
    button = page.locator("[data-testid='stDownloadButton'] button").filter(has_text="HTML report")
    with page.expect_download() as info:
        button.first.click()
    target = tmp_path / "report.html"
    info.value.save_as(str(target))
    return target


def test_report_charts_are_not_clipped_at_two_widths(page, app_url, browser, tmp_path):
    report = _commit_and_download_report(page, app_url, tmp_path)
    text = report.read_text()
    charged = re.search(r"charged epsilon = ([0-9.]+)", text)
    assert charged, "the trade-off chart names the charged epsilon"
    assert float(charged.group(1)) > 1.0  # the discrete Gaussian's privacy map charges more than nominal 1
    for width in (1440, 800):
        context = harness.new_context(browser, width=width, height=900)
        try:
            view = context.new_page()
            view.route("**/*", lambda route: route.continue_() if route.request.url.startswith(
                ("file:", "data:", "blob:", "about:")) else route.abort())
            view.goto(report.as_uri())
            view.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 3",
                                   timeout=30_000)
            view.wait_for_timeout(500)
            # Nothing wider than the window (tables wrap their cells instead).
            assert view.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), width
            checks = view.evaluate(TICKS_INSIDE_JS)
            assert len(checks) == 3
            for i, check in enumerate(checks):
                assert check["n_texts"] > 5, (width, i, check)
                assert not check["outside"], f"chart {i} at {width} px: clipped labels {check['outside']}"
                assert not check["clash"], f"chart {i} at {width} px: axis title over ticks {check['clash']}"
            ARTIFACTS.mkdir(exist_ok=True)
            view.screenshot(path=str(ARTIFACTS / "screenshots" / f"report_{width}.png"), full_page=True)
        finally:
            context.close()


# --------------------------------------------------------------------------- no outside requests

def test_full_tour_sends_no_request_to_another_host(browser, app_url):
    """Every request of a tour through all pages (upload, tutorial, commit) goes to the local
    server. The harness aborts outside requests; they are still recorded here, so any
    attempt (a web font, a CDN icon, usage statistics) fails the test."""
    context = harness.new_context(browser)
    hosts = []
    context.on("request", lambda request: hosts.append((urlparse(request.url).hostname, request.url)))
    try:
        page = context.new_page()
        page.goto(f"{app_url}/?tutorial=1")
        wait_idle(page)
        choose_radio(page, "Source", "upload a file")
        upload(page, FIXTURES / "weather_long.csv")
        interact(page, lambda: page.get_by_role("button", name="Load with this mapping").click())
        _declare_range(page)
        register_if_unmatched(page)  # other tests' commits may have registered other data in this ledger
        for _path, title, _url in PAGES[1:] + PAGES[:1]:
            harness.goto_page(page, title)
        harness.goto_page(page, "Release & audit")
        acknowledge_verdict(page)
        interact(page, lambda: page.get_by_role("button", name=re.compile(r"^Commit", re.I)).first.click())
        wait_idle(page)
        page.reload()
        wait_idle(page)
    finally:
        context.close()
    assert len(hosts) > 20
    outside = sorted({url for host, url in hosts if host not in ("127.0.0.1", "localhost", None)
                      and not url.startswith(("data:", "blob:", "about:"))})
    assert not outside, f"requests to other hosts: {outside}"
