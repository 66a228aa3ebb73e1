"""AppTest of the Release & audit page: budget, presets, commit, refusal, ledger, meter, export, audit."""

import io
import math
import zipfile
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fdp_core.publish import export
from fdp_core.budget.accounting import compose
from fdp_core.mechanisms import discrete
from fdp_core.explore.presets import DISCLAIMER, PRESETS
from fdp_ui import sidebar
from chart_specs import chart_specs

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")


def declare_range(at: AppTest, lo: float = -1.5, hi: float = 1.5) -> AppTest:
    """What a user does on the Data page before committing curves: declare a public value range."""
    at.session_state["data_range_lo"], at.session_state["data_range_hi"] = lo, hi
    at.session_state["data_range_declared"] = True
    return at


def acknowledge(at: AppTest) -> AppTest:
    """Tick the acknowledgement an amber or red verdict asks for before a commit (issue 38)."""
    for box in at.checkbox:
        if box.label.startswith("I publish") and not box.value:
            box.check()
    return at.run()


def commit(at: AppTest) -> AppTest:
    """Acknowledge the verdict shown, then click the commit button."""
    acknowledge(at)
    at.button(key="rel_commit").click().run()
    return at


def _release_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    declare_range(at)
    at.switch_page("pages/release.py").run()
    assert not at.exception, at.exception
    return at


def _meter(at) -> str:
    """The sidebar's "Budget: spent ..." line (the first line of its caption; "Ledger: ..." is the next)."""
    return next(c.value for c in at.sidebar.caption if c.value.startswith("Budget: spent")).split("  \n")[0]


def _frame(at, first_column: str):
    return next(d.value for d in at.dataframe if d.value.columns[0] == first_column)


def _commit_blocked(at, reason: str) -> bool:
    """The commit button is disabled and the page says why (issue 30: before the click, not after)."""
    button = at.button(key="rel_commit")
    return button.disabled and reason in button.help and any(
        "Commit not possible yet" in w.value and reason in w.value for w in at.warning)


def _metric(at, label):
    return next(m.value for m in at.metric if m.label == label)


@pytest.fixture
def sampler_calls(monkeypatch):
    """Records every call of the exact samplers (AppTest runs the page in this process)."""
    calls = []
    for name in ("discrete_gaussian_release", "discrete_laplace_release"):
        real = getattr(discrete, name)

        def wrapped(*args, _real=real, _name=name, **kwargs):
            calls.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(discrete, name, wrapped)
    return calls


def test_commit_a_mean_release_then_ledger_meter_composition_and_download(sampler_calls):
    at = _release_page()
    # The default budget allows a typical exploration (several commits, ten Gaussian deltas).
    assert "spent epsilon 0 of 4, delta 0 of 0.0001" in _meter(at)
    at.number_input(key="rel_budget_epsilon").set_value(2.5).run()
    assert "of 2.5" in _meter(at) and at.session_state["fdp_ledger"].epsilon_total == 2.5
    assert any("cost nothing" in i.value for i in at.info)
    commit(at)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert sampler_calls == ["discrete_gaussian_release"]
    assert any(s.value.startswith("Committed mean") for s in at.success)
    ledger = at.session_state["fdp_ledger"]
    assert len(ledger.entries) == 1
    entry = ledger.entries[0]
    table = _frame(at, "id")
    assert table["id"].tolist() == [entry.id] and table["native parameter"][0].startswith("rho = ")
    assert table["epsilon"][0] == entry.epsilon and table["rho"][0] == entry.rho
    meter = _meter(at)
    assert f"spent epsilon {entry.epsilon:.3g} of 2.5" in meter and f"remaining epsilon {2.5 - entry.epsilon:.3g}" \
        in meter
    # The composition shown is the accounting module's, recomputed here from the recorded entries.
    report = compose(ledger.entries, ledger.delta_total)
    shown = _frame(at, "composition")
    for total in report.totals:
        row = shown[shown["composition"] == export.METHOD_LABELS[total.method]].iloc[0]
        assert row["epsilon"] == total.epsilon and row["delta"] == total.delta
    assert _metric(at, "composed total epsilon") == f"{report.best.epsilon:.4g}"
    assert _metric(at, "best composition") == report.best.method
    # The budget is locked after the first commit.
    assert at.number_input(key="rel_budget_epsilon").disabled
    # Export: the download button is there, and its bundle is a complete zip.
    buttons = {b.key: b for b in at.get("download_button")}
    assert "rel_download" in buttons and "rel_download_report" in buttons
    cached = at.session_state["rel_export_cache"]
    zip_bytes, report_text = next(iter(cached.values()))
    names = {Path(n).name for n in zipfile.ZipFile(io.BytesIO(zip_bytes)).namelist()}
    assert names == set(export.BUNDLE_FILES)
    assert "rho-zero-concentrated differential privacy" in report_text
    assert len(chart_specs(at)) == 3  # sanitized release, trade-off, power
    # The sidebar meter is on every page.
    at.switch_page("pages/data.py").run()
    assert f"spent epsilon {entry.epsilon:.3g} of 2.5" in _meter(at)


