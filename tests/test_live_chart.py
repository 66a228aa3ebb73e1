"""fdp_ui/live_chart.py under AppTest: what a live chart sends, and that its identity is its key.

The in-place redraw itself needs a browser (tests/browser/test_live_charts.py); here: the figure
travels whole (the same JSON st.plotly_chart would send, with the app's template), the element's id
depends on the key only (so a new figure reaches the same element instead of a new one), and the
plotly.js it loads is the installed plotly package's own file, served by the app."""

from __future__ import annotations

import json
from pathlib import Path

import plotly
from streamlit.testing.v1 import AppTest

from chart_specs import chart_specs

SCRIPT = """
import plotly.graph_objects as go
import streamlit as st
from fdp_ui import live_chart

y = st.session_state.get("y", 1.0)
live_chart.show(go.Figure(go.Scatter(x=[0, 1], y=[0, y], name="line"), layout={"title": {"text": f"y = {y}"}}),
                key="probe")
"""


def _run(y: float) -> AppTest:
    at = AppTest.from_string(SCRIPT, default_timeout=60)
    at.session_state["y"] = y
    at.run()
    assert not at.exception, at.exception
    return at


def test_the_figure_travels_whole_with_the_template():
    (element_id, spec), = chart_specs(_run(2.0))
    figure = json.loads(spec)
    assert figure["layout"]["title"]["text"] == "y = 2.0"
    assert figure["data"][0]["y"] == [0, 2.0]
    assert "Source Sans" in figure["layout"]["template"]["layout"]["font"]["family"]
    assert element_id.endswith("probe")


def test_the_element_id_depends_on_the_key_not_on_the_figure():
    (first, spec_1), = chart_specs(_run(1.0))
    (second, spec_2), = chart_specs(_run(3.0))
    assert spec_1 != spec_2 and first == second


def test_plotly_js_is_the_installed_packages_own_file():
    from fdp_ui import live_chart

    served = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    assert served.is_file() and served.stat().st_size > 1_000_000
    assert live_chart.PLOTLY_JS_URL.endswith("/plotly.min.js") and not live_chart.PLOTLY_JS_URL.startswith(("http", "/"))
