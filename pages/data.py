"""Data page: choose the curves (built-in example, upload, or a simulation) and inspect them."""

import numpy as np
import pandas as pd
import streamlit as st

from fdp_core.data.loading import MISSING_POLICIES, l2_norms
from fdp_core.publish.views import NONPRIVATE_VIEWS
from fdp_core.data.preprocess import (NOT_DP_SUGGESTION, PublicBounds, curves_per_person, range_clipped_centred,
                                 repeated_id_columns, suggested_value_range)
from fdp_core.data.simulate import SIMULATIONS
from fdp_core.limits import MIN_PERSONS_COMMIT
from fdp_ui import commit_checks, intake_panel, plots, server_files, sidebar, sparse_view, state, steps
from fdp_ui import ledger as ledger_ui
from fdp_ui import sealed

st.title("Data")
st.caption("The unit of privacy is a person: neighbouring data sets differ in one person's data. Without a person "
           "column every curve counts as a different person.")

SOURCES = ("built-in example", "upload a file", "simulate") + (("server file",) if server_files.data_dir() else ())


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


# The page's choices are stored outside their widgets (fdp_ui.state: Streamlit drops the state
# of widgets not drawn in a run); a first visit starts from the data set in use.
_KIND_SOURCE = {"example": "built-in example", "upload": "upload a file", "simulation": "simulate"}
st.session_state["data_source"] = st.session_state.get("data_source_choice",
                                                       _KIND_SOURCE.get(state.current().kind, SOURCES[0]))
if st.session_state["data_source"] not in SOURCES:
    st.session_state["data_source"] = SOURCES[0]
st.session_state["data_missing"] = st.session_state.get(state.MISSING_KEY, "drop")


def _remember(widget: str, store: str, then=None):
    """An on_change callback: keep the widget's new value under ``store``, then run ``then``."""
    def callback():
        st.session_state[store] = st.session_state[widget]
        if then is not None:
            then()
    return callback


