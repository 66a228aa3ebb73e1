"""The Mean page's uncertainty bands (METHODS.md 18, 25): privacy band, confidence band, band for the mean.

Plain names and colours, because readers confuse them: orange is where the noise may have put
this curve (around the non-private estimate), blue is where the population's smoothed mean lies,
green is where the population mean itself lies under the declared smoothness. The page asks for
the band for the mean by default; its assumption is asked in words (how far the mean may stray
from the public centre), never read off the data; without it the page says the band covers only
the smoothed mean. Previews (numpy noise), like the rest of the page.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from fdp_core.budget.privacy_events import composed_total_words
from fdp_core.releases.bands import (CONFIDENCE_BAND_WORDS, MEAN_BAND_WORDS, PRIVACY_BAND_WORDS, band_composed_total,
                                    bound_from_amplitude, confidence_band, plan_band_release)
from fdp_core.errors import FdpError
from fdp_ui import live_chart, plots

PRIVACY_COLOR = "rgba(255,127,14,0.30)"
CONFIDENCE_COLOR = "rgba(31,119,180,0.22)"
MEAN_COLOR = "rgba(44,160,44,0.22)"
RELEASE_COLOR = "#17344f"
TARGETS = ("the population mean itself", "only the smoothed mean (no assumption)")
DEFAULTS = {"band_show": False, "band_level": 0.95, "band_share": 0.2, "band_target": TARGETS[0],
            "band_amplitude": 0.0, "band_smoothness": 0.0}


def _declared_bound(plan) -> float | None:
    """B from the page's words (METHODS 25): typed directly, or from how far the mean may stray from the centre."""
    if st.session_state["band_target"] != TARGETS[0]:
        return None
    if st.session_state["band_smoothness"] > 0:
        return float(st.session_state["band_smoothness"])
    if st.session_state["band_amplitude"] > 0:
        cov = plan.second_moment
        return bound_from_amplitude(cov.eigenfunctions, cov.eigenvalues, plan.settings.eta,
                                    float(st.session_state["band_amplitude"]))
    return None


def _ask_for_the_bound(centre: float) -> None:
    """The assumption behind the band for the mean, in words; never read off the data."""
    if st.session_state["band_target"] != TARGETS[0]:
        return
    c1, c2 = st.columns(2)
    c1.number_input(f"how far may the population mean stray from the public centre {centre:g}? (data units, "
                    "0: not declared)", min_value=0.0, format="%.4g", key="band_amplitude",
                    help="Your public knowledge, not the data's: the mean differs from the centre by a smooth "
                         "deviation (about as smooth as the kernel's bumps) at most this high. It sets the "
                         "smoothness bound B; rougher means need a larger B.")
    c2.number_input("or the smoothness bound B itself (0: from the words)", min_value=0.0, format="%.4g",
                    key="band_smoothness", help="A public bound on ||mean - centre|| in H(C^eta) (docs/METHODS.md "
                                                "25).")


def render(fd, settings, rng: np.random.Generator) -> None:
    """Toggle, level, share and what the band should cover; then the figure with the bands."""
    for key, value in DEFAULTS.items():
        st.session_state[key] = st.session_state.get(key, value)
    with st.container(border=True, key="mean_bands"):
        if not st.toggle("Uncertainty bands: privacy band and confidence band", key="band_show",
                         help="The confidence band spends a share of epsilon (and delta) on a private second "
                              "moment; the mean gets the rest (docs/METHODS.md 18, 25)."):
            return
        c1, c2, c3 = st.columns(3)
        level = c1.select_slider("level", [0.8, 0.9, 0.95, 0.99], key="band_level")
        share = c2.slider("share of the budget for the second moment", 0.05, 0.5, step=0.05, key="band_share")
        c3.selectbox("the band should cover", TARGETS, key="band_target")
        chosen = replace(settings, confidence_band=float(level), band_share=float(share))
        try:
            plan = plan_band_release(fd, chosen)
        except FdpError as exc:
            st.error(f"No bands for these settings: {exc}")
            return
        _ask_for_the_bound(float(np.mean(plan.mean.offset)))
        B = _declared_bound(plan)
        plan = replace(plan, settings=replace(plan.settings, smoothness_bound=B))
        values = plan.mean.sample(rng, 1)[0]
        second = plan.second_moment.sample(rng, 1)["second_moment"][0]
        bands = confidence_band(plan, values, second)
        live_chart.show(figure(fd.grid_points, values, bands, level, plan.mean.offset), key="mean_bands_figure")
        s = plan.mean.settings
        total = band_composed_total(plan)  # Gaussian parts: the exact GDP total beside the basic sum
        st.caption(f"Spent: epsilon {s.epsilon:.3g} on the mean + {plan.second_moment.settings.epsilon:.3g} on the "
                   f"second moment = {chosen.epsilon:g} in total (the ledger charges both at commit"
                   + (f"; {composed_total_words(total)}" if "gdp" in total else "") + "). Orange: "
                   f"{PRIVACY_BAND_WORDS} (noise only, needs no data). " + _coverage_words(bands, B)
                   + " All bands are post-processing of the releases: publishable.")


def _coverage_words(bands, B: float | None) -> str:
    """Plainly what the blue and the green band cover."""
    smoothed = (f"Blue: {CONFIDENCE_BAND_WORDS}. It covers only the smoothed mean (what this smoother targets), "
                "not the population mean itself.")
    if bands.mean is not None:
        return (smoothed + f" Green: {MEAN_BAND_WORDS} (B = {B:.3g}; its bias bound, L2 <= "
                f"{bands.mean.bias_l2:.3g}, is inside it).")
    if B is not None:
        return smoothed + " This mechanism's smoother has no bias bound: no band for the population mean."
    if st.session_state["band_target"] == TARGETS[0]:
        return smoothed + " Declare how far the mean may stray from the centre to get a band for the mean itself."
    return smoothed


def figure(grid, values, bands, level: float, centre=None) -> go.Figure:
    fig = go.Figure()
    if bands.mean is not None:
        plots.add_band(fig, grid, bands.mean.band.lower, bands.mean.band.upper, color=MEAN_COLOR,
                       name=f"{level:.0%} band for the mean itself: {MEAN_BAND_WORDS}")
    plots.add_band(fig, grid, bands.band.lower, bands.band.upper, color=CONFIDENCE_COLOR,
                   name=f"{level:.0%} confidence band: {CONFIDENCE_BAND_WORDS}")
    plots.add_band(fig, grid, bands.privacy.lower, bands.privacy.upper, color=PRIVACY_COLOR,
                   name=f"{level:.0%} privacy band: {PRIVACY_BAND_WORDS}")
    if bands.mean is not None and centre is not None:
        plots.add_line(fig, grid, np.broadcast_to(centre, np.shape(grid)), name="public centre (the reference)",
                       color="#7f7f7f")
    plots.add_line(fig, grid, values, name="released mean (one draw)", color=RELEASE_COLOR)
    fig.update_layout(title="Different questions: the noise, the smoothed mean, the mean", xaxis_title=plots.t_title(),
                      yaxis_title=plots.value_title(), height=460, margin=dict(l=10, r=10, t=50, b=10),
                      legend=dict(orientation="h", yanchor="bottom", y=-0.45))
    return fig
