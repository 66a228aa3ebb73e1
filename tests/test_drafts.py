"""What you see is what you commit (issue 38): each analysis page's draft is what the Release page commits.

For every kind the Release page commits (mean with its bands, density of a feature, components,
sparse mean): explore on the page, commit on the Release page, and compare the committed settings
(release.json's, through config.yaml's replayable settings) with the page's draft, field by field.
The verdict travels: amber and red need "I publish ..." ticked; release.json, report.html and the
bundle's README state the public verdict.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from fdp_core.publish import export
from fdp_core.publish.replay import settings_of
from fdp_ui import drafts
from test_release_flow import acknowledge, declare_range
from chart_specs import chart_specs

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")


def _app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    declare_range(at)
    return at


def _draft(at, kind):
    return at.session_state[drafts.DRAFTS_KEY][kind]


def _drafts(at):
    return at.session_state[drafts.DRAFTS_KEY]


def _same(a, b) -> bool:
    if isinstance(a, (np.ndarray, list, tuple)) or isinstance(b, (np.ndarray, list, tuple)):
        return np.array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object)) or np.allclose(
            np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    return a == b


def _commit_and_compare(at, kind: str):
    """Commit the draft of ``kind`` from the Release page; every settings field as committed equals the draft's."""
    draft = _draft(at, kind)
    at.switch_page("pages/release.py").run()
    assert not at.exception, at.exception
    at.radio(key="rel_kind").set_value(kind).run()
    assert any(draft.what in m.value for m in at.markdown), [m.value for m in at.markdown]
    acknowledge(at)
    at.button(key="rel_commit").click().run()
    assert not at.exception, at.exception
    done = [s.value for s in at.success if s.value.startswith("Committed")]
    assert done, [e.value for e in at.error]
    release = at.session_state["fdp_releases"][-1]
    committed = settings_of(release.config)
    mismatched = {f.name: (getattr(committed, f.name), getattr(draft.settings, f.name))
                  for f in dataclasses.fields(draft.settings)
                  if not _same(getattr(committed, f.name), getattr(draft.settings, f.name))}
    assert not mismatched, mismatched
    record = json.loads(json.dumps(release.record, default=str))  # as release.json holds it
    for name in ("epsilon", "mechanism"):
        if name in record and hasattr(draft.settings, name):
            assert record[name] == getattr(draft.settings, name), name
    return draft, release, done[0]


def test_the_mean_with_its_bands_is_committed_as_the_mean_page_showed_it():
    at = _app()
    at.switch_page("pages/mean.py").run()
    at.selectbox(key="mean_mechanism").set_value("frl").run()
    at.number_input(key="mean_M").set_value(8).run()
    at.toggle(key="band_show").set_value(True).run()
    at.slider(key="band_share").set_value(0.3).run()
    assert not at.exception, at.exception
    draft = _draft(at, "mean")
    assert draft.settings.mechanism == "frl" and draft.settings.M == 8 and draft.settings.band_share == 0.3
    # The accuracy box and the title speak of the mean's own epsilon (0.7 of 1), not the whole budget.
    eps_mean = draft.settings.epsilon * 0.7
    assert any(f"epsilon = {eps_mean:.4g}" in json.dumps(json.loads(spec)) for _, spec in chart_specs(at))
    draft, release, message = _commit_and_compare(at, "mean")
    assert [e.kind for e in at.session_state["fdp_ledger"].entries] == ["mean", "covariance"]
    assert f"Verdict: {draft.verdict.colour} ({draft.verdict.word})" in message
    assert release.record["verdict"]["level"] == draft.public_verdict.level


def test_the_density_of_the_explored_feature_and_box_is_committed():
    at = _app()
    at.switch_page("pages/density.py").run()
    assert drafts.DRAFTS_KEY not in at.session_state or "kde" not in _drafts(at)  # a built-in example: no draft
    at.radio(key="density_source").set_value("curves").run()
    assert not at.exception, at.exception
    draft = _draft(at, "kde")
    assert draft.inputs["feature"] and draft.settings.value_range == (-1.5, 1.5)
    draft, release, _ = _commit_and_compare(at, "kde")
    assert release.record["feature"] == draft.inputs["feature"]
    assert release.record["verdict"]["word"] == draft.verdict.word


def test_the_components_explored_are_committed_with_their_verdict():
    at = _app()
    at.switch_page("pages/components.py").run()
    assert not at.exception, at.exception
    draft = _draft(at, "pca")
    assert draft.verdict is not None and draft.verdict.what == "release of components"
    draft, release, message = _commit_and_compare(at, "pca")
    assert f"({draft.verdict.word})" in message
    assert release.record["verdict"]["level"] is None  # read off the raw data: not published


