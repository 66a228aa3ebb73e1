"""Release & audit: set the budget, commit releases with vetted noise, export them, audit the mechanism.

Layout only: the budget (fdp_ui/budget_panel.py), the commit of any kind of release through the
commit protocol (fdp_ui/release_commit.py, fdp_core/publish/kinds.py), the ledger
(fdp_ui/release_ledger.py), the export (fdp_ui/release_export.py) and the audit (fdp_ui/audit_panel.py).
"""

import streamlit as st

from fdp_ui import ledger as ledger_ui
from fdp_ui import (audit_panel, budget_panel, mean_controls, release_commit, release_controls, release_export,
                    release_ledger, sidebar, sparse_release, state)

# The release commits the mean exactly as previewed on the Mean page (its controls, kept alive
# while this page is open) with the global settings of the sidebar.
mean_controls.keep()
budget_panel.sync_widgets()
release_controls.keep_defaults()

st.title("Release & audit")
ds = state.current()
g = sidebar.render()
led = ledger_ui.get()

st.info("**Previews cost nothing.** The curves on the other pages are the analyst's view: drawn with numpy "
        "(idealised real-arithmetic DP), never exported, and not counted against the budget. **A commit is a "
        "release:** it always draws fresh noise from OS entropy with an exact discrete sampler (OpenDP), spends "
        "budget, and is what you can download. A release that does not fit the remaining budget is refused before "
        "any noise is drawn.")

# --------------------------------------------------------------------------- 1. budget
st.header("1. Privacy budget")
if g.tutorial:
    st.info("Tutorial: the budget is the total privacy loss you accept for this data set, across every session, "
            "server restart and command-line replay. Every commit spends part of it; the ledger adds the costs up "
            "(the sidebar meter shows what is left). Choose it before the first commit: the first commit stores it "
            "and from then on it is fixed, because a budget raised after seeing results would no longer be a "
            "guarantee.")
led = budget_panel.render()

# --------------------------------------------------------------------------- 2. commit
st.header("2. Commit a release")
if g.tutorial:
    st.info("Tutorial: the commit uses the settings you explored (sidebar and the Mean page). Before you click, the "
            "cost below is computed from the sampler's own privacy map without drawing anything. Clicking draws "
            "the noise once; there is no undo and no second draw for free.")
# Covariance, regression and parameter selection commit from their own pages (Covariance & regression,
# Trade-offs), into the same ledger; this page builds mean, density, component and sparse mean releases.
kind = release_commit.render(g, ds, led)
shown = sparse_release.ledger() if kind == "sparse" else led  # the sparse data have a budget of their own

# --------------------------------------------------------------------------- 3. ledger
st.header("3. Ledger")
if g.tutorial:
    st.info("Tutorial: each row is one release with its native privacy parameter (mu for continuous Gaussian "
            "noise, rho for the discrete Gaussian, epsilon for pure mechanisms, rho = epsilon^2/8 for the "
            "exponential mechanism). The totals combine them three valid ways; the smallest epsilon wins.")
release_ledger.render(shown)

# --------------------------------------------------------------------------- 4. export
st.header("4. Export and report")
if g.tutorial:
    st.info("Tutorial: the bundle holds only what was released: the sanitized curve on the data grid, the "
            "sampler's coefficients on its 2^k grid, the provenance (every parameter, the sampler, library "
            "versions), a config to replay the same settings with fresh noise, and a report anyone can open "
            "offline. Never the data, never the non-private estimate.")
release_export.render(led)  # a sparse release is exported with its own budget

# --------------------------------------------------------------------------- 5. audit
st.header("5. Empirical privacy-loss audit")
if g.tutorial:
    st.info("Tutorial: the audit treats the mechanism as a black box. It runs it many times on two data sets that "
            "differ in one curve (the worst case for this mechanism) and checks whether any event is more likely "
            "under one than e^epsilon times the other plus delta. A deliberately under-noised copy (0.9x) is the "
            "control: it shows what a failure looks like when the sample is large enough to see it.")
audit_panel.render(g, ds)
