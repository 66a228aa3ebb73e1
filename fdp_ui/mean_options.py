"""The Mean page's own controls: one mechanism or all of them, the bound, the calibration,
the draws, the ICLP penalty psi (with the privacy-safe PSS defaults), M and Bernstein's lattice.
The settings' keys are mean_controls.KEYS, shared with the Trade-offs and Release pages."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import streamlit as st

from fdp_core.explore.tuning import PSS_MECHANISMS, pss_defaults
from fdp_core.mechanisms.calibration import CALIBRATIONS
from fdp_core.registry import MEAN_REGISTRY, mean_mechanism, truncating_mechanisms
from fdp_core.releases.mean import MEAN_MECHANISMS, MECHANISM_LABELS
from fdp_core.sensitivity import BOUNDS

from . import sidebar, state
from .mean_controls import KEYS

LOG_PSI_RANGE = (-8.0, 3.0)
# This page's own controls; the settings' controls (mechanism, bound, ...) are in mean_controls.
DEFAULTS = {"mean_compare": False, "mean_style": "draws", "mean_draws": 20, "mean_compare_draws": 5}


@dataclass(frozen=True)
class MeanOptions:
    mechanism: str
    compare: bool
    shown: tuple  # the mechanisms on screen
    bound: str
    calibration: str
    style: str  # "draws" or "band"
    n_draws: int


def init_state() -> None:
    for key, value in DEFAULTS.items():
        st.session_state[key] = st.session_state.get(key, value)


def _apply_pss(eta: float, psi: float) -> None:
    sidebar.apply({"g_eta": eta})
    st.session_state[KEYS["psi"]] = float(np.clip(math.log10(psi), *LOG_PSI_RANGE))


def render(ds, g) -> MeanOptions:
    top = st.columns([2, 1])
    mechanism = top[0].selectbox("mechanism", MEAN_MECHANISMS, key=KEYS["mechanism"],
                                 format_func=MECHANISM_LABELS.get, disabled=st.session_state["mean_compare"],
                                 help=" ".join(f"{m.label}: {m.privacy} ({m.noise} noise)."
                                               for m in MEAN_REGISTRY.values())
                                 + " In comparison mode every mechanism is shown.")
    compare = top[1].toggle("compare all mechanisms", key="mean_compare",
                            help="Overlay every mechanism's sanitized means at the current settings, with their "
                                 "expected errors, sensitivities and noise scales.")
    shown = MEAN_MECHANISMS if compare else (mechanism,)

    if not compare and not mean_mechanism(mechanism).uses_delta:
        # One delta control only (the sidebar's); a pure mechanism says it does not read it (issue 28).
        st.caption(f"delta = 0: pure epsilon-DP, delta does not apply (the sidebar's delta = {g.delta:g} is used by "
                   "Gaussian mechanisms only).")

    c1, c2, c3, c4 = st.columns(4)
    bound = c1.radio("sensitivity bound", BOUNDS, key=KEYS["bound"], horizontal=True,
                     format_func=lambda b: b if compare else mean_mechanism(mechanism).bound_name(b),
                     help=" ".join(f"{m}: {MEAN_REGISTRY[m].bound_help}" for m in shown) if compare
                     else mean_mechanism(mechanism).bound_help)
    calibration = c2.radio("calibration (Gaussian)", CALIBRATIONS, key=KEYS["calibration"], horizontal=True,
                           disabled=not any(MEAN_REGISTRY[m].uses_delta for m in shown),
                           help="analytic (Balle & Wang 2018): the smallest valid sigma, any epsilon. classical: "
                                "sigma = Delta sqrt(2 log(2/delta))/epsilon, valid only for epsilon <= 1.")
    if compare:
        style = "draws"
        n_draws = c4.slider("draws per mechanism", 1, 50, key="mean_compare_draws")
    else:
        style = c3.radio("show", ("draws", "band"), key="mean_style", horizontal=True,
                         help="Several independent sanitized releases, or their pointwise 5-95% band.")
        n_draws = c4.slider("sanitized draws", 1, 200, key="mean_draws")

    if any(MEAN_REGISTRY[m].penalty == "psi" for m in shown):
        _psi_controls(ds, g, mechanism, compare)
    if any("M" in MEAN_REGISTRY[m].fields for m in shown):
        st.number_input(f"M ({', '.join(truncating_mechanisms())}: number of eigenfunctions)", min_value=1,
                        max_value=1000, step=1, key=KEYS["M"])
    if any("K" in MEAN_REGISTRY[m].fields for m in shown):
        b1, b2, b3 = st.columns(3)
        b1.number_input("K (Bernstein lattice: K + 1 points)", min_value=1, max_value=500, step=1, key=KEYS["K"])
        b2.number_input("lo (public lower bound of curve values)", format="%.4g", key=KEYS["lo"])
        b3.number_input("hi (public upper bound of curve values)", format="%.4g", key=KEYS["hi"])
        st.caption("Bernstein clips every curve value to [lo, hi] (choose the range from domain knowledge, not from "
                   "the data) and ignores tau.")
    return MeanOptions(mechanism, compare, tuple(shown), bound, calibration, style, n_draws)


def _psi_controls(ds, g, mechanism: str, compare: bool) -> None:
    left, right = st.columns([2, 1])
    log_psi = left.slider("log10 psi (ICLP penalty)", *LOG_PSI_RANGE, step=0.05, key=KEYS["psi"],
                          help="Penalty of the ICLP means (the sidebar's phi is the Gaussian mechanism's). Larger "
                               "psi = smoother estimate, smaller sensitivity, more bias.")
    if not compare and mechanism in PSS_MECHANISMS:
        n_pss = state.n_persons(ds) if g.person_column else ds.fd.n  # the sensitivity's n (persons)
        pss_eta, pss_psi = pss_defaults(g.kernel, g.nu, n_pss, g.epsilon, mechanism=mechanism)
        right.button("privacy-safe defaults (PSS)", key="mean_pss", on_click=_apply_pss, args=(pss_eta, pss_psi),
                     help="Data-free choice of eta and psi (Lin & Reimherr): eta = 1 + 2/beta for eigenvalues "
                          "decaying like j^(-beta) (Matern nu: beta = 2 nu + 1; Gaussian kernel: eta = 1.5), "
                          "psi = 1/(n epsilon^2). Offered for the quadratic penalty (ICLP-QR) only.")
        right.caption(f"PSS: eta = {pss_eta:.4g}, psi = {pss_psi:.3g}. Uses n = {n_pss} "
                      f"{'persons' if g.person_column else 'curves'}: valid only if the number of persons is public.")
    else:
        right.caption("Privacy-safe defaults (PSS) are not offered here: their theory covers the quadratic penalty "
                      "(ICLP-QR, Gaussian) only; for ICLP-AR they can make the error grow with epsilon.")
    left.caption(f"psi = {10 ** log_psi:.3g}; eta = {g.eta:g} (sidebar). ICLP-QR needs eta > 1.")
