"""The Trade-offs page's choice of phi and rho: the PCV score over a grid (looks at the data,
not DP) against the privacy-safe PSS defaults, with buttons that set them in the sidebar
(fdp_core/explore/tuning.py), then the private selection (fdp_ui/private_selection.py)."""

from __future__ import annotations

import math
from dataclasses import asdict

import numpy as np
import streamlit as st

from fdp_core.errors import FdpError
from fdp_core.explore import sweeps, tuning
from fdp_core.explore.tradeoff_figures import pcv_figure
from fdp_core.publish.views import NONPRIVATE_VIEWS
from fdp_core.registry import mean_mechanism
from fdp_core.releases.mean import MEAN_MECHANISMS, MECHANISM_LABELS, MeanSettings

from . import live_chart, private_selection, sidebar, state
from .tradeoff_sweep import data_key

ETA_RANGE = (1.0, 4.0)
PENALTY_SLIDERS = private_selection.PENALTY_SLIDERS
PCV_SIZES = {30: "30 x 30", 15: "15 x 15", 8: "8 x 8 (fast)"}


@st.cache_data(show_spinner=False, max_entries=16)
def _pcv(data_key, settings_key, size, folds, _fd):
    s = MeanSettings(**dict(settings_key))
    return tuning.pcv_grid(_fd, s, np.logspace(-8, 1, size), np.logspace(-2.5, 0.3, size), folds=folds)


def _snap(value: float, lo: float, hi: float, step: float) -> float:
    return float(np.clip(round(value / step) * step, lo, hi))


def _snap_penalty(field: str, penalty: float) -> float:
    """log10 of ``penalty`` on the steps of the slider of settings field ``field`` (phi or psi)."""
    slider = PENALTY_SLIDERS[field]
    return round(_snap(math.log10(penalty), slider.lo, slider.hi, slider.step), slider.digits)


def _apply_pcv(mechanism: str, penalty: float, rho: float) -> None:
    field = mean_mechanism(mechanism).penalty
    sidebar.apply({PENALTY_SLIDERS[field].key: _snap_penalty(field, penalty), "g_rho": float(rho)})


def _apply_pss(eta: float, psi: float) -> None:
    # One PSS penalty for every penalised mean: the sidebar's phi and the Mean page's psi.
    sidebar.apply({"g_eta": round(_snap(eta, *ETA_RANGE, 0.05), 2),
                   **{slider.key: _snap_penalty(field, psi) for field, slider in PENALTY_SLIDERS.items()}})


def _heatmap(pcv, penalty_name: str, marks: list, mechanism: str, eta: float):
    """log10 PCV score over the (penalty, rho) grid, the optimum, the current setting and PSS marked."""
    return pcv_figure(pcv.penalties, pcv.rhos, pcv.scores, penalty_name=penalty_name, marks=marks,
                      title=f"{pcv.folds}-fold PCV score, {MECHANISM_LABELS[mechanism]}, eta = {eta:g}")


def _show_pcv(pcv, penalty_name: str, marks: list, mechanism: str, eta: float) -> None:
    state.note_view(NONPRIVATE_VIEWS["pcv"])
    live_chart.show(_heatmap(pcv, penalty_name, marks, mechanism, eta), key="to_pcv_heatmap")
    st.error(f"PCV optimum {penalty_name} = {pcv.best_penalty:.3g}, rho = {pcv.best_rho:.3g}. {pcv.flag}.")
    edges = [f"{name} = {value:.3g} is the grid's {'smallest' if value == grid[0] else 'largest'}"
             for name, value, grid in ((penalty_name, pcv.best_penalty, pcv.penalties), ("rho", pcv.best_rho, pcv.rhos))
             if np.isclose(value, grid[0]) or np.isclose(value, grid[-1])]
    if edges:
        st.warning("The PCV optimum lies on the edge of the grid (" + "; ".join(edges) + "): the best value may lie "
                   "outside the grid searched, so treat it as a bound, not an optimum.")
    st.caption("Score = (1/K) sum_k ||mu_hat(-k) - mean of fold k||^2 + noise variance of the training-fold release "
               "(closed form, no Monte Carlo).")


def render(fd, settings: MeanSettings, g) -> None:
    st.header("Choosing phi and rho: PCV (looks at the data) vs PSS (privacy-safe)")
    pcv_choices = [m for m in tuning.PCV_MECHANISMS if m in MEAN_MECHANISMS]
    a, b, c = st.columns(3)
    pcv_mechanism = a.selectbox("PCV for", pcv_choices, key="to_pcv_mechanism", format_func=MECHANISM_LABELS.get,
                                help="The quadratic-penalty means: phi (Gaussian) or psi (ICLP-QR).")
    size = b.radio("grid", list(PCV_SIZES), key="to_pcv_size", format_func=PCV_SIZES.get, horizontal=True)
    max_folds = max(2, min(20, fd.n))
    st.session_state["to_pcv_folds"] = min(int(st.session_state["to_pcv_folds"]), max_folds)  # small data sets
    folds = c.number_input("folds K", min_value=2, max_value=max_folds, step=1, key="to_pcv_folds")
    penalty_name = mean_mechanism(pcv_mechanism).penalty  # the settings field: phi or psi
    # PSS's n is the sensitivity's: persons when a person column is in use, curves otherwise (issue 38).
    n_pss = state.n_persons() if g.person_column else fd.n
    unit = f"persons (column '{g.person_column}')" if g.person_column else "curves"
    pss = tuning.pss_defaults(g.kernel, g.nu, n_pss, g.epsilon, mechanism=pcv_mechanism)
    try:
        pcv = _pcv(data_key(fd), tuple(asdict(sweeps.settings_for(settings, pcv_mechanism)).items()), int(size),
                   int(folds), fd)
    except FdpError as exc:
        pcv = None
        st.warning(f"PCV cannot run with these settings: {exc}")
    if pcv is not None:
        marks = [("PCV optimum (data-dependent: not DP)", pcv.best_penalty, pcv.best_rho, "x", "#d62728"),
                 ("current setting", getattr(settings, penalty_name), g.rho, "star", "white"),
                 ("PSS (privacy-safe) penalty at the current rho", pss[1], g.rho, "diamond", "#17becf")]
        _show_pcv(pcv, penalty_name, marks, pcv_mechanism, g.eta)
    a, b = st.columns(2)
    a.button("apply PCV optimum (not DP)", key="to_apply_pcv", disabled=pcv is None, on_click=_apply_pcv,
             args=(pcv_mechanism, pcv.best_penalty, pcv.best_rho) if pcv is not None else None,
             help="Sets the sidebar's rho and the penalty (phi in the sidebar; psi on the Mean page for ICLP-QR). "
                  "The choice looked at the data: releases tuned this way are not differentially private.")
    b.button("apply PSS defaults (privacy-safe)", key="to_apply_pss", on_click=_apply_pss, args=pss,
             help="eta = 1 + 2/beta (Matern nu: beta = 2 nu + 1; Gaussian kernel: 1.5) and penalty 1/(n epsilon^2), "
                  "set as the sidebar's eta and phi and the ICLP psi. Uses no data, only n (which must be public). "
                  "For the quadratic-penalty means (Gaussian, ICLP-QR) only: not valid for ICLP-AR.")
    b.caption(f"PSS: eta = {pss[0]:.4g}, penalty = {pss[1]:.3g} (snapped to the sliders' steps). Valid only if n = "
              f"{n_pss} {unit} is public.")
    private_selection.render(fd, sweeps.settings_for(settings, pcv_mechanism), pcv_mechanism, int(folds),
                             data_key(fd))
