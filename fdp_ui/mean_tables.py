"""The Mean page's sensitivity and noise tables (both bounds; for Gaussian noise both
calibrations too), and the short texts the comparison table shares with them."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import streamlit as st

from fdp_core.mechanisms.calibration import CALIBRATIONS
from fdp_core.registry import mean_mechanism
from fdp_core.releases.mean import plan_mean_release
from fdp_core.sensitivity import BOUNDS

from .layout import lazy_expander


def privacy_text(plan, g) -> str:
    """The mean's own epsilon and delta (its share when the uncertainty bands take part of the budget)."""
    s = plan.settings
    band = f" (the mean's part of epsilon {g.epsilon:g})" if s.epsilon < g.epsilon * (1 - 1e-12) else ""
    return f"epsilon = {s.epsilon:.4g}, " + (f"delta = {s.delta:.3g}" if plan.sigma is not None else
                                             "delta = 0 (pure epsilon-DP)") + band


def noise_scale_text(plan) -> str:
    if plan.sigma is not None:
        return f"sigma = {plan.sigma:.4g} (Gaussian, sd sigma sqrt(lambda_l))"
    basis = mean_mechanism(plan.settings.mechanism).basis
    return (f"{basis.scale_symbol} = {plan.noise_scales.max():.4g} (Laplace, {int(np.sum(plan.noise_scales > 0))} "
            f"{basis.coefficient_word})")


def sensitivity_text(plan) -> str:
    """Plain names in tables; the norms' formulas are in the help texts and docs/METHODS.md."""
    entry = mean_mechanism(plan.settings.mechanism)
    return f"{plan.sensitivity:.4g} ({entry.sensitivity_norm_label}, {entry.bound_name(plan.settings.bound)})"


def _sigma_cell(v) -> str:
    return "refused (epsilon > 1)" if v is None or v != v else f"{v:.4g}"


def _units(plan, g) -> str:
    return f"n = {plan.n} {'persons' if g.person_column else 'curves'} (after {plan.n_dropped} curves dropped)"


def _gaussian(plan, g, options) -> None:
    gq = plan.guarantee
    entry = mean_mechanism(options.mechanism)
    left, right = st.columns(2)
    with left:
        st.markdown("**Sensitivity**: how far one person can move the estimate",
                    help=entry.sensitivity_help or f"Measured in the {gq.sensitivity_norm}.")
        st.dataframe(pd.DataFrame({"bound": [entry.bound_name(b) for b in BOUNDS],
                                   "Delta": [gq.sensitivity_for(b) for b in BOUNDS]}),
                     hide_index=True, width="stretch")
        st.caption(f"{_units(plan, g)}, {plan.n_clipped} curves clipped at tau = {plan.tau:.4g}; "
                   f"{plan.synthesis.shape[1]} eigenfunctions kept (analyst view).")
    with right:
        st.markdown("**Noise scale sigma: both bounds x both calibrations**")
        # Pre-formatted cells, not a pandas Styler (~15 ms on every rerun).
        rows = [{"bound": b, **{c: _sigma_cell(gq.details["sigma_table"][f"{b}/{c}"]) for c in CALIBRATIONS}}
                for b in BOUNDS]
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
        st.caption(f"In use: {options.bound} / {options.calibration}, sigma = {plan.sigma:.4g}; privacy curve mu = "
                   f"{gq.gdp_mu:.3g}.",
                   help="mu = sensitivity / sigma: the one number of the Gaussian mechanism's privacy curve (Gaussian "
                        "differential privacy); it composes as sqrt(mu_1^2 + mu_2^2 + ...). Smaller = more private.")


def _laplace(plan, fd, base, g, options) -> None:
    gq = plan.guarantee
    entry = mean_mechanism(options.mechanism)
    plans = {b: plan if b == options.bound else plan_mean_release(fd, replace(base, bound=b)) for b in BOUNDS}
    left, right = st.columns(2)
    with left:
        st.markdown(f"**Sensitivity ({gq.sensitivity_norm})**")
        st.dataframe(pd.DataFrame({"bound": [gq.bound_labels[b] for b in BOUNDS],
                                   "Delta_1": [gq.sensitivity_for(b) for b in BOUNDS]}),
                     hide_index=True, width="stretch")
        st.caption(entry.basis.clip_summary(plan, base, "persons" if g.person_column else "curves"))
    with right:
        st.markdown("**Laplace noise scales: both bounds**")
        st.dataframe(pd.DataFrame({"bound": list(BOUNDS),
                                   "largest b": [p.noise_scales.max() for p in plans.values()],
                                   "smallest b > 0": [p.noise_scales[p.noise_scales > 0].min()
                                                      if np.any(p.noise_scales > 0) else 0.0
                                                      for p in plans.values()],
                                   "E sq. L2 error": [p.expected_sq_l2_error for p in plans.values()]}),
                     hide_index=True, width="stretch")
        st.caption(f"In use: {gq.bound_label}; {entry.scale_rule}. Laplace scale b: density exp(-|x|/b)/(2b), "
                   "variance 2 b^2.")


def tables_label(plan) -> str:
    """The tables' expander label: the numbers in use, so they show while the tables are closed."""
    noise = f"sigma = {plan.sigma:.4g}" if plan.sigma is not None else f"largest b = {plan.noise_scales.max():.4g}"
    both = "both bounds x both calibrations" if plan.sigma is not None else "both bounds"
    return f"Sensitivity Delta = {plan.sensitivity:.4g} and noise scale {noise} in use: tables for {both}"


def render(plan, fd, base, g, options) -> None:
    """Sensitivity beside noise scale: sigma for Gaussian noise, Laplace scales otherwise. On demand:
    the two tables and their notes are nine elements that every slider move would send again."""
    tables = lazy_expander(tables_label(plan), "mean_tables_open")
    if not tables.open:
        return
    with tables:
        if plan.sigma is not None:
            _gaussian(plan, g, options)
        else:
            _laplace(plan, fd, base, g, options)
