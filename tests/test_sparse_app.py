"""AppTest: sparse curves on the Data and Mean pages (why sparse, visits histogram, points never joined)."""

from pathlib import Path

from streamlit.testing.v1 import AppTest
from chart_specs import chart_figures

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")


def _figures(at):
    return chart_figures(at)


def _sparse_app():
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    at.button(key="sparse_example_button").click().run()
    assert not at.exception
    return at


def test_data_page_says_why_the_file_is_sparse_and_shows_the_visits_histogram():
    at = _sparse_app()
    assert any("Sparse:" in i.value and "own times" in i.value for i in at.info)
    figures = _figures(at)
    titles = [f["layout"]["title"]["text"] for f in figures if "title" in f["layout"]]
    assert "Observations per person" in titles
    points = next(f for f in figures if f["layout"].get("title", {}).get("text", "").startswith("Observations ("))
    assert all(trace["mode"] == "markers" for trace in points["data"])


def test_uploaded_sparse_file_is_taken_up_without_an_error():
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    at.radio(key="data_source").set_value("upload a file").run()
    raw = (ROOT / "data" / "example_sparse.csv").read_bytes().replace(b"id,t,value", b"child,age,height")
    at.file_uploader(key="data_upload").set_value(("growth.csv", raw, "text/csv")).run()
    assert not at.exception and not at.error
    assert any("Sparse:" in i.value for i in at.info)


def test_mean_page_releases_the_sparse_mean_over_points():
    at = _sparse_app()
    at.switch_page("pages/mean.py").run()
    assert any("Declare the public domain" in w.value for w in at.warning)
    at.switch_page("pages/data.py").run()
    at.checkbox(key="sparse_domain_declared").check().run()
    at.number_input(key="data_range_lo_input").set_value(-1.0).run()
    at.number_input(key="data_range_hi_input").set_value(2.0).run()
    at.checkbox(key="data_range_declared_input").check().run()
    at.switch_page("pages/mean.py").run()
    assert not at.exception and not at.error
    fig = next(f for f in _figures(at) if f["layout"]["title"]["text"].startswith("Private mean"))
    modes = [trace["mode"] for trace in fig["data"]]
    assert modes[0] == "markers" and modes.count("markers") == 1  # observations as points only
    assert "lines" in modes
    assert any("Guarantee" in m.value for m in at.markdown)
    assert any("--sparse" in c.value for c in at.code)
    at.selectbox(key="sparse_noise").set_value("laplace").run()
    assert not at.exception and any("epsilon-DP" in m.value for m in at.markdown)


def test_tradeoffs_page_on_sparse_data():
    at = _sparse_app()
    at.checkbox(key="sparse_domain_declared").check().run()
    at.number_input(key="data_range_lo_input").set_value(-1.0).run()
    at.number_input(key="data_range_hi_input").set_value(2.0).run()
    at.checkbox(key="data_range_declared_input").check().run()
    at.switch_page("pages/tradeoffs.py").run()
    assert not at.exception and not at.error
    figures = _figures(at)
    eps = next(f for f in figures if "against epsilon" in f["layout"]["title"]["text"])
    assert {trace["name"] for trace in eps["data"]} == {"gaussian", "laplace"}
    from plotly_json import plotly_array

    for trace in eps["data"]:
        y = plotly_array(trace["y"])
        assert y[0] > y[-1] > 0  # more epsilon, less error


