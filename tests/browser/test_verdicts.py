"""Browser: accuracy verdicts and the public reference curve on the Mean page (issue 28).

DTI (FA in [0, 1], by subject) at epsilon 1: ICLP-AR's noise radius dwarfs the range, so its
verdict box is red (an error box) and links to the Trade-offs page's target-accuracy tool.
Berkeley heights with the range 60-200 cm and the shipped WHO height-for-age medians as the
public reference: the largest pointwise bias shown falls below 3 cm.
Screenshots go to artifacts/screenshots/.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

from .conftest import harness  # noqa: E402
from .test_e2e import (choose_radio, choose_select, declare_value_range, goto_via_sidebar, interact,  # noqa: E402
                       metric, open_app, save_screenshot, upload)

wait_idle = harness.wait_idle
ROOT = Path(__file__).resolve().parents[2]


def _alert_texts(page, kind: str) -> list[str]:
    return page.locator(f"[data-testid='stAlertContent{kind}']").all_inner_texts()


def test_iclp_ar_on_dti_gets_a_red_verdict_with_the_way_out(page, app_url, shared_data):
    open_app(page, app_url)
    choose_radio(page, "Source", "upload a file")
    upload(page, shared_data / "dti_cca.csv")
    declare_value_range(page, "0", "1")
    goto_via_sidebar(page, "Mean")
    wait_idle(page)
    choose_select(page, "mechanism", "ICLP-AR (absolute penalty, epsilon)")
    wait_idle(page)
    errors = _alert_texts(page, "Error")
    assert any("red" in e.lower() or "not useful" in e.lower() or "useless" in e.lower() for e in errors), errors
    link = page.get_by_text(re.compile("which epsilon reaches a target accuracy"))
    assert link.count() >= 1
    save_screenshot(page, "verdict_dti_iclp_ar_red")


def test_berkeley_with_a_public_reference_curve_has_a_small_pointwise_bias(page, app_url, shared_data):
    open_app(page, app_url)
    choose_radio(page, "Source", "upload a file")
    upload(page, shared_data / "berkeley_growth.csv")
    declare_value_range(page, "60", "200")
    goto_via_sidebar(page, "Mean")
    wait_idle(page)
    before = float(metric(page, "largest pointwise bias"))
    reference = page.locator("[data-testid='stFileUploaderDropzoneInput']").last
    interact(page, lambda: reference.set_input_files(str(ROOT / "data" / "who_height_for_age_median.csv")))
    wait_idle(page)
    after = float(metric(page, "largest pointwise bias"))
    assert after < 3.0 < before, (before, after)
    save_screenshot(page, "reference_berkeley_who")
