"""The Principal components page's data and controls (METHODS.md section 5): the current data
set or Awan et al.'s FPCA simulation, then k, the basis, gamma, the sampler and its own fields.

Widget keys start with ``pca_``; the keys of PcaSettings fields come from the field metadata
(fdp_core/releases/pca.py). Centring and the number of draws are in fdp_ui/pca_centring.py.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import streamlit as st

from fdp_core.data.loading import from_arrays
from fdp_core.errors import FdpError
from fdp_core.registry.pca import page_choices, pca_sampler, sampler_for
from fdp_core.releases.pca import AWAN_RESCALING_FLAG, MAX_COMPONENTS, TRACE_FRACTION, PcaSettings, pca_basis, \
    simulate_fpca_awan
from fdp_core.settings_fields import page_defaults, page_keys

SOURCES = {"current": "the current data set", "awan": "FPCA simulation (Awan et al.)"}
# The PcaSettings fields one widget holds (k, basis, gamma, sampler choice, centring, Gibbs sweeps
# and thinning): keys and defaults from the field metadata (fdp_core/releases/pca.py). p, the epsilon
# split and the burn-in are composed from the page's own widgets.
PAGE = "components"
KEYS = page_keys(PcaSettings, PAGE)
P_KEY = "pca_p"
# The mechanism settings of Awan, Kenney, Reimherr & Slavkovic (2019): p = 40 Fourier functions,
# C = diag(j^-3) (the Fourier basis's base measure in fdp_core.releases.pca), k = 1.
AWAN_SETTINGS = {KEYS["basis"]: "fourier", P_KEY: 40, KEYS["k"]: 1, KEYS["sampler"]: "exact",
                 KEYS["centring"]: "none"}
BASES = {"kernel": "kernel eigenfunctions", "fourier": "Fourier"}
MAX_DRAWS = 10  # a sampler may allow fewer (its max_preview_draws)
DEFAULTS = {**page_defaults(PcaSettings, PAGE), "pca_source": "current", "pca_awan_n": 500, "pca_awan_seed": 0,
            "pca_split": "equal", **{f"pca_w{j}": 1.0 for j in range(1, MAX_COMPONENTS + 1)},
            "pca_burn_pct": 10, "pca_draws": 3}
HELP = {
    "k": "Number of private components. k > 1 with the exact sampler uses sequential deflation and splits "
         "epsilon across the components.",
    "basis": "Kernel eigenfunctions of the sidebar's kernel and rho (p chosen so their eigenvalues explain "
             f">= {TRACE_FRACTION:.0%} of the kernel's trace), or a Fourier basis re-orthonormalised on the grid "
             "(you choose p). The curves' coefficients in this basis are what the mechanism sees.",
    "p": "Number of Fourier functions (1, sin, cos, ... by frequency). Must exceed k; at most m - 1.",
    "gamma": "Strength of the base measure exp(-(gamma/2) tr(V' Cinv V)), Cinv = diag(1/c_j), c_j = the kernel "
             "eigenvalues (kernel basis) or j^-3 (Fourier). It pulls draws towards smooth directions and is "
             "fixed in advance, so the guarantee does not change. gamma = 0: uniform base measure (the "
             "finite-dimensional mechanism); gamma = epsilon: the form written by Awan et al.",
    "sampler": "Exact: no Markov-chain caveat (k = 1: vector Bingham by rejection sampling; k > 1: sequential "
               "deflation, each component exact with its own share of epsilon). Gibbs: the matrix Bingham of the "
               "literature by a Markov chain; its output is only approximately from the mechanism, so the "
               "guarantee is approximate DP.",
    "split": "Deflation spends eps_j on component j, epsilon = eps_1 + ... + eps_k (composition).",
    "weights": "Relative weight of each component's share: eps_j = epsilon w_j / sum(w).",
    "sweeps": "Sweeps of the Gibbs chain (each updates every column once). More sweeps: closer to the target, "
              "slower. Still approximate DP.",
    "burn": "Share of the sweeps discarded before states are kept (shaded in the trace).",
    "thin": "Keep every thin-th state after burn-in (0 = automatic: about 100 kept states). The release is the "
            "chain's final state either way.",
    "awan_n": "Number of simulated curves (100 points on [0, 1]).",
}


def init_state() -> None:
    ss = st.session_state
    for key, value in DEFAULTS.items():
        ss[key] = ss.get(key, value)


@st.cache_resource(show_spinner=False)
def gibbs_chain_warm_up():
    """Once per server: numba's compiled Gibbs chain is built into its disk cache by a child
    process at low priority (~30 s the first time after an install), so that no Gibbs preview
    waits for the compiler; until then the Gibbs sampler runs its Python chain."""
    from fdp_core.mechanisms.gibbs_warm_up import warm_up_in_background  # lazy: a child process, only when served

    return warm_up_in_background()


def _apply_source() -> None:
    """The Awan et al. simulation starts from the paper's mechanism settings."""
    ss = st.session_state
    if ss["pca_source"] == "awan":
        ss.update(AWAN_SETTINGS)
    ss.pop("pca_data_sig", None)


