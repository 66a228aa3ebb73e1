"""The Mean page's controls (mechanism, bound, calibration, psi, M, K, lo, hi) as the other pages see them.

The Trade-offs page draws the same controls and the Release page commits what they hold, so
their session-state keys and defaults come from one place: the field metadata of
:class:`fdp_core.releases.mean.MeanSettings` (``Control`` entries of the page family "mean"). Pages name
a control by its field (``key=KEYS["bound"]``), never by a literal key, so renaming a key renames
it everywhere; :func:`settings` refuses a key nobody set (``tests/test_settings_fields.py``
also checks that the pages draw every key), so a commit never silently falls back on a default.
"""

from __future__ import annotations

import streamlit as st

from fdp_core.releases.mean import MeanSettings
from fdp_core.settings_fields import page_defaults, page_keys, page_settings
from fdp_ui import reference_curve, state

PAGE = "mean"
KEYS = page_keys(MeanSettings, PAGE)  # {field: session-state key}, e.g. {"psi": "mean_log_psi", ...}


def keep() -> None:
    """Give every control its default on first use, and keep the user's values alive on pages
    that do not draw them (Streamlit drops a widget's state when another page runs unless the
    value is re-assigned). Call before any of the controls is drawn."""
    ss = st.session_state
    for key, value in page_defaults(MeanSettings, PAGE).items():
        ss[key] = ss.get(key, value)


def settings(g, **given) -> MeanSettings:
    """The MeanSettings of the controls, the sidebar's global settings ``g`` and ``given`` fields.

    The public reference curve uploaded on the Mean page (fdp_ui/reference_curve.py) is the
    centre whenever a range is declared, on every page that builds mean settings here."""
    reference = reference_curve.current(state.current().label) if g.value_range is not None else None
    return page_settings(MeanSettings, PAGE, st.session_state,
                         **{**g.fields_of(MeanSettings), "reference": reference, **given})
