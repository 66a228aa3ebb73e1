"""Data page: choose the curves (built-in example, upload, or a simulation) and inspect them."""

import numpy as np
import pandas as pd
import streamlit as st

from fdp_core.data import MISSING_POLICIES
from fdp_core.simulate import SIMULATIONS
from fdp_ui import plots, server_files, sidebar, state

st.title("Data")
st.caption("One curve = one individual: the unit of privacy. Neighbouring data sets differ in one curve.")

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


def _on_missing_change():
    if st.session_state["data_source"] == "upload a file":
        _on_upload()
    elif st.session_state["data_source"] == "built-in example":
        _on_source_change()


def _simulation_params(key):
    return {p.name: st.session_state.get(f"sim_{key}_{p.name}", p.default) for p in SIMULATIONS[key].parameters}


def _on_simulation_change():
    key = st.session_state.get("sim_design", next(iter(SIMULATIONS)))
    state.replace_dataset(lambda: state.simulated_dataset(key, _simulation_params(key)))


source = st.radio("Source", SOURCES, key="data_source", horizontal=True, on_change=_on_source_change)
missing = st.radio("Curves with missing values", MISSING_POLICIES, key="data_missing", horizontal=True,
                   on_change=_on_missing_change,
                   format_func=lambda p: {"drop": "drop them", "interpolate": "interpolate interior gaps"}[p],
                   help="Gaps at the first or last grid point cannot be interpolated: those curves are dropped.")

if source == "upload a file":
    st.file_uploader("Wide CSV (one row per curve; numeric headers are grid points; leading non-numeric "
                     "columns are metadata), long CSV (header id,t,value) or Parquet", type=["csv", "txt", "parquet"],
                     key="data_upload", on_change=_on_upload)
    st.caption("Long-format curves observed on different grids are interpolated onto a common grid (the union "
               "of their points inside the range all curves cover). Maximum file size: 200 MB.")
elif source == "server file":
    server_files.render(missing, lambda fd, name: state.replace_dataset(lambda: state.Dataset(fd, f"server file: {name}",
                                                                                              "upload")) or st.rerun())
elif source == "simulate":
    design_key = st.selectbox("Design", list(SIMULATIONS), key="sim_design", on_change=_on_simulation_change,
                              format_func=lambda k: SIMULATIONS[k].label)
    design = SIMULATIONS[design_key]
    st.caption(design.description)
    cols = st.columns(len(design.parameters))
    for col, p in zip(cols, design.parameters):
        cast = int if p.integer else float
        col.number_input(p.label, min_value=cast(p.minimum), max_value=cast(p.maximum), value=cast(p.default),
                         step=1 if p.integer else None, key=f"sim_{design_key}_{p.name}",
                         on_change=_on_simulation_change, help=p.help or None)
    if state.current().kind != "simulation":
        st.button("Generate", on_click=_on_simulation_change)

if "data_error" in st.session_state:
    st.error(f"Could not use that input: {st.session_state['data_error']}. The previous data set is kept.")

ds = state.current()
fd = ds.fd
settings = sidebar.render()

st.subheader(ds.label)
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

shown = plots.curve_subset(fd.n)
subset_note = "" if shown.size == fd.n else f" (a fixed random subset of {shown.size}; computations use all {fd.n})"
st.plotly_chart(plots.curves_figure(fd.grid_points, fd.data_matrix[shown], title=f"All curves{subset_note}"),
                width="stretch", key="data_curves")

norms = fd.norms()
left, right = st.columns([3, 2])
left.plotly_chart(plots.norms_histogram(norms, settings.tau), width="stretch", key="data_norms")
with right:
    st.markdown(f"**Clipping at tau = {settings.tau:.4g}**: {settings.n_clipped} of {fd.n} curves have a larger "
                f"L2 norm and are shrunk onto the ball before any estimate is computed.")
    st.markdown(f"Norms range from {norms.min():.4g} to {norms.max():.4g} (analyst view).")
    if settings.tau_from_data:
        st.error("tau is data-dependent: nothing released with it is differentially private.")
    if not fd.metadata.empty:
        st.markdown("**Metadata columns** (usable as features on the density page)")
        st.dataframe(pd.DataFrame({"column": fd.metadata.columns,
                                   "type": [str(t) for t in fd.metadata.dtypes]}), hide_index=True)
