"""Mean page: the non-private penalised mean against sanitized releases."""

import numpy as np
import pandas as pd
import streamlit as st

from fdp_core.errors import FdpError
from fdp_core.mean import MeanSettings, plan_mean_release
from fdp_core.mechanisms.calibration import CALIBRATIONS
from fdp_core.sensitivity import BOUNDS
from fdp_ui import plots, sidebar, state

st.title("Mean function")
ds = state.current()
g = sidebar.render()

c1, c2, c3, c4 = st.columns(4)
bound = c1.radio("sensitivity bound", BOUNDS, key="mean_bound", horizontal=True,
                 help="tight: the exact worst case over clipped curves (attained). paper: the closed form of "
                      "Mirshani et al. (2019), never smaller.")
calibration = c2.radio("calibration", CALIBRATIONS, key="mean_calibration", horizontal=True,
                       help="analytic (Balle & Wang 2018): the smallest valid sigma, any epsilon. classical: "
                            "sigma = Delta sqrt(2 log(2/delta))/epsilon, valid only for epsilon <= 1.")
style = c3.radio("show", ("draws", "band"), key="mean_style", horizontal=True,
                 help="Several independent sanitized releases, or their pointwise 5-95% band.")
n_draws = c4.slider("sanitized draws", 1, 200, 20, key="mean_draws")

settings = MeanSettings(mechanism="gaussian", kernel=g.kernel, rho=g.rho, nu=g.nu, eta=g.eta, phi=g.phi,
                        epsilon=g.epsilon, delta=g.delta, tau=g.tau, tau_from_data=g.tau_from_data,
                        bound=bound, calibration=calibration)
try:
    plan = plan_mean_release(ds.fd, settings)
except FdpError as exc:
    st.error(f"Cannot compute this release: {exc}")
    st.stop()

draws = plan.sample(g.rng(salt=1), max(n_draws, 200) if style == "band" else n_draws)
truth = ds.true_mean(ds.fd.grid_points) if ds.true_mean is not None else None
st.plotly_chart(plots.release_figure(ds.fd.grid_points, draws, plan.estimate, style=style, truth=truth,
                                     title=f"Gaussian-process mechanism, epsilon = {g.epsilon:g}, "
                                           f"delta = {g.delta:g}"),
                width="stretch", key="mean_release")

for flag in plan.data_dependent_flags:
    st.error(f"Data-dependent: {flag}")

radius_l2 = plan.l2_error_radius(0.95)
radius_sup = plan.sup_error_radius(0.95)
st.success(f"With 95% probability the release is within **{radius_l2:.4g}** of the non-private estimate "
           f"(L2 norm over the domain rescaled to [0, 1]); pointwise, the largest deviation stays below "
           f"**{radius_sup:.4g}** with 95% probability.")
st.caption(f"Expected squared L2 error sigma^2 sum(lambda) = {plan.expected_sq_l2_error:.4g}. L2 radius by a "
           "saddlepoint approximation of the weighted chi-square law; sup radius by 4000 Monte Carlo draws. "
           "Previews: idealised real-arithmetic DP (numpy generator).")

left, right = st.columns(2)
with left:
    st.markdown("**Sensitivity (Cameron-Martin norm)**")
    gq = plan.guarantee
    st.dataframe(pd.DataFrame({"bound": ["tight (attained)", "paper (Mirshani et al.)"],
                               "Delta": [gq["sensitivity_tight"], gq["sensitivity_paper"]]}),
                 hide_index=True, width="stretch")
    st.caption(f"n = {plan.n} curves (after {plan.n_dropped} dropped), {plan.n_clipped} clipped at "
               f"tau = {plan.tau:.4g}; {plan.synthesis.shape[1]} eigenfunctions kept.")
with right:
    st.markdown("**Noise scale sigma: both bounds x both calibrations**")
    rows = []
    for b in BOUNDS:
        rows.append({"bound": b, **{c: gq["sigma_table"][f"{b}/{c}"] for c in CALIBRATIONS}})
    table = pd.DataFrame(rows)
    st.dataframe(table.style.format(lambda v: "refused (epsilon > 1)" if v is None or v != v else f"{v:.4g}",
                                    subset=list(CALIBRATIONS)), hide_index=True, width="stretch")
    st.caption(f"In use: {bound} / {calibration}, sigma = {plan.sigma:.4g}, Gaussian-DP mu = "
               f"{gq['gdp_mu']:.3g}.")
