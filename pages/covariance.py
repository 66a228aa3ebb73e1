"""Covariance & regression page (METHODS 13-14): the private covariance function and its eigenfunctions
beside the exponential mechanism's components; function-on-scalar regression coefficients with bands."""

import numpy as np
import pandas as pd
import streamlit as st

from fdp_core.releases.covariance import (CENTRINGS, COVARIANCE_MECHANISMS, CovarianceSettings, eigenfunctions_of,
                                          variance_ratio)
from fdp_core.errors import FdpError
from fdp_core.data.preprocess import identifier_columns
from fdp_core.registry.covariance import covariance_mechanism
from fdp_core.releases.regression import RegressionSettings
from fdp_core.sensitivity import COVARIANCE_GAUSSIAN_BOUNDS
from fdp_core.publish.views import NONPRIVATE_VIEWS
from fdp_core.settings_fields import page_defaults, page_keys, page_settings
from fdp_core.explore.verdict import covariance_verdict
from fdp_ui import covariance_cache, covariance_plots, live_chart, sidebar, state, summary_commit, synthetic_panel, \
    verdict_box
from fdp_ui.covariance_plots import EM_COLOR
from fdp_ui.plots import ANALYST_COLOR, ANALYST_LABEL, PRIVATE_COLOR

# The settings fields' controls: keys and defaults from the field metadata (fdp_core/releases/covariance.py,
# fdp_core/releases/regression.py, page family "covariance"). The covariates' choices come from the data.
PAGE = "covariance"
KEYS = page_keys(CovarianceSettings, PAGE)
REG_KEYS = page_keys(RegressionSettings, PAGE)
COVARIATES_KEY = "reg_covariates"
_DEFAULTS = {**page_defaults(CovarianceSettings, PAGE), **page_defaults(RegressionSettings, PAGE), "cov_k": 2,
             "reg_draws": 100}
for key, value in _DEFAULTS.items():
    st.session_state[key] = st.session_state.get(key, value)

st.title("Covariance & regression")
ds = state.current()
g = sidebar.render()
fd = ds.fd
if g.tau_from_data:
    st.error("tau was read off the data (sidebar): nothing on this page is differentially private.")
st.caption("Curves are centred at a public value c and clipped to the sidebar's tau; kernel, rho, eta, phi, "
           "epsilon and delta come from the sidebar. Red dashed lines and left-hand heatmaps are the "
           f"{ANALYST_LABEL}.")

# --------------------------------------------------------------------------- covariance
st.header("Covariance function")
c1, c2, c3, c4 = st.columns(4)
mechanism = c1.selectbox("mechanism", COVARIANCE_MECHANISMS, key=KEYS["mechanism"],
                         format_func=lambda name: covariance_mechanism(name).label)
entry = covariance_mechanism(mechanism)
c2.radio("Gaussian bound", COVARIANCE_GAUSSIAN_BOUNDS, key=KEYS["bound"], horizontal=True,
         disabled="bound" not in entry.fields,
         help="kyfan: tau^2 sqrt(c1 + c2)/n (tighter, default). sqrt2: sqrt(2) tau^2 max A/n.")
centring = c3.radio("centring", CENTRINGS, key=KEYS["centring"], horizontal=True,
                    help="public: second moment about c. released-mean: also release the mean (share gamma of the "
                         "budget) and subtract its outer product; the ledger charges both.")
c4.slider("gamma (mean's share)", 0.05, 0.95, step=0.05, key=KEYS["gamma"], disabled=centring != "released-mean")
d1, d2 = st.columns(2)
if g.value_range is not None:  # declared on the Data page: clip into it and centre at its midpoint
    centre = (g.value_range[0] + g.value_range[1]) / 2.0
    public = dict(centre=None, lo=float(g.value_range[0]), hi=float(g.value_range[1]))  # not the centre control
    d1.caption(f"centre c = {centre:.4g}, the midpoint of the declared value range {tuple(g.value_range)}")
else:
    d1.number_input("public centre c", format="%.4g", key=KEYS["centre"],
                    help="Subtracted from every curve before clipping; chosen without looking at the data. "
                         "Declaring a value range on the Data page replaces it by the range's midpoint.")
    public = {}
k = d2.slider("eigenfunctions shown", 1, 3, key="cov_k")

settings = page_settings(CovarianceSettings, PAGE, st.session_state, **g.fields_of(CovarianceSettings), **public)
try:
    plan, hs_radius = covariance_cache.covariance_plan(fd, settings)  # shared by sessions (issue 40)
except FdpError as exc:
    st.error(str(exc))
    st.stop()

draw = plan.sample(g.rng(70), 1)
private = draw["covariance"][0]
nonprivate = plan.nonprivate_covariance()
m1, m2, m3, m4 = st.columns(4)
m1.metric("sensitivity", f"{plan.sensitivity:.4g}",
          help=plan.guarantee.sensitivity_norm + "; " + plan.guarantee.bound_label)
m2.metric(entry.scale_label,
          f"{plan.sigma:.4g}" if plan.sigma else f"{plan.sensitivity / settings.split()[0]:.4g}")
m3.metric("noise (95% radius, HS)", f"{hs_radius:.4g}",
          help="The released covariance surface lies within this Hilbert-Schmidt (L2 over the square) distance of "
               "the non-private one, 95% of the time (2000 Monte Carlo draws of the public noise law). Expected "
               f"squared HS error, for formulas: {plan.expected_sq_hs_error:.4g}.")
m4.metric("components L", str(plan.n_components))
verdict_box.render(covariance_verdict(hs_radius, plan.tau), link_tradeoffs=False)  # that tool is the mean's

