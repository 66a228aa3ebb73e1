"""Commit buttons for the covariance and regression releases (exact discrete noise, persistent ledger)."""

from __future__ import annotations

import streamlit as st

from fdp_core.errors import FdpError
from fdp_core.publish import kinds
from fdp_core.publish.protocol import CommitRequest

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
    try:
        quote = kinds.quote(kind, CommitRequest(data.fd, settings))
        budget, note = ledger.charge_account(quote.entry)
        # The commit protocol: every part reserved, drawn, then completed (fdp_core/publish/protocol.py).
        release = kinds.commit(kind, budget, CommitRequest(data.fd, settings, data_label=data.label,
                                                           looked_at=state.views_seen()), quote=quote)
    except FdpError as exc:
        st.session_state[MESSAGE_KEY.format(kind=kind)] = ("error", str(exc))
        return
    commit_checks.declare_unit(release, declaration)
    plots.label_release(release)
    ledger.record(release)
    charged = sum(e.epsilon for e in quote.entries)
    st.session_state[MESSAGE_KEY.format(kind=kind)] = ("success", (f"{note} " if note else "") + f"Committed {release.label} (id "
                                     f"{release.id}): {len(quote.entries)} ledger entr{'y' if len(quote.entries) == 1 else 'ies'}"
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
