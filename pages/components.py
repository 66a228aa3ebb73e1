"""Principal components page: private functional PCA by the exponential mechanism (METHODS.md section 5).

The curves (the current data set, or the FPCA simulation of Awan et al.) are projected on a
basis orthonormal in the weighted inner product, optionally centred, divided by tau and
clipped; private components are drawn with density etr(V' A V) by an exact sampler (k = 1:
vector Bingham; k > 1: sequential deflation) or by Gibbs sampling (approximate DP). The
non-private FPCA, the scree, the variance ratio and the subspace distance are the analyst's
view: computed from the raw data, labelled, never published. Every number comes from
fdp_core.releases.pca; previews cost no budget (commits happen on the Release & audit page).

The widgets live in fdp_ui/pca_inputs.py (data, mechanism controls), pca_centring.py and
pca_report.py (draws, guarantee, figures, diagnostics).
"""

import streamlit as st

from fdp_core.errors import FdpError
from fdp_core.publish.views import NONPRIVATE_VIEWS
from fdp_core.releases.pca import PcaSettings
from fdp_core.settings_fields import page_settings
from fdp_core.explore.verdict import components_verdict
from fdp_ui import drafts, pca_centring, pca_inputs, pca_report, sidebar, state, verdict_box

pca_inputs.init_state()
st.title("Principal components")
g = sidebar.render()
ds = state.current()
pca_inputs.gibbs_chain_warm_up()

# --------------------------------------------------------------------------- data and controls

data = pca_inputs.data_widgets(ds)
if g.tutorial:
    st.info("Tutorial: principal components are the directions along which the curves vary most. The private "
            "version draws the directions at random, favouring directions that explain much variance: the "
            "exponential mechanism. Smaller epsilon = flatter preference = components further from the "
            "non-private ones. The red dashed curves are the analyst's view and must not be published.")
controls = pca_inputs.control_widgets(g.epsilon)
entry = controls.entry
centring = pca_centring.centring_widgets(data, ds, g, entry)

# --------------------------------------------------------------------------- the release

# k, basis, gamma and centring from their controls; the sampler's own fields only when it reads them
# (the others keep their defaults); the simulation has no declared range or persons.
settings = page_settings(PcaSettings, pca_inputs.PAGE, st.session_state, p=controls.p, kernel=g.kernel, rho=g.rho,
                         nu=g.nu, epsilon=g.epsilon, sampler=entry.name, epsilon_split=controls.epsilon_split,
                         tau=g.tau, tau_from_data=g.tau_from_data, gibbs_sweeps=controls.sweeps,
                         gibbs_burn_in=controls.burn_in, gibbs_thin=controls.thin,
                         **(g.bounds if data.source == "current" else {}))
try:
    with st.spinner(entry.spinner):
        results = pca_report.draws(data, settings, centring, g)
except FdpError as exc:
    st.error(f"Cannot compute the private components: {exc}")
    st.stop()
first = results[0]
state.note_view(NONPRIVATE_VIEWS["pca_estimate"])
controls.p_slot.caption(f"p = **{first.p}**: {first.basis.p_rule}")
pca_report.guarantee(first, entry, centring, g, controls.k, settings.person_column)

# --------------------------------------------------------------------------- figures and diagnostics

pca_report.figures(results, data.fd, entry, centring, controls.k)
pca_report.scree_and_metrics(results, controls.k)
verdict = components_verdict([r.variance_ratio for r in results])  # analyst view: reads the raw variance
verdict_box.render(verdict, extra="(analyst view: from the variance ratio of the draws above)", link_tradeoffs=False)
if data.source == "current":  # the draft the Release page commits (issue 38)
    drafts.put_components(ds, settings, verdict, centring.mean_key)
pca_report.diagnostics(first, entry)
pca_report.record_and_command(first, settings, data, centring, g.seed)
st.page_link("pages/release.py", label="commit private components on the Release & audit page",
             icon=":material/verified_user:")