def test_over_budget_commit_is_refused_with_a_message_and_records_nothing(sampler_calls):
    at = _release_page()
    at.number_input(key="rel_budget_epsilon").set_value(0.05).run()
    before = at.session_state["fdp_ledger"].to_dict()
    assert _commit_blocked(at, "over budget: it asks for epsilon")
    assert "costs epsilon 1.09" in at.button(key="rel_commit").label
    assert sampler_calls == []  # refused before any noise was drawn
    assert at.session_state["fdp_ledger"].to_dict() == before
    assert _frame(at, "id").empty and "0 release(s)" in _meter(at)
    assert at.session_state["fdp_releases"] == []
    assert not at.get("download_button")
    assert not at.number_input(key="rel_budget_epsilon").disabled  # nothing committed: still editable


def test_preset_sets_the_budget_and_the_global_epsilon_delta_with_the_disclaimer():
    at = _release_page()
    assert any(DISCLAIMER in c.value for c in at.caption)
    high = next(p for p in PRESETS if p.harm_level == "high")
    at.selectbox(key="rel_preset").set_value(high.name).run()  # applies at once, no second click
    assert not at.exception
    ledger = at.session_state["fdp_ledger"]
    assert (ledger.epsilon_total, ledger.delta_total) == (high.epsilon, high.delta)
    assert at.number_input(key="rel_budget_epsilon").value == high.epsilon
    # Nearest allowed slider value not above the session total (0.3 -> 0.28); each release gets a
    # tenth of the delta total, so one Gaussian commit does not use it up.
    assert at.session_state["g_epsilon"] == 0.28 and 0.28 in sidebar.EPSILON_CHOICES
    assert at.session_state["g_delta"] == high.delta / 10 and high.delta / 10 in sidebar.DELTA_CHOICES
    at.button(key="rel_apply_preset").click().run()  # "apply again" keeps it
    assert (at.session_state["fdp_ledger"].epsilon_total, at.session_state["g_delta"]) == (high.epsilon,
                                                                                         high.delta / 10)
    assert f"of {high.epsilon:g}" in _meter(at)


def test_split_filter_and_kde_commit_through_the_same_path(sampler_calls):
    at = _release_page()
    at.number_input(key="rel_budget_epsilon").set_value(3.0).run()  # the budget the shares below refer to
    at.selectbox(key="rel_budget_delta").set_value(1e-5).run()
    at.radio(key="rel_filter").set_value("zcdp").run()
    at.toggle(key="rel_split_on").set_value(True).run()
    at.number_input(key="rel_split_pca").set_value(0.0).run()
    ledger = at.session_state["fdp_ledger"]
    assert ledger.filter == "zcdp" and {k: ledger.split[k] for k in ("mean", "kde", "pca")} == {
        "mean": 0.5, "kde": 0.5, "pca": 0.0}
    assert not any(ledger.split.get(k) for k in set(ledger.split) - {"mean", "kde", "pca"})  # summary kinds: 0
    at.radio(key="rel_kind").set_value("kde").run()
    at.selectbox(key="rel_kde_mechanism").set_value("iclp").run()
    at.text_input(key="rel_kde_feature").input("value:0.5").run()
    at.text_input(key="rel_kde_box").input("0,2").run()
    at.select_slider(key="g_epsilon").set_value(0.4).run()  # rho = 0.08 of the KDE's 0.112 zCDP share
    assert not at.error, [e.value for e in at.error]
    commit(at)
    assert not at.exception and sampler_calls == ["discrete_laplace_release"]
    row = _frame(at, "id").iloc[0]
    assert row["kind"] == "kde" and row["mechanism"] == "iclp" and row["native parameter"].startswith("epsilon = ")
    assert any("Split: mean 0% of its 50% share used; density (KDE)" in c.value for c in at.sidebar.caption)
    # A second one would take the KDE half of the zCDP budget to rho 0.16 > 0.112: refused, nothing drawn.
    assert _commit_blocked(at, "'kde' share") and len(sampler_calls) == 1


