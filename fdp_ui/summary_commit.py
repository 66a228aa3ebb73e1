"""Commit buttons for the covariance and regression releases (exact discrete noise, persistent ledger)."""

from __future__ import annotations

import streamlit as st

from fdp_core.publish.commit_summaries import commit_covariance, commit_regression, prepare_covariance_commit, \
    prepare_regression_commit
from fdp_core.errors import FdpError

from . import commit_checks, ledger, plots, state

MESSAGE_KEY = "summary_commit_message_{kind}"


def _commit(kind: str, settings) -> None:
    """Callback: the first part's charge stores the draft budget if needed; every part is then checked
    together, charged and drawn; the entries are completed once the release exists."""
    data = state.current()
    blockers, _, declaration = commit_checks.unit_checks(data)
    if blockers:  # the button is disabled then; a stale click is refused the same way
        st.session_state[MESSAGE_KEY.format(kind=kind)] = ("error", "Not committed: " + "; ".join(blockers) + ".")
        return
    prepare = prepare_covariance_commit if kind == "covariance" else prepare_regression_commit
    commit = commit_covariance if kind == "covariance" else commit_regression
    try:
        pendings = prepare(data.fd, settings)
        budget, note = ledger.charge_account(pendings[0].entry)
        release = commit(budget, data.fd, settings, data_label=data.label, looked_at=state.views_seen())
        for entry_id in release.record["part_entry_ids"]:
            budget.complete(entry_id)
    except FdpError as exc:
        st.session_state[MESSAGE_KEY.format(kind=kind)] = ("error", str(exc))
        return
    commit_checks.declare_unit(release, declaration)
    plots.label_release(release)
    ledger.record(release)
    charged = sum(p.entry.epsilon for p in pendings)
    st.session_state[MESSAGE_KEY.format(kind=kind)] = ("success", (f"{note} " if note else "") + f"Committed {release.label} (id "
                                     f"{release.id}): {len(pendings)} ledger entr{'y' if len(pendings) == 1 else 'ies'}"
                                     f", epsilon {charged:.4g} in total. Export it on the Release & audit page.")


def render(kind: str, settings, container=st) -> None:
    ready = commit_checks.readiness(kind, None, ledger_error=ledger.error())
    if not ready.ready:
        container.warning("**Commit not possible yet**: " + "; ".join(ready.blockers) + ".")
    container.button(f"commit this {kind} release (exact discrete noise, charges the ledger)",
                     key=f"commit_{kind}", on_click=_commit, args=(kind, settings), disabled=not ready.ready,
                     help=("Disabled: " + "; ".join(ready.blockers)) if not ready.ready else
                          "Fresh OS entropy and OpenDP's exact sampler; every part is checked against the budget "
                          "before any noise is drawn. The preview above is not what gets published.")
    message = st.session_state.pop(MESSAGE_KEY.format(kind=kind), None)
    if message:
        getattr(container, message[0])(message[1])