grid = fd.grid_points
# On a long grid the surface is drawn on plan.surface_points (never m x m).
surfaces = [plan.surface(nonprivate), plan.surface(private)]
scale = float(np.max(np.abs(surfaces[0]))) or 1.0
# The figure's title is a line of text above it: a Plotly title collides with the subplot titles.
st.markdown("**Covariance surfaces** (same colour scale; the release saturates where noise dominates)")
live_chart.show(covariance_plots.surfaces_figure(plan.surface_points, surfaces, scale), key="cov_heatmaps")
state.note_view(NONPRIVATE_VIEWS["covariance_estimate"])

# Private FPCA, two routes at the same total epsilon.
_, cov_functions = eigenfunctions_of(plan, private, k)
_, np_functions = eigenfunctions_of(plan, nonprivate, k)
try:
    em_functions = covariance_cache.em_components(fd, settings, k, g, 71)
except FdpError as exc:
    em_functions = None
    st.warning(f"exponential mechanism not available here: {exc}")
ratios = {"covariance route": variance_ratio(fd, settings, cov_functions)}
if em_functions is not None:
    ratios["exponential mechanism"] = variance_ratio(fd, settings, em_functions)
e1, e2 = st.columns(2)
e1.metric("variance ratio, eigenfunctions of C~ (analyst view)", f"{ratios['covariance route']:.3f}")
if em_functions is not None:
    e2.metric("variance ratio, exponential mechanism (analyst view)", f"{ratios['exponential mechanism']:.3f}")
fig = covariance_plots.components_figure(grid, k, (("eigenfunction of C~", cov_functions, PRIVATE_COLOR, None),
                                                   ("exponential mechanism", em_functions, EM_COLOR, None),
                                                   (ANALYST_LABEL, np_functions, ANALYST_COLOR, "dash")))
st.markdown(f"**Private principal components at the same total epsilon = {g.epsilon:g}**")
live_chart.show(fig, key="cov_components")
st.caption("Both routes spend the same epsilon: the covariance route releases the whole covariance (and the mean) "
           "and takes its eigenfunctions by post-processing; the exponential mechanism releases only the "
           "components. Variance ratios come from the raw data: analyst view, not private.")
summary_commit.render("covariance", settings)
synthetic_panel.render(fd, settings, g.rng(74))  # synthetic curves from mean + covariance (METHODS 19)

# --------------------------------------------------------------------------- regression
st.header("Function-on-scalar regression")
meta = fd.metadata
if meta.empty:
    st.info("The data have no metadata columns: regression needs covariates (e.g. group, case, sex).")
    st.stop()
options = []
for column in meta.columns:
    if column == g.person_column:
        continue
    values = meta[column]
    numeric = pd.to_numeric(values, errors="coerce")
    if numeric.notna().all():
        if numeric.nunique() > 1 and numeric.nunique() < len(values):
            options.append(str(column))
    elif values.nunique() <= 10:
        options += [f"{column}={level}" for level in sorted(values.astype(str).unique())[1:]]
if not options:
    st.info("No usable covariate column (numeric with repeated values, or text with at most 10 levels).")
    st.stop()
# Safe default: never an id or person column (its code means nothing; every row would be clipped).
ids = identifier_columns(meta, g.person_column)
describing = [o for o in options if o.split("=", 1)[0] not in ids]
st.session_state[COVARIATES_KEY] = st.session_state.get(COVARIATES_KEY, describing[:1])
r1, r2, r3, r4 = st.columns(4)
covariates = r1.multiselect("covariates", options, key=COVARIATES_KEY,
                            help="NAME=LEVEL is the indicator of that level; an intercept is always included.")
r2.number_input("public bound B on ||X_i||", min_value=1.01, format="%.4g", key=REG_KEYS["bound_b"])
r3.slider("gamma (T1's share)", 0.05, 0.95, step=0.05, key=REG_KEYS["gamma"])
r4.number_input("eigenvalue floor kappa", min_value=1e-6, format="%.3g", key=REG_KEYS["kappa"])
if not covariates:
    st.info("Choose at least one covariate.")
    st.stop()
# The curves are centred and clipped as for the covariance above.
reg_settings = page_settings(RegressionSettings, PAGE, st.session_state, covariates=tuple(covariates),
                             **g.fields_of(RegressionSettings), centre=settings.centre, lo=settings.lo,
                             hi=settings.hi)
try:
    reg = covariance_cache.regression_plan(fd, reg_settings)
except FdpError as exc:
    st.error(str(exc))
    st.stop()
beta = reg.sample(g.rng(72), 1)[0]
band = covariance_cache.regression_bands(fd, reg, int(st.session_state["reg_draws"]), g, 73)
ols = reg.ols()
q1, q2, q3 = st.columns(3)
q1.metric("T1 sigma", f"{reg.t1_sigma:.4g}", help=f"Frobenius sensitivity {reg.t1_sensitivity:.4g}")
q2.metric("T2 sigma", f"{reg.t2_sigma:.4g}", help=f"Cameron-Martin sensitivity {reg.t2_sensitivity:.4g}")
q3.metric("covariate rows clipped (analyst view)", str(reg.n_clipped_covariates))
fig = covariance_plots.regression_figure(grid, reg.labels, band, beta, ols)
st.markdown(f"**Regression coefficient functions** (n = {reg.n}, epsilon = {g.epsilon:g})")
live_chart.show(fig, key="reg_coefficients")
state.note_view(NONPRIVATE_VIEWS["regression_ols"])
st.caption("The band is the spread of the private estimate over repeated noise draws on these data (analyst view). "
           "A small n or nearly collinear covariates make T1~ ill-conditioned: raise kappa or epsilon.")
summary_commit.render("regression", reg_settings)
