"""The Principal components page's preview draws and what is shown of them: the guarantee,
the components against the non-private FPCA, the scree and diagnostics, the release record
and the equivalent command line (plots in fdp_ui/pca_plots.py)."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pandas as pd
import streamlit as st

from fdp_core.releases.pca import AWAN_RESCALING_FLAG, FLOATING_POINT_NOTE, PcaSettings, private_pca, release_record
from fdp_core.settings_fields import command_line

from . import live_chart, pca_plots
from .layout import lazy_expander

DRAW_SALT = 40  # preview draw i uses the sidebar's generator with salt DRAW_SALT + i


@st.cache_resource(show_spinner="Drawing the private components (kept for every session under this demo seed)...",
                   max_entries=64)
def _cached_release(data_key: str, settings_items: tuple, mean_key: str, seed: int, salt: int, flags: tuple,
                    _fd, _mean, _rng):
    """A preview draw under a demo seed: the same inputs give the same draw, so it is kept."""
    return private_pca(_fd, PcaSettings(**dict(settings_items)), _rng, released_mean=_mean,
                       data_dependent_flags=flags)


def draws(data, settings: PcaSettings, centring, g) -> list:
    """``centring.n_draws`` preview releases, draw i from the sidebar's generator with salt DRAW_SALT + i."""
    def draw(salt: int):
        if g.seed is None:  # fresh randomness: a new draw on every rerun, nothing to keep
            return private_pca(data.fd, settings, g.rng(salt), released_mean=centring.mean_values,
                               data_dependent_flags=data.flags)
        return _cached_release(data.key, tuple(asdict(settings).items()), centring.mean_key, g.seed, salt,
                               data.flags, data.fd, centring.mean_values, g.rng(salt))
    return [draw(DRAW_SALT + i) for i in range(centring.n_draws)]


def guarantee(first, entry, centring, g, k: int, person_column: str | None = None) -> None:
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
    lines = [f"Floating point: {FLOATING_POINT_NOTE}. Previews cost no budget; commit on the Release & audit page "
             "(fresh OS entropy)."]
    mean_release = centring.mean_release
    if mean_release is not None:
        e = mean_release.entry
        lines.append(f"Centred by the committed release '{mean_release.label}' ({mean_release.id}): its cost, epsilon "
                     f"{e.epsilon:.4g} and delta {e.delta:.3g}, is already in the ledger. Committing these components "
                     f"adds epsilon {g.epsilon:g}: by basic composition the pair costs epsilon "
                     f"{e.epsilon + g.epsilon:.4g}, delta {e.delta:.3g}. The released mean's noise stays in the "
                     "centred curves: with a noisy mean the leading component can follow that noise (compare the "
                     "scree).")
    unit = f"persons (column '{person_column}'), {first.n_curves} curves" if person_column else "curves"
    lines.append(f"n = {first.n} {unit}, m = {first.m} grid points; {first.n_clipped} coefficient rows clipped to norm "
                 f"tau = {first.tau:.4g} after centring.")
    st.caption("\n\n".join(lines))  # one element: these notes always appear together
    if entry.splits_epsilon:
        st.dataframe(pd.DataFrame([{f"eps_{j}": e for j, e in enumerate(gq.details["epsilon_per_component"],
                                                                       start=1)}]),
                     hide_index=True, key="pca_split_table",
                     column_config={f"eps_{j}": st.column_config.NumberColumn(format="%.4g") for j in range(1, k + 1)})


