"""Bias in plain sight and the accuracy verdict on the Mean page (issue 28), and their core rules."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from fdp_core.data.loading import load_curves
from fdp_core.releases.mean import MeanSettings, plan_mean_release
from fdp_core.data.preprocess import load_reference
from fdp_core.explore.verdict import GREEN_SHARE, covariance_verdict, end_shrinkage_note, mean_verdict, verdict
from fdp_ui.state import Dataset
from chart_specs import chart_figures

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
WHO = ROOT / "data" / "who_height_for_age_median.csv"
GROWTH_RANGE = (60.0, 200.0)


def test_verdict_rule_colours_and_pointer():
    assert verdict(5.0, 100.0).level == "green"
    assert verdict(5.0, 100.0, bias=6.0).level == "amber"  # the bias counts
    assert verdict(30.0, 100.0).level == "red"
    assert verdict(30.0, None).level == "unrated"
    red = verdict(30.0, 100.0, bias=2.0)
    assert red.target_radius == pytest.approx(GREEN_SHARE * 100.0 - 2.0)
    assert "more epsilon cannot fix it" in verdict(1.0, 100.0, bias=20.0).sentence()
    # The covariance scale is tau^2: a radius is compared with the largest possible covariance.
    assert covariance_verdict(0.05, 1.0).level == "green" and covariance_verdict(0.5, 1.0).level == "red"


def test_mean_verdict_suggests_an_epsilon_that_turns_it_green(shared_data):
    fd = load_curves(shared_data / "berkeley_growth.csv")
    settings = MeanSettings(value_range=GROWTH_RANGE, tau=None, epsilon=1.0, reference=load_reference(WHO))
    v = mean_verdict(plan_mean_release(fd, settings), fd)
    assert v.level == "red" and v.suggested_epsilon is not None and v.suggested_epsilon > 1.0
    at_suggested = mean_verdict(plan_mean_release(fd, MeanSettings(**{**settings.__dict__,
                                                                       "epsilon": v.suggested_epsilon})))
    assert at_suggested.level == "green"
    assert "Trade-offs page" in v.sentence()


def test_a_public_growth_reference_removes_the_end_bias_on_berkeley(shared_data):
    """Centred at the range's midpoint, the target is pulled towards 130 cm at ages 1 and 18; centred
    at the WHO medians (data/who_height_for_age_median.csv) it is within 3 cm of the file's mean."""
    fd = load_curves(shared_data / "berkeley_growth.csv")
    raw = fd.data_matrix.mean(axis=0)
    ends = [int(np.argmin(np.abs(fd.grid_points - age))) for age in (1.0, 18.0)]
    midpoint = plan_mean_release(fd, MeanSettings(value_range=GROWTH_RANGE, tau=None))
    assert max(abs(midpoint.estimate[i] - raw[i]) for i in ends) > 5.0
    assert end_shrinkage_note(midpoint) is not None
    referenced = plan_mean_release(fd, MeanSettings(value_range=GROWTH_RANGE, tau=None,
                                                    reference=load_reference(WHO)))
    for i in ends:
        assert abs(referenced.estimate[i] - raw[i]) < 3.0
    assert end_shrinkage_note(referenced) is None
    assert referenced.pointwise_bias() < midpoint.pointwise_bias()


def _berkeley_mean_page(fd) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["dataset"] = Dataset(fd, "upload: berkeley_growth.csv", "upload")
    at.run()
    at.switch_page("pages/data.py").run()
    at.number_input(key="data_range_lo_input").set_value(GROWTH_RANGE[0]).run()
    at.number_input(key="data_range_hi_input").set_value(GROWTH_RANGE[1]).run()
    at.checkbox(key="data_range_declared_input").check().run()
    at.switch_page("pages/mean.py").run()
    assert not at.exception, at.exception
    return at


def test_mean_page_draws_the_raw_mean_states_pointwise_bias_and_takes_a_reference(shared_data):
    fd = load_curves(shared_data / "berkeley_growth.csv")
    at = _berkeley_mean_page(fd)
    figure = chart_figures(at)[0]
    assert any(str(trace.get("name", "")).startswith("raw mean of the curves") for trace in figure["data"])
    metrics = {m.label: m.value for m in at.metric}
    before = float(metrics["largest pointwise bias"])
    assert before > 5.0
    assert any("pulled towards the range's centre" in w.value for w in at.warning)
    # The verdict box: amber at epsilon 1 on this file (noise 19.5 + bias 5 = 18% of 140 cm), with the
    # pointer to the Trade-offs tool and the epsilon it finds; the rule stated beside it.
    assert any(w.value.startswith("Rough:") and "Trade-offs page" in w.value and "epsilon = " in w.value
               for w in at.warning)
    assert any("Verdict rule" in c.value for c in at.caption)
    assert not any("With 95% probability" in s.value for s in at.success)
    # The public reference curve, uploaded on the page, becomes the centre.
    upload = ("who_height_for_age_median.csv", WHO.read_bytes(), "text/csv")
    at.file_uploader(key="public_reference_upload_0").set_value(upload).run()
    assert not at.exception, at.exception
    after = float({m.label: m.value for m in at.metric}["largest pointwise bias"])
    assert after < 3.0 < before
    assert not any("pulled towards the range's centre" in w.value for w in at.warning)
    assert any("who_height_for_age_median.csv" in c.value for c in at.caption)
    # It reaches the Release page's settings through mean_controls (kept across pages).
    at.switch_page("pages/tradeoffs.py").run()
    at.switch_page("pages/mean.py").run()
    assert float({m.label: m.value for m in at.metric}["largest pointwise bias"]) == pytest.approx(after)


def test_verdict_colours_on_dti_iclp_ar_red_and_gaussian_amber(shared_data):
    """Issue 28: ICLP-AR at epsilon 1 on DTI (FA in [0, 1]) is not a green success box any more."""
    fd = load_curves(shared_data / "dti_cca.csv")
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["dataset"] = Dataset(fd, "upload: dti_cca.csv", "upload")
    at.run()
    at.switch_page("pages/data.py").run()
    at.number_input(key="data_range_lo_input").set_value(0.0).run()
    at.number_input(key="data_range_hi_input").set_value(1.0).run()
    at.checkbox(key="data_range_declared_input").check().run()
    at.switch_page("pages/mean.py").run()
    assert not at.exception, at.exception
    at.selectbox(key="mean_mechanism").set_value("iclp-ar").run()
    assert not at.exception, at.exception
    red = [e.value for e in at.error if e.value.startswith("Not useful at this epsilon")]
    assert red and "Trade-offs page" in red[0]
    assert not any("within **" in s.value for s in at.success)  # no green box for a useless release
    at.selectbox(key="mean_mechanism").set_value("gaussian").run()
    v = mean_verdict(plan_mean_release(fd, MeanSettings(value_range=(0.0, 1.0), tau=None, person_column="subject")))
    boxes = {"green": at.success, "amber": at.warning, "red": at.error}[v.level]
    assert any(b.value.startswith(v.headline) for b in boxes)
