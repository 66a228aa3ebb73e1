"""Page-wide layout rules: labels wrap instead of being cut (issue 30: at 800 px the step bar,
the metrics and the "I declare this range public" checkbox were truncated with an ellipsis).

Streamlit truncates widget, metric and page-link labels to one line; in the narrow columns of
an 800 px window that hides the words that matter ("I declare this range public (chosen
without looking at the data)"). These rules let such labels wrap onto more lines. Injected
once per run by app.py, before the page.
"""

from __future__ import annotations

import streamlit as st

# Selectors: labels drawn through Streamlit's one-line markdown container (checkboxes, toggles,
# metric labels, widget labels), metric values, and the step bar's page links.
WRAP_CSS = """
<style>
.stMarkdownEllipsis, .stMarkdownEllipsis p, [data-testid="stMetricLabel"], [data-testid="stMetricLabel"] *,
[data-testid="stMetricValue"] > div, .st-key-step_bar a span {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important;
}
[data-testid="stMetricValue"] { overflow-wrap: anywhere; }
</style>
"""


def wrap_labels() -> None:
    """Let labels wrap instead of being cut (see the module's docstring)."""
    st.html(WRAP_CSS)
