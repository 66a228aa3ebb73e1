"""Sparse curves in the app (METHODS.md 20): recognise a sparse long file, say why, and release its mean.

The Data page calls :func:`detect_upload` after an upload and :func:`render_data_section` to show a
sparse data set (why it is sparse, the observations-per-person histogram, the public domain, the
observations as points); the Mean page hands over to :func:`render_mean_section` while one is in
use. The gridded data set of the other pages is left as it was.
"""

from __future__ import annotations

import io
import math

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from fdp_core.errors import FdpError
from fdp_core.releases.smoother import pooled_local_linear
from fdp_core.releases.sparse import NOISES, SparseSettings, plan_sparse_release
from fdp_core.data.sparse_data import SparseData, read_long, sparse_reason
from fdp_core.settings_fields import command_line, page_defaults, page_settings

from fdp_core.explore.verdict import sparse_mean_verdict

from . import drafts, intake, live_chart, plots, state, verdict_box
# Whether sparse data are in use lives in sparse_state (light: asked on every run of every page).
from .sparse_state import DOMAIN_DECLARED, DOMAIN_HI, DOMAIN_LO, EXAMPLE, SPARSE_KEY  # noqa: F401
from .sparse_state import active, keep, stop_using  # noqa: F401

# The controls holding SparseSettings fields come from its metadata (fdp_core/settings_fields.py); the number
# of preview draws is the page's own.
CONTROLS = {**page_defaults(SparseSettings, "mean"), "sparse_draws": 5}
MAX_POINTS = 20_000  # observations drawn as points (a fixed subset beyond)


def _use(data: SparseData, label: str, file: str) -> None:
    ss = st.session_state
    ss[SPARSE_KEY] = {"data": data, "label": label, "file": file}
    ss.setdefault(DOMAIN_LO, 0.0)
    ss.setdefault(DOMAIN_HI, 1.0)
    ss[DOMAIN_DECLARED] = False


def _sparse_from_bytes(raw: bytes, name: str) -> SparseData | None:
    """The observations of a long file, whatever its column names (the intake's suggestion), or None."""
    try:
        return read_long(io.BytesIO(raw), name=name)
    except FdpError:
        pass
    diagnosis = intake.diagnose(raw)
    if diagnosis.kind != "long":
        return None
    try:
        s = diagnosis.suggestion
        if intake.is_date_column(raw, s["t"]):  # dates become days: the one rewrite of the file
            return read_long(io.BytesIO(intake.long_to_loader_csv(raw, s["id"], s["t"], s["value"])), name=name)
        # The same bounded reader, told the column names (no rewritten copy of the upload).
        return read_long(io.BytesIO(raw), id_column=s["id"], t_column=s["t"], value_column=s["value"], name=name)
    except FdpError:
        return None


def detect_upload(raw: bytes, name: str) -> None:
    """After an upload: a sparse long file is taken up here (the gridded loader's refusal is dropped)."""
    data = _sparse_from_bytes(raw, name)
    if data is None or not sparse_reason(data).sparse:
        stop_using()
        return
    _use(data, f"upload: {name}", name)
    st.session_state.pop("data_error", None)
    st.session_state.pop("intake_pending", None)


def load_example() -> None:
    _use(read_long(EXAMPLE), f"built-in sparse example ({EXAMPLE.name})", f"data/{EXAMPLE.name}")


def visits_figure(visits: np.ndarray) -> go.Figure:
    values, counts = np.unique(visits, return_counts=True)
    fig = go.Figure(go.Bar(x=values, y=counts, marker_color="rgba(31,119,180,0.7)"))
    fig.update_layout(title="Observations per person", xaxis_title="observations m_i", yaxis_title="persons",
                      height=300, margin=dict(t=40, b=40, l=40, r=10))
    return fig


def observations_figure(data: SparseData, *, title: str) -> go.Figure:
    """Every observation as a point: a person's visits are never joined by lines."""
    keep = np.arange(data.n_observations)
    if keep.size > MAX_POINTS:
        keep = np.sort(np.random.default_rng(0).choice(keep, MAX_POINTS, replace=False))
    fig = go.Figure(go.Scattergl(x=data.t[keep], y=data.y[keep], mode="markers", name="observations",
                                 marker=dict(size=4, color="rgba(120,120,120,0.35)")))
    fig.update_layout(title=title, xaxis_title=plots.t_title(), yaxis_title=plots.value_title(), height=420,
                      margin=dict(t=40, b=40, l=40, r=10))
    return fig


def declared_domain() -> tuple[float, float] | None:
    ss = st.session_state
    if not ss.get(DOMAIN_DECLARED):
        return None
    lo, hi = float(ss[DOMAIN_LO]), float(ss[DOMAIN_HI])
    return (lo, hi) if lo < hi else None


