"""Global settings in the sidebar, shared by every page (rendered once by app.py)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import streamlit as st

from fdp_core.publish.views import NONPRIVATE_VIEWS
from fdp_core.kernels import KERNEL_LABELS, KERNEL_NAMES
from fdp_core.data.preprocess import PublicBounds, data_tau, n_norm_clipped

from . import ledger, navigation, sparse_state, state
from .layout import small
# apply and setting_default are part of the sidebar's interface (pages set global settings through it).
from .choices import (DEFAULTS, DELTA_CHOICES, EPSILON_CHOICES, EPSILON_STRONG_WARNING, EPSILON_WARNING,  # noqa: F401
                      apply, setting_default)


HELP = {
    "epsilon": "Privacy loss bound. Smaller epsilon = stronger privacy = more noise. "
               "Each step of the slider multiplies epsilon by the same factor.",
    "delta": "Probability-like slack of (epsilon, delta)-DP, used by Gaussian mechanisms only. "
             "Should be far below 1/n. Pure epsilon-DP mechanisms ignore it (delta = 0).",
    "tau": "Public bound on each curve's L2 norm over the domain rescaled to [0, 1]. Curves with a larger "
           "norm are shrunk onto the ball. Choose it from domain knowledge, not from the data.",
    "tau_from_data": "Uses the largest curve norm in the data as tau. Convenient for teaching, but the "
                     "bound then depends on the data, so NOTHING released is differentially private.",
    "kernel": "Covariance kernel C: its eigenfunctions are the basis, its eigenvalues shape both the "
              "smoothing and the noise. The Gaussian kernel is exp(-d^2/rho) (divides by rho, not 2 rho^2).",
    "rho": "Kernel range on the domain rescaled to [0, 1]. Larger rho = smoother basis and noise.",
    "nu": "Smoothness of the general Matern kernel.",
    "eta": "Smoothness exponent: the penalty uses C^eta. Larger eta shrinks rough components harder.",
    "phi": "Penalty strength phi (psi for pure-DP penalised means). Larger phi = more smoothing, "
           "less noise needed, more bias: the over-smoothing trade-off.",
    "seed": "A demo seed makes every preview reproducible (for classrooms). Fresh randomness draws new "
            "noise on every rerun. Committed releases always use fresh OS entropy.",
    "tutorial": "Show step-by-step explanations next to the controls (for classrooms and first-time users).",
}

# The global settings that are fields of the release settings (same names in every kind).
SETTINGS_FIELDS = ("kernel", "rho", "nu", "eta", "phi", "epsilon", "delta", "tau", "tau_from_data", "value_range",
                   "person_column")


@dataclass(frozen=True, kw_only=True)  # keywords only: 14 fields are too many to pass by position
class GlobalSettings:
    """The sidebar's values, as every page reads them (built by :func:`render`)."""

    kernel: str
    rho: float
    nu: float | None
    eta: float
    phi: float
    epsilon: float
    delta: float
    tau: float
    tau_from_data: bool
    seed: int | None
    n_clipped: int
    tutorial: bool = False
    value_range: tuple | None = None  # declared on the Data page (None: previews centred at 0)
    person_column: str | None = None

    @property
    def bounds(self) -> dict:
        """value_range / person_column fields for MeanSettings, PcaSettings and KdeSettings."""
        return {"value_range": self.value_range, "person_column": self.person_column}

    def fields_of(self, cls) -> dict:
        """The sidebar's values of the settings fields ``cls`` has (kernel, rho, ..., value range)."""
        names = {f.name for f in dataclasses.fields(cls)}
        return {name: getattr(self, name) for name in SETTINGS_FIELDS if name in names}

    def rng(self, salt: int = 0) -> np.random.Generator:
        """Preview randomness: reproducible under a demo seed, fresh otherwise."""
        return np.random.default_rng(None if self.seed is None else [self.seed, salt])


def _start_page() -> None:
    """What every page does first: leave Streamlit's legacy pages mode (fdp_ui/navigation.py) and
    re-assign each stored setting. Re-assigning marks a value as set by the user, which stops
    Streamlit from discarding a widget's state at the end of a run that did not draw the widget."""
    navigation.leave_legacy_mode()
    for key, value in DEFAULTS.items():
        st.session_state[key] = st.session_state.get(key, value)


def tutorial_toggle(sb=None) -> bool:
    """The "tutorial mode" switch (key g_tutorial, mirrored in the URL by fdp_ui/tutorial.py)."""
    return bool((st.sidebar if sb is None else sb).toggle("tutorial mode", key="g_tutorial", help=HELP["tutorial"]))


def render_without_settings() -> bool:
    """:func:`render` for a page that uses neither the session's data nor its settings (Combine
    sites): the same start, so the settings drawn on the other pages survive a visit here, and
    only the tutorial switch in the sidebar. Returns whether tutorial mode is on."""
    _start_page()
    return tutorial_toggle()


