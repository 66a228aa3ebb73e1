"""Principal components page: private functional PCA by the exponential mechanism (METHODS.md section 5).

The curves (the current data set, or the FPCA simulation of Awan et al.) are projected on a
basis orthonormal in the weighted inner product, optionally centred, divided by tau and
clipped; private components are drawn with density etr(V' A V) by an exact sampler (k = 1:
vector Bingham; k > 1: sequential deflation) or by Gibbs sampling (approximate DP). The
non-private FPCA, the scree, the variance ratio and the subspace distance are the analyst's
view: computed from the raw data, labelled, never published. Every number comes from
fdp_core.releases.pca; previews cost no budget (commits happen on the Release & audit page).
"""

import hashlib
from dataclasses import asdict

import numpy as np
import pandas as pd
import streamlit as st

from fdp_core.data.loading import from_arrays
from fdp_core.errors import FdpError
from fdp_core.publish.views import NONPRIVATE_VIEWS
from fdp_core.releases.pca import (AWAN_RESCALING_FLAG, FLOATING_POINT_NOTE, MAX_COMPONENTS, TRACE_FRACTION, PcaSettings,
                          pca_basis, private_pca, release_record, simulate_fpca_awan)
from fdp_core.registry.pca import page_choices, pca_sampler, sampler_for
from fdp_core.settings_fields import command_line, page_defaults, page_keys, page_settings
from fdp_ui import ledger as ledger_ui
from fdp_ui import centring_hint, pca_plots, sidebar, state

SOURCES = {"current": "the current data set", "awan": "FPCA simulation (Awan et al.)"}
# The PcaSettings fields one widget holds (k, basis, gamma, sampler choice, centring, Gibbs sweeps
# and thinning): keys and defaults from the field metadata (fdp_core/releases/pca.py). p, the epsilon
# split and the burn-in are composed below from the page's own widgets.
PAGE = "components"
KEYS = page_keys(PcaSettings, PAGE)
P_KEY = "pca_p"
# The mechanism settings of Awan, Kenney, Reimherr & Slavkovic (2019): p = 40 Fourier functions,
# C = diag(j^-3) (the Fourier basis's base measure in fdp_core.releases.pca), k = 1.
AWAN_SETTINGS = {KEYS["basis"]: "fourier", P_KEY: 40, KEYS["k"]: 1, KEYS["sampler"]: "exact",
                 KEYS["centring"]: "none"}
BASES = {"kernel": "kernel eigenfunctions", "fourier": "Fourier"}
CENTRING = {"none": "none (not recommended: components follow the mean)",
            "released-mean": "the mean released on the Mean page (committed)",
            "sample-mean": "sample mean (NOT DP: teaching only)",
            "public": "centre of the declared public range (free: a public input)"}
MAX_DRAWS = 10  # a sampler may allow fewer (its max_preview_draws)
DRAW_SALT = 40  # preview draw i uses the sidebar's generator with salt DRAW_SALT + i
_DEFAULTS = {**page_defaults(PcaSettings, PAGE), "pca_source": "current", "pca_awan_n": 500, "pca_awan_seed": 0,
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
    "centring": "Centre the curves before projecting. A committed mean is itself a release (its budget is "
                "already in the ledger). The raw sample mean looks at the data: nothing is then DP.",
    "draws": "Independent private draws overlaid. Each draw is a separate release: publishing d of them costs d x "
             "epsilon.",
    "awan_n": "Number of simulated curves (100 points on [0, 1]).",
}

ss = st.session_state
for key, value in _DEFAULTS.items():
    ss[key] = ss.get(key, value)

st.title("Principal components")
g = sidebar.render()
ds = state.current()


@st.cache_resource(show_spinner=False)
def _gibbs_chain_warm_up():
    """Once per server: numba's compiled Gibbs chain is built into its disk cache by a child
    process at low priority (~30 s the first time after an install), so that no Gibbs preview
    waits for the compiler; until then the Gibbs sampler runs its Python chain."""
    from fdp_core.mechanisms.gibbs_warm_up import warm_up_in_background

    return warm_up_in_background()


