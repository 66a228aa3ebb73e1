"""Trade-offs page: error against every privacy and smoothing parameter, PCV vs PSS tuning,
the epsilon a target accuracy needs, and the PCA variance ratio against epsilon.

Each section is a module of fdp_ui: tradeoff_sweep.py (options shared with the Mean page, error
against one parameter), tradeoff_pcv.py (PCV vs PSS, private selection), tradeoff_target.py
(target accuracy -> epsilon) and tradeoff_pca.py (variance ratio against epsilon).
"""

from dataclasses import asdict

import streamlit as st

from fdp_core.explore import tuning
from fdp_core.releases.mean import MEAN_MECHANISMS
from fdp_ui import mean_controls, private_selection, sidebar, sparse_view, state, tradeoff_pca, tradeoff_pcv, \
    tradeoff_sweep, tradeoff_target

PAGE_DEFAULTS = {"to_param": "epsilon", "to_mc": 500, "to_mechanisms": list(MEAN_MECHANISMS),
                 "to_pcv_mechanism": tuning.PCV_MECHANISMS[0], "to_pcv_size": 30, "to_pcv_folds": 10,
                 "to_metric": "l2_radius_95", "to_apply_mechanism": MEAN_MECHANISMS[0], "to_pca": False,
                 "to_pca_draws": 50}

# Mechanism options are shared with the Mean page (mean_controls: same keys and defaults), so
# "the current setting" marked here is the one the Mean page releases.
mean_controls.keep()
private_selection.keep()  # its widgets are drawn only while its expander is open
for key, value in PAGE_DEFAULTS.items():
    st.session_state[key] = st.session_state.get(key, value)

st.title("Trade-offs")
ds = state.current()
g = sidebar.render()
if sparse_view.active():  # sparse curves: their own trade-off curves
    sparse_view.render_tradeoffs_section(g)
    st.stop()

tradeoff_sweep.mechanism_options()
settings = mean_controls.settings(g)
settings_key = tuple(asdict(settings).items())
if g.tau_from_data:
    st.error("tau was read off the data: none of the settings below gives a differentially private release.")

tradeoff_sweep.render(ds, settings_key, g.seed)
tradeoff_pcv.render(ds.fd, settings, g)
tradeoff_target.render(ds.fd, settings_key, g.value_range)
tradeoff_pca.render(ds.fd, g)
