"""The Release page's budget section: the stored budget of the data set, or the draft before it.

Budget widgets always show the ledger in force: the stored budget (fixed), else the draft, which
the widgets' callback keeps equal to them (a data set switched to one without a stored budget
shows its draft, never a previous data set's stored values).
"""

from __future__ import annotations

import streamlit as st

from fdp_core.budget import ledger_store
from fdp_core.explore.presets import DISCLAIMER, PRESETS
from fdp_core.registry import pure_mechanism_names

from . import commit_checks, sidebar
from . import ledger as ledger_ui


def sync_widgets() -> None:
    """Set the budget widgets to the ledger in force (before they are drawn)."""
    led = ledger_ui.get()
    values = {"rel_budget_epsilon": led.epsilon_total, "rel_budget_delta": led.delta_total,
              "rel_filter": led.filter, "rel_split_on": led.split is not None,
              **{f"rel_split_{k}": (1.0 if led.split is None else round(100 * led.split[k], 6))
                 for k in ("mean", "kde", "pca")}}
    st.session_state.update(values)


def _where(led) -> None:
    if ledger_ui.error():
        st.error(f"The ledger database cannot be used, so nothing can be committed: {ledger_ui.error()}")
    elif ledger_ui.locked():
        st.caption(f"{ledger_ui.where_text(led)} It can only be spent: not raised, not reset. Back it up by copying "
                   "the database (see the README).")
    else:
        st.caption(ledger_ui.where_text(led) + " It is shared by every browser session and the command line.")


def _preset() -> None:
    choice = st.selectbox("preset by harm level", [p.name for p in PRESETS], key="rel_preset", index=None,
                          placeholder="choose a harm level (applies at once)", on_change=ledger_ui.apply_chosen_preset)
    chosen = next((p for p in PRESETS if p.name == choice), None)
    if chosen is not None:
        per_release = ledger_ui.nearest_choice(chosen.delta / ledger_ui.PRESET_RELEASES_PER_DELTA,
                                               sidebar.DELTA_CHOICES)
        st.caption(f"Session budget epsilon = {chosen.epsilon:g}, delta = {chosen.delta:g}; each release: delta "
                   f"{per_release:g}. {chosen.description}")
        st.button("apply again", key="rel_apply_preset", on_click=ledger_ui.apply_preset, args=(choice,),
                  help="Sets the session budget and the global epsilon/delta (nearest slider values) in the sidebar.")
    st.caption(f"**{DISCLAIMER}**")


def _budget_widgets(led) -> None:
    disabled = ledger_ui.locked()
    st.number_input("total epsilon", min_value=0.01, max_value=100.0, step=0.1, format="%.4g",
                    key="rel_budget_epsilon", on_change=ledger_ui.update_budget, disabled=disabled)
    st.selectbox("total delta", ledger_ui.DELTA_TOTAL_CHOICES, key="rel_budget_delta",
                 on_change=ledger_ui.update_budget, disabled=disabled, format_func=lambda v: f"{v:g}",
                 help=f"0 = pure epsilon-DP budget: only pure mechanisms ({', '.join(pure_mechanism_names())}) fit.")
    st.radio("privacy filter", list(ledger_ui.FILTER_LABELS), key="rel_filter", on_change=ledger_ui.update_budget,
             disabled=disabled, format_func=ledger_ui.FILTER_LABELS.get,
             help="Parameters chosen after seeing earlier outputs need a filter: a release is refused once the "
                  "running sum would exceed the budget.")
    split_on = st.toggle("split the budget across mean / density / components", key="rel_split_on",
                         on_change=ledger_ui.update_budget, disabled=disabled)
    if split_on:
        cols = st.columns(3)
        for col, kind in zip(cols, ("mean", "kde", "pca")):
            col.number_input(f"weight: {ledger_ui.KIND_LABELS[kind]}", min_value=0.0, max_value=100.0, step=1.0,
                             key=f"rel_split_{kind}", on_change=ledger_ui.update_budget, disabled=disabled)
    if disabled:
        st.caption("The budget is stored and fixed.")
    else:
        # The same look-up as the commit's, before the click: data that cannot be charged (unregistered,
        # another unit's budget) cannot have a budget stored either, so say why instead of refusing after it.
        blocker = commit_checks.current_charge_blocker(led, None)
        st.button("create the budget now (then it is fixed)", key="rel_create_budget",
                  on_click=ledger_ui.create_budget, disabled=blocker is not None,
                  help=blocker or "Otherwise the first commit stores it. Either way it can never be raised or reset "
                                  "from the app.")
        if blocker:
            st.caption(f"No budget can be stored yet: {blocker}.")


def render():
    """Section 1 (below its header): which budget, where it lives, presets and the budget widgets.
    Returns the ledger in force after the budget choice."""
    stored_names = ledger_ui.budget_names()
    if st.session_state.get(ledger_ui.NAME_KEY) not in stored_names:
        st.session_state[ledger_ui.NAME_KEY] = ledger_store.DEFAULT_BUDGET
    st.selectbox("budget of this data set", stored_names, key=ledger_ui.NAME_KEY,
                 help="Budgets are created once per data set. The custodian can create another named budget on the "
                      f"command line: {ledger_ui.NEW_BUDGET_COMMAND}")
    led = ledger_ui.get()
    _where(led)
    left, right = st.columns([1, 1])
    with left:
        _preset()
    with right:
        _budget_widgets(led)
    message = st.session_state.pop(ledger_ui.MESSAGE_KEY, None)
    if message:
        getattr(st, message[0])(message[1])
    st.caption(ledger_ui.meter_text(led))
    return led