_gibbs_chain_warm_up()


def _apply_source() -> None:
    """The Awan et al. simulation starts from the paper's mechanism settings."""
    if ss["pca_source"] == "awan":
        ss.update(AWAN_SETTINGS)
    ss.pop("pca_data_sig", None)


@st.cache_data(show_spinner=False, max_entries=8)
def _awan_data(n: int, seed: int):
    grid, values, flags = simulate_fpca_awan(n, seed)
    return from_arrays(grid, values, name="FPCA simulation (Awan et al.)"), tuple(flags)


@st.cache_resource(show_spinner=False, max_entries=64)
def _cached_release(data_key: str, settings_items: tuple, mean_key: str, seed: int, salt: int, flags: tuple,
                    _fd, _mean, _rng):
    """A preview draw under a demo seed: the same inputs give the same draw, so it is kept."""
    return private_pca(_fd, PcaSettings(**dict(settings_items)), _rng, released_mean=_mean,
                       data_dependent_flags=flags)


def _draw(fd, settings: PcaSettings, mean, mean_key: str, flags: tuple, data_key: str, salt: int):
    if g.seed is None:  # fresh randomness: a new draw on every rerun, nothing to keep
        return private_pca(fd, settings, g.rng(salt), released_mean=mean, data_dependent_flags=flags)
    return _cached_release(data_key, tuple(asdict(settings).items()), mean_key, g.seed, salt, flags, fd, mean,
                           g.rng(salt))


def _committed_means(fd, label: str) -> tuple[dict, int]:
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


# --------------------------------------------------------------------------- data

source = st.radio("data", tuple(SOURCES), key="pca_source", format_func=SOURCES.get, horizontal=True,
                  on_change=_apply_source,
                  help="The current data set (Data page), or the FPCA simulation of Awan, Kenney, Reimherr & "
                       "Slavkovic (2019) with the paper's mechanism settings.")
if source == "awan":
    a1, a2, a3 = st.columns([1, 1, 3])
    n_sim = int(a1.number_input("n (curves)", min_value=2, max_value=20_000, step=50, key="pca_awan_n",
                                help=HELP["awan_n"]))
    sim_seed = int(a2.number_input("data seed", min_value=0, step=1, key="pca_awan_seed"))
    fd, upstream_flags = _awan_data(n_sim, sim_seed)
    a3.caption("100 points on [0, 1]; X_i = sum_{j <= 21} a_j U_ij u_j + noise, Fourier u_j, a_j = j^-2 with extra "
               "weight on u_4 (the leading component), U_ij ~ N(0, 0.1). Paper's settings: Fourier basis, p = 40, "
               "C = diag(j^-3), k = 1. The sidebar's data summary and clipping count refer to the current data "
               "set, not to this simulation.")
    st.error(f"Data-dependent: {AWAN_RESCALING_FLAG}.")
else:
    fd, upstream_flags = ds.fd, tuple(ds.flags)
data_key = hashlib.sha1(fd.grid_points.tobytes() + fd.data_matrix.tobytes()).hexdigest()
signature = (source, fd.m)
if ss.get("pca_data_sig") != signature:  # another grid: the Fourier dimension restarts from the library's rule
    try:
        ss[P_KEY] = pca_basis(PcaSettings(basis="fourier"), fd.unit_grid, fd.weights).p
    except FdpError:
        ss[P_KEY] = 2
    ss["pca_data_sig"] = signature
ss[P_KEY] = ss[P_KEY]

if g.tutorial:
    st.info("Tutorial: principal components are the directions along which the curves vary most. The private "
            "version draws the directions at random, favouring directions that explain much variance: the "
            "exponential mechanism. Smaller epsilon = flatter preference = components further from the "
            "non-private ones. The red dashed curves are the analyst's view and must not be published.")

# --------------------------------------------------------------------------- controls

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

