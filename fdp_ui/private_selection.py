"""Trade-offs page section: choosing (penalty, rho) with the exponential mechanism (METHODS 16), beside
PCV (looks at the data, spends nothing, so the release is not DP) and PSS (data-free)."""

from __future__ import annotations

import math
from dataclasses import asdict, replace
from typing import NamedTuple

import numpy as np
import pandas as pd
import streamlit as st

from fdp_core.errors import FdpError
from fdp_core.releases.mean import MeanSettings
from fdp_core.explore.private_selection import (SELECTION_BOUNDS, commit_selection, pcv_private_scores, score_sensitivity,
                                        selection_entry, selection_folds, selection_n, selection_probabilities,
                                        selection_tau)
from fdp_core.registry import mean_mechanism

from . import ledger, mean_controls, sidebar
from .layout import lazy_expander


class PenaltySlider(NamedTuple):
    """Where the app sets a penalty: the session key of its log10 slider, the slider's range and step,
    and the decimals a chosen value is rounded to."""

    key: str
    lo: float
    hi: float
    step: float
    digits: int


# By settings field (a registry entry's ``penalty``): phi is the sidebar's, psi the Mean page's.
PENALTY_SLIDERS = {"phi": PenaltySlider("g_log_phi", -8.0, 2.0, 0.1, 1),
                   "psi": PenaltySlider(mean_controls.KEYS["psi"], -8.0, 3.0, 0.05, 2)}

GRID_SIZE = 8
PENALTIES = np.logspace(-8, 1, GRID_SIZE)
RHOS = np.logspace(-2.5, 0.3, GRID_SIZE)
BOUND_HELP = ("range (default): the score changes' spread across the grid, 4 tau^2 (K+1)/(K (K-1) m), attained "
              "up to O(1/m). linear: 2 x 4 tau^2 (2m-1)/((K-1) m^2), the standard exponential mechanism with the "
              "exact linear-shrinkage sensitivity. general: 2 x 16 tau^2/n (any non-expansive shrinkage).")
COMPARISON = pd.DataFrame([
    {"approach": "PCV", "looks at the data": "yes", "budget spent": "none: the release is then NOT DP",
     "yields": "the data's best grid point"},
    {"approach": "PSS", "looks at the data": "no (uses the public n)", "budget spent": "none",
     "yields": "a rate-optimal default, not tuned to these data"},
    {"approach": "private selection", "looks at the data": "yes, through the exponential mechanism",
     "budget spent": "its epsilon, charged to the ledger (rho = epsilon^2/8)",
     "yields": "a grid point near the PCV optimum with the probability shown; the chosen point is public"},
])


@st.cache_data(show_spinner=False, max_entries=16)
def _scores(data_key, settings_key, folds, _fd):
    """PCV scores on the public grid (cached per data set and settings; ``_fd`` is not hashed)."""
    return pcv_private_scores(_fd, MeanSettings(**dict(settings_key)), PENALTIES, RHOS, folds=folds)


def _commit(fd, settings, folds, epsilon, bound, mechanism):
    """Callback: charge the stored budget (the first commit stores the draft), select, complete."""
    try:
        entry = selection_entry(fd, settings, PENALTIES, RHOS, epsilon=epsilon, folds=folds, bound=bound)
        budget, note = ledger.charge_account(entry)
        selection, entry = commit_selection(budget, fd, settings, PENALTIES, RHOS, epsilon=epsilon, folds=folds,
                                            bound=bound, entry=entry)
        budget.complete(entry.id)
    except FdpError as exc:
        st.session_state["sel_message"] = ("error", str(exc))
        return
    slider = PENALTY_SLIDERS[mean_mechanism(mechanism).penalty]
    sidebar.apply({"g_rho": float(selection.chosen_rho),
                   slider.key: round(float(np.clip(math.log10(selection.chosen_penalty), slider.lo, slider.hi)),
                                     slider.digits)})
    st.session_state["sel_message"] = ("success", f"selected penalty {selection.chosen_penalty:.3g}, rho "
                                                  f"{selection.chosen_rho:.3g}; charged epsilon {entry.epsilon:g} "
                                                  f"(ledger entry {entry.id}). These values are now public.")


SELECTION_DEFAULTS = {"sel_epsilon": 0.1, "sel_bound": "range"}


def keep() -> None:
    """The selection's widgets are drawn only while their expander is open: give them their defaults
    on first use and keep their values alive while it is closed (as mean_controls.keep() does).
    Called at the top of the Trade-offs page, before anything can stop the run."""
    ss = st.session_state
    for key, value in SELECTION_DEFAULTS.items():
        ss[key] = ss.get(key, value)


def render(fd, settings, mechanism: str, folds: int, data_key: str) -> None:
    """The private-selection block for the current settings (``settings``: MeanSettings of ``mechanism``),
    built only while its expander is open (it is secondary, and an epsilon move would re-send it)."""
    exp = lazy_expander("Private selection: spend budget on the choice", "to_private_selection_open")
    if not exp.open:
        return
    with exp:
        _render(fd, settings, mechanism, folds, data_key)


def _render(fd, settings, mechanism: str, folds: int, data_key: str) -> None:
    st.dataframe(COMPARISON, hide_index=True, width="stretch")
    a, b = st.columns(2)
    epsilon = a.select_slider("epsilon spent on the selection", sidebar.EPSILON_CHOICES, key="sel_epsilon",
                              format_func=lambda v: f"{v:g}")
    bound = b.radio("score sensitivity", SELECTION_BOUNDS, key="sel_bound", horizontal=True, help=BOUND_HELP)
    if settings.tau_from_data:
        st.warning("The private selection needs a public tau.")
        return
    try:
        s = replace(settings, mechanism=mechanism)
        m, fold_index = selection_folds(selection_n(fd, s), folds)  # folds over the file's persons
        tau = selection_tau(fd, s)
        scores = _scores(data_key, tuple(asdict(s).items()), int(folds), fd)
    except FdpError as exc:
        st.warning(f"private selection cannot run with these settings: {exc}")
        return
    scale = score_sensitivity(tau, m, len(fold_index), bound)
    probs = selection_probabilities(scores, float(epsilon), scale)
    best = int(np.argmin(scores))
    order = np.argsort(scores.ravel())
    top5 = float(probs[order[:5]].sum())
    expected = float(probs @ scores.ravel())
    c1, c2, c3 = st.columns(3)
    c1.metric("P(PCV-optimal grid point)", f"{probs[best]:.3f}")
    c2.metric("P(one of the 5 best)", f"{top5:.3f}")
    c3.metric("expected score / best score", f"{expected / float(scores.ravel()[best]):.3g}")
    st.caption(f"{GRID_SIZE} x {GRID_SIZE} public grid, {len(fold_index)} folds of {m} persons each, by their order "
               f"in the file (i mod K); score scale {scale:.3g}. The probabilities use the data's scores: analyst view. "
               "Committing draws the choice with fresh randomness, charges the ledger, and applies it to the sidebar. "
               "The method: docs/METHODS.md, section 16.")
    st.button("select privately and charge the ledger", key="sel_commit", on_click=_commit,
              args=(fd, replace(settings, mechanism=mechanism), int(folds), float(epsilon), bound, mechanism))
    message = st.session_state.pop("sel_message", None)
    if message:
        getattr(st, message[0])(message[1])
