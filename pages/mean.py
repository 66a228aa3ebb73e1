"""Mean page: the non-private mean against sanitized releases, one mechanism or all of them.

The controls are in fdp_ui/mean_options.py (the settings' keys in mean_controls.py), the
comparison in mean_compare.py, the single release's figure and accuracy panel in
mean_accuracy.py and its sensitivity and noise tables in mean_tables.py.
"""

import streamlit as st

from fdp_core.errors import FdpError
from fdp_ui import drafts, mean_accuracy, mean_compare, mean_controls, mean_options, mean_tables, sidebar, sparse_view, state

mean_controls.keep()
mean_options.init_state()

st.title("Mean function")
ds = state.current()
g = sidebar.render()
if sparse_view.active():  # sparse curves (a few visits per person): their own release view
    sparse_view.render_mean_section(g)
    st.stop()

options = mean_options.render(ds, g)
base = mean_controls.settings(g)
truth = ds.true_mean(ds.fd.grid_points) if ds.true_mean is not None else None

if options.compare:
    mean_compare.render(ds.fd, base, g, options.n_draws, truth)
    st.stop()

chosen = drafts.with_band(base)  # with the uncertainty bands on, the mean gets its share of epsilon
try:
    plan = drafts.mean_plan(ds.fd, chosen)
except FdpError as exc:
    drafts.drop("mean")
    st.error(f"Cannot compute this release: {exc}")
    st.stop()
# The draft the Release page commits: exactly what this page shows (issue 38).
drafts.put(drafts.Draft("mean", chosen, ds.label, *drafts.mean_verdicts(plan)))

mean_accuracy.figure(plan, ds.fd, g, options, truth)
mean_accuracy.panel(plan, ds, base, g, options.mechanism)
mean_tables.render(plan, ds.fd, base, g, options)
