"""The Covariance page's synthetic curves (METHODS.md 19): drawn from the released mean and covariance."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from fdp_core.releases.covariance import plan_covariance_release
from fdp_core.errors import FdpError
from fdp_core.releases.synthetic import CANNOT_KEEP, KEEPS, compare, model_covariance, synthetic_curves
from fdp_ui import live_chart, plots

SHOWN = 30  # curves of each kind in the figure


def render(fd, settings, rng: np.random.Generator) -> None:
    st.header("Synthetic curves")
    if not st.toggle("Draw synthetic curves from the released mean and covariance", key="syn_show"):
        return
    st.caption("Curves drawn from a Gaussian model with the released mean and covariance (the covariance release "
               "with a released mean): post-processing, no budget beyond that release. The model keeps " + KEEPS
               + "; it cannot keep " + CANNOT_KEEP + ".")
    n_default = int(min(fd.n, 2000))
    n_synthetic = st.number_input("number of synthetic curves (public)", 1, 100_000, n_default, key="syn_n")
    chosen = replace(settings, centring="released-mean")
    try:
        plan = plan_covariance_release(fd, chosen)
    except FdpError as exc:
        st.error(f"No synthetic curves for these settings: {exc}")
        return
    draw = plan.sample(rng, 1)
    mean = chosen.centre_value + plan.eigenfunctions @ draw["mean"][0]
    value_range = None if chosen.lo is None else (float(chosen.lo), float(chosen.hi))
    curves = synthetic_curves(mean, model_covariance(plan, draw), plan.eigenfunctions, int(n_synthetic), rng,
                              value_range)
    fig = go.Figure()
    plots.add_curves(fig, fd.grid_points, fd.data_matrix[:SHOWN], name=f"real curves (first {SHOWN}: analyst view)",
                     color="#7f7f7f", opacity=0.5)
    plots.add_curves(fig, fd.grid_points, curves[:SHOWN], name=f"synthetic curves ({SHOWN} shown)",
                     color=plots.PRIVATE_COLOR, opacity=0.5)
    fig.update_layout(height=420, margin=dict(l=10, r=10, t=40, b=10), xaxis_title=plots.t_title(),
                      yaxis_title=plots.value_title(), title=f"Synthetic vs real, epsilon = {chosen.epsilon:g}")
    live_chart.show(fig, key="syn_figure")
    metrics = compare(fd.data_matrix, curves, fd.grid_points, fd.weights)
    c1, c2, c3 = st.columns(3)
    c1.metric("mean L2 distance", f"{metrics['mean_l2_distance']:.3g}")
    c2.metric("covariance HS distance", f"{metrics['covariance_hs_distance']:.3g}",
              help=f"real covariance's HS norm: {metrics['real_covariance_hs_norm']:.3g}")
    c3.metric("subspace distance (top 3)", f"{metrics['subspace_distance_top3']:.3g}",
              help=metrics["subspace_distance_meaning"])
    st.caption("Pointwise Kolmogorov-Smirnov: " + ", ".join(f"t = {k['t']:.3g}: {k['ks_statistic']:.2f}"
                                                            for k in metrics["pointwise_ks"])
               + ". The comparison reads the real curves: analyst view, not for publication. These are previews "
                 "(numpy noise, nothing charged): to publish synthetic curves, run `python -m fdp_core release "
                 "synthetic` or commit the covariance release with a released mean and draw from it.")
