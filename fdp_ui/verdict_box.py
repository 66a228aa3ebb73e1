"""Draw an accuracy verdict (fdp_core/explore/verdict.py): its colour follows the stated rule, never a default."""

from __future__ import annotations

import streamlit as st

from fdp_core.explore.verdict import RULE, Verdict


def render(verdict: Verdict, *, container=None, extra: str = "", link_tradeoffs: bool = True) -> None:
    """One coloured box (green / amber / red / grey-blue) with the verdict's sentence, the rule and,
    when the release is not useful, a link to the Trade-offs page's target-accuracy tool."""
    box = container or st
    draw = {"green": box.success, "amber": box.warning, "red": box.error, "unrated": box.info}[verdict.level]
    draw(verdict.sentence() + (" " + extra if extra else ""))
    box.caption(RULE)
    if link_tradeoffs and verdict.level in ("amber", "red"):
        box.page_link("pages/tradeoffs.py", label="Trade-offs: which epsilon reaches a target accuracy?",
                      icon=":material/tune:")