source = st.radio("Source", SOURCES, key="data_source", horizontal=True,
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
    server_files.render(missing, lambda fd, name: state.replace_dataset(lambda: state.Dataset(fd, f"server file: {name}",
                                                                                              "upload")) or st.rerun())
elif source == "simulate":
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

if source == "built-in example":
    sparse_view.render_example_button()
if sparse_view.active():
    sparse_view.render_data_section()

ds = state.current()
refused = "data_error" in st.session_state
if refused and intake_panel.loadable_pending():  # a file the panel can load: an instruction, not a refusal
    st.info(f"{intake_panel.instruction(intake_panel.loadable_pending())} Until then **{ds.label}** stays loaded.")
    intake_panel.render_pending()
elif refused:
    st.error(f"Could not use that input: {st.session_state['data_error']}. The previous data set is kept: "
             f"**{ds.label}** is still loaded, not the refused file.")
fd = ds.fd
state.person_column(ds)  # pre-selects a likely person column for a new data set


# ---------------------------------------------------------------- unit of privacy and public bounds
sealed.render_panel()  # issue 29: explore on a public stand-in, read the private file at commit
st.subheader("Unit of privacy and public bounds")
unit_col, range_col = st.columns(2)
with unit_col:
    options = [state.NO_PERSON] + [str(c) for c in fd.metadata.columns]
    if st.session_state.get(state.PERSON_KEY) not in options:
        st.session_state[state.PERSON_KEY] = state.NO_PERSON
    person = st.selectbox("person column (who each curve belongs to)", options,
                          key=state.seed_widget(state.PERSON_KEY, state.NO_PERSON),
                          on_change=state.store_choice, args=(state.PERSON_KEY,),
                          help="Curves with the same value here belong to one person. Each person's curves are "
                               "clipped and averaged into one, so the guarantee protects persons and n = number of "
                               "persons. n is treated as public (declared).")
    repeated = repeated_id_columns(fd.metadata)
    if person == state.NO_PERSON and repeated:
        st.warning(f"Column(s) {', '.join(repr(c) for c in repeated)} have repeated values: if they identify "
                   "persons with several curves, choose one as the person column. Otherwise a person with k curves "
                   "gets only about k times epsilon of protection. Nothing is committed until you choose one or "
                   "declare below that every curve is a different person.")
        ss = st.session_state
        ss["data_curves_are_persons_input"] = commit_checks.curves_declared_persons(ds)
        st.checkbox(f"I declare that every curve is a different person (the repeated values of '{repeated[0]}' do "
                    "not identify persons)", key="data_curves_are_persons_input",
                    on_change=lambda: commit_checks.set_curves_declared_persons(ss["data_curves_are_persons_input"]),
                    help="A deliberate choice, recorded in every release's record and report.")
    if person != state.NO_PERSON:
        counts = curves_per_person(fd.metadata, person)
        n_persons = int(counts.sum())
        st.metric("persons n", n_persons, help="The n of every sensitivity (declared public).")
        st.dataframe(pd.DataFrame({"curves per person": counts.index, "persons": counts.values}), hide_index=True)
        st.caption(f"{fd.n} curves of {n_persons} persons (analyst view).")
        for text in commit_checks.person_warnings(n_persons, fd.n, person):
            st.warning(text[0].upper() + text[1:] + ".")
        if n_persons < MIN_PERSONS_COMMIT:
            st.error(f"Fewer than {MIN_PERSONS_COMMIT} persons: the app does not commit a release over them.")
with range_col:
    st.markdown("**Public value range** of every curve value, in the data's units: declare it from domain "
                "knowledge (a fraction: 0 to 1; heights: 60 to 200 cm), never from these data.")
    r1, r2 = st.columns(2)
    r1.number_input("lowest possible value", format="%.6g", key=state.seed_widget(state.RANGE_LO_KEY, None),
                    on_change=state.store_choice, args=(state.RANGE_LO_KEY,), placeholder="declare it")
    r2.number_input("highest possible value", format="%.6g", key=state.seed_widget(state.RANGE_HI_KEY, None),
                    on_change=state.store_choice, args=(state.RANGE_HI_KEY,), placeholder="declare it")
    if ds.public_range is not None and (st.session_state[state.RANGE_LO_KEY],
                                        st.session_state[state.RANGE_HI_KEY]) == tuple(ds.public_range):
        st.caption(f"Pre-filled from the simulation design's public description: {ds.public_range_note}. Not read "
                   "off the data; tick the box below to declare it.")
    declared = st.checkbox("I declare this range public (chosen without looking at the data)",
                           key=state.seed_widget(state.RANGE_DECLARED_KEY, False),
                           on_change=state.store_choice, args=(state.RANGE_DECLARED_KEY,),
                           help="Values are clipped to it, curves centred at its midpoint (added back after the noise) "
                                "and tau defaults to half its width. Releases of curves can be committed only once "
                                "a range is declared.")
    lo_v, hi_v = st.session_state[state.RANGE_LO_KEY], st.session_state[state.RANGE_HI_KEY]
    if declared and (lo_v is None or hi_v is None or not lo_v < hi_v):
        st.error("The range needs a lowest and a highest value, lowest < highest; it is not used until then.")
    elif declared:
        st.success(f"Declared public range [{lo_v:g}, {hi_v:g}]: centre {(lo_v + hi_v) / 2:g}, "
                   f"default tau {(hi_v - lo_v) / 2:g}.")
    else:
        d_lo, d_hi = suggested_value_range(fd)
        state.note_view(NONPRIVATE_VIEWS["range_suggestion"])
        st.warning(f"No range declared: previews are centred at 0 and commits of curves are refused. The data run "
                   f"from {d_lo:.4g} to {d_hi:.4g} ({NOT_DP_SUGGESTION}).")

ledger_ui.render_dataset_choice(st.container())

settings = sidebar.render()

# After a refused upload the data set still loaded is shown folded away, so it cannot be
# mistaken for the upload's result.
body = st.expander(f"Still loaded: {ds.label} (not the refused file)") if refused else st.container()
body.__enter__()
st.subheader(("Still loaded: " if refused else "") + ds.label)
intake_panel.render_axis_labels()
c1, c2, c3, c4 = st.columns(4)
c1.metric("curves n", fd.n)
c2.metric("grid points m", fd.m)
c3.metric("domain", f"[{fd.domain[0]:g}, {fd.domain[1]:g}]")
gaps = np.diff(fd.grid_points)
c4.metric("grid", "even" if np.allclose(gaps, gaps[0], rtol=1e-4) else "uneven",
          help="Uneven grids use trapezoid quadrature weights in every L2 inner product.")

report = fd.report
notes = [f"read {report.n_read} curves"]
if report.n_missing_cells:
    notes.append(f"{report.n_missing_cells} missing cells")
notes.extend(report.messages)
if report.dropped_rows:
    shown = ", ".join(map(str, report.dropped_rows[:20]))
    notes.append(f"dropped data rows: {shown}{' ...' if len(report.dropped_rows) > 20 else ''}")
st.info("; ".join(notes))
for flag in ds.flags:
    st.warning(flag)

summary_note = ("" if fd.n <= plots.PREVIEW_CURVES else
                f" (a fixed random sample of {plots.PREVIEW_CURVES} over the quantile envelopes of all {fd.n})")
st.plotly_chart(plots.curves_preview_figure(fd.grid_points, fd.data_matrix, title=f"All curves{summary_note}"),
                width="stretch", key="data_curves")
state.note_view(NONPRIVATE_VIEWS["curves"])

# The norms the L2 clip sees: after the range clip and centring (uncentred norms when no range is declared).
_centred, _, _ = range_clipped_centred(fd, PublicBounds(**settings.bounds))
norms = l2_norms(_centred, fd.weights)
left, right = st.columns([3, 2])
left.plotly_chart(plots.norms_histogram(norms, settings.tau), width="stretch", key="data_norms")
with right:
    st.markdown(f"**Clipping at tau = {settings.tau:.4g}**: {settings.n_clipped} of {fd.n} curves have a larger "
                f"L2 norm (after the range clip and centring) and are shrunk onto the ball before any estimate is "
                "computed.")
    st.markdown(f"Norms range from {norms.min():.4g} to {norms.max():.4g} (analyst view).")
    if settings.tau_from_data:
        st.error("tau is data-dependent: nothing released with it is differentially private.")
    if not fd.metadata.empty:
        st.markdown("**Metadata columns** (usable as features on the density page)")
        st.dataframe(pd.DataFrame({"column": fd.metadata.columns,
                                   "type": [str(t) for t in fd.metadata.dtypes]}), hide_index=True)

body.__exit__(None, None, None)
steps.render_bounds_section(settings.tau, settings.tau_from_data)
