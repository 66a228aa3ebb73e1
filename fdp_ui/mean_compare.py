"""The Mean page's comparison mode: every mechanism's sanitized means side by side at the
current settings, with their 95% noise radii, sensitivities and noise scales."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from fdp_core.errors import FdpError
from fdp_core.registry import MEAN_REGISTRY
from fdp_core.releases.mean import MEAN_MECHANISMS, MECHANISM_LABELS, plan_mean_release
from fdp_core.releases.postprocess import finish_mean

from . import compare_plots, live_chart
from .mean_tables import noise_scale_text, sensitivity_text

COMPARE_COLORS = {name: m.color for name, m in MEAN_REGISTRY.items()}


def render(fd, base, g, n_draws: int, truth) -> None:
    draws_by_mechanism, rows = {}, []
    for mech in MEAN_MECHANISMS:
        try:
            plan = plan_mean_release(fd, replace(base, mechanism=mech))
        except FdpError as exc:
            rows.append({"mechanism": MECHANISM_LABELS[mech], "noise (95% radius, L2)": None, "sensitivity": "-",
                         "noise scale": "-", "privacy": "-", "status": f"unavailable: {exc}"})
            continue
        draws_by_mechanism[mech] = finish_mean(plan.sample(g.rng(salt=10 + MEAN_MECHANISMS.index(mech)), n_draws),
                                               plan.settings).values
        rows.append({"mechanism": MECHANISM_LABELS[mech], "noise (95% radius, L2)": plan.l2_error_radius(0.95),
                     "sensitivity": sensitivity_text(plan), "noise scale": noise_scale_text(plan),
                     "privacy": plan.privacy,
                     "status": "data-dependent: NOT DP" if plan.data_dependent_flags else "ok"})
    live_chart.show(compare_plots.small_multiples(
        fd.grid_points, draws_by_mechanism, labels=MECHANISM_LABELS, colors=COMPARE_COLORS, truth=truth,
        title=f"Every mechanism, epsilon = {g.epsilon:g} (delta = {g.delta:g}: Gaussian only)"),
        key="mean_compare_figure")
    # A static full-width table: every column visible, long cells wrapped, no raw None.
    table = pd.DataFrame(rows)
    table["noise (95% radius, L2)"] = [f"{v:.4g}" if v is not None else "-"
                                       for v in table["noise (95% radius, L2)"]]
    st.table(table.set_index("mechanism").fillna("-"))
    st.caption("Noise: the L2 distance of the release from each mechanism's own non-private estimate that holds "
               "with 95% probability, in the curves' units; it follows from the closed-form expected squared L2 "
               "error: " + "; ".join(f"{m.error_rule} ({m.label.split(' (')[0]})" for m in MEAN_REGISTRY.values())
               + ". The estimators differ (smoothing, truncation, clipping), so compare the pictures against the "
               "truth as well. Previews: idealised real-arithmetic DP.")
    if g.tau_from_data:
        st.error("tau was read off the data: the tau-based releases above are NOT differentially private.")