s1, s2, s3, s4 = st.columns(4)
# Each choice means a sampler once k is known (exact: the vector Bingham for k = 1, deflation above).
sampler_choice = s1.radio("sampler", page_choices(), key=KEYS["sampler"], help=HELP["sampler"],
                          format_func=lambda c: pca_sampler(sampler_for(c, k)).page_label)
entry = pca_sampler(sampler_for(sampler_choice, k))
sampler = entry.name
epsilon_split, burn_in, thin, sweeps = None, None, None, PcaSettings.gibbs_sweeps
# The controls of the settings fields the sampler reads (fdp_core/registry/pca.py).
if "epsilon_split" in entry.fields:
    split = s2.radio("epsilon split", ("equal", "custom"), key="pca_split", horizontal=True, help=HELP["split"])
    if split == "custom":
        weight_columns = s3.columns(k)
        weights = [float(col.number_input(f"w{j}", step=0.5, format="%.3g", key=f"pca_w{j}", help=HELP["weights"]))
                   for j, col in enumerate(weight_columns, start=1)]
        total_weight = sum(weights)
        epsilon_split = tuple(g.epsilon * w / total_weight if total_weight != 0 else 0.0 for w in weights)
if "gibbs_sweeps" in entry.fields:
    sweeps = int(s2.slider("Gibbs sweeps", 100, 20_000, step=100, key=KEYS["gibbs_sweeps"], help=HELP["sweeps"]))
    burn_pct = s3.slider("burn-in (% of sweeps)", 0, 90, step=5, key="pca_burn_pct", help=HELP["burn"])
    thin_input = int(s4.number_input("thin (0 = auto)", min_value=0, max_value=10_000, step=1,
                                     key=KEYS["gibbs_thin"], help=HELP["thin"]))
    burn_in = sweeps * burn_pct // 100
    thin = thin_input or None

means, n_other_means = _committed_means(fd, ds.label) if source == "current" else ({}, 0)
r1, r2, r3 = st.columns([2, 2, 1])
centring_hint.preselect(bool(means), range_declared=source == "current" and g.value_range is not None)
centring = r1.radio("centring", tuple(CENTRING), key=KEYS["centring"], format_func=CENTRING.get,
                    help=HELP["centring"], on_change=centring_hint.mark_touched)
if centring == "none" and source == "current":
    centring_hint.render_suggestion(r2, fd, g)
mean_release = None
if centring == "released-mean":
    if means:
        if ss.get("pca_mean_id") not in means:
            ss["pca_mean_id"] = next(reversed(means))
        mean_id = r2.selectbox("committed mean", list(means), key="pca_mean_id",
                               format_func=lambda i: f"{means[i].label} ({i})")
        mean_release = means[mean_id]
    else:
        where = ("the simulation has its own curves: no committed mean belongs to it" if source == "awan" else
                 "no mean has been committed for this data set yet"
                 + (f" ({n_other_means} committed on another data set)" if n_other_means else ""))
        r2.info(f"Centring by a released mean needs a committed mean release: {where}. Choose the mechanism on the "
                "Mean page, then commit it on the Release & audit page (what to commit: mean); its budget is "
                "charged there. Or centre by none.")
        r2.page_link("pages/release.py", label="go to Release & audit", icon=":material/verified_user:")
        st.stop()
n_draws = int(r3.slider("private draws", 1, MAX_DRAWS, key="pca_draws", help=HELP["draws"]))
if entry.max_preview_draws is not None and n_draws > entry.max_preview_draws:
    r3.caption(entry.max_preview_draws_note.format(n=entry.max_preview_draws))
    n_draws = entry.max_preview_draws

# --------------------------------------------------------------------------- the release

# k, basis, gamma and centring from their controls; the sampler's own fields only when it reads them
# (the others keep their defaults); the simulation has no declared range or persons.
settings = page_settings(PcaSettings, PAGE, ss, p=p_input, kernel=g.kernel, rho=g.rho, nu=g.nu, epsilon=g.epsilon,
                         sampler=sampler, epsilon_split=epsilon_split, tau=g.tau, tau_from_data=g.tau_from_data,
                         gibbs_sweeps=sweeps, gibbs_burn_in=burn_in, gibbs_thin=thin,
                         **(g.bounds if source == "current" else {}))
