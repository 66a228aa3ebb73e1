"""The Principal components page's centring (none, a committed mean, the sample mean, the
declared range's centre) and number of preview draws."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

from . import centring_hint
from . import ledger as ledger_ui
from .pca_inputs import KEYS, MAX_DRAWS

CENTRING = {"none": "none (not recommended: components follow the mean)",
            "released-mean": "the mean released on the Mean page (committed)",
            "sample-mean": "sample mean (NOT DP: teaching only)",
            "public": "centre of the declared public range (free: a public input)"}
HELP = {
    "centring": "Centre the curves before projecting. A committed mean is itself a release (its budget is "
                "already in the ledger). The raw sample mean looks at the data: nothing is then DP.",
    "draws": "Independent private draws overlaid. Each draw is a separate release: publishing d of them costs d x "
             "epsilon.",
}


def committed_means(fd, label: str) -> tuple[dict, int]:
    """Mean releases committed on this data set (same label and grid), and how many others exist."""
    usable, other = {}, 0
    for release in ledger_ui.releases():
        if release.kind != "mean":
            continue
        t = release.table["t"].to_numpy()
        if (release.record.get("data", {}).get("label") == label and t.shape == fd.grid_points.shape
                and np.allclose(t, fd.grid_points)):
            usable[release.id] = release
        else:
            other += 1
    return usable, other


@dataclass(frozen=True)
class Centring:
    choice: str
    mean_release: object | None  # the committed mean release centred by, if any
    n_draws: int

    @property
    def mean_values(self):
        return None if self.mean_release is None else self.mean_release.table["value"].to_numpy()

    @property
    def mean_key(self) -> str:
        return "none" if self.mean_release is None else self.mean_release.id


def centring_widgets(data, ds, g, entry) -> Centring:
    """Centring and draws; stops the page when a committed mean is asked for and none exists."""
    ss = st.session_state
    current = data.source == "current"
    means, n_other_means = committed_means(data.fd, ds.label) if current else ({}, 0)
    r1, r2, r3 = st.columns([2, 2, 1])
    centring_hint.preselect(bool(means), range_declared=current and g.value_range is not None)
    centring = r1.radio("centring", tuple(CENTRING), key=KEYS["centring"], format_func=CENTRING.get,
                        help=HELP["centring"], on_change=centring_hint.mark_touched)
    if centring == "none" and current:
        centring_hint.render_suggestion(r2, data.fd, g)
    mean_release = None
    if centring == "released-mean":
        if means:
            if ss.get("pca_mean_id") not in means:
                ss["pca_mean_id"] = next(reversed(means))
            mean_id = r2.selectbox("committed mean", list(means), key="pca_mean_id",
                                   format_func=lambda i: f"{means[i].label} ({i})")
            mean_release = means[mean_id]
        else:
            where = ("the simulation has its own curves: no committed mean belongs to it" if not current else
                     "no mean has been committed for this data set yet"
                     + (f" ({n_other_means} committed on another data set)" if n_other_means else ""))
            r2.info(f"Centring by a released mean needs a committed mean release: {where}. Choose the mechanism on "
                    "the Mean page, then commit it on the Release & audit page (what to commit: mean); its budget "
                    "is charged there. Or centre by none.")
            r2.page_link("pages/release.py", label="go to Release & audit", icon=":material/verified_user:")
            st.stop()
    n_draws = int(r3.slider("private draws", 1, MAX_DRAWS, key="pca_draws", help=HELP["draws"]))
    if entry.max_preview_draws is not None and n_draws > entry.max_preview_draws:
        r3.caption(entry.max_preview_draws_note.format(n=entry.max_preview_draws))
        n_draws = entry.max_preview_draws
    return Centring(centring, mean_release, n_draws)
