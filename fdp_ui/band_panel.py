"""The Mean page's uncertainty bands (METHODS.md 18): the privacy band beside the confidence band.

Two colours and two plain names, because readers confuse them: orange is where the noise may
have put this curve (around the non-private estimate), blue is where the population's mean lies
given sampling and noise. Previews (numpy noise), like the rest of the page.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from fdp_core.budget.privacy_events import composed_total_words
from fdp_core.releases.bands import (CONFIDENCE_BAND_WORDS, PRIVACY_BAND_WORDS, band_composed_total, confidence_band,
                                    plan_band_release)
from fdp_core.errors import FdpError
from fdp_ui import plots

PRIVACY_COLOR = "rgba(255,127,14,0.30)"
CONFIDENCE_COLOR = "rgba(31,119,180,0.22)"
WIDENED_COLOR = "rgba(31,119,180,0.10)"
RELEASE_COLOR = "#17344f"
DEFAULTS = {"band_show": False, "band_level": 0.95, "band_share": 0.2, "band_smoothness": 0.0}


def render(fd, settings, rng: np.random.Generator) -> None:
    """Toggle, level, share and smoothness bound; then the figure with both bands."""
    for key, value in DEFAULTS.items():
        st.session_state[key] = st.session_state.get(key, value)
    with st.container(border=True, key="mean_bands"):
        if not st.toggle("Uncertainty bands: privacy band and confidence band", key="band_show",
                         help="The confidence band spends a share of epsilon (and delta) on a private second "
                              "moment; the mean gets the rest (docs/METHODS.md 18)."):
            return
        c1, c2, c3 = st.columns(3)
        level = c1.select_slider("level", [0.8, 0.9, 0.95, 0.99], key="band_level")
        share = c2.slider("share of the budget for the second moment", 0.05, 0.5, step=0.05, key="band_share")
        smooth = c3.number_input("smoothness bound B (0: none)", min_value=0.0, format="%.4g", key="band_smoothness",
                                 help="A public bound on the centred mean's norm in H(C^eta): adds the smoothing "
                                      "bias and a wider band that covers the mean itself.")
        chosen = replace(settings, confidence_band=float(level), band_share=float(share),
                         smoothness_bound=float(smooth) if smooth > 0 else None)
        try:
            plan = plan_band_release(fd, chosen)
        except FdpError as exc:
            st.error(f"No bands for these settings: {exc}")
            return
        values = plan.mean.sample(rng, 1)[0]
        second = plan.second_moment.sample(rng, 1)["second_moment"][0]
        bands = confidence_band(plan, values, second)
        st.plotly_chart(figure(fd.grid_points, values, bands, level), width="stretch", key="mean_bands_figure")
        s = plan.mean.settings
        total = band_composed_total(plan)  # Gaussian parts: the exact GDP total beside the basic sum
        st.caption(f"Spent: epsilon {s.epsilon:.3g} on the mean + {plan.second_moment.settings.epsilon:.3g} on the "
                   f"second moment = {chosen.epsilon:g} in total (the ledger charges both at commit"
                   + (f"; {composed_total_words(total)}" if "gdp" in total else "") + "). Orange: "
                   f"{PRIVACY_BAND_WORDS} (noise only, needs no data). Blue: {CONFIDENCE_BAND_WORDS}; it covers "
                   "the smoothed mean (what this smoother targets), not the raw mean"
                   + (f"; the faint blue band adds the smoothing-bias bound (L2 <= {bands.bias_l2:.3g}) and covers "
                      "the mean itself if B holds." if bands.bias_l2 is not None else ".")
                   + " Both are post-processing of the releases: publishable.")


def figure(grid, values, bands, level: float) -> go.Figure:
    fig = go.Figure()
    widened = bands.widened
    if widened is not None:
        plots.add_band(fig, grid, widened.lower, widened.upper, color=WIDENED_COLOR,
                       name=f"{level:.0%}: the mean itself, if the smoothness bound holds")
    plots.add_band(fig, grid, bands.band.lower, bands.band.upper, color=CONFIDENCE_COLOR,
                   name=f"{level:.0%} confidence band: {CONFIDENCE_BAND_WORDS}")
    plots.add_band(fig, grid, bands.privacy.lower, bands.privacy.upper, color=PRIVACY_COLOR,
                   name=f"{level:.0%} privacy band: {PRIVACY_BAND_WORDS}")
    plots.add_line(fig, grid, values, name="released mean (one draw)", color=RELEASE_COLOR)
    fig.update_layout(title="Two different questions: the noise, and the population", xaxis_title=plots.t_title(),
                      yaxis_title=plots.value_title(), height=460, margin=dict(l=10, r=10, t=50, b=10),
                      legend=dict(orientation="h", yanchor="bottom", y=-0.45))
    return fig