def test_mean_page_choices_are_what_the_release_page_commits():
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    declare_range(at)
    at.switch_page("pages/mean.py").run()
    at.selectbox(key="mean_mechanism").set_value("frl").run()
    at.number_input(key="mean_M").set_value(6).run()
    at.switch_page("pages/release.py").run()
    at.run()  # a second run on the page: the Mean page's choices must survive it
    assert any(m.value.startswith("**FRL") and "M = 6" in m.value for m in at.markdown)
    commit(at)
    release = at.session_state["fdp_releases"][0]
    assert release.entry.mechanism == "frl" and release.record["M"] == 6
    assert release.coefficients["noisy"].sum() == 6
    at.switch_page("pages/mean.py").run()
    assert at.selectbox(key="mean_mechanism").value == "frl" and at.number_input(key="mean_M").value == 6


def test_data_dependent_tau_is_flagged_before_and_refused_at_commit():
    at = _release_page()
    at.checkbox(key="g_tau_from_data").check().run()
    assert any("NOT differentially private" in e.value for e in at.error)
    commit(at)
    # Issue 21: a commit refuses data-dependent settings (exploration only); nothing is charged or stored.
    releases = at.session_state["fdp_releases"] if "fdp_releases" in at.session_state else []
    assert releases == []
    assert any("refuses data-dependent settings" in e.value for e in at.error)


def test_tutorial_mode_explains_each_step():
    at = _release_page()
    assert not any(i.value.startswith("Tutorial:") for i in at.info)
    at.toggle(key="g_tutorial").set_value(True).run()
    assert sum(i.value.startswith("Tutorial:") for i in at.info) == 5


def test_audit_button_runs_the_audit_of_the_current_mechanism():
    at = _release_page()
    at.select_slider(key="rel_audit_runs").set_value(100_000).run()
    at.button(key="rel_audit").click().run()
    assert not at.exception
    table = _frame(at, "run")
    assert table["run"].tolist() == ["calibrated mechanism", "control: noise x 0.9"]
    assert not table["flagged"][0]
    assert any("calibrated mechanism passed" in s.value for s in at.success)
    bound = table["e^eps P(D') + delta"][0]
    assert math.isclose(bound, math.exp(1.0) * table["P(event | D') <= "][0] + 1e-5, rel_tol=1e-12)


def test_pca_commit_centred_by_a_committed_mean():
    pytest.importorskip("fdp_core.releases.pca")
    at = _release_page()
    commit(at)  # a Gaussian mean first
    mean_id = at.session_state["fdp_releases"][0].id
    at.radio(key="rel_kind").set_value("pca").run()
    assert any("not floating-point hardened" in w.value for w in at.warning)
    at.selectbox(key="rel_pca_mean").set_value(mean_id).run()
    at.select_slider(key="g_epsilon").set_value(0.5).run()
    assert any("epsilon = 0.5 (exponential mechanism: rho = epsilon^2/8" in m.value for m in at.markdown)
    commit(at)
    assert not at.exception and not at.error, [e.value for e in at.error]
    release = at.session_state["fdp_releases"][1]
    assert release.kind == "pca" and release.record["released_mean_id"] == mean_id
    assert release.record["settings"]["centring"] == "released-mean"
    row = _frame(at, "id").iloc[1]
    assert row["kind"] == "pca" and row["rho"] == pytest.approx(0.5**2 / 8)
    assert len(chart_specs(at)) == 2  # components and power: no accuracy curve for PCA


def test_meter_says_when_only_delta_is_used_up(sampler_calls):
    """A Gaussian release can spend the whole delta budget while epsilon remains: the meter
    must say that pure epsilon-DP releases still fit, not that the budget is exhausted."""
    at = _release_page()
    at.number_input(key="rel_budget_epsilon").set_value(3.0).run()
    at.selectbox(key="rel_budget_delta").set_value(1e-5).run()
    commit(at)  # Gaussian mean at delta = 1e-5 = the whole delta budget
    assert not at.exception
    warnings = [w.value for w in at.sidebar.warning]
    assert any("Delta budget used up" in w and "epsilon" in w for w in warnings), warnings
    assert not any("Budget exhausted" in w for w in warnings)


# --------------------------------------------------------------------------- the persistent ledger

def test_budget_survives_a_new_session_and_a_repeat_commit_is_refused(sampler_calls):
    """The issue's case: a Gaussian mean spends the whole delta; a new session (a reload, a second browser,
    a server restart) on the same data sees the same ledger and cannot commit the release again."""
    first = _release_page()
    first.selectbox(key="rel_budget_delta").set_value(1e-5).run()  # one Gaussian commit's delta: the whole budget
    commit(first)
    assert not first.exception and sampler_calls == ["discrete_gaussian_release"]
    entry = first.session_state["fdp_ledger"].entries[0]
    meter = _meter(first)
    assert any(line.startswith("Ledger: budget 'default' of this data set, fixed since")
               for c in first.sidebar.caption for line in c.value.split("  \n"))
    second = _release_page()  # a fresh session: nothing in its session_state
    assert _meter(second) == meter and second.session_state["fdp_releases"] == []
    assert _frame(second, "id")["id"].tolist() == [entry.id]
    assert second.number_input(key="rel_budget_epsilon").disabled
    assert any("Delta budget used up" in w.value for w in second.sidebar.warning)
    assert _commit_blocked(second, "over budget")  # the button says so before any click
    assert sampler_calls == ["discrete_gaussian_release"]  # refused before any noise
    assert len(second.session_state["fdp_ledger"].entries) == 1