def render_data_section() -> None:
    """The sparse data set on the Data page: why it is sparse, visits per person, domain, observations."""
    keep()
    info = active()
    data = info["data"]
    verdict = sparse_reason(data)
    box = st.container(border=True, key="sparse_data_section")
    box.subheader(f"Sparse curves: {info['label']}")
    box.info(f"Sparse: {verdict.reason}. The Mean page releases its mean from private normal equations "
             "(METHODS.md 20); the other pages keep the gridded data set "
             f"**{state.current().label}**.")
    c1, c2, c3 = box.columns(3)
    c1.metric("persons n", data.n, help="The n of every sensitivity (declared public).")
    c2.metric("observations", data.n_observations)
    c3.metric("observations per person", f"{verdict.visits_min} to {verdict.visits_max}",
              help=f"median {verdict.visits_median:g} (analyst view)")
    left, right = box.columns([2, 3])
    live_chart.show(visits_figure(data.visits_per_person()), key="sparse_visits", where=left)
    left.caption("Analyst view: counts computed from the data, not for publication.")
    with right:
        st.markdown("**Public domain of t**: the range every visit can fall in, declared from the study design "
                    "(e.g. ages 0 to 18), never read off these data. Visits outside it are dropped.")
        d1, d2 = st.columns(2)
        d1.number_input("domain from", format="%.6g", key=DOMAIN_LO)
        d2.number_input("domain to", format="%.6g", key=DOMAIN_HI)
        st.checkbox("I declare this domain public", key=DOMAIN_DECLARED)
        if st.session_state[DOMAIN_DECLARED] and declared_domain() is None:
            st.error("The domain needs from < to.")
        st.caption("The public value range is declared below, as for gridded curves.")
        st.button("Stop using the sparse data", on_click=stop_using, key="sparse_stop")
    live_chart.show(observations_figure(data, title="Observations (one point per visit; analyst view)"),
                    key="sparse_points", where=box)


def _controls() -> None:
    ss = st.session_state
    for key, value in CONTROLS.items():
        ss[key] = ss.get(key, value)
    c1, c2, c3, c4, c5 = st.columns(5)
    c1.selectbox("noise", NOISES, key="sparse_noise",
                 format_func={"gaussian": "Gaussian ((eps, delta)-DP)", "laplace": "Laplace (eps-DP)"}.get)
    c2.number_input("basis functions J", min_value=1, max_value=60, step=1, key="sparse_J")
    c3.number_input("budget share of A (gamma)", min_value=0.05, max_value=0.95, step=0.05, key="sparse_gamma")
    c4.number_input("eigenvalue floor kappa", min_value=1e-4, max_value=10.0, format="%.4g", key="sparse_kappa")
    c5.number_input("preview draws", min_value=1, max_value=50, step=1, key="sparse_draws")


def render_mean_section(g) -> None:
    """The Mean page on sparse data: release preview, accuracy statement, analyst view."""
    keep()
    info = active()
    data = info["data"]
    st.info(f"Sparse data in use: **{info['label']}** ({data.n} persons, {data.n_observations} observations). "
            "The mean is released from private normal equations A and b (METHODS.md 20); change data on the "
            "Data page.")
    _controls()
    domain, value_range = declared_domain(), g.value_range
    if domain is None or value_range is None:
        st.warning("Declare the public domain of t and the public value range on the Data page first: the "
                   "sensitivities are built from them.")
        live_chart.show(observations_figure(data, title="Observations (analyst view)"), key="sparse_mean_points")
        return
    ss = st.session_state
    settings = _settings_from(g)
    try:
        plan = plan_sparse_release(data, settings)
    except FdpError as exc:
        st.error(str(exc))
        return
    draws = plan.sample(g.rng(salt=7), int(ss["sparse_draws"]))
    smooth = pooled_local_linear(data, plan.output_grid, domain=domain)
    fig = observations_figure(data, title="Private mean (previews) over the observations")
    for k, values in enumerate(draws):
        fig.add_trace(go.Scatter(x=plan.output_grid, y=values, mode="lines", name="private release" if k == 0 else None,
                                 showlegend=k == 0, line=dict(color="rgba(214,39,40,0.8)", width=1.5)))
    fig.add_trace(go.Scatter(x=plan.output_grid, y=plan.nonprivate_curve(), mode="lines",
                             name="same estimate without noise (analyst view)", line=dict(color="black", dash="dash")))
    fig.add_trace(go.Scatter(x=plan.output_grid, y=smooth.values, mode="lines",
                             name="pooled local-linear smoother (analyst view)", line=dict(color="green", dash="dot")))
    live_chart.show(fig, key="sparse_release")
    gd = plan.guarantee
    scale = "sigma" if plan.family.uses_delta else "Laplace scale"
    st.markdown(f"**Guarantee**: {gd.privacy} with epsilon = {gd.epsilon:g}"
                + (f", delta = {gd.delta:g}" if plan.family.uses_delta else "")
                + f" for each person (n = {plan.n}, declared public). A gets {gd.details['A'].epsilon:g} of epsilon "
                  f"({scale} {plan.scale_a:.3g} per entry), b the rest ({scale} {plan.scale_b:.3g} per entry); "
                  f"J = {plan.basis.n_basis}, R2 = {plan.basis.r2:.3g}.")
    nonprivate = plan.nonprivate_curve()
    span = plan.output_grid[-1] - plan.output_grid[0]

    def l2(a, b):
        return math.sqrt(float(np.trapezoid((a - b) ** 2, plan.output_grid)) / span)

    distances = [l2(d, nonprivate) for d in plan.sample(g.rng(salt=8), 200)]
    noise_l2 = float(np.mean(distances))
    verdict = sparse_mean_verdict(distances, value_range)  # analyst view: the data's own A is solved
    verdict_box.render(verdict, extra="(analyst view: 95th percentile of 200 preview distances)",
                       link_tradeoffs=False)
    drafts.put_sparse(info["label"], settings, verdict)  # what the Release page commits (issue 38)
    with st.expander("Accuracy (analyst view: computed from the data without noise)", expanded=True):
        st.markdown(f"- mean L2 distance (root mean square over the domain) of a release from the same estimate "
                    f"without noise: **{noise_l2:.4g}** (200 draws)\n"
                    f"- L2 gap of the estimate without noise to the pooled local-linear smoother "
                    f"(bandwidth {smooth.bandwidth:.3g} by cross-validation): **{l2(nonprivate, smooth.values):.4g}**\n"
                    f"- L2 gap of the first preview to the smoother: **{l2(draws[0], smooth.values):.4g}**")
    st.code(command_line("release mean --sparse", settings, inputs=(("--data", info["file"]),),
                         out="release_folder"), language="bash")


