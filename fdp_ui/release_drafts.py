"""The Release page's side of the drafts (fdp_ui/drafts.py): commit what a page showed, with its verdict.

- :func:`choice` turns the chosen draft into the commit's :class:`~fdp_ui.release_controls.Choice`
  (the page's settings and inputs exactly), unless the user asks to set the release here instead.
- :func:`verdict_section` shows the verdict of what will be committed beside its cost and, for
  amber and red, asks for an explicit acknowledgement (a checkbox "I publish a release that is
  red: not useful"); without it the commit is blocked.
- :func:`stamp` writes the public verdict into the committed release's record (release.json,
  report.html and the bundle's README read it there) and returns the words of the success message.
"""

from __future__ import annotations

import streamlit as st

from fdp_core.errors import FdpError
from fdp_core.explore.verdict import Verdict

from . import drafts, sparse_view, state, verdict_box

OWN_KEY = "rel_own_settings"  # ticked: the Release page's own controls instead of the page's draft
ACK_PREFIX = "rel_ack_"
VERDICT_KEY = "rel_commit_verdict"  # the committed release's verdict, drawn below the success message


def data_label(kind: str) -> str:
    info = sparse_view.active()
    return info["label"] if kind == "sparse" and info else state.current().label


def current(kind: str) -> drafts.Draft | None:
    return drafts.get(kind, data_label(kind))


def label_of(kind: str, fallback: str) -> str:
    """The kind's name in the 'what to commit' choice: the draft's ("the mean you explored") when one exists."""
    draft = current(kind)
    return draft.what if draft is not None else fallback


def choice(kind: str, g, choice_cls, describe=None):
    """The chosen draft as the commit's choice, or None when there is none (or the user sets it here).

    ``describe(draft)``: the words naming the draft's settings (default :func:`summary`)."""
    draft = current(kind)
    if draft is None:
        path, name = drafts.PAGES[kind]
        st.caption(f"Nothing explored on the {name} for this data set yet: the settings below are committed. "
                   f"Explore there first to commit what you saw, with its verdict.")
        return None
    if st.toggle("set the settings here instead of the explored draft", key=f"{OWN_KEY}_{kind}"):
        return None
    path, name = draft.page
    st.markdown((describe or summary)(draft) + f" ({draft.what}, on the {name}).")
    st.page_link(path, label=f"change it on the {name}", icon=":material/edit:")
    changed = drafts.drift(draft, g)
    if changed:
        st.warning("The sidebar changed since you explored this draft (" + "; ".join(changed) + "). The commit uses "
                   f"the draft as explored; open the {name} to explore the new settings.")
    return choice_cls(draft.settings, dict(draft.inputs), mean_id=draft.mean_id, draft=draft)


def summary(draft: drafts.Draft) -> str:
    s = draft.settings
    parts = [f"**{getattr(s, 'mechanism', getattr(s, 'sampler', ''))}**", f"epsilon {s.epsilon:g}"]
    if getattr(s, "delta", None) is not None and draft.kind != "pca":
        parts.append(f"delta {s.delta:g}")
    if draft.kind == "kde":
        parts.append("box " + " x ".join(f"[{lo:g}, {hi:g}]" for lo, hi in s.box))
    if draft.kind == "pca":
        parts.append(f"k = {s.k}, centring {s.centring}")
    return ", ".join(parts)


def band_words(s) -> str:
    """A mean's uncertainty bands, as the draft carries them ("" without)."""
    if getattr(s, "confidence_band", None) is None:
        return ""
    return (f"; with the uncertainty bands ({s.confidence_band:.0%}): the second moment gets {s.band_share:.0%} of "
            f"epsilon and delta, the mean epsilon {s.epsilon * (1 - s.band_share):.4g}")


def verdicts(kind: str, chosen, ds) -> tuple[Verdict | None, Verdict | None]:
    """(the verdict shown, the public verdict) of what will be committed.

    A mean's are recomputed from the settings committed (a draft's or the controls'); the other kinds'
    come with their draft (None without one: the Release page's own controls have no preview)."""
    if chosen is None:
        return None, None
    if kind == "mean":
        try:
            return drafts.mean_verdicts(drafts.mean_plan(ds.fd, chosen.settings))
        except FdpError:
            return None, None
    draft = chosen.draft
    return (None, None) if draft is None else (draft.verdict, draft.public_verdict)


def ack_label(v: Verdict) -> str:
    return f"I publish a release that is {v.colour}: {v.word}"


def verdict_section(kind: str, chosen, ds) -> str | None:
    """The verdict beside the cost; for amber and red the acknowledgement. Returns the blocker (None: none)."""
    shown, public = verdicts(kind, chosen, ds)
    if shown is None:
        st.caption("No accuracy verdict for these settings: explore them on their page to see one.")
        return None
    st.markdown("**Accuracy of what you are about to publish**")
    verdict_box.render(shown, link_tradeoffs=kind == "mean")
    if public is not None and public.level != shown.level:
        st.caption(f"The published files state the verdict from public inputs only: {public.colour} "
                   f"({public.word}); the analyst-view verdict above adds what is computed from the data.")
    elif public is None and kind in drafts.NOT_PUBLISHED:
        st.caption(drafts.NOT_PUBLISHED[kind].capitalize() + ".")
    if shown.level not in ("amber", "red"):
        return None
    epsilon = getattr(chosen.settings, "epsilon", 0.0)
    if st.checkbox(ack_label(shown), key=f"{ACK_PREFIX}{kind}_{shown.level}_{epsilon:g}"):
        return None
    return f"tick '{ack_label(shown)}' to publish a release rated {shown.word}"


def stamp(kind: str, release, chosen, ds) -> str:
    """Write the public verdict into the committed release's record; the success message's verdict words."""
    shown, public = verdicts(kind, chosen, ds)
    if public is not None:
        basis = drafts.PUBLIC_BASIS[kind]
        release.record["verdict"] = public.record(basis)
    elif kind in drafts.NOT_PUBLISHED:
        release.record["verdict"] = {"level": None, "basis": drafts.NOT_PUBLISHED[kind]}
    for key in [k for k in st.session_state if str(k).startswith(ACK_PREFIX)]:
        del st.session_state[key]  # every commit is acknowledged afresh: no ticked box carries over
    if shown is None:
        return ""
    st.session_state[VERDICT_KEY] = shown
    return f"Verdict: {shown.colour} ({shown.word})."


def show_committed_verdict() -> None:
    """The committed release's verdict in its colour, once, below the success message."""
    v = st.session_state.pop(VERDICT_KEY, None)
    if v is not None:
        verdict_box.render(v, extra="(the verdict of the release just committed)", link_tradeoffs=False)


__all__ = ["ack_label", "choice", "current", "label_of", "show_committed_verdict", "stamp", "verdict_section",
           "verdicts"]
