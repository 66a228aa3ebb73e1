"""The public reference curve of the session (Mean page upload; CSV with columns t,value).

A mean release centres every curve at the declared range's midpoint, or at a public reference
curve (``MeanSettings.reference``, ``--reference`` on the command line). Shrinkage pulls the
estimate towards that centre, so a good public reference (a published norm curve) removes the
bias a constant centre causes where the curves are far from it. The reference is stored per data
set outside any widget, so it survives page switches and reaches the Trade-offs and Release pages
through :func:`fdp_ui.mean_controls.settings`.
"""

from __future__ import annotations

import io

import streamlit as st

from fdp_core.errors import FdpError
from fdp_core.data.preprocess import load_reference

STORE_KEY = "public_reference_curve"  # {"data": data set label, "name": file name, "pairs": ((t, value), ...)}
UPLOAD_KEY = "public_reference_upload"  # + a counter: removing the reference gives a fresh, empty uploader
COUNTER_KEY = "public_reference_uploads"


def current(data_label: str | None) -> tuple | None:
    """The reference curve declared for this data set, or None."""
    stored = st.session_state.get(STORE_KEY)
    if not stored or stored.get("data") != data_label:
        return None
    return stored["pairs"]


def current_name(data_label: str | None) -> str | None:
    stored = st.session_state.get(STORE_KEY)
    return stored["name"] if stored and stored.get("data") == data_label else None


def clear() -> None:
    st.session_state.pop(STORE_KEY, None)
    st.session_state[COUNTER_KEY] = st.session_state.get(COUNTER_KEY, 0) + 1


def render(data_label: str | None, *, range_declared: bool, container=None) -> None:
    """The upload control: parse a t,value CSV, store it for this data set, or say in one line why not."""
    box = container or st
    name = current_name(data_label)
    if not range_declared and not name:
        # No uploader to show greyed out: a file control is one of the heaviest elements for the browser
        # to draw again on every slider move, and this line says what it needs.
        box.caption("Declare a public range on the Data page to centre at a public reference curve.")
        return
    upload = box.file_uploader("public reference curve (CSV with columns t,value)", type=["csv", "txt"],
                               key=f"{UPLOAD_KEY}_{st.session_state.get(COUNTER_KEY, 0)}", disabled=not range_declared,
                               help="A published curve chosen without looking at the data (e.g. a growth standard's "
                                    "medians): every curve is centred at it instead of the range's midpoint, so "
                                    "smoothing shrinks towards it. Needs a declared public range.")
    if upload is not None and upload.name != name:
        try:
            pairs = load_reference(io.BytesIO(upload.getvalue()), name=upload.name)
        except FdpError as exc:
            box.error(str(exc))
            return
        st.session_state[STORE_KEY] = {"data": data_label, "name": upload.name, "pairs": pairs}
        st.rerun()  # the page planned its release before this control: plan again with the new centre
    if name:
        left, right = box.columns([3, 1])
        left.caption(f"Centred at the public reference curve **{name}** (declared public).")
        right.button("remove the reference", key="public_reference_remove", on_click=clear)
