"""AppTest: the Mean page's two bands (METHODS 18) and the Covariance page's synthetic curves (METHODS 19)."""

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

import pytest

from fdp_core.publish.verify import verify_release
from fdp_core.releases.bands import CONFIDENCE_BAND_WORDS, MEAN_BAND_WORDS, PRIVACY_BAND_WORDS
from chart_specs import chart_specs

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def _page(path: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page(path)
    at.run()
    assert not at.exception, at.exception
    return at


def _figure(at, key: str) -> dict:
    return next(json.loads(spec) for element_id, spec in chart_specs(at) if key in element_id)


def test_mean_page_shows_both_bands_in_plain_words():
    at = _page("pages/mean.py")
    assert not any("mean_bands_figure" in element_id for element_id, _ in chart_specs(at))  # off by default
    at.toggle(key="band_show").set_value(True).run()
    assert not at.exception, at.exception
    names = [t.get("name", "") for t in _figure(at, "mean_bands_figure")["data"]]
    assert any(PRIVACY_BAND_WORDS in n for n in names) and any(CONFIDENCE_BAND_WORDS in n for n in names)
    # The band for the mean itself is asked for by default; until its assumption is declared, the page says plainly
    # that the band covers only the smoothed mean.
    assert at.selectbox(key="band_target").value == "the population mean itself"
    assert any("covers only the smoothed mean" in c.value and "Declare how far" in c.value for c in at.caption)
    at.number_input(key="band_amplitude").set_value(0.5).run()  # in words: how far from the public centre
    assert not at.exception, at.exception
    names = [t.get("name", "") for t in _figure(at, "mean_bands_figure")["data"]]
    assert any(MEAN_BAND_WORDS in n and "smoothness bound" in n for n in names)
    assert any("Green: " + MEAN_BAND_WORDS in c.value for c in at.caption)
    assert any("in total" in c.value for c in at.caption)
    assert any("composed exactly (mu-GDP" in c.value for c in at.caption)  # the page's default is Gaussian


def test_covariance_page_draws_synthetic_curves_on_request():
    at = _page("pages/covariance.py")
    at.toggle(key="syn_show").set_value(True).run()
    assert not at.exception, at.exception
    data = _figure(at, "syn_figure")["data"]
    assert any("synthetic" in t.get("name", "") for t in data) and any("real" in t.get("name", "") for t in data)
    labels = {m.label for m in at.metric}
    assert {"mean L2 distance", "covariance HS distance", "subspace distance (top 3)"} <= labels


def test_release_page_commits_a_mean_with_its_bands():
    from test_release_flow import commit, declare_range

    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    declare_range(at)
    at.switch_page("pages/release.py").run()
    at.toggle(key="rel_band_on").set_value(True).run()
    assert not at.exception, at.exception
    assert any("second moment adds epsilon" in c.value for c in at.caption)
    label = at.button(key="rel_commit").label
    commit(at)
    # The mean gets 0.8 of epsilon: its verdict (red here) is drawn in red below the success message.
    problems = [e.value for e in at.error if not e.value.startswith("Not useful at this epsilon")]
    assert not at.exception and not problems, problems
    ledger = at.session_state["fdp_ledger"]
    assert [e.kind for e in ledger.entries] == ["mean", "covariance"]
    # One quote (issue 36): the button stated what the ledger charged for BOTH parts, not the mean's alone.
    total = sum(e.epsilon for e in ledger.entries)
    assert f"costs epsilon {total:.3g}" in label and "2 parts" in label, label
    release = at.session_state["fdp_releases"][-1]
    assert release.record["charged_total"]["epsilon"] == pytest.approx(total, rel=1e-12)
    assert any(f"epsilon {total:.4g}" in s.value for s in at.success)
    # The bundle committed from the app verifies (its release.py runs verify_release on the same data).
    assert verify_release(release.config, at.session_state["dataset"].fd, release.record).verified
