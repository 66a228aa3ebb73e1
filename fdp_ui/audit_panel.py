"""The Release page's audit section: the black-box privacy-loss audit of the Mean page's mechanism."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from fdp_core.errors import FdpError
from fdp_core.publish import export

from . import mean_controls

AUDIT_KEY = "rel_audit_result"


def _run(g, ds, runs: int) -> None:
    try:
        settings = mean_controls.settings(g)
        with st.spinner("auditing..."):
            n_audit = export.prepare_mean_commit(ds.fd, settings).plan.n if settings.value_range is not None \
                or settings.person_column else ds.fd.n
            st.session_state[AUDIT_KEY] = (settings, export.audit_mean_mechanism(settings, ds.fd.grid_points, n_audit,
                                                                                 n_select=runs // 4, n_test=runs))
    except FdpError as exc:
        st.session_state[AUDIT_KEY] = (None, str(exc))


def _show(g, audited_settings, outcome, runs: int) -> None:
    rows = []
    for name, res in (("calibrated mechanism", outcome.result),
                      (f"control: noise x {outcome.control_factor:g}", outcome.control)):
        rows.append({"run": name, "worst event": res.event, "P(event | D) >= ": res.p_lower,
                     "P(event | D') <= ": res.q_upper,
                     "e^eps P(D') + delta": math.exp(res.epsilon) * res.q_upper + res.delta,
                     "violation": res.violation, "flagged": res.flagged})
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="rel_audit_table")
    st.caption(f"Pair: {outcome.pair}. Statistic: {outcome.statistic}. Flagged = with probability >= "
               f"1 - 2e-6 the (epsilon = {outcome.epsilon:g}, delta = {outcome.delta:g}) claim is violated.")
    if outcome.result.flagged:
        st.error("The calibrated mechanism was flagged: its noise is too small for the claimed guarantee.")
    else:
        st.success("The calibrated mechanism passed: no event violates the claimed guarantee.")
    if not outcome.control.flagged:
        st.caption("The 0.9x control was not flagged either: with this many runs the audit only sees violations "
                   f"larger than about {3 / math.sqrt(runs):.1g} in probability, and a 10% under-noising at this "
                   "epsilon and delta is smaller. Try more runs; the library's test suite runs the controls where "
                   "they are flagged.")
    if audited_settings != mean_controls.settings(g):
        st.caption("Settings changed since this audit: run it again for the current mechanism.")


def render(g, ds) -> None:
    """Section 5 (below its header): run the audit on a worst-case pair from public parameters, show it."""
    st.caption("Audits the mean mechanism currently selected (Mean page and sidebar) on a worst-case neighbouring "
               "pair built from public parameters only (grid, n, tau, kernel, penalty): no data are used. Noise from "
               "the numpy sampler with the calibrated scales. Larger samples see smaller violations and take longer.")
    runs = st.select_slider("test runs per data set and direction", (100_000, 200_000, 500_000, 1_000_000),
                            value=200_000, key="rel_audit_runs", format_func=lambda v: f"{v:,}")
    if st.button("Run the audit", key="rel_audit"):
        _run(g, ds, runs)
    if AUDIT_KEY in st.session_state:
        audited_settings, outcome = st.session_state[AUDIT_KEY]
        if audited_settings is None:
            st.error(f"Cannot audit: {outcome}")
        else:
            _show(g, audited_settings, outcome, runs)