def render() -> GlobalSettings:
    """Draw the global settings; every page calls this first.

    Re-assigning each stored value marks it as set by the user, which stops Streamlit from
    discarding a widget's state when the user moves to a page (widget state is otherwise
    cleaned up between pages).
    """
    _start_page()
    ds = state.current()
    sb = st.sidebar
    person = state.person_column(ds)
    # n is the number of persons, the n of every sensitivity (the unit of privacy chosen on the Data page).
    unit = (f"{ds.fd.n} curves of persons in '{person}', n = {state.n_persons(ds)} persons," if person
            else f"n = {ds.fd.n},")
    sparse = sparse_state.active()
    if sparse:  # sparse data in use (issue 38): they are what the Mean and Release pages release
        data = (f"Data: **{sparse['label']}** (sparse) — n = {sparse['data'].n} persons, "
                f"{sparse['data'].n_observations} observations; the other pages use {ds.label}")
    else:
        data = f"Data: **{ds.label}** — {unit} m = {ds.fd.m}"
    # One element per caption and the header after it (here and below): every element costs the browser
    # time on each rerun, and a slider move reruns the whole page.
    sb.markdown(small(data) + "\n\n**Privacy**")
    epsilon = sb.select_slider("epsilon", EPSILON_CHOICES, key="g_epsilon", help=HELP["epsilon"],
                               format_func=lambda v: f"{v:g}")
    # A caption, not HTML in markdown: raw HTML makes every session's first page load 0.2 MB more script.
    sb.caption("← stronger privacy · more accuracy →")
    if epsilon >= EPSILON_STRONG_WARNING:
        sb.error(f"epsilon = {epsilon:g}: very weak privacy. An adversary's odds of telling whether a person is in "
                 f"the data can grow by a factor e^epsilon = {math.exp(epsilon):,.0f}.")
    elif epsilon >= EPSILON_WARNING:
        sb.warning(f"epsilon = {epsilon:g} is large (weak privacy): the odds factor e^epsilon is "
                   f"{math.exp(epsilon):,.0f}. Values above 5 need a reason.")
    delta = sb.selectbox("delta", DELTA_CHOICES, key="g_delta", help=HELP["delta"], format_func=lambda v: f"{v:g}")

    bounds_fields = state.bounds_settings(ds)
    bounds = PublicBounds(**bounds_fields)
    tau_from_data = sb.checkbox("tau from the data (not DP)", key="g_tau_from_data", help=HELP["tau_from_data"])
    notes = []  # adjacent captions, drawn as one element (warnings and errors stay their own, to stand out)
    if tau_from_data:
        # what the clip actually sees: after the range clip and centring
        tau = state.remembered("data_tau", ds.fd, bounds, lambda: data_tau(ds.fd, bounds))
        sb.error(f"tau = {tau:.4g} was read off the data: releases are NOT differentially private.")
    elif bounds.value_range is not None and sb.checkbox(
            "tau = (hi - lo)/2 from the declared range", key="g_tau_from_range",
            help="The largest norm a curve clipped to the public range can have after centring: nothing is "
                 "clipped in norm. Untick to clip harder (less noise, more bias)."):
        tau = float(bounds.default_tau(ds.fd.grid_points))
        notes.append(f"tau = {tau:.4g} (public: from the declared range)")
    else:
        tau = sb.number_input("tau (L2 norm bound)", min_value=1e-9, format="%.4g", key="g_tau", help=HELP["tau"])
    n_clipped = state.remembered("n_clipped", ds.fd, (bounds, tau), lambda: n_norm_clipped(ds.fd, bounds, tau))
    state.note_view(NONPRIVATE_VIEWS["norms"])  # the count below is computed from the data
    share = n_clipped / ds.fd.n
    centre = "the centre of the declared range" if bounds.value_range is not None else "0"
    message = f"tau clips {n_clipped} of {ds.fd.n} curves ({share:.0%}, analyst view)"
    if share > 0.25:
        if notes:
            sb.caption(notes.pop())
        sb.warning(message + f" — most curves are shrunk; the estimate is biased towards {centre}")
    else:
        notes.append(message)
    if bounds.value_range is None:
        notes.append("No public value range declared (Data page): previews are centred at 0 and commits of curves "
                     "are refused.")
    if notes:
        sb.caption("  \n".join(notes))

    sb.markdown("**Smoothing**")
    kernel = sb.selectbox("kernel", KERNEL_NAMES, key="g_kernel", help=HELP["kernel"],
                          format_func=lambda k: KERNEL_LABELS[k])
    nu = sb.number_input("nu", min_value=0.05, max_value=20.0, key="g_nu", help=HELP["nu"]) \
        if kernel == "matern" else None
    rho = sb.number_input("rho (kernel range)", min_value=1e-6, max_value=100.0, format="%.4g", key="g_rho",
                          help=HELP["rho"])
    eta = sb.slider("eta", 1.0, 4.0, step=0.05, key="g_eta", help=HELP["eta"])
    log_phi = sb.slider("log10 phi (penalty)", -8.0, 2.0, step=0.1, key="g_log_phi", help=HELP["phi"])
    sb.markdown(small(f"phi = {10 ** log_phi:.3g}") + "\n\n**Randomness**")
    seed_mode = sb.radio("preview noise", ("demo seed", "fresh randomness"), key="g_seed_mode", horizontal=True,
                         help=HELP["seed"])
    seed = int(sb.number_input("seed", min_value=0, step=1, key="g_seed")) if seed_mode == "demo seed" else None
    sb.caption("Previews use numpy's generator: idealised real-arithmetic DP, for exploration only.")

    tutorial = tutorial_toggle(sb)
    ledger.render_meter(sb)

    return GlobalSettings(kernel=kernel, rho=float(rho), nu=None if nu is None else float(nu), eta=float(eta),
                          phi=float(10 ** log_phi), epsilon=float(epsilon), delta=float(delta), tau=float(tau),
                          tau_from_data=bool(tau_from_data), seed=seed, n_clipped=int(n_clipped),
                          tutorial=bool(tutorial), value_range=bounds.value_range,
                          person_column=bounds.person_column)