@st.cache_data(show_spinner=False, max_entries=8)
def _awan_data(n: int, seed: int):
    grid, values, flags = simulate_fpca_awan(n, seed)
    return from_arrays(grid, values, name="FPCA simulation (Awan et al.)"), tuple(flags)


@dataclass(frozen=True)
class PcaData:
    source: str
    fd: object
    flags: tuple  # data-dependent flags from upstream (the data set's, or the simulation's rescaling)
    key: str  # a digest of the curves: preview draws are cached by it


def data_widgets(ds) -> PcaData:
    """The data radio (and the simulation's size and seed); resets p when the grid changes."""
    ss = st.session_state
    source = st.radio("data", tuple(SOURCES), key="pca_source", format_func=SOURCES.get, horizontal=True,
                      on_change=_apply_source,
                      help="The current data set (Data page), or the FPCA simulation of Awan, Kenney, Reimherr & "
                           "Slavkovic (2019) with the paper's mechanism settings.")
    if source == "awan":
        a1, a2, a3 = st.columns([1, 1, 3])
        n_sim = int(a1.number_input("n (curves)", min_value=2, max_value=20_000, step=50, key="pca_awan_n",
                                    help=HELP["awan_n"]))
        sim_seed = int(a2.number_input("data seed", min_value=0, step=1, key="pca_awan_seed"))
        fd, flags = _awan_data(n_sim, sim_seed)
        a3.caption("100 points on [0, 1]; X_i = sum_{j <= 21} a_j U_ij u_j + noise, Fourier u_j, a_j = j^-2 with "
                   "extra weight on u_4 (the leading component), U_ij ~ N(0, 0.1). Paper's settings: Fourier basis, "
                   "p = 40, C = diag(j^-3), k = 1. The sidebar's data summary and clipping count refer to the current "
                   "data set, not to this simulation.")
        st.error(f"Data-dependent: {AWAN_RESCALING_FLAG}.")
    else:
        fd, flags = ds.fd, tuple(ds.flags)
    signature = (source, fd.m)
    if ss.get("pca_data_sig") != signature:  # another grid: the Fourier dimension restarts from the library's rule
        try:
            ss[P_KEY] = pca_basis(PcaSettings(basis="fourier"), fd.unit_grid, fd.weights).p
        except FdpError:
            ss[P_KEY] = 2
        ss["pca_data_sig"] = signature
    ss[P_KEY] = ss[P_KEY]
    key = hashlib.sha1(fd.grid_points.tobytes() + fd.data_matrix.tobytes()).hexdigest()
    return PcaData(source, fd, flags, key)


