"""The Data page's choice of curves: the built-in example, an uploaded file, a simulation or a
server file, and the missing-values policy (METHODS.md section 1).

The page's choices are stored outside their widgets (fdp_ui.state: Streamlit drops the state
of widgets not drawn in a run); a first visit starts from the data set in use.
"""

from __future__ import annotations

import streamlit as st

from fdp_core.data.loading import MISSING_POLICIES
from fdp_core.data.simulate import SIMULATIONS

from . import intake_panel, server_files, sparse_state, state

_KIND_SOURCE = {"example": "built-in example", "upload": "upload a file", "simulation": "simulate"}


def sources() -> tuple:
    return ("built-in example", "upload a file", "simulate") + (("server file",) if server_files.data_dir() else ())


def _on_source_change():
    choice = st.session_state["data_source"]
    if choice == "built-in example":
        state.replace_dataset(lambda: state.example_dataset(st.session_state.get("data_missing", "drop")))
    elif choice == "simulate":
        _on_simulation_change()
    elif st.session_state.get("data_upload") is not None:
        _on_upload()


def _on_upload():
    upload = st.session_state.get("data_upload")
    if upload is None:
        return
    missing = st.session_state.get("data_missing", "drop")
    state.replace_dataset(lambda: state.uploaded_dataset(upload.getvalue(), upload.name, missing))
    intake_panel.after_upload(upload.getvalue(), upload.name)
    from . import sparse_view  # lazy: the sparse reader and view, only when a file is uploaded

    sparse_view.detect_upload(upload.getvalue(), upload.name)  # a few visits per person at their own times


def _on_missing_change():
    if st.session_state["data_source"] == "upload a file":
        _on_upload()
    elif st.session_state["data_source"] == "built-in example":
        _on_source_change()


def _simulation_params(key):
    return {p.name: st.session_state.get(f"sim_{key}_{p.name}_value", p.default) for p in SIMULATIONS[key].parameters}


def _on_simulation_change():
    key = st.session_state.get("sim_design_choice", next(iter(SIMULATIONS)))
    state.replace_dataset(lambda: state.simulated_dataset(key, _simulation_params(key)))


def _remember(widget: str, store: str, then=None):
    """An on_change callback: keep the widget's new value under ``store``, then run ``then``."""
    def callback():
        st.session_state[store] = st.session_state[widget]
        if then is not None:
            then()
    return callback


def _simulation_widgets() -> None:
    ss = st.session_state
    ss["sim_design"] = ss.get("sim_design_choice", next(iter(SIMULATIONS)))
    design_key = st.selectbox("Design", list(SIMULATIONS), key="sim_design",
                              on_change=_remember("sim_design", "sim_design_choice", _on_simulation_change),
                              format_func=lambda k: SIMULATIONS[k].label)
    design = SIMULATIONS[design_key]
    st.caption(design.description)
    cols = st.columns(len(design.parameters))
    for col, p in zip(cols, design.parameters):
        cast = int if p.integer else float
        widget = f"sim_{design_key}_{p.name}"
        ss[widget] = cast(ss.get(f"{widget}_value", p.default))
        col.number_input(p.label, min_value=cast(p.minimum), max_value=cast(p.maximum),
                         step=1 if p.integer else None, key=widget,
                         on_change=_remember(widget, f"{widget}_value", _on_simulation_change), help=p.help or None)
    if state.current().kind != "simulation":
        st.button("Generate", on_click=_on_simulation_change)


def render() -> None:
    """The source and missing-values radios and the chosen source's own widgets."""
    choices = sources()
    ss = st.session_state
    ss["data_source"] = ss.get("data_source_choice", _KIND_SOURCE.get(state.current().kind, choices[0]))
    if ss["data_source"] not in choices:
        ss["data_source"] = choices[0]
    ss["data_missing"] = ss.get(state.MISSING_KEY, "drop")

    source = st.radio("Source", choices, key="data_source", horizontal=True,
                      on_change=_remember("data_source", "data_source_choice", _on_source_change))
    missing = st.radio("Curves with missing values", MISSING_POLICIES, key="data_missing", horizontal=True,
                       on_change=_remember("data_missing", state.MISSING_KEY, _on_missing_change),
                       format_func=lambda p: {"drop": "drop them", "interpolate": "interpolate interior gaps"}[p],
                       help="Gaps at the first or last grid point cannot be interpolated: those curves are dropped.")

    if source == "upload a file":
        st.file_uploader("Wide CSV (one row per curve; numeric headers are grid points; leading non-numeric "
                         "columns are metadata), long CSV (one row per observation: any column names, mapped below "
                         "if they are not id,t,value), a transposed CSV (one column per curve) or Parquet",
                         type=["csv", "txt", "parquet"], key="data_upload", on_change=_on_upload)
        st.caption("Long-format curves observed on different grids are interpolated onto a common grid (the union "
                   "of their points inside the range all curves cover). Maximum file size: 200 MB.")
    elif source == "server file":
        server_files.render(missing, lambda fd, name: state.replace_dataset(
            lambda: state.Dataset(fd, f"server file: {name}", "upload")) or st.rerun())
    elif source == "simulate":
        _simulation_widgets()

    if source == "built-in example":
        _sparse_example_button()
    if sparse_state.active():
        from . import sparse_view  # lazy: the sparse view (release, smoother, Plotly), only with sparse data

        sparse_view.render_data_section()


def _load_sparse_example() -> None:
    from . import sparse_view  # lazy: the sparse reader and view, only when the example is asked for

    sparse_view.load_example()


def _sparse_example_button() -> None:
    st.button("Load the built-in sparse example (500 persons, 2 to 10 visits each)", on_click=_load_sparse_example,
              key="sparse_example_button",
              help=f"{sparse_state.EXAMPLE.name}: simulated persons measured at their own random times "
                   "(fdp_core.data.simulate.sparse_design, known mean).")


def render_refusal(ds) -> bool:
    """Say why the last input was refused (or what the intake panel still needs); whether one was."""
    refused = "data_error" in st.session_state
    if refused and intake_panel.loadable_pending():  # a file the panel can load: an instruction, not a refusal
        st.info(f"{intake_panel.instruction(intake_panel.loadable_pending())} Until then **{ds.label}** stays "
                "loaded.")
        intake_panel.render_pending()
    elif refused:
        st.error(f"Could not use that input: {st.session_state['data_error']}. The previous data set is kept: "
                 f"**{ds.label}** is still loaded, not the refused file.")
    return refused
