"""The Plan page's commit (issue 29): the whole plan as one act, one bundle, one report.

The same checks as the Release page (fdp_ui.commit_checks: the unit of privacy, enough
persons, a declared range, the ledger usable) and the budget check of the whole plan: every
part's charge against what is left, together. In sealed mode the private file is read here,
once (fdp_ui.sealed.commit_data), and the charge goes to the private data's registered data
set. The committed plan is offered as one zip (fdp_core.publish.plan_commit).
"""

from __future__ import annotations

import json

import streamlit as st

from fdp_core.budget.accounting import Ledger
from fdp_core.errors import FdpError
from fdp_core.explore.plan import ReleasePlan, make_plan
from fdp_core.publish.plan_commit import check_fits, commit_plan, export_plan_zip

from . import commit_checks, plots, sealed, state
from . import ledger as ledger_ui

MESSAGE_KEY = "plan_commit_message"
COMMITTED_KEY = "plan_committed"  # (CommittedPlan, its zip) of the last plan committed in this session


def stand_in_options(mapping: dict) -> dict:
    """make_plan's stand-in arguments: in sealed mode the public stand-in, when the plan's declared
    n and grid are its own (then every number is computed on it); else none (the design's)."""
    if not sealed.active():
        return {}
    ds = state.current()
    public = mapping["public"]
    if public.get("n") != state.n_persons(ds) or public.get("grid") != ds.fd.m:
        return {}
    return {"stand_in": ds.fd, "stand_in_label": ds.label}


@st.cache_resource(show_spinner=False, max_entries=32)
def _public_plan(mapping_json: str) -> ReleasePlan:
    return make_plan(json.loads(mapping_json))


def plan_of(mapping: dict) -> ReleasePlan:
    """The plan the page shows and the commit makes (the same inputs, the same stand-in).

    Without a stand-in the plan reads public inputs only (the mapping), so one object per mapping
    is shared by all sessions (issue 40: ~30 MB and 0.2 CPU-s a session otherwise)."""
    options = stand_in_options(mapping)
    try:
        text = None if options else json.dumps(mapping)  # insertion order kept: plan.json reads as before
    except TypeError:  # a value JSON cannot spell: plan it uncached
        text = None
    return make_plan(mapping, **options) if text is None else _public_plan(text)


def plan_entries(plan: ReleasePlan) -> list:
    return [e for p in plan.parts for e in p.entries]


def budget_blocker(led: Ledger, plan: ReleasePlan) -> str | None:
    """Why the whole plan does not fit what is left of ``led`` (None when it fits); nothing charged."""
    trial = Ledger(led.epsilon_total, led.delta_total, led.split, led.filter, entries=list(led.entries))
    try:
        for entry in plan_entries(plan):
            trial.commit(entry)
    except FdpError as exc:
        reason = str(exc).removeprefix("release refused, nothing recorded: ")
        return f"over budget (the plan's parts together): {reason}"
    return None


def readiness(plan: ReleasePlan, value_range, led: Ledger, ds: state.Dataset) -> commit_checks.Readiness:
    """The Release page's checks for every part, and the plan's budget check as a whole."""
    curve_kind = next((p.statistic.kind for p in plan.parts if p.statistic.kind in commit_checks.RANGE_KINDS), "kde")
    base = commit_checks.readiness(curve_kind, value_range, ds=ds, ledger_error=ledger_ui.error())
    blockers = list(base.blockers)
    if value_range is None and not any("value range" in b for b in blockers):
        blockers.append("no public value range declared (Data page): the density's box and every curve's clipping "
                        "come from it")
    persons = state.n_persons(ds)
    if persons != plan.design.n:
        blockers.append(f"the plan is for n = {plan.design.n} persons, the data hold {persons}")
    over = budget_blocker(led, plan)
    if over:
        blockers.append(over)
    return commit_checks.Readiness(tuple(blockers), base.warnings, base.declaration)