@dataclass(frozen=True)
class PcaControls:
    """The mechanism's controls: what ``page_settings`` composes with the sidebar's values."""

    k: int
    p: int | None  # typed p (Fourier basis), else the library's rule
    p_slot: object  # where the page writes the p actually used
    entry: object  # the sampler's registry entry (fdp_core/registry/pca.py)
    epsilon_split: tuple | None
    sweeps: int
    burn_in: int | None
    thin: int | None


def _sampler_row(k: int) -> tuple:
    """The sampler row's places, each a quarter of the row as before, but only as many columns as the
    sampler's controls fill (an empty column is still an element the browser renders on every rerun):
    the choice and the sampler that follows from it are read from the session state, which holds the
    values the widgets are about to return. A place with no column is the page itself (never used)."""
    ss = st.session_state
    fields = pca_sampler(sampler_for(ss.get(KEYS["sampler"], page_choices()[0]), k)).fields
    if "gibbs_sweeps" in fields:
        return tuple(st.columns(4))
    if "epsilon_split" in fields:
        if ss.get("pca_split", "equal") == "custom":
            return (*st.columns([1, 1, 2]), st)  # the weights take the last half of the row
        return (*st.columns([1, 3]), st, st)
    return st, st, st, st  # the sampler alone: its radio is as wide as its labels, no columns needed


def control_widgets(epsilon: float) -> PcaControls:
    c1, c2, c3, c4 = st.columns(4)
    k = int(c1.slider("components k", 1, MAX_COMPONENTS, key=KEYS["k"], help=HELP["k"]))
    basis = c2.radio("basis", tuple(BASES), key=KEYS["basis"], format_func=BASES.get, horizontal=True,
                     help=HELP["basis"])
    if basis == "fourier":
        p_input = int(c3.number_input("p (Fourier functions)", min_value=2, max_value=1000, step=1, key=P_KEY,
                                      help=HELP["p"]))
    else:
        p_input = None
    p_slot = c3.empty()
    c4.number_input("gamma (base-measure strength)", step=0.5, format="%.4g", key=KEYS["gamma"], help=HELP["gamma"])
    c4.caption("gamma = 0: uniform base measure; 1: default; epsilon: the literature's form.")

    s1, s2, s3, s4 = _sampler_row(k)
    # Each choice means a sampler once k is known (exact: the vector Bingham for k = 1, deflation above).
    sampler_choice = s1.radio("sampler", page_choices(), key=KEYS["sampler"], help=HELP["sampler"],
                              format_func=lambda c: pca_sampler(sampler_for(c, k)).page_label)
    entry = pca_sampler(sampler_for(sampler_choice, k))
    epsilon_split, burn_in, thin, sweeps = None, None, None, PcaSettings.gibbs_sweeps
    # The controls of the settings fields the sampler reads (fdp_core/registry/pca.py).
    if "epsilon_split" in entry.fields:
        split = s2.radio("epsilon split", ("equal", "custom"), key="pca_split", horizontal=True, help=HELP["split"])
        if split == "custom":
            weight_columns = s3.columns(k)
            weights = [float(col.number_input(f"w{j}", step=0.5, format="%.3g", key=f"pca_w{j}",
                                              help=HELP["weights"]))
                       for j, col in enumerate(weight_columns, start=1)]
            total_weight = sum(weights)
            epsilon_split = tuple(epsilon * w / total_weight if total_weight != 0 else 0.0 for w in weights)
    if "gibbs_sweeps" in entry.fields:
        sweeps = int(s2.slider("Gibbs sweeps", 100, 20_000, step=100, key=KEYS["gibbs_sweeps"], help=HELP["sweeps"]))
        burn_pct = s3.slider("burn-in (% of sweeps)", 0, 90, step=5, key="pca_burn_pct", help=HELP["burn"])
        thin_input = int(s4.number_input("thin (0 = auto)", min_value=0, max_value=10_000, step=1,
                                         key=KEYS["gibbs_thin"], help=HELP["thin"]))
        burn_in = sweeps * burn_pct // 100
        thin = thin_input or None
    return PcaControls(k, p_input, p_slot, entry, epsilon_split, sweeps, burn_in, thin)