mean_values = None if mean_release is None else mean_release.table["value"].to_numpy()
mean_key = "none" if mean_release is None else mean_release.id
try:
    with st.spinner(entry.spinner):
        results = [_draw(fd, settings, mean_values, mean_key, upstream_flags, data_key, DRAW_SALT + i)
                   for i in range(n_draws)]
except FdpError as exc:
    st.error(f"Cannot compute the private components: {exc}")
    st.stop()
first = results[0]
state.note_view(NONPRIVATE_VIEWS["pca_estimate"])
p_slot.caption(f"p = **{first.p}**: {first.basis.p_rule}")

for flag in first.data_dependent_flags:
    if flag != AWAN_RESCALING_FLAG:
        st.error(f"Data-dependent: {flag}.")
gq = first.guarantee
split_text = ", ".join(f"eps_{j} = {e:.4g}" for j, e in enumerate(gq.details["epsilon_per_component"], start=1))
statement = (f"epsilon = {gq.epsilon:g}"
             + (f" split as {split_text} (sequential composition)" if entry.splits_epsilon else "")
             + f"; gamma = {gq.details['gamma']:g}; k = {first.k}, p = {first.p}, tau = {first.tau:.4g}; "
             f"sensitivity of the utility ||XV||_F^2: {gq.sensitivity:g}. Each draw is its own release.")
if gq.details["approximate"]:
    st.warning(f"**Approximate DP** — {gq.privacy}. " + statement)
elif first.data_dependent_flags:
    st.error(f"**NOT differentially private** (data-dependent choices above). Nominal guarantee: {gq.privacy} "
             f"with {statement} Sampler: {gq.details['sampler_label']}.")
else:
    st.info(f"**Guarantee: {gq.privacy}** with {statement} Sampler: {gq.details['sampler_label']}.")
st.caption(f"Floating point: {FLOATING_POINT_NOTE}. Previews cost no budget; commit on the Release & audit page "
           "(fresh OS entropy).")
if mean_release is not None:
    e = mean_release.entry
    st.caption(f"Centred by the committed release '{mean_release.label}' ({mean_release.id}): its cost, epsilon "
               f"{e.epsilon:.4g} and delta {e.delta:.3g}, is already in the ledger. Committing these components adds "
               f"epsilon {g.epsilon:g}: by basic composition the pair costs epsilon {e.epsilon + g.epsilon:.4g}, "
               f"delta {e.delta:.3g}. The released mean's noise stays in the centred curves: with a noisy mean the "
               "leading component can follow that noise (compare the scree).")
if entry.splits_epsilon:
    st.dataframe(pd.DataFrame([{f"eps_{j}": e for j, e in enumerate(gq.details["epsilon_per_component"], start=1)}]),
                 hide_index=True, key="pca_split_table",
                 column_config={f"eps_{j}": st.column_config.NumberColumn(format="%.4g") for j in range(1, k + 1)})
st.caption(f"n = {first.n} curves, m = {first.m} grid points; {first.n_clipped} coefficient rows clipped to norm "
           f"tau = {first.tau:.4g} after centring.")

# --------------------------------------------------------------------------- figures

signs = [pca_plots.align_signs(r.coefficients, r.nonprivate_coefficients) for r in results]
aligned = [r.components * s for r, s in zip(results, signs)]
st.subheader("Private components vs the non-private FPCA")
st.plotly_chart(pca_plots.components_figure(fd.grid_points, aligned, first.nonprivate_components,
                                            approximate=gq.details["approximate"]),
                width="stretch", key="pca_components")
st.caption("Private draws are sign-aligned to the non-private components for display only (v and -v are the same "
           "direction; the released components keep the library's convention: largest coefficient positive). "
           f"{n_draws} independent draw(s) at the same settings." + entry.components_note)

