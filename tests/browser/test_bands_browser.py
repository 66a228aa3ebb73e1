"""Browser: the Mean page's two bands on DTI by subject (METHODS.md 18, issue 23).

DTI (376 curves of 142 persons, range [0, 1] declared): the "Uncertainty bands" toggle draws the
released mean with the privacy band and the confidence band, each named in plain words in the
legend, and the caption gives the budget of both parts. Screenshots (the page and the bands
panel): artifacts/screenshots/mean_bands_dti*.png.
"""

from __future__ import annotations

import re

import pytest

pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

from fdp_core.releases.bands import CONFIDENCE_BAND_WORDS, PRIVACY_BAND_WORDS  # noqa: E402

from .conftest import harness  # noqa: E402
from .test_data_choices import load_dti  # noqa: E402
from .test_e2e import SCREENSHOTS, assert_healthy, assert_plots_rendered, goto_via_sidebar, save_screenshot  # noqa: E402

wait_idle, interact = harness.wait_idle, harness.interact


def test_mean_page_shows_both_bands_on_dti(page, app_url, shared_data):
    load_dti(page, app_url, shared_data)
    goto_via_sidebar(page, "Mean")
    wait_idle(page)
    toggle = page.locator("[data-testid='stCheckbox']").filter(has_text=re.compile("Uncertainty bands"))
    interact(page, lambda: toggle.first.locator("label").first.click())
    wait_idle(page, 180_000)
    assert page.get_by_role("switch", name=re.compile("Uncertainty bands")).first.is_checked()
    panel = page.locator(".st-key-mean_bands").first
    legend = " ".join(panel.locator(".legendtext").evaluate_all("els => els.map(e => e.textContent)"))
    assert PRIVACY_BAND_WORDS in legend and CONFIDENCE_BAND_WORDS in legend, legend
    assert panel.get_by_text(re.compile("in total")).count() >= 1
    assert_plots_rendered(page)
    assert_healthy(page)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    panel.screenshot(path=str(SCREENSHOTS / "mean_bands_dti_panel.png"))
    save_screenshot(page, "mean_bands_dti")