def test_red_needs_i_publish_and_the_bundle_carries_the_verdict():
    at = _app()
    at.sidebar.select_slider(key="g_epsilon").set_value(0.05).run()  # far too little epsilon: red
    at.switch_page("pages/mean.py").run()
    draft = _draft(at, "mean")
    assert draft.public_verdict.level == "red"
    at.switch_page("pages/release.py").run()
    button = at.button(key="rel_commit")
    assert button.disabled and "I publish a release that is red: not useful" in button.help
    box = next(c for c in at.checkbox if c.label.startswith("I publish"))
    assert box.label == "I publish a release that is red: not useful"
    box.check().run()
    at.button(key="rel_commit").click().run()
    assert not at.exception, at.exception
    release = at.session_state["fdp_releases"][-1]
    assert release.record["verdict"]["colour"] == "red"
    assert any(e.value.startswith("Not useful") for e in at.error)  # the committed verdict, in red
    files = export.bundle_files(release, at.session_state["fdp_ledger"])
    assert json.loads(files["release.json"])["verdict"]["word"] == "not useful"
    assert "verdict-red" in files["report.html"].decode()
    assert "VERDICT: RED (not useful)" in files["README.txt"].decode()
    # The acknowledgement does not carry over to the next commit.
    assert not next(c for c in at.checkbox if c.label.startswith("I publish")).value
    assert at.button(key="rel_commit").disabled


@pytest.mark.parametrize("kind", ["mean"])
def test_a_changed_sidebar_is_said_and_the_draft_is_still_what_is_committed(kind):
    at = _app()
    at.switch_page("pages/mean.py").run()
    explored = _draft(at, kind).settings.epsilon
    at.switch_page("pages/release.py").run()
    at.sidebar.select_slider(key="g_epsilon").set_value(2.0).run()
    assert any("The sidebar changed since you explored" in w.value for w in at.warning)
    acknowledge(at)
    at.button(key="rel_commit").click().run()
    assert settings_of(at.session_state["fdp_releases"][-1].config).epsilon == explored


def test_the_sparse_mean_explored_is_committed_with_its_verdict():
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.button(key="sparse_example_button").click().run()
    at.checkbox(key="sparse_domain_declared").check().run()
    at.number_input(key="data_range_lo_input").set_value(-1.0).run()
    at.number_input(key="data_range_hi_input").set_value(2.0).run()
    at.checkbox(key="data_range_declared_input").check().run()
    at.switch_page("pages/mean.py").run()
    assert not at.exception, at.exception
    draft = _draft(at, "sparse")
    assert draft.verdict.what == "sparse mean"
    assert any(b.value.startswith(draft.verdict.headline) for b in [*at.success, *at.warning, *at.error])
    draft, release, message = _commit_and_compare(at, "sparse")
    assert f"({draft.verdict.word})" in message and release.record["verdict"]["level"] is None


def test_dti_by_subject_with_bands_carries_the_mean_pages_verdict_and_persons(shared_data):
    """The issue's outside check in AppTest: DTI by subject, range 0..1, bands on the Mean page; the
    committed message carries the Mean page's verdict word, the charges are both parts', and the bundle's
    ledger.json speaks of persons."""
    from fdp_core.data.loading import load_curves
    from fdp_ui.state import Dataset

    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["dataset"] = Dataset(load_curves(shared_data / "dti_cca.csv"), "upload: dti_cca.csv", "upload")
    at.run()
    at.switch_page("pages/data.py").run()
    at.number_input(key="data_range_lo_input").set_value(0.0).run()
    at.number_input(key="data_range_hi_input").set_value(1.0).run()
    at.checkbox(key="data_range_declared_input").check().run()
    at.switch_page("pages/mean.py").run()
    at.toggle(key="band_show").set_value(True).run()
    assert not at.exception, at.exception
    shown = next(b.value for b in [*at.success, *at.warning, *at.error]
                 if b.value.startswith(("Useful", "Rough", "Not useful")))
    draft = _draft(at, "mean")
    assert shown.startswith(draft.verdict.headline)
    assert draft.settings.person_column == "subject" and draft.settings.band_share == 0.2
    draft, release, message = _commit_and_compare(at, "mean")
    assert f"Verdict: {draft.verdict.colour} ({draft.verdict.word})" in message
    entries = at.session_state["fdp_ledger"].entries
    assert [e.kind for e in entries] == ["mean", "covariance"]
    files = export.bundle_files(release, at.session_state["fdp_ledger"])
    assert json.loads(files["ledger.json"])["neighbouring"].startswith("replace one person")


def test_the_published_verdict_is_the_same_on_neighbouring_data():
    """What release.json states about the verdict reads public inputs only: replacing one curve (D -> D')
    leaves it unchanged, while the analyst-view verdict (with the bias) is allowed to move."""
    from fdp_core.data.loading import load_curves
    from fdp_core.releases.mean import MeanSettings
    from fdp_ui.state import EXAMPLE_FILE

    fd = load_curves(EXAMPLE_FILE)
    other = dataclasses.replace(fd, data_matrix=fd.data_matrix.copy())
    other.data_matrix[0] = -other.data_matrix[0] + 1.0  # one person's curve replaced
    for settings in (MeanSettings(epsilon=1.0, value_range=(-1.5, 1.5)),
                     MeanSettings(epsilon=1.0, value_range=(-1.5, 1.5), confidence_band=0.95, band_share=0.3)):
        records = [drafts.mean_verdicts(drafts.mean_plan(d, settings))[1].record(drafts.PUBLIC_BASIS["mean"])
                   for d in (fd, other)]
        assert records[0] == records[1]