def test_release_page_commits_the_sparse_mean_in_two_ledger_entries_and_one_bundle():
    """Issue 24: the sparse mean committed from Release & audit, exactly like the gridded route."""
    import io
    import zipfile

    from fdp_core.budget.datasets import open_budget
    from fdp_core.budget.ledger_store import resolve_url
    from fdp_core.data.sparse_data import SPARSE_UNIT, ledger_view, read_long
    from fdp_core.publish import export

    EXAMPLE = ROOT / "data" / "example_sparse.csv"

    at = _sparse_app()
    at.checkbox(key="sparse_domain_declared").check().run()
    at.number_input(key="data_range_lo_input").set_value(-1.0).run()
    at.number_input(key="data_range_hi_input").set_value(2.0).run()
    at.checkbox(key="data_range_declared_input").check().run()
    at.switch_page("pages/release.py").run()
    assert not at.exception and at.radio(key="rel_kind").value == "sparse"
    assert any("in total" in m.value and "2 ledger entries (A and b)" in m.value for m in at.markdown)
    button = at.button(key="rel_commit")
    assert not button.disabled
    button.click().run()
    assert not at.exception, at.exception
    done = [s.value for s in at.success if s.value.startswith("Committed")]
    assert done and "2 ledger entries (A and b)" in done[0]
    release = at.session_state["fdp_releases"][-1]
    assert release.config["kind"] == "sparse" and len(release.record["part_entry_ids"]) == 2
    # Both entries are in the stored budget of the sparse data, completed; the gridded example's budget is untouched.
    budget = open_budget(resolve_url(), ledger_view(read_long(EXAMPLE)), unit=SPARSE_UNIT)
    shown = budget.store.show(budget.fingerprint, budget.name)
    assert sorted(e["id"] for e in shown["entries"]) == sorted(release.record["part_entry_ids"])
    assert {e["status"] for e in shown["entries"]} == {"complete"}
    assert len(at.dataframe[0].value) == 2  # the ledger table shows the sparse data's ledger
    total = release.record["charged_total"]
    assert total["n_entries"] == 2 and total["epsilon"] >= 1.0 - 1e-9  # the sidebar's epsilon, A and b together
    # One bundle with every file; the report states the combined charge.
    zip_bytes, report_text = next(iter(at.session_state["rel_export_cache"].values()))
    names = {n.split("/")[-1] for n in zipfile.ZipFile(io.BytesIO(zip_bytes)).namelist()}
    assert names == set(export.BUNDLE_FILES)
    assert f"epsilon = {total['epsilon']:.4g}" in report_text and "its 2 parts together" in report_text
    # The sparse data's budget meter counts both entries.
    assert any("sparse data's own budget. Budget: spent epsilon" in c.value and "(2 release(s))" in c.value
               for c in at.caption)
    # The declarations survive the commit's rerun (their widgets live on the Data page).
    assert not any("Declare the public domain" in w.value for w in at.warning)


def test_sparse_data_matching_no_registration_are_registered_on_the_data_page_with_a_reason():
    """Issue 37 for the sparse route in the app: on a ledger holding another data set's registration,
    the sparse example's commit is refused until the Data page registers it as new with a typed reason;
    then it is committed and the registration carries the reason."""
    import os

    from fdp_core.budget.datasets import open_budget
    from fdp_core.budget.ledger_store import BudgetSpec, LedgerStore
    from fdp_core.data.loading import load_curves

    url = os.environ["FDP_LEDGER_URL"]  # the test's own ledger (conftest)
    open_budget(url, load_curves(ROOT / "data" / "example_curves.csv"), dataset="example").ensure(BudgetSpec(4.0, 1e-4))
    at = _sparse_app()
    at.checkbox(key="sparse_domain_declared").check().run()
    at.number_input(key="data_range_lo_input").set_value(-1.0).run()
    at.number_input(key="data_range_hi_input").set_value(2.0).run()
    at.checkbox(key="data_range_declared_input").check().run()
    assert any("match none of the 1 registered" in w.value for w in at.warning), [w.value for w in at.warning]
    assert at.button(key="data_unmatched_confirm").disabled
    # Without the registration the commit button is disabled up front, saying why and what to do.
    at.switch_page("pages/release.py").run()
    button = at.button(key="rel_commit")
    assert button.disabled and "match none of the 1 data set(s) registered in this ledger ('example')" in button.help
    assert "register them as a new data set with a name and a reason on the Data page" in button.help
    assert not at.exception and not any(s.value.startswith("Committed") for s in at.success)
    assert [d.name for d in LedgerStore(url).datasets()] == ["example"]
    at.switch_page("pages/data.py").run()
    at.text_input(key="data_unmatched_name").set_value("sparse heights 2026").run()
    at.text_input(key="data_unmatched_reason").input("children of another cohort").run()
    at.button(key="data_unmatched_confirm").click().run()
    assert any("Registering as the new data set 'sparse heights 2026'" in w.value for w in at.warning)
    at.switch_page("pages/release.py").run()
    at.button(key="rel_commit").click().run()
    assert not at.exception, at.exception
    assert any(s.value.startswith("Committed") for s in at.success), [s.value for s in at.success]
    names = {d.name: d for d in LedgerStore(url).datasets()}
    assert set(names) == {"example", "sparse heights 2026"}
    assert names["sparse heights 2026"].reason == "children of another cohort"
    # Once recorded, the registration is the data's own: the next visit matches it, and a second commit
    # charges the same budget (the session's choice is not asked for again, nor refused as a duplicate).
    assert not at.error, [e.value for e in at.error]
    at.switch_page("pages/data.py").run()
    assert any(i.value.startswith("Matches sparse heights 2026") for i in at.info), [i.value for i in at.info]
    at.switch_page("pages/release.py").run()
    at.button(key="rel_commit").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert len([s for s in at.success if s.value.startswith("Committed")]) == 1
    assert len(at.session_state["fdp_releases"]) == 2
