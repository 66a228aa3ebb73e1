"""The Trade-offs page's PCA section: the variance ratio of private components against
epsilon for k = 1, 2, 3 (Monte Carlo, fdp_core/explore/sweeps.py)."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import streamlit as st

from fdp_core.explore import sweeps
from fdp_core.explore.tradeoff_figures import variance_ratio_figure
from fdp_core.releases.pca import PcaSettings

from . import live_chart
from .tradeoff_sweep import data_key


@st.cache_data(show_spinner="Drawing private components...", max_entries=8)
def _pca_curves(data_key, pca_key, draws, seed, _fd):
    return sweeps.pca_variance_ratio_curves(_fd, PcaSettings(**dict(pca_key)), np.logspace(-2, 2, 10),
                                            draws=draws, seed=seed)


def render(fd, g) -> None:
    st.header("Principal components: variance ratio against epsilon")
    a, b = st.columns([1, 2])
    show_pca = a.toggle("compute (Monte Carlo)", key="to_pca",
                        help="Draws private components at 10 epsilons for k = 1, 2, 3: a few seconds.")
    pca_draws = b.select_slider("draws per epsilon", (20, 50, 100, 200), key="to_pca_draws")
    if not show_pca:
        return
    settings = PcaSettings(kernel=g.kernel, rho=g.rho, nu=g.nu, epsilon=g.epsilon, tau=g.tau,
                            tau_from_data=g.tau_from_data, **g.bounds)
    pca_curves = _pca_curves(data_key(fd), tuple(asdict(settings).items()), int(pca_draws), g.seed, fd)
    live_chart.show(variance_ratio_figure(pca_curves, current_epsilon=g.epsilon), key="to_pca_curves")
    lines = [f":orange[k = {curve.k}: not shown] — {curve.invalid}" for curve in pca_curves if not curve.ok]
    p_used = next((c.p for c in pca_curves if c.ok), None)
    lines.append(f"Kernel basis of the sidebar's kernel and rho (p = {p_used}), gamma = 1, no centring, rows "
                 "clipped at tau. k = 1: exact vector Bingham; k > 1: sequential deflation, epsilon split equally "
                 f"over the k components. Line: mean over {pca_draws} draws; band: 10-90%. "
                 f"{sweeps.PCA_ANALYST_NOTE[:1].upper()}{sweeps.PCA_ANALYST_NOTE[1:]}.")
    st.caption("\n\n".join(lines))  # one element: the curves not shown, then the legend
