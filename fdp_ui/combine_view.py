"""The Combine sites page's pieces: site bundles from zip uploads, the curves' chart, the weights table.

Everything shown is read from the sites' publishable files (fdp_core.publish.site_bundle) and their
combination (fdp_core.publish.combine): no data, no budget.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from fdp_core.errors import FdpError
from fdp_core.publish.combine import combine_sites
from fdp_core.publish.combine_files import export_zip, site_rows
from fdp_core.publish.site_bundle import read_zip


# A resource cache: the plans hold unpicklable parts (the registry entries); Combined is frozen, shared safely.
@st.cache_resource(show_spinner="Checking the site bundles and combining them ...", max_entries=8)
def combined_from_zips(named: tuple, sampling_variance: float | None):
    """(combined, zip bytes) from ((label, zip bytes), ...); ParameterError with one line on a refusal."""
    combined = combine_sites([read_zip(data, label) for label, data in named], sampling_variance=sampling_variance)
    return combined, export_zip(combined)


# The uploaded bundles, kept under a key no widget owns: an uploader forgets its files when the
# user visits another page, the session keeps the sites until new ones are uploaded.
BUNDLES_KEY = "combine_bundles"


def remember(files) -> tuple:
    """((label, bytes), ...) of the sites: the uploader's files when there are any (label: the file's
    name without .zip), else the ones uploaded earlier in this session."""
    if files:
        st.session_state[BUNDLES_KEY] = tuple((f.name[:-4] if f.name.lower().endswith(".zip") else f.name,
                                               f.getvalue()) for f in files)
    return st.session_state.get(BUNDLES_KEY, ())


def combine_or_error(named: tuple, sampling_variance: float | None):
    try:
        return combined_from_zips(named, sampling_variance)
    except FdpError as exc:
        st.error(f"Not combined: {exc}")
        return None


# The sites' lines in colours other than the combined curve's red.
SITE_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")


def curves_figure(combined) -> go.Figure:
    fig = go.Figure()
    grid = combined.grid
    if combined.bands is not None:
        b = combined.bands
        fig.add_trace(go.Scatter(x=np.concatenate([grid, grid[::-1]]),
                                 y=np.concatenate([b["ci_upper"], b["ci_lower"][::-1]]), fill="toself",
                                 fillcolor="rgba(214,39,40,0.15)", line={"width": 0},
                                 name=f"combined: {b['level']:.0%} confidence band", hoverinfo="skip"))
    for i, (site, w) in enumerate(zip(combined.sites, combined.weights)):
        fig.add_trace(go.Scatter(x=grid, y=site.values, mode="lines",
                                 line={"width": 1.2, "color": SITE_COLOURS[i % len(SITE_COLOURS)]},
                                 name=f"{site.label} (weight {w:.3f})"))
    fig.add_trace(go.Scatter(x=grid, y=combined.values, mode="lines", line={"width": 3, "color": "#d62728"},
                             name="combined"))
    fig.update_layout(height=420, margin={"l": 10, "r": 10, "t": 30, "b": 10}, xaxis_title="t",
                      yaxis_title="mean", legend={"orientation": "h", "y": -0.2})
    return fig


def sites_table(combined) -> pd.DataFrame:
    rows = site_rows(combined)
    return pd.DataFrame([{"site": r["label"], "n": r["n"], "epsilon": r["epsilon"], "delta": r["delta"],
                          "mechanism": r["mechanism"], "weight": r["weight"],
                          "expected squared L2 error": r["expected_sq_l2_error"], "release id": r["release_id"]}
                         for r in rows])
