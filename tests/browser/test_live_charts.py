"""Browser: the charts are redrawn in place (fdp_ui/live_chart.py).

A slider move must give each chart its new figure on the same plot (Plotly.react), not tear it down
and build another: that is what made a slider move cost the browser 35-90 ms more per chart. On the
Mean page (built-in example): mark the plot, move the sidebar's epsilon, and check that the marked
plot now shows the new epsilon in its title, with its data redrawn. Also checks that plotly.js came
from the app's own server, once for the tab, and that the chart kept its place after a page switch
and back (a fresh plot there, drawn).
"""

from __future__ import annotations

import pytest

pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

from .conftest import harness  # noqa: E402
from .test_e2e import goto_via_sidebar, interact, open_app  # noqa: E402

wait_idle = harness.wait_idle

STATE_JS = """() => Array.from(document.querySelectorAll('.fdp-live-chart')).map(el => ({
  marked: el.__testMark === 1,
  title: (el._fullLayout && el._fullLayout.title && el._fullLayout.title.text) || '',
  first_y: el._fullData && el._fullData[0] && el._fullData[0].y ? Array.from(el._fullData[0].y).slice(0, 5) : [],
}))"""


def _press_epsilon(page, key: str) -> None:
    slider = page.locator("[data-testid='stSidebar']").get_by_role("slider", name="epsilon")
    interact(page, lambda: slider.press(key))


def test_a_slider_move_redraws_the_mean_chart_in_place(page, app_url):
    open_app(page, app_url)
    goto_via_sidebar(page, "Mean")
    wait_idle(page)
    before = page.evaluate(STATE_JS)
    assert len(before) == 1 and "epsilon = 1," in before[0]["title"], before
    page.evaluate("() => { document.querySelector('.fdp-live-chart').__testMark = 1; }")

    _press_epsilon(page, "ArrowRight")
    wait_idle(page)
    after = page.evaluate(STATE_JS)
    assert len(after) == 1 and after[0]["marked"], "the chart was rebuilt instead of updated in place"
    assert "epsilon = 1," not in after[0]["title"] and after[0]["title"] != before[0]["title"], after
    assert after[0]["first_y"] != before[0]["first_y"], "the new release was not drawn"

    scripts = page.evaluate("() => Array.from(document.querySelectorAll('script[src*=\"plotly\"]')).map(s => s.src)")
    assert len(scripts) == 1 and scripts[0].startswith(app_url) and scripts[0].endswith("/plotly.min.js"), scripts

    goto_via_sidebar(page, "Trade-offs")
    wait_idle(page)
    goto_via_sidebar(page, "Mean")
    wait_idle(page)
    back = page.evaluate(STATE_JS)
    assert len(back) == 1 and back[0]["title"] == after[0]["title"] and back[0]["first_y"], back
    assert page.evaluate("() => document.querySelectorAll('script[src*=\"plotly\"]').length") == 1
    assert not page.fdp_console_errors, page.fdp_console_errors