def test_app_and_cli_write_the_same_entries(tmp_path, capsys):
    import json

    from fdp_core.cli import main

    at = _release_page()
    at.select_slider(key="g_epsilon").set_value(0.5).run()
    at.selectbox(key="rel_budget_delta").set_value(1e-4).run()
    commit(at)
    app_entry = at.session_state["fdp_ledger"].entries[0]
    example = ROOT / "data" / "example_curves.csv"
    assert main(["ledger", "show", "--data", str(example)]) == 0  # FDP_LEDGER_URL: the app's ledger
    shown = json.loads(capsys.readouterr().out)
    assert [e["id"] for e in shown["entries"]] == [app_entry.id]
    assert shown["entries"][0]["status"] == "complete" and shown["entries"][0]["source"] == "app"
    assert {k: shown["entries"][0][k] for k in app_entry.to_dict()} == app_entry.to_dict()
    # A replay on the same data (another file name) charges the same budget; the app's meter shows it.
    release = at.session_state["fdp_releases"][0]
    config = tmp_path / "config.yaml"
    config.write_text(export.config_yaml(release.config))
    copy = tmp_path / "renamed.csv"
    copy.write_bytes(example.read_bytes())
    assert main(["replay", str(config), "--data", str(copy), "--out", str(tmp_path / "r")]) == 0
    capsys.readouterr()
    at.run()
    entries = at.session_state["fdp_ledger"].entries
    assert len(entries) == 2 and "(2 release(s))" in _meter(at)
    assert main(["ledger", "show", "--data", str(example)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [e["source"] for e in shown["entries"]] == ["app", "cli"]
    assert set(shown["entries"][0]) == set(shown["entries"][1])


def test_refused_first_commit_stores_nothing_and_the_button_stores_the_draft():
    at = _release_page()
    at.number_input(key="rel_budget_epsilon").set_value(0.05).run()
    assert _commit_blocked(at, "over budget")
    assert any("Ledger: draft budget 'default'" in c.value for c in at.sidebar.caption)
    at.number_input(key="rel_budget_epsilon").set_value(1.5).run()
    at.button(key="rel_create_budget").click().run()
    assert not at.exception and any("now fixed" in i.value for i in at.info)
    other = _release_page()
    assert other.session_state["fdp_ledger"].epsilon_total == 1.5 and other.number_input(
        key="rel_budget_epsilon").disabled
    assert other.number_input(key="rel_budget_epsilon").value == 1.5


def test_an_unusable_ledger_is_said_plainly_and_refuses_commits(tmp_path, monkeypatch, sampler_calls):
    import sqlite3

    from fdp_core.budget.ledger_store import LedgerStore

    path = tmp_path / "newer.sqlite3"
    LedgerStore(str(path)).create_schema()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE schema_version SET version = 99")
    monkeypatch.setenv("FDP_LEDGER_URL", str(path))
    at = _release_page()
    assert any("Ledger unavailable, commits are refused" in e.value and "newer than this fdp" in e.value
               for e in at.sidebar.error)
    assert _commit_blocked(at, "newer than this fdp") and sampler_calls == []


def test_commit_of_curves_is_refused_without_a_declared_range(sampler_calls):
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    at.switch_page("pages/release.py").run()
    assert not at.exception
    assert any("Declare a public value range" in w.value for w in at.warning)
    assert not [b for b in at.button if b.key == "rel_commit"]  # no commit button for a mean without a range
    assert sampler_calls == []


def test_report_lists_what_the_session_looked_at(sampler_calls):
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    declare_range(at)
    at.switch_page("pages/mean.py").run()  # shows the non-private estimate
    at.switch_page("pages/release.py").run()
    commit(at)
    release = at.session_state["fdp_releases"][0]
    seen = release.record["looked_at_before_commit"]
    assert export.NONPRIVATE_VIEWS["mean_estimate"] in seen and export.NONPRIVATE_VIEWS["norms"] in seen
    report = export.report_html(release)
    assert "Before this commit the session looked at" in report and "fixed without looking" not in report
    assert release.record["value_range"] == [-1.5, 1.5] and release.analyst["n_curves"] == 60