if mean_release is not None:
    centre, centre_label = mean_values, f"released mean ({mean_release.id})"
else:
    centre, centre_label = fd.data_matrix.mean(axis=0), "sample mean (analyst view: do not publish)"
sds = first.tau * np.sqrt(first.scree[:k])
st.subheader("Mean +/- 2 sd x component")
st.plotly_chart(pca_plots.perturbation_figure(fd.grid_points, centre, aligned[0], sds, mean_label=centre_label),
                width="stretch", key="pca_perturbation")
st.caption("Private draw 1. sd_l = tau sqrt(lambda_l), lambda_l the l-th eigenvalue of X'X / n of the clipped "
           "coefficient rows: the non-private scree (analyst view, do not publish)."
           + (" Without centring X'X / n is a second moment (sd_l is a root mean square) and the first component "
              "mostly follows the mean." if centring == "none" else ""))

left, right = st.columns(2)
with left:
    st.plotly_chart(pca_plots.scree_figure(first.explained_variance_ratio, k), width="stretch", key="pca_scree")
with right:
    st.markdown("**Variance ratio and subspace distance** — not private (analyst-side diagnostic)")
    m1, m2 = st.columns(2)
    m1.metric("variance ratio (draw 1)", f"{first.variance_ratio:.4g}",
              help="tr(V~' X'X V~) / tr(V^' X'X V^), in [0, 1]: the share of the best k-dimensional variance "
                   "the private components capture (1 = as good as the non-private FPCA).")
    m2.metric("subspace distance (draw 1)", f"{first.subspace_distance:.4g}",
              help="(1/2) ||P~ - P^||_F^2, in [0, k]: P the projections on the private and non-private "
                   "subspaces (0 = same subspace, k = orthogonal).")
    st.caption("Variance ratio: the share of the variance the best k components explain that the private ones "
               "capture (1 = as good as the non-private analysis). Subspace distance: 0 = the same directions, "
               "k = perpendicular ones. Formulas in the (?) help. Both read the raw data: never publish them.")
    st.dataframe(pd.DataFrame({"draw": np.arange(1, n_draws + 1),
                               "variance ratio": [r.variance_ratio for r in results],
                               "subspace distance": [r.subspace_distance for r in results],
                               "acceptance rate": [r.diagnostics["acceptance_rate"] for r in results]}),
                 hide_index=True, width="stretch", key="pca_metrics_table",
                 column_config={c: st.column_config.NumberColumn(format="%.4g")
                                for c in ("variance ratio", "subspace distance", "acceptance rate")})

# --------------------------------------------------------------------------- sampler diagnostics

st.subheader("Sampler diagnostics" + (" (approximate DP)" if entry.approximate else ""))
diag = first.diagnostics
if "trace" in diag:  # a Markov chain: its trace, burn-in shaded
    st.plotly_chart(pca_plots.gibbs_trace_figure(diag["trace"], diag["burn_in"], diag["thin"]), width="stretch",
                    key="pca_trace")
diagnostics_text, diagnostics_note = entry.describe_diagnostics(diag, first.p)
st.markdown(diagnostics_text)
st.caption(diagnostics_note)
st.caption("Diagnostics depend on the data (through X'X): analyst view, never exported.")

with st.expander("release record (plain data, from fdp_core.releases.pca.release_record)"):
    st.caption("An export drops the analyst-side fields listed under not_private and the acceptance rate.")
    st.json(release_record(first, seed=g.seed), expanded=False)
if source == "current":
    with st.expander("same release from the command line"):
        if centring == "sample-mean":
            st.caption("The command line does not centre by the raw sample mean (not DP): choose none or a released "
                       "mean.")
        else:
            st.code(command_line("release pca", settings, inputs=(("--data", "FILE"),)), language="bash")
            st.caption("FILE is the data file; RELEASED_MEAN_CSV the committed mean's release.csv. The command line "
                       "draws its own randomness (fresh, or from --seed).")
st.page_link("pages/release.py", label="commit private components on the Release & audit page",
             icon=":material/verified_user:")
