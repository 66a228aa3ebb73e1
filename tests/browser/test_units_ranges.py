"""Browser: the unit of privacy and the public value range, in the real app (issue 12).

DTI (several visits per subject): the Data page pre-selects the subject column, shows the
persons, and warns when "every curve is a person" is chosen while ids repeat. Berkeley growth
with a declared range of 60-200 cm: the Mean page shows a mean in centimetres and the
accuracy box shows noise, bias and their total. Screenshots go to artifacts/screenshots/.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

from .conftest import harness  # noqa: E402
from .test_e2e import (assert_healthy, choose_radio, choose_select, declare_value_range,  # noqa: E402
                       goto_via_sidebar, metric, open_app, save_screenshot, upload)

wait_idle = harness.wait_idle

PLOT_Y_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(el =>
  (el._fullData || []).map(d => Array.from(d.y || []).filter(v => v !== null && isFinite(v))))"""


def test_dti_persons_and_the_repeated_subject_warning(page, app_url, shared_data):
    open_app(page, app_url)
    choose_radio(page, "Source", "upload a file")
    upload(page, shared_data / "dti_cca.csv")
    assert_healthy(page)
    assert metric(page, "persons n") == "142"
    assert page.get_by_text(re.compile("have repeated values")).count() == 0
    save_screenshot(page, "units_dti_persons")
    choose_select(page, "person column (who each curve belongs to)", "(none: every curve is a different person)")
    wait_idle(page)
    warning = page.get_by_text(re.compile(r"Column\(s\) 'subject' have repeated values"))
    assert warning.count() >= 1 and warning.first.is_visible()
    save_screenshot(page, "units_dti_warning")


def test_berkeley_declared_range_mean_in_centimetres(page, app_url, shared_data):
    open_app(page, app_url)
    choose_radio(page, "Source", "upload a file")
    upload(page, shared_data / "berkeley_growth.csv")
    declare_value_range(page, "60", "200")
    assert page.get_by_text(re.compile(r"Declared public range \[60, 200\]")).count() >= 1
    goto_via_sidebar(page, "Mean")
    wait_idle(page)
    assert_healthy(page, allow_errors=True)
    traces = page.evaluate(PLOT_Y_JS)
    values = np.concatenate([np.asarray(y, dtype=float) for plot in traces for y in plot if len(y)])
    assert values.size and np.median(values) > 90, np.median(values)
    for label in ("noise (95% radius, L2)", "bias vs raw mean (L2)", "total (root mean square)"):
        assert float(metric(page, label)) >= 0
    assert page.get_by_text(re.compile("away from that average")).count() >= 1
    save_screenshot(page, "units_berkeley_mean_cm")
