"""Page-wide layout rules: labels wrap instead of being cut (issue 30: at 800 px the step bar,
the metrics and the "I declare this range public" checkbox were truncated with an ellipsis);
expanders whose content runs only while they are open (lazy_expander, issue 42).

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


def lazy_expander(label: str, key: str):
    """An expander whose content the caller builds only while it is open (``.open``; its state
    lives under ``key``, and opening or closing it reruns the page). Closed, its elements are
    neither built nor sent, so every rerun (an epsilon move redraws the whole page) has fewer
    messages for the browser to render. Widgets drawn inside must keep their values in the
    session state themselves while it is closed (as mean_controls.keep() does)."""
    return st.expander(label, key=key, on_change="rerun")


def small(text: str) -> str:
    """``text`` styled as a caption (small, grey) inside an ``st.markdown``, so that a caption and the
    header next to it are one element instead of two (each element costs the browser time on every
    rerun). Square brackets are escaped: an unbalanced one (a file name) would end the directive."""
    return ":gray[:small[" + text.replace("[", "\\[").replace("]", "\\]") + "]]"