def _settings_from(g, **changes) -> SparseSettings | None:
    """SparseSettings from the page's controls (their keys from the metadata), the sidebar's shared settings
    and the declared domain; ``changes`` win (the trade-off curves vary epsilon, the noise, J)."""
    domain, value_range = declared_domain(), g.value_range
    if domain is None or value_range is None:
        return None
    state = {**CONTROLS, **st.session_state}  # the Trade-offs page may run before the Mean page drew the controls
    given = {**dict(domain=domain, value_range=tuple(value_range), kernel=g.kernel, rho=g.rho, nu=g.nu, eta=g.eta,
                    phi=g.phi, epsilon=g.epsilon, delta=g.delta), **changes}
    return page_settings(SparseSettings, "mean", state, **given)


def current_settings(g) -> SparseSettings | None:
    """The sparse mean's settings as the Mean page shows them (None until the domain and the range are
    declared): what the Release page commits."""
    return _settings_from(g)


def _mean_l2(plan, reference, rng, draws: int = 100) -> float:
    span = plan.output_grid[-1] - plan.output_grid[0]
    curves = plan.sample(rng, draws)
    return float(np.mean([math.sqrt(float(np.trapezoid((c - reference) ** 2, plan.output_grid)) / span)
                          for c in curves]))


def render_tradeoffs_section(g) -> None:
    """The Trade-offs page on sparse data: L2 error against epsilon (both noises) and against J."""
    keep()
    info = active()
    data = info["data"]
    st.info(f"Sparse data in use: **{info['label']}**. Error of the sparse release (METHODS.md 20) against "
            "epsilon and the number of basis functions J; the other settings are the Mean page's.")
    settings = _settings_from(g)
    if settings is None:
        st.warning("Declare the public domain of t and the public value range on the Data page first.")
        return
    try:
        smooth = pooled_local_linear(data, settings.output_grid(), domain=settings.domain).values
        epsilons = np.geomspace(0.1, 10.0, 11)
        fig = go.Figure()
        for noise, color in (("gaussian", "rgb(31,119,180)"), ("laplace", "rgb(214,39,40)")):
            errors = [_mean_l2(plan_sparse_release(data, _settings_from(g, epsilon=float(e), noise=noise)), smooth,
                               g.rng(salt=11)) for e in epsilons]
            fig.add_trace(go.Scatter(x=epsilons, y=errors, mode="lines+markers", name=noise, line=dict(color=color)))
        fig.add_vline(x=g.epsilon, line_dash="dot", annotation_text="current epsilon")
        fig.update_layout(title="L2 distance of a release to the pooled smoother, against epsilon", height=380,
                          xaxis=dict(type="log", title="epsilon"), yaxis=dict(type="log", title="mean L2 distance"))
        live_chart.show(fig, key="sparse_tradeoff_eps")
        sizes = np.arange(2, 21, 2)
        errors_j = [_mean_l2(plan_sparse_release(data, _settings_from(g, n_basis=int(J))), smooth, g.rng(salt=12))
                    for J in sizes]
        fig_j = go.Figure(go.Scatter(x=sizes, y=errors_j, mode="lines+markers", name=settings.noise))
        fig_j.update_layout(title=f"... against the number of basis functions J (epsilon {g.epsilon:g}, "
                                  f"{settings.noise} noise)", height=340, xaxis_title="J",
                            yaxis=dict(type="log", title="mean L2 distance"))
        live_chart.show(fig_j, key="sparse_tradeoff_J")
    except FdpError as exc:
        st.error(str(exc))
        return
    st.caption("Analyst view: the distances are computed from the data without noise (100 draws per point, "
               "against the non-private pooled local-linear smoother); do not publish them.")
