"""AppTest and unit tests of the guided app: intake suggestions and rewrites, the step bar,
tutorial mode kept in the URL, epsilon cautions, and the Data page's refused-upload state."""

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from fdp_core.data.loading import load_curves
from fdp_core.errors import DataError
from fdp_ui import intake, tutorial
from chart_specs import chart_specs

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
FIXTURES = ROOT / "tests" / "fixtures"


def _app(query: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    if query:
        at.query_params.update(query)
    at.run()
    assert not at.exception, at.exception
    return at


# --------------------------------------------------------------------------- intake (pure functions)

@pytest.mark.parametrize("header,expected", [
    ("province,station,day,temp", ("station", "day", "temp")),
    ("subject,age,height", ("subject", "age", "height")),
    ("value,time,patient_id", ("patient_id", "time", "value")),
    ("site,date,reading", ("site", "date", "reading")),
])
def test_long_mapping_is_suggested_from_names_and_types(header, expected):
    names = header.split(",")
    rows = []
    for i in range(3):
        for j, day in enumerate(("2024-01-01", "2024-01-08", "2024-01-15")):
            cells = {"province": "NS", "station": f"s{i}", "subject": f"p{i}", "patient_id": f"p{i}",
                     "site": f"x{i}", "day": str(j), "age": str(j + 10), "time": str(j / 2), "date": day,
                     "temp": f"{i + j * 0.5:.2f}", "height": f"{100 + i + j:.1f}", "value": f"{i * j + 0.1:.2f}",
                     "reading": f"{i - j + 0.3:.2f}"}
            rows.append(",".join(cells[n] for n in names))
    raw = ("\n".join([header] + rows) + "\n").encode()
    diagnosis = intake.diagnose(raw)
    assert diagnosis.kind == "long" and tuple(diagnosis.suggestion[k] for k in ("id", "t", "value")) == expected
    raw2, options = intake.loader_options(raw, *expected)
    fd = load_curves(raw2, name="x.csv", **options)
    assert fd.n == 3 and fd.m == 3
    assert (raw2 is raw) == ("date" not in expected)  # the loader maps the columns itself; dates are rewritten


def test_dates_become_days_since_the_first_date():
    raw = b"site,date,reading\na,2024-01-01,1\na,2024-01-11,2\nb,2024-01-01,3\nb,2024-01-11,4\n"
    fd = load_curves(intake.long_to_loader_csv(raw, "site", "date", "reading"), name="x.csv")
    assert list(fd.grid_points) == [0.0, 10.0]


def test_weather_fixtures_are_recognised_and_rewritten():
    long_raw = (FIXTURES / "weather_long.csv").read_bytes()
    wide_raw = (FIXTURES / "weather_transposed.csv").read_bytes()
    with pytest.raises(DataError):
        load_curves(long_raw, name="weather_long.csv")  # the loader alone refuses both
    with pytest.raises(DataError):
        load_curves(wide_raw, name="weather_transposed.csv")
    assert intake.diagnose(long_raw).kind == "long"
    assert intake.diagnose(wide_raw).kind == "transposed"
    a = load_curves(long_raw, name="a.csv", id_column="station", t_column="day", value_column="temp")
    b = load_curves(wide_raw, name="b.csv", transpose=True)
    assert (a.n, a.m) == (b.n, b.m) == (10, 73)
    # The same temperatures either way, curve by curve (matched by station).
    where = {str(name): i for i, name in enumerate(b.metadata["id"])}
    order = [where[str(name)] for name in a.metadata["id"]]
    assert sorted(order) == list(range(10))
    assert abs(a.data_matrix - b.data_matrix[order]).max() < 1e-12


@pytest.mark.parametrize("raw", [b"id,0,0.5,1\na,1,2,3\nb,2,3,4\n", b"x\n1\n2\n", b"", b"\x00\x01"])
def test_no_false_alarms(raw):
    assert intake.diagnose(raw).kind == "unknown"


def test_mapping_needs_three_different_columns():
    raw = (FIXTURES / "weather_long.csv").read_bytes()
    with pytest.raises(DataError, match="three different"):
        intake.loader_options(raw, "station", "day", "day")


# --------------------------------------------------------------------------- app

def test_upload_a_long_file_with_other_names_then_map_it():
    at = _app()
    at.radio(key="data_source").set_value("upload a file").run()
    at.file_uploader(key="data_upload").set_value(
        ("weather_long.csv", (FIXTURES / "weather_long.csv").read_bytes(), "text/csv")).run()
    # The panel can load it: an instruction in the app's words, not a red refusal naming CLI options (issue 28).
    assert not at.error
    info = next(i.value for i in at.info if "is not loaded yet" in i.value)
    assert "weather_long.csv is not loaded yet: check the three columns" in info and "built-in example" in info
    assert "--" not in info and "id_column" not in info
    assert [e.label for e in at.expander if e.label.startswith("Still loaded")] == [
        "Still loaded: built-in example (example_curves.csv) (not the refused file)"]
    assert at.selectbox(key="intake_t").value == "day"
    at.button(key="intake_load_long").click().run()
    assert not at.error and not at.exception
    assert [m.value for m in at.metric][:2] == ["10", "73"]
    assert (at.text_input(key="data_t_label").value, at.text_input(key="data_value_unit").value) == ("day", "temp")
    at.switch_page("pages/mean.py").run()
    figure = chart_specs(at)[0][1]
    assert '"text":"day"' in figure.replace(" ", "") and '"text":"temp"' in figure.replace(" ", "")


# AppTest restarts Streamlit's legacy pages/ mode on every run, so after the first run a page
# runs without app.py (fdp_ui.navigation); what app.py draws (step bar, tutorial) is checked on
# first runs of fresh sessions here, and across interactions in tests/browser/test_guided.py.

def _fresh(state: dict | None = None, query: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    for key, value in (state or {}).items():
        at.session_state[key] = value
    at.query_params.update(query or {})
    at.run()
    assert not at.exception, at.exception
    return at


def _links(at) -> list:
    return [(p.proto.label, p.proto.disabled) for p in at.get("page_link")][:5]


RANGE = {"data_range_declared": True, "data_range_lo": -1.0, "data_range_hi": 3.0}


def test_step_bar_reports_what_is_missing():
    at = _fresh()
    captions = [c.value for c in at.caption]
    assert any("Step 2, Unit & bounds: still missing" in c and "no public value range declared yet" in c
               for c in captions), captions
    assert _links(at) == [("✓ 1. Data", False), ("→ 2. Unit & bounds", False), ("· 3. Explore", False),
                          ("· 4. Release", False), ("Next: Explore", True)]
    # A declared range sets tau = (hi - lo)/2, public by construction: step 2 is done.
    at = _fresh(RANGE)
    assert any("Step 2 (Unit & bounds) is done" in c.value for c in at.caption), [c.value for c in at.caption]
    assert _links(at)[1:] == [("✓ 2. Unit & bounds", False), ("· 3. Explore", False), ("· 4. Release", False),
                              ("Next: Explore", False)]
    # A tau typed by hand must be declared public (the Data page's checkbox records the tau).
    at = _fresh({**RANGE, "g_tau_from_range": False})
    assert any("declare tau public" in c.value for c in at.caption)
    at.checkbox(key="steps_bounds_public").check().run()
    assert at.session_state["steps_bounds_tau"] == 1.0
    at = _fresh({**RANGE, "g_tau_from_range": False, "steps_bounds_tau": 1.0})
    assert _links(at)[4] == ("Next: Explore", False)
    at = _fresh({**RANGE, "g_tau_from_range": False, "steps_bounds_tau": 1.0, "g_tau": 2.0})  # declare again
    assert _links(at)[4] == ("Next: Explore", True) and not at.checkbox(key="steps_bounds_public").value
    at = _fresh({**RANGE, "g_tau_from_data": True})
    assert any("tau is read off the data" in c.value for c in at.caption)
    at = _fresh({**RANGE, "steps_visited": {"pages/mean.py"}})
    assert _links(at)[2] == ("✓ 3. Explore", False)


def test_step_bar_asks_for_a_person_column_when_an_id_repeats():
    import numpy as np
    import pandas as pd

    from fdp_core.data.loading import from_arrays
    from fdp_ui.state import Dataset

    grid = np.linspace(0, 1, 5)
    meta = pd.DataFrame({"subject": [f"s{i // 3}" for i in range(30)]})  # 10 persons, 3 curves each
    ds = Dataset(from_arrays(grid, np.random.default_rng(0).uniform(0, 1, (30, 5)), metadata=meta), "visits",
                 "upload")
    at = _fresh({"dataset": ds, **RANGE, "data_person_column": "(none: every curve is a different person)",
                 "data_person_for": "visits"})
    assert any("'subject' repeats: choose the person column" in c.value for c in at.caption)
    at = _fresh({"dataset": ds, **RANGE, "data_person_column": "subject", "data_person_for": "visits"})
    assert not any("repeats" in c.value for c in at.caption)
    assert _links(at)[1] == ("✓ 2. Unit & bounds", False)


def test_a_transposed_upload_gets_an_instruction_not_a_refusal():
    at = _app()
    at.radio(key="data_source").set_value("upload a file").run()
    at.file_uploader(key="data_upload").set_value(
        ("weather_transposed.csv", (FIXTURES / "weather_transposed.csv").read_bytes(), "text/csv")).run()
    assert not at.error
    assert any("weather_transposed.csv is not loaded yet: click 'Transpose and load'" in i.value for i in at.info)
    assert not any("transpose=True" in i.value for i in at.info)
    at.button(key="intake_transpose").click().run()
    assert not at.error and not at.exception and [m.value for m in at.metric][:2] == ["10", "73"]


def test_step_bar_flags_a_refused_upload():
    at = _fresh({"data_error": "bad.csv: row 3 has 4 fields"})
    assert any("Step 1, Data: still missing" in c.value and "the last upload was refused" in c.value
               and "still loaded: built-in example" in c.value for c in at.caption)


def test_tutorial_mode_comes_from_the_url_and_goes_back_into_it():
    at = _fresh(query={"tutorial": "1"})
    assert at.toggle(key="g_tutorial").value
    assert any(e.label.startswith("Tutorial:") for e in at.expander)
    at = _fresh()
    assert not any(e.label.startswith("Tutorial:") for e in at.expander)
    at = _fresh({"g_tutorial": True})
    assert at.query_params["tutorial"] in ("1", ["1"])
    at = _fresh({"g_tutorial": False}, {"tutorial": "1"})  # the session's choice wins over a stale URL
    assert "tutorial" not in at.query_params


def test_every_registered_page_has_a_tutorial():
    import ast

    tree = ast.parse(Path(APP).read_text())
    specs = next(ast.literal_eval(node.value) for node in ast.walk(tree)
                 if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "PAGE_SPECS" for t in node.targets))
    for path, *_ in specs:
        purpose, controls, exercises = tutorial.TEXTS[path]
        assert len(purpose) > 80 and len(controls) >= 4 and len(exercises) >= 3, path


@pytest.mark.parametrize("epsilon,kind", [(4.5, None), (5.0, "warning"), (8.9, "warning"), (10.0, "error")])
def test_epsilon_cautions_from_5_and_stronger_at_10(epsilon, kind):
    at = _app()
    at.select_slider(key="g_epsilon").set_value(epsilon).run()
    warned = [w.value for w in at.sidebar.warning if "epsilon = " in w.value and "weak privacy" in w.value]
    errors = [e.value for e in at.sidebar.error if "very weak privacy" in e.value]
    assert (kind == "warning") == bool(warned) and (kind == "error") == bool(errors), (warned, errors)


def test_components_page_suggests_a_released_mean_with_its_price():
    at = _fresh()
    at.switch_page("pages/components.py").run()
    assert not at.exception
    hint = [i.value for i in at.info if i.value.startswith("Suggested: centre by a released mean")]
    assert hint and "charged epsilon" in hint[0], [i.value for i in at.info]
    # The price shown is the ledger entry a Gaussian mean commit at these settings would get.
    from fdp_core.publish.export import prepare_mean_commit
    from fdp_core.releases.mean import MeanSettings

    entry = prepare_mean_commit(at.session_state["dataset"].fd, MeanSettings(epsilon=1.0, delta=1e-5)).entry
    assert f"epsilon {entry.epsilon:.3g}" in hint[0]
    assert at.radio(key="pca_centring").value == "none"


def test_density_opens_on_the_users_curves_with_the_declared_range_as_box():
    from fdp_ui import density_defaults

    at = _fresh()
    at.switch_page("pages/density.py").run()
    assert at.radio(key="density_source").value == "hall"  # the built-in example: the literature's demo
    at.switch_page("pages/data.py").run()
    at.radio(key="data_source").set_value("simulate").run()  # the user's own curves now
    for key, value in RANGE.items():
        at.session_state[key] = value
    at.switch_page("pages/density.py").run()
    assert not at.exception
    assert at.radio(key="density_source").value == "curves"
    assert (at.number_input(key="density_lo1").value, at.number_input(key="density_hi1").value) == (-1.0, 3.0)
    assert any("public value range declared on the Data page" in c.value for c in at.caption)
    n = at.session_state["dataset"].fd.n
    h = density_defaults.suggested_bandwidth(((-1.0, 3.0),), n)
    assert any(f"rule: h = {h:.4g}" in c.value for c in at.caption)
    assert len(chart_specs(at)) == 1


def test_suggested_bandwidth_is_silverman_for_a_uniform_spread():
    from fdp_ui import density_defaults

    assert density_defaults.suggested_bandwidth(((0.0, 1.0),), 100) == pytest.approx(
        1.06 * (1 / 12) ** 0.5 * 100 ** -0.2)
    # 2-d: the geometric mean of the sides, n^(-1/6).
    assert density_defaults.suggested_bandwidth(((0.0, 1.0), (0.0, 4.0)), 64) == pytest.approx(
        1.06 * 2.0 / 12 ** 0.5 * 64 ** (-1 / 6))
    assert density_defaults.public_box(["value", "max"], (0.0, 2.0)) == [(0.0, 2.0), (0.0, 2.0)]
    assert density_defaults.public_box(["l2norm"], (0.0, 2.0)) is None
    assert density_defaults.public_box(["value"], None) is None


def test_a_long_file_with_person_specific_times_asks_for_a_public_grid():
    """Issue 37 (METHODS.md 24): the Data page never loads the union of the visit times; it asks for a grid."""
    rng = np.random.default_rng(3)
    rows = ["id,t,value"] + [f"p{i},{t:.5f},{0.5 + 0.1 * np.sin(6 * t) + 0.01 * i:.4f}"
                             for i in range(12) for t in np.sort(rng.uniform(0, 1, 20))]
    at = _app()
    at.radio(key="data_source").set_value("upload a file").run()
    at.file_uploader(key="data_upload").set_value(("visits.csv", "\n".join(rows).encode(), "text/csv")).run()
    info = next(i.value for i in at.info if "is not loaded yet" in i.value)
    assert "own times" in info and "public grid" in info and "--" not in info
    at.text_input(key="intake_grid").input("0,1,25").run()
    button = "intake_load_long" if any(b.key == "intake_load_long" for b in at.button) else "intake_load_grid"
    at.button(key=button).click().run()
    assert not at.error and not at.exception
    assert [m.value for m in at.metric][:2] == ["12", "25"]  # 12 persons on the 25 declared points
