"""AppTest: the Data page's person unit and public range, and their effect on the Mean page (issue 12)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from fdp_core.data.loading import load_curves
from fdp_ui.state import NO_PERSON, Dataset
from plotly_json import plotly_array
from chart_specs import chart_figures

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def _data_page(fd, label) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    at.session_state["dataset"] = Dataset(fd, label, "upload")
    at.run()
    at.switch_page("pages/data.py").run()
    assert not at.exception, at.exception
    return at


def test_data_page_warns_about_repeated_subjects_on_dti(shared_data):
    fd = load_curves(shared_data / "dti_cca.csv")
    at = _data_page(fd, "upload: dti_cca.csv")
    # Pre-selected: the column with repeated ids; persons shown, no warning.
    assert at.selectbox(key="data_person_column_input").value == "subject"
    assert any(m.label == "persons n" and m.value == "142" for m in at.metric)
    assert not any("repeated values" in w.value for w in at.warning)
    # Choosing "every curve is a person" while ids repeat: a visible warning naming the column.
    at.selectbox(key="data_person_column_input").set_value(NO_PERSON).run()
    assert not at.exception
    warning = next(w.value for w in at.warning if "repeated values" in w.value)
    assert "'subject'" in warning and "epsilon" in warning
    # No range declared: previews centred at 0, commits refused; the data's extremes only on request (issue 38),
    # flagged and recorded as a view of the data.
    assert any("No range declared" in w.value and "domain knowledge" in w.value for w in at.warning)
    assert not any("The data run from" in c.value for c in at.caption)
    at.toggle(key="data_show_extremes").set_value(True).run()
    assert any("The data run from" in c.value and "NOT differentially private" in c.value for c in at.caption)
    assert any("minimum and maximum" in v for v in at.session_state["session_looked_at"])


def test_berkeley_with_a_declared_range_shows_a_mean_in_centimetres(shared_data):
    fd = load_curves(shared_data / "berkeley_growth.csv")
    at = _data_page(fd, "upload: berkeley_growth.csv")
    assert at.selectbox(key="data_person_column_input").value == NO_PERSON  # 'sex' is a grouping, not an id
    assert not any("repeated values" in w.value for w in at.warning)
    at.number_input(key="data_range_lo_input").set_value(60.0).run()
    at.number_input(key="data_range_hi_input").set_value(200.0).run()
    at.checkbox(key="data_range_declared_input").check().run()
    assert not at.exception
    assert any("Declared public range [60, 200]" in s.value for s in at.success)
    assert any("tau = 70" in c.value for c in at.sidebar.caption)
    at.switch_page("pages/mean.py").run()
    assert not at.exception, at.exception
    figure = chart_figures(at)[0]
    ys = np.concatenate([plotly_array(trace["y"]) for trace in figure["data"] if "y" in trace])
    ys = ys[np.isfinite(ys)]
    assert ys.size > 0 and np.median(ys) > 90  # centimetres, not the shrunk-to-0 values of an undeclared range
    metrics = {m.label: m.value for m in at.metric}
    assert "bias vs raw mean (L2)" in metrics and "noise (95% radius, L2)" in metrics
    assert float(metrics["bias vs raw mean (L2)"]) < 10
    assert any("away from that average" in x.value for x in list(at.info) + list(at.warning))