def figures(results: list, fd, entry, centring, k: int) -> None:
    first = results[0]
    signs = [pca_plots.align_signs(r.coefficients, r.nonprivate_coefficients) for r in results]
    aligned = [r.components * s for r, s in zip(results, signs)]
    st.subheader("Private components vs the non-private FPCA")
    live_chart.show(pca_plots.components_figure(fd.grid_points, aligned, first.nonprivate_components,
                                                approximate=first.guarantee.details["approximate"]),
                    key="pca_components")
    st.caption("Private draws are sign-aligned to the non-private components for display only (v and -v are the "
               "same direction; the released components keep the library's convention: largest coefficient "
               f"positive). {len(results)} independent draw(s) at the same settings." + entry.components_note)

    if centring.mean_release is not None:
        centre, centre_label = centring.mean_values, f"released mean ({centring.mean_release.id})"
    else:
        centre, centre_label = fd.data_matrix.mean(axis=0), "sample mean (analyst view: do not publish)"
    sds = first.tau * np.sqrt(first.scree[:k])
    st.subheader("Mean +/- 2 sd x component")
    live_chart.show(pca_plots.perturbation_figure(fd.grid_points, centre, aligned[0], sds, mean_label=centre_label),
                    key="pca_perturbation")
    st.caption("Private draw 1. sd_l = tau sqrt(lambda_l), lambda_l the l-th eigenvalue of X'X / n of the clipped "
               "coefficient rows: the non-private scree (analyst view, do not publish)."
               + (" Without centring X'X / n is a second moment (sd_l is a root mean square) and the first "
                  "component mostly follows the mean." if centring.choice == "none" else ""))


def scree_and_metrics(results: list, k: int) -> None:
    first = results[0]
    left, right = st.columns(2)
    with left:
        live_chart.show(pca_plots.scree_figure(first.explained_variance_ratio, k), key="pca_scree")
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
        st.dataframe(pd.DataFrame({"draw": np.arange(1, len(results) + 1),
                                   "variance ratio": [r.variance_ratio for r in results],
                                   "subspace distance": [r.subspace_distance for r in results],
                                   "acceptance rate": [r.diagnostics["acceptance_rate"] for r in results]}),
                     hide_index=True, width="stretch", key="pca_metrics_table",
                     column_config={c: st.column_config.NumberColumn(format="%.4g")
                                    for c in ("variance ratio", "subspace distance", "acceptance rate")})


def diagnostics(first, entry) -> None:
    """The sampler's diagnostics (the chain's trace for a Markov chain, the acceptance rate), built only
    while their expander is open: they read the raw data (analyst view) and are secondary."""
    exp = lazy_expander("Sampler diagnostics (analyst view)", "pca_diagnostics_open")
    if not exp.open:
        return
    with exp:
        diag = first.diagnostics
        if "trace" in diag:  # a Markov chain: its trace, burn-in shaded
            live_chart.show(pca_plots.gibbs_trace_figure(diag["trace"], diag["burn_in"], diag["thin"]),
                            key="pca_trace")
        diagnostics_text, diagnostics_note = entry.describe_diagnostics(diag, first.p)
        st.markdown(("**Approximate DP.** " if entry.approximate else "") + diagnostics_text)
        st.caption(diagnostics_note + "\n\nDiagnostics depend on the data (through X'X): analyst view, never exported.")


def record_and_command(first, settings: PcaSettings, data, centring, seed) -> None:
    """The release record and the command line, each built only while its expander is open."""
    record = lazy_expander("release record (plain data, from fdp_core.releases.pca.release_record)", "pca_record_open")
    if record.open:
        with record:
            st.caption("An export drops the analyst-side fields listed under not_private and the acceptance rate.")
            st.json(release_record(first, seed=seed), expanded=False)
    if data.source != "current":
        return
    command = lazy_expander("same release from the command line", "pca_command_open")
    if command.open:
        with command:
            if centring.choice == "sample-mean":
                st.caption("The command line does not centre by the raw sample mean (not DP): choose none or a "
                           "released mean.")
            else:
                st.code(command_line("release pca", settings, inputs=(("--data", "FILE"),)), language="bash")
                st.caption("FILE is the data file; RELEASED_MEAN_CSV the committed mean's release.csv. The command "
                           "line draws its own randomness (fresh, or from --seed).")