def cost_text(led: Ledger, plan: ReleasePlan) -> str:
    eps = sum(e.epsilon for e in plan_entries(plan))
    delta = sum(e.delta for e in plan_entries(plan))
    left = led.remaining()
    return (f"costs epsilon {eps:.3g}, delta {delta:.2g} in {len(plan.parts)} ledger entries; leaves epsilon "
            f"{max(left.epsilon - eps, 0.0):.3g}, delta {max(left.delta - delta, 0.0):.2g}")


def commit(mapping: dict) -> None:
    """Callback: read the data (sealed: the private file, once), check the whole plan, commit every part."""
    ss = st.session_state
    data = state.current()
    seen = state.views_seen()
    unit_blockers, _, declaration = commit_checks.unit_checks(data)
    if unit_blockers:  # the button is disabled then; a stale click is refused the same way
        ss[MESSAGE_KEY] = ("error", "Not committed: " + "; ".join(unit_blockers) + ".")
        return
    try:
        plan = plan_of(mapping)
        data, seen = sealed.commit_data(data, seen)
        if ledger_ui.account(data).ledger() is None:
            check_fits(plan, data.fd, ledger_ui.draft())  # refused whole before the draft is stored
        budget, note = ledger_ui.charge_account(plan.parts[0].entries[0], data)
        committed = commit_plan(plan, data.fd, budget, data_label=data.label, looked_at=seen, mapping=mapping)
        budget.complete_all(committed.entry_ids)  # every part in one transaction (METHODS.md 23)
    except FdpError as exc:
        ss[MESSAGE_KEY] = ("error", f"Nothing committed: {exc}")
        return
    for _, release in committed.parts:
        commit_checks.declare_unit(release, declaration)
        plots.label_release(release)
        ledger_ui.record(release)
    ss[COMMITTED_KEY] = (committed, export_plan_zip(committed))  # built once, offered on every rerun
    eps, delta = committed.charged
    spent, total = committed.ledger.spent(), committed.ledger.total()
    ss[MESSAGE_KEY] = ("success", (f"{note} " if note else "") + f"Committed the plan: {len(committed.parts)} parts, "
                       f"charged epsilon {eps:.4g}, delta {delta:.3g} to budget '{budget.name}' of {data.label} "
                       f"(now spent: epsilon {spent.epsilon:.4g} of {total.epsilon:g}). Download the one bundle "
                       "below (one report for every part).")


def render(plan: ReleasePlan, mapping: dict, value_range, ds: state.Dataset) -> None:
    """The commit section of the Plan page: checks, the button with its cost, the bundle's download."""
    st.subheader("Commit the plan")
    led = ledger_ui.get()
    st.caption(ledger_ui.meter_text(led))
    if sealed.active():
        st.caption("Sealed mode: the private file is read once, when you click, and checked against the declared "
                   "design. Its data set's stored budget is known only then: the whole plan is checked against it at "
                   "the click and refused whole if it does not fit (the budget above is the one a first commit stores).")
    ready = readiness(plan, value_range, led, ds)
    for text in ready.warnings:
        st.warning(text[0].upper() + text[1:] + ".")
    if not ready.ready:
        st.warning("**Commit not possible yet**: " + "; ".join(ready.blockers) + ".")
    st.button(f"Commit the plan: draw fresh noise for every part and record ({cost_text(led, plan)})",
              key="plan_commit", type="primary", on_click=commit, args=(mapping,), disabled=not ready.ready,
              help=("Disabled: " + "; ".join(ready.blockers)) if not ready.ready else
              "Every part is charged to the budget at once; there is no undo.")
    message = st.session_state.pop(MESSAGE_KEY, None)
    if message:
        getattr(st, message[0])(message[1])
    if COMMITTED_KEY in st.session_state:
        committed, zip_bytes = st.session_state[COMMITTED_KEY]
        st.download_button("Download the committed plan (one bundle: report.html for every part, each part's files)",
                           data=zip_bytes, file_name=f"fdp_plan_{committed.parts[0][1].id}.zip",
                           mime="application/zip", key="plan_download_bundle", on_click="ignore")
