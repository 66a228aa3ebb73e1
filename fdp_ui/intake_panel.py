"""The Data page's intake panel: map a long file's columns, transpose a transposed file,
name the axes, and show a refused upload for what it is.

Only callbacks change the data set (fdp_ui.state), so the sidebar and the page of one run
always agree.
"""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from fdp_core.errors import FdpError

from . import intake, plots, state

PENDING_KEY = "intake_pending"  # {"raw", "name", "diagnosis", "needs_grid"} of the last refused upload
GRID_REFUSAL = "person-specific times"  # the loader's words for a long file that needs a declared grid


def after_upload(raw: bytes, name: str) -> None:
    """Callback tail of an upload: keep a refused file for the mapping/transpose panel."""
    ss = st.session_state
    if "data_error" in ss:
        # Persons seen at their own times: the loader needs a declared public grid (METHODS.md 24).
        ss[PENDING_KEY] = {"raw": raw, "name": name, "diagnosis": intake.diagnose(raw),
                           "needs_grid": GRID_REFUSAL in str(ss["data_error"])}
    else:
        ss.pop(PENDING_KEY, None)
        plots.set_axis_labels("t", "value")


def clear() -> None:
    st.session_state.pop(PENDING_KEY, None)


def _load(raw: bytes, options: dict, name: str, label_note: str, t_label: str, value_label: str) -> None:
    ss = st.session_state
    missing = ss.get("data_missing", "drop")

    def make():
        ds = state.uploaded_dataset(raw, name, missing, **options)
        return replace(ds, label=f"{ds.label} ({label_note})")

    state.replace_dataset(make)
    if "data_error" not in ss:
        clear()
        plots.set_axis_labels(t_label, value_label)


def _load_long() -> None:
    ss = st.session_state
    pending = ss[PENDING_KEY]
    ident, t, value = ss["intake_id"], ss["intake_t"], ss["intake_value"]
    try:
        raw, options = intake.loader_options(pending["raw"], ident, t, value)
    except FdpError as exc:
        ss["data_error"] = str(exc)
        return
    grid = (ss.get("intake_grid") or "").strip() or None
    _load(raw, {**options, "grid": grid}, pending["name"], f"columns {ident}, {t}, {value} as id, t, value"
          + (f", on the public grid {grid}" if grid else ""), t, value)


def _load_on_grid() -> None:
    pending = st.session_state[PENDING_KEY]
    grid = (st.session_state.get("intake_grid") or "").strip()
    _load(pending["raw"], {"grid": grid}, pending["name"], f"on the public grid {grid}", "t", "value")


def _load_transposed() -> None:
    pending = st.session_state[PENDING_KEY]
    _load(pending["raw"], {"transpose": True}, pending["name"], "transposed",
          pending["diagnosis"].suggestion["t"], "value")


def loadable_pending() -> dict | None:
    """The last refused upload when the panel can load it (a long file with other column names,
    a transposed file); None otherwise."""
    pending = st.session_state.get(PENDING_KEY)
    if not pending or (pending["diagnosis"].kind not in ("long", "transposed") and not pending.get("needs_grid")):
        return None
    return pending


def instruction(pending: dict) -> str:
    """What to do with a file the panel can load, in the app's words (never the loader's refusal,
    which names command-line options)."""
    if pending.get("needs_grid"):
        what = ("its persons are seen at their own times: declare a public grid below (never the visit times "
                "themselves), or use the sparse route")
    elif pending["diagnosis"].kind == "long":
        what = "check the three columns below and click 'Load with this mapping'"
    else:
        what = "click 'Transpose and load' below"
    return f"{pending['name']} is not loaded yet: {what}."


def render_pending() -> bool:
    """The mapping or transpose offer for the last refused upload; True if one was shown."""
    pending = loadable_pending()
    if pending is None:
        return False
    diagnosis = pending["diagnosis"]
    box = st.container(border=True, key="intake_panel")
    if pending.get("needs_grid") and diagnosis.kind != "long":
        box.markdown(f"**{pending['name']}: the persons are observed at their own times**")
        _grid_input(box)
        box.button("Load on this public grid", key="intake_load_grid", type="primary", on_click=_load_on_grid)
        return True
    box.markdown(f"**{pending['name']}: {diagnosis.message}**")
    if diagnosis.kind == "transposed":
        box.button("Transpose and load", key="intake_transpose", type="primary", on_click=_load_transposed,
                   help="Each column after the first becomes one curve (one row); the first column's values "
                        "become the grid points.")
        return True
    columns = list(diagnosis.columns)
    ss = st.session_state
    for role in ("id", "t", "value"):
        if ss.get(f"intake_{role}") not in columns:
            ss[f"intake_{role}"] = diagnosis.suggestion[role]
    c1, c2, c3 = box.columns(3)
    c1.selectbox("curve id (one person or unit per id)", columns, key="intake_id",
                 help="The column that says which curve a row belongs to (e.g. station, subject).")
    c2.selectbox("t (time point)", columns, key="intake_t",
                 help="Numbers or dates (dates become days since the earliest date in the file).")
    c3.selectbox("value (measurement)", columns, key="intake_value")
    box.caption("Suggested from the column names and types; other columns are not used.")
    if pending.get("needs_grid"):
        _grid_input(box)
    box.button("Load with this mapping", key="intake_load_long", type="primary", on_click=_load_long)
    return True


def _grid_input(box) -> None:
    box.text_input("public grid A,B,M", key="intake_grid", placeholder="e.g. 0,1,50",
                   help="M equally spaced points from A to B, chosen without looking at the data: each person's "
                        "curve is interpolated onto them (held at its first and last visit beyond them). The "
                        "union of the observed times is never used: it would publish real visit times.")


def _store_labels() -> None:
    ss = st.session_state
    plots.set_axis_labels(ss["data_t_label"], ss["data_value_unit"])


def render_axis_labels(container=None) -> None:
    """User-editable axis names, carried to every chart of every page."""
    container = container or st
    ss = st.session_state
    ss["data_t_label"], ss["data_value_unit"] = plots.t_title(), plots.value_title()
    c1, c2 = container.columns(2)
    c1.text_input("t label", key="data_t_label", on_change=_store_labels, max_chars=40,
                  help="Name of the curve argument on every x axis (e.g. 'day of year', 'age (years)').")
    c2.text_input("value unit", key="data_value_unit", on_change=_store_labels, max_chars=40,
                  help="Name or unit of the measured value on every y axis (e.g. 'temperature (deg C)').")
