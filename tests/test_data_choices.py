"""AppTest: the Data page's choices are the session's data-set state (issue 28) and a commit
waits for what is missing (issues 28 and 30).

The person column chosen on the Data page follows the session to every page and into the
Release page's commit; a commit is impossible while the person column (ids repeat), the range,
enough persons or the budget are missing, and the button says why; the deliberate "every
curve is a different person" declaration is recorded in the release and its report.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fdp_core.publish import export
from fdp_core.data.loading import load_curves
from fdp_core.limits import MIN_PERSONS_COMMIT
from fdp_ui import commit_checks
from fdp_ui.state import NO_PERSON, Dataset
from test_release_flow import acknowledge
from chart_specs import chart_specs

APP = str(Path(__file__).resolve().parents[1] / "app.py")
PAGES = ("pages/mean.py", "pages/density.py", "pages/components.py", "pages/covariance.py", "pages/tradeoffs.py",
         "pages/release.py")


def _data_page(fd, label) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["dataset"] = Dataset(fd, label, "upload")
    at.run()
    at.switch_page("pages/data.py").run()
    assert not at.exception, at.exception
    return at


def _declare_range(at: AppTest, lo: float, hi: float) -> None:
    at.number_input(key="data_range_lo_input").set_value(lo).run()
    at.number_input(key="data_range_hi_input").set_value(hi).run()
    at.checkbox(key="data_range_declared_input").check().run()


def _sidebar_data(at: AppTest) -> str:
    """The sidebar's "Data: ..." line (a caption's style in the markdown that also holds the **Privacy** header)."""
    return next(m.value for m in at.sidebar.markdown if "Data: " in m.value)


def _commit_button(at: AppTest):
    """The commit button, after ticking "I publish ..." when the verdict is amber or red (issue 38)."""
    if any(box.label.startswith("I publish") and not box.value for box in at.checkbox):
        acknowledge(at)
    return at.button(key="rel_commit")


@pytest.fixture
def dti(shared_data):
    return load_curves(shared_data / "dti_cca.csv")


def test_person_column_and_range_follow_the_session_to_every_page(dti):
    at = _data_page(dti, "upload: dti_cca.csv")
    assert at.selectbox(key="data_person_column_input").value == "subject"
    _declare_range(at, 0.0, 1.0)
    for page in PAGES:
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
        assert "n = 142 persons" in _sidebar_data(at), (page, _sidebar_data(at))
        assert not any("choose the person column" in c.value for c in at.caption), page
        # The stored choices are plain session keys, not widget state.
        assert at.session_state["data_person_column"] == "subject"
        assert at.session_state["data_range_declared"] is True
    assert any("n = 142 persons, 376 curves" in m.value for m in at.markdown)  # the Release page's unit line
    at.switch_page("pages/data.py").run()
    assert at.selectbox(key="data_person_column_input").value == "subject"
    assert at.checkbox(key="data_range_declared_input").value
    assert (at.number_input(key="data_range_lo_input").value, at.number_input(key="data_range_hi_input").value) == (
        0.0, 1.0)


def test_missing_policy_and_simulation_choices_are_kept_across_pages():
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("pages/data.py").run()
    at.radio(key="data_missing").set_value("interpolate").run()
    at.radio(key="data_source").set_value("simulate").run()
    at.number_input(key="sim_kl_n").set_value(41).run()
    at.switch_page("pages/mean.py").run()
    at.switch_page("pages/data.py").run()
    assert at.radio(key="data_missing").value == "interpolate"
    assert at.radio(key="data_source").value == "simulate"
    assert at.number_input(key="sim_kl_n").value == 41
    assert "n = 41," in _sidebar_data(at)


def test_commit_waits_for_the_person_column_and_records_a_deliberate_curve_unit(dti):
    at = _data_page(dti, "upload: dti_cca.csv")
    at.selectbox(key="data_person_column_input").set_value(NO_PERSON).run()
    _declare_range(at, 0.0, 1.0)
    at.switch_page("pages/release.py").run()
    button = _commit_button(at)
    assert button.disabled and "'subject' repeats" in button.help
    assert any("Commit not possible yet" in w.value and "'subject' repeats" in w.value for w in at.warning)
    # The deliberate declaration on the Data page opens the commit and is recorded with the release.
    at.switch_page("pages/data.py").run()
    at.checkbox(key="data_curves_are_persons_input").check().run()
    at.switch_page("pages/release.py").run()
    assert not _commit_button(at).disabled
    assert any("Recorded with the release: every curve is a different person" in c.value for c in at.caption)
    _commit_button(at).click().run()
    assert not at.exception, at.exception
    release = at.session_state["fdp_releases"][0]
    assert release.record["n"] == 382  # every row of the file is a person, the 6 with missing values included
    assert "declared by the analyst" in release.record["unit_declaration"]
    assert "'subject' repeats" in release.record["unit_declaration"]
    assert "unit declared by the analyst" in export.report_html(release)


def test_a_release_by_subject_has_the_persons_as_n(dti):
    at = _data_page(dti, "upload: dti_cca.csv")
    _declare_range(at, 0.0, 1.0)
    at.switch_page("pages/mean.py").run()
    at.switch_page("pages/release.py").run()
    assert not _commit_button(at).disabled
    assert "costs epsilon" in _commit_button(at).label and "leaves epsilon" in _commit_button(at).label
    _commit_button(at).click().run()
    release = at.session_state["fdp_releases"][0]
    assert release.record["n"] == 142 and "subject" in release.record["unit_of_privacy"]
    assert "unit_declaration" not in release.record


def test_an_implausible_person_column_is_warned_and_too_few_persons_block_the_commit(shared_data):
    fd = load_curves(shared_data / "berkeley_growth.csv")
    at = _data_page(fd, "upload: berkeley_growth.csv")
    at.selectbox(key="data_person_column_input").set_value("sex").run()
    assert any("only 2 persons" in w.value for w in at.warning)
    assert any("is 'sex' a person id" in w.value for w in at.warning)
    assert any(f"Fewer than {MIN_PERSONS_COMMIT} persons" in e.value for e in at.error)
    _declare_range(at, 60.0, 200.0)
    at.switch_page("pages/release.py").run()
    button = _commit_button(at)
    assert button.disabled and "below the minimum" in button.help


def test_person_warnings_rules():
    assert commit_checks.person_warnings(142, 376, "subject") == []
    assert len(commit_checks.person_warnings(2, 93, "sex")) == 2
    assert commit_checks.person_warnings(35, 35, None) == []
    assert "fewer than" in commit_checks.person_warnings(15, 15, None)[0]
    assert "10%" in commit_checks.person_warnings(30, 400, "site")[0]


def test_after_a_reload_the_meter_says_the_upload_is_gone_and_its_budget_kept():
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["data"] = "dti_cca.csv"  # what an upload left in the URL before the reload
    at.run()
    assert not at.exception, at.exception
    meter = "**Privacy budget**  \n:gray[:small[of the data set **built-in example (example_curves.csv)**]]"
    assert any(m.value == meter for m in at.sidebar.markdown)
    warning = next(w.value for w in at.sidebar.warning if "reloaded" in w.value)
    assert "(dti_cca.csv) are gone" in warning and "budget is kept" in warning
    assert "data" not in at.query_params  # the example is not an upload
    fresh = AppTest.from_file(APP, default_timeout=120)
    fresh.run()
    assert not any("reloaded" in w.value for w in fresh.sidebar.warning)


def test_the_range_starts_empty_or_at_a_simulation_designs_public_range(dti):
    from fdp_core.data.simulate import design_value_range, simulate

    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("pages/data.py").run()
    # The built-in example: nothing pre-filled (0..1 would clip it, it reaches 1.28).
    assert at.number_input(key="data_range_lo_input").value is None
    assert at.number_input(key="data_range_hi_input").value is None
    at.checkbox(key="data_range_declared_input").check().run()
    assert any("needs a lowest and a highest value" in e.value for e in at.error)
    assert at.session_state["data_range_declared"] and not any("Declared public range" in s.value for s in at.success)
    # The classroom simulation: the design's own bound, said to come from its description.
    at.radio(key="data_source").set_value("simulate").run()
    (lo, hi), _ = design_value_range("kl")
    assert (at.number_input(key="data_range_lo_input").value, at.number_input(key="data_range_hi_input").value) == (
        lo, hi)
    assert not at.checkbox(key="data_range_declared_input").value  # pre-filled, not declared
    assert any("Pre-filled from the simulation design's public description" in c.value for c in at.caption)
    values = simulate("kl").data_matrix
    assert lo <= values.min() and values.max() <= hi  # a sure bound: nothing of the classroom data clipped
    # Other data: empty again.
    at.session_state["dataset"] = Dataset(dti, "upload: dti_cca.csv", "upload")
    at.run()
    assert at.number_input(key="data_range_lo_input").value is None


@pytest.mark.parametrize("key", ["kl", "s1", "s2", "s3", "s4"])
def test_design_ranges_come_from_the_design_and_hold_its_draws(key):
    from fdp_core.data.simulate import design_value_range, simulate

    (lo, hi), note = design_value_range(key, n=200, seed=3)
    values = simulate(key, n=200, seed=3).data_matrix
    assert lo < values.min() and values.max() < hi and note
    assert design_value_range(key, n=200, seed=4)[0] == (lo, hi)  # the draws never enter the range


def test_axis_labels_reach_the_release_figure_the_report_and_a_replay(tmp_path):
    from fdp_core.publish.replay import replay

    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("pages/data.py").run()
    at.text_input(key="data_t_label").input("day of year").run()
    at.text_input(key="data_value_unit").input("temperature (°C)").run()
    _declare_range(at, -1.5, 1.5)
    at.switch_page("pages/release.py").run()
    _commit_button(at).click().run()
    assert not at.exception, at.exception
    release = at.session_state["fdp_releases"][0]
    assert release.record["axis_labels"] == {"t": "day of year", "value": "temperature (°C)"}
    layout = export.release_figure(release).layout
    assert (layout.xaxis.title.text, layout.yaxis.title.text) == ("day of year", "temperature (°C)")
    assert "day of year" in export.report_html(release)
    # The bundle's config carries them: a re-run (the notebook's export.replay) draws with the same names.
    again, _ = replay(release.config, load_curves(Path(APP).parent / "data" / "example_curves.csv"))
    assert export.release_figure(again).layout.xaxis.title.text == "day of year"


def test_covariance_heatmaps_have_axis_titles_and_a_colour_bar_title():
    import json

    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("pages/data.py").run()
    at.text_input(key="data_t_label").input("age (years)").run()
    at.switch_page("pages/covariance.py").run()
    assert not at.exception, at.exception
    spec = json.loads(next(s for element_id, s in chart_specs(at) if "cov_heatmaps" in element_id))
    layout = spec["layout"]
    assert layout["xaxis"]["title"]["text"] == "t (age (years))" and layout["yaxis"]["title"]["text"] == "s (age (years))"
    assert layout["xaxis2"]["title"]["text"] == "t (age (years))"
    assert all(t["colorbar"]["title"]["text"] == "C(s, t)" for t in spec["data"] if t["type"] == "heatmap")


def test_a_simulation_with_other_parameters_gets_its_own_public_range():
    from fdp_core.data.simulate import design_value_range

    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("pages/data.py").run()
    at.radio(key="data_source").set_value("simulate").run()
    at.number_input(key="sim_kl_p").set_value(2.0).run()
    (lo, hi), _ = design_value_range("kl", p=2.0)
    assert at.number_input(key="data_range_hi_input").value == hi and hi > design_value_range("kl")[0][1]
