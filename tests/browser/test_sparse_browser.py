"""Browser: the built-in sparse example through the Data and Mean pages (points, never joined lines)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

from .conftest import harness  # noqa: E402
from .test_e2e import assert_healthy, declare_value_range, goto_via_sidebar, open_app, save_screenshot  # noqa: E402

MODES_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(el =>
  [((el.layout || {}).title || {}).text || '', (el._fullData || []).map(d => d.mode || d.type)])"""


def test_sparse_example_releases_a_mean_over_points(page, app_url):
    open_app(page, app_url)
    harness.interact(page, lambda: page.get_by_role("button", name=re.compile("built-in sparse example")).click())
    harness.wait_idle(page)
    assert page.get_by_text(re.compile("at their own times")).count() >= 1
    harness.interact(page, lambda: page.get_by_text("I declare this domain public").first.click())
    declare_value_range(page, "-1", "2")
    assert_healthy(page)
    save_screenshot(page, "sparse_data_page")
    goto_via_sidebar(page, "Mean")
    harness.wait_idle(page)
    assert_healthy(page)
    save_screenshot(page, "sparse_mean_page")
    plots = page.evaluate(MODES_JS)
    release = [modes for _, modes in plots if "lines" in modes]
    assert release, plots
    assert release[0][0] == "markers" and release[0].count("markers") == 1  # observations: points only
    assert page.get_by_text(re.compile("Guarantee")).count() >= 1
