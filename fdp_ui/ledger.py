"""The session's privacy-budget ledger: where it lives, how it is changed, the sidebar meter.

One :class:`fdp_core.accounting.Ledger` per browser session, in ``st.session_state``,
with the committed releases next to it. The ledger only changes inside callbacks (budget
widgets, presets, commit button), which run before the script: the sidebar meter drawn at
the top of every page therefore always shows the state after the user's last action.
"""

from __future__ import annotations

import math

import streamlit as st

from fdp_core.accounting import KINDS, Ledger
from fdp_core.errors import FdpError
from fdp_core.presets import preset

LEDGER_KEY = "fdp_ledger"
RELEASES_KEY = "fdp_releases"
MESSAGE_KEY = "fdp_ledger_message"
# A default budget that allows a typical exploration: a few commits at the sidebar's default
# epsilon = 1 (a discrete-Gaussian mean is charged about 1.09), and ten Gaussian commits at the
# default delta = 1e-5 before delta runs out (a budget equal to one release's delta is used up
# by the first Gaussian commit).
DEFAULT_EPSILON_TOTAL = 4.0
DEFAULT_DELTA_TOTAL = 1e-4
# A preset's delta is a session total; each release gets a tenth of it, so one Gaussian commit
# does not use it up.
PRESET_RELEASES_PER_DELTA = 10
DELTA_TOTAL_CHOICES = (0.0, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-10, 0.01, 0.05, 0.1)
FILTER_LABELS = {"basic": "basic: sum of epsilon and of delta (default)",
                 "zcdp": "zCDP: sum of rho (tighter for many Gaussian releases; needs delta > 0)"}
KIND_LABELS = {"mean": "mean", "kde": "density (KDE)", "pca": "principal components"}
# Budget widgets on the Release page; defaults set here so every page sees the same budget.
BUDGET_DEFAULTS = {"rel_budget_epsilon": DEFAULT_EPSILON_TOTAL, "rel_budget_delta": DEFAULT_DELTA_TOTAL,
                   "rel_filter": "basic", "rel_split_on": False, "rel_split_mean": 1.0, "rel_split_kde": 1.0,
                   "rel_split_pca": 1.0}


def get() -> Ledger:
    """The session ledger (created with the default budget on first use)."""
    if LEDGER_KEY not in st.session_state:
        st.session_state[LEDGER_KEY] = Ledger(DEFAULT_EPSILON_TOTAL, DEFAULT_DELTA_TOTAL)
    return st.session_state[LEDGER_KEY]


def releases() -> list:
    """Committed releases (fdp_core.export.CommittedRelease), oldest first."""
    return st.session_state.setdefault(RELEASES_KEY, [])


def record(release) -> None:
    releases().append(release)


def locked() -> bool:
    """The budget is fixed once something was committed: a filter's guarantee needs it fixed."""
    return bool(get().entries)


def _budget_from_widgets() -> Ledger:
    ss = st.session_state
    split = None
    if ss.get("rel_split_on"):
        split = {kind: float(ss.get(f"rel_split_{kind}", 1.0)) for kind in KINDS}
    return Ledger(float(ss["rel_budget_epsilon"]), float(ss["rel_budget_delta"]), split, ss["rel_filter"])


def update_budget() -> None:
    """Callback of the budget widgets: rebuild the (empty) ledger with the new budget."""
    if locked():
        st.session_state[MESSAGE_KEY] = ("error", "The budget is locked after the first commit.")
        return
    try:
        st.session_state[LEDGER_KEY] = _budget_from_widgets()
        st.session_state.pop(MESSAGE_KEY, None)
    except FdpError as exc:
        st.session_state[MESSAGE_KEY] = ("error", f"Budget not changed: {exc}")


def nearest_choice(value: float, choices) -> float:
    """The allowed choice closest to ``value`` on a log scale, never above it when one is not.

    A preset's epsilon is a session total: rounding the per-release epsilon up would make
    the very first release at it exceed the budget.
    """
    positive = [c for c in choices if c > 0]
    below = [c for c in positive if c <= value * (1 + 1e-12)]
    return min(below or positive, key=lambda c: abs(math.log(c) - math.log(value)))


def apply_preset(name: str) -> None:
    """Callback: a harm-level preset sets the session budget and the global epsilon/delta."""
    from . import sidebar

    p = preset(name)
    if not locked():
        st.session_state["rel_budget_epsilon"] = float(p.epsilon)
        st.session_state["rel_budget_delta"] = float(p.delta)
        update_budget()
    else:
        st.session_state[MESSAGE_KEY] = ("warning", "The budget is locked after the first commit; the preset only "
                                                    "set the global epsilon and delta.")
    sidebar.apply({"g_epsilon": nearest_choice(p.epsilon, sidebar.EPSILON_CHOICES),
                   "g_delta": nearest_choice(p.delta / PRESET_RELEASES_PER_DELTA, sidebar.DELTA_CHOICES)})


def apply_chosen_preset() -> None:
    """Callback of the preset selector: a chosen preset applies at once."""
    apply_preset(st.session_state["rel_preset"])


def reset() -> None:
    """Callback: forget the ledger and the committed releases (not their privacy loss)."""
    st.session_state.pop(LEDGER_KEY, None)
    st.session_state.pop(RELEASES_KEY, None)
    st.session_state["rel_reset_confirm"] = False
    update_budget()


def meter_text(ledger: Ledger) -> str:
    spent, total, left = ledger.spent(), ledger.total(), ledger.remaining()
    text = (f"Budget: spent epsilon {spent.epsilon:.3g} of {total.epsilon:g}, delta {spent.delta:.2g} of "
            f"{total.delta:g} ({len(ledger.entries)} release(s)); remaining epsilon {left.epsilon:.3g}, "
            f"delta {left.delta:.2g}.")
    if ledger.filter == "zcdp":
        text += f" zCDP filter: rho {spent.rho:.3g} of {total.rho:.3g} spent."
    return text


def render_meter(container) -> None:
    """Spent / total / remaining budget, drawn in the sidebar of every page."""
    ledger = get()
    usage = ledger.usage()
    container.markdown("**Privacy budget**")
    container.progress(min(max(usage["total"], 0.0), 1.0), text=f"{min(usage['total'], 1.0):.0%} used")
    container.caption(meter_text(ledger))
    if ledger.split is not None:
        container.caption("Split: " + "; ".join(
            f"{KIND_LABELS[k]} {min(usage[k], 1.0):.0%} of its {ledger.split[k]:.0%} share used" for k in KINDS
            if ledger.split[k] > 0))
    if usage["total"] >= 1.0 - 1e-9:
        spent, total = ledger.spent(), ledger.total()
        if ledger.filter == "basic" and spent.epsilon < total.epsilon * (1 - 1e-9):
            # Only delta ran out: pure epsilon-DP releases (delta = 0) still fit.
            container.warning(f"Delta budget used up: only pure epsilon-DP releases (ICLP, FRL, Bernstein, ICLP-KDE, "
                              f"PCA) can still be committed; epsilon {total.epsilon - spent.epsilon:.3g} remains.")
        else:
            container.warning("Budget exhausted: no further release can be committed.")
