"""The private-PCA samplers, one registry entry each (METHODS.md 5).

Every sampler draws from the same exponential mechanism, density etr(V^T A V) with
A = (eps/2) G - (gamma/2) diag(1/c); they differ in how the k columns are drawn and so in
what they guarantee: ``exact`` (one component, exact rejection sampling), ``deflation``
(k components one after the other, each exact with its own share of epsilon) and ``gibbs``
(the matrix Bingham by a Markov chain: approximate DP). An entry holds everything the
plumbing needs about a sampler: label, privacy statement, the PcaSettings fields it reads
and their validation, how it splits epsilon, the draw itself, the ledger entry of a commit,
the record fields it adds, and how the Components page offers it and shows its diagnostics.
``pca.py`` (validation, draw, guarantee, record), ``commit.py`` (ledger entry) and the
Components and Release pages read the entries; none of them branches on a sampler's name.

Adding a sampler: its draw under ``fdp_core/mechanisms/`` (``bingham.py`` holds the three
here), then one entry below; the CLI's ``--sampler`` choices follow from :data:`REGISTRY`.

>>> default_sampler(1), default_sampler(3)
('exact', 'deflation')
>>> [sampler_for(choice, 2) for choice in page_choices()]
['deflation', 'gibbs']
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

# The ledger-entry builders: accounting imports only errors, params and mechanisms.calibration, so an entry
# can name the privacy curve its commits are charged on without a cycle.
from ..budget.accounting import approximate_entry, exponential_entry
from ..errors import ParameterError
from ..limits import MAX_GIBBS_SWEEPS, check_at_most
from ..mechanisms.bingham import (exponential_mechanism_from_gram, order_subspace, sample_bingham_deflation,
                                  sample_matrix_bingham_gibbs, sample_vector_bingham)
from ..params import check_choice, check_integer, check_positive


def _no_checks(settings, k: int, epsilon: float) -> None:
    """A sampler whose only fields are the common ones (checked by PcaSettings.validated)."""


def _whole_budget(settings) -> tuple:
    return (float(settings.epsilon),)


def _no_fields(*_) -> dict:
    return {}


@dataclass(frozen=True)
class PcaSampler:
    """One sampler of the exponential mechanism: metadata, validation, draw, ledger entry, display."""

    name: str
    label: str  # the guarantee's sampler_label, the ledger entry's "Bingham: ..." and the Release page's choice
    approximate: bool  # an MCMC chain: its output only approximates the mechanism (nominal epsilon)
    privacy: str  # the guarantee's privacy statement
    fields: tuple  # the PcaSettings fields it reads beyond k, epsilon, gamma, the basis and the centring
    # draw(settings, gram, prior_variances, rng) -> (V (p, k) orthonormal, diagnostics): the release itself
    draw: Callable
    # The accounting builder of a commit's ledger entry: (kind, mechanism, *, epsilon, noise, label).
    ledger_entry: Callable
    ledger_mechanism: str
    validate: Callable = _no_checks  # validate(settings, k, epsilon): raise ParameterError on a bad field
    max_k: int | None = None  # most components it draws (None: any k the release allows)
    max_k_message: str = ""  # the refusal above max_k ({k} is the requested number)
    component_epsilons: Callable = _whole_budget  # (settings) -> epsilon spent per component
    guarantee_fields: Callable = _no_fields  # (epsilons per component) -> figures added to the guarantee's details
    record_fields: Callable = _no_fields  # (diagnostics) -> public fields added to the release record
    caveat: str = ""  # why the nominal epsilon is not a DP claim (approximate samplers)
    # How the Components page offers and shows it (plain words; formulas in docs/METHODS.md).
    choice: str = ""  # the value of the page's sampler radio that selects it (with the chosen k)
    page_label: str = ""
    spinner: str = "Drawing private components..."
    max_preview_draws: int | None = None  # previews drawn at most (each draw costs a full run)
    max_preview_draws_note: str = ""  # shown when the draws are capped ({n} is the cap)
    components_note: str = ""  # appended to the caption of the components figure
    # describe_diagnostics(diagnostics, p) -> (markdown, caption) about draw 1 (analyst view)
    describe_diagnostics: Callable = lambda diagnostics, p: ("", "")

    def draws(self, k: int) -> bool:
        """Whether it draws k components."""
        return self.max_k is None or int(k) <= self.max_k

    @property
    def splits_epsilon(self) -> bool:
        """Whether epsilon is split across the components (sequential composition)."""
        return "epsilon_split" in self.fields


# --------------------------------------------------------------------------- validation

def _validate_split(s, k: int, eps: float) -> None:
    if s.epsilon_split is None:
        return
    split = [check_positive("epsilon_split entry", e) for e in s.epsilon_split]
    if len(split) != k:
        raise ParameterError(f"epsilon_split needs one epsilon per component: k = {k}, got {len(split)}")
    if not math.isclose(sum(split), eps, rel_tol=1e-9, abs_tol=0.0):
        raise ParameterError(f"epsilon_split must add up to epsilon = {eps:g}, got sum {sum(split):g}")


def _validate_chain(s, k: int, eps: float) -> None:
    sweeps = check_integer("gibbs_sweeps", s.gibbs_sweeps, 1)
    check_at_most("gibbs_sweeps", sweeps, MAX_GIBBS_SWEEPS, "run time and the stored chain trace")
    if s.gibbs_burn_in is not None and not 0 <= check_integer("gibbs_burn_in", s.gibbs_burn_in, 0) < sweeps:
        raise ParameterError(f"gibbs_burn_in must be in [0, gibbs_sweeps = {sweeps}), got {s.gibbs_burn_in}")
    if s.gibbs_thin is not None:
        check_integer("gibbs_thin", s.gibbs_thin, 1)


def _split_epsilons(s) -> tuple:
    """eps_1..eps_k: the given split, or epsilon / k each."""
    if s.epsilon_split is not None:
        return tuple(float(e) for e in s.epsilon_split)
    return (float(s.epsilon) / s.k,) * s.k


# --------------------------------------------------------------------------- draws

def _draw_exact(s, gram, prior_variances, rng):
    draw = sample_vector_bingham(exponential_mechanism_from_gram(gram, s.epsilon, float(s.gamma), prior_variances),
                                 1, rng)
    return draw.samples[0][:, None], {"acceptance_rate": draw.acceptance_rate, "n_proposed": draw.n_proposed,
                                      "acg_b": draw.b}


def _draw_deflation(s, gram, prior_variances, rng):
    matrices = [exponential_mechanism_from_gram(gram, e, float(s.gamma), prior_variances)
                for e in _split_epsilons(s)]
    draw = sample_bingham_deflation(matrices, rng, 1)
    return draw.samples[0], {"acceptance_rate": float(np.mean(draw.acceptance_rates)),
                             "acceptance_rates": draw.acceptance_rates.tolist()}


def _draw_gibbs(s, gram, prior_variances, rng):
    chain = sample_matrix_bingham_gibbs(exponential_mechanism_from_gram(gram, s.epsilon, float(s.gamma),
                                                                        prior_variances),
                                        int(s.k), rng, n_sweeps=s.gibbs_sweeps, burn_in=s.gibbs_burn_in,
                                        thin=s.gibbs_thin)
    V = order_subspace(chain.sample, 1.0 / prior_variances)
    return V, {"acceptance_rate": chain.acceptance_rate, "n_sweeps": chain.n_sweeps, "burn_in": chain.burn_in,
               "thin": chain.thin, "trace": chain.trace, "n_spectral_solves": chain.n_spectral_solves}


# --------------------------------------------------------------------------- guarantee and record

def _composition(per_component) -> dict:
    # zCDP composes additively; eps^2/8 (what a ledger charges) is the conservative bound.
    return {"composition": ("k exponential mechanisms in sequence (v_j on the complement of v_1..v_(j-1) with "
                            "eps_j): epsilon = sum eps_j"),
            "zcdp_rho_sum_components": float(sum(e**2 for e in per_component) / 8.0)}


def _chain_settings(diagnostics) -> dict:
    # Public: fixed by the settings before sampling (the chain's own statistics are not).
    return {"gibbs": {key: diagnostics[key] for key in ("n_sweeps", "burn_in", "thin")}}


# --------------------------------------------------------------------------- diagnostics (page text)

def _describe_exact(d, p):
    return (f"Acceptance rate of the rejection sampler (draw 1): **{d['acceptance_rate']:.4g}** "
            f"({d['n_proposed']} proposals; envelope b = {d['acg_b']:.4g}).",
            f"Exact: every accepted proposal is a draw from the mechanism. Worst case about sqrt(2/(e p)) = "
            f"{np.sqrt(2 / (np.e * p)):.3g} at p = {p}.")


def _describe_deflation(d, p):
    rates = ", ".join(f"v_{j}: {a:.4g}" for j, a in enumerate(d["acceptance_rates"], start=1))
    return (f"Acceptance rate per component (draw 1): {rates}; mean **{d['acceptance_rate']:.4g}**.",
            "Each component is drawn exactly on the orthogonal complement of the previous ones.")


def _describe_gibbs(d, p):
    return (f"Draw 1: {d['n_sweeps']} sweeps, burn-in {d['burn_in']}, thin {d['thin']}; acceptance "
            f"rate of the exact inner sampler **{d['acceptance_rate']:.4g}**; {d['n_spectral_solves']} "
            "conditionals needed a full eigendecomposition.",
            "A flat trace after the burn-in suggests the chain has settled, but no finite chain is exactly at "
            "its target: the release (the final state) is approximate DP.")


EXACT_PRIVACY = "epsilon-DP"

REGISTRY: dict[str, PcaSampler] = {s.name: s for s in (
    PcaSampler("exact", "exact vector Bingham (k = 1, ACG rejection sampling)", approximate=False,
               privacy=EXACT_PRIVACY, fields=(), draw=_draw_exact, ledger_entry=exponential_entry,
               ledger_mechanism="exponential", max_k=1,
               max_k_message=("the exact sampler draws one component (k = 1); for k = {k} use sampler 'deflation' "
                              "(exact per component, the budget split across components) or 'gibbs' (matrix "
                              "Bingham, approximate)"),
               choice="exact", page_label="exact: vector Bingham (k = 1)", describe_diagnostics=_describe_exact),
    PcaSampler("deflation", "sequential deflation (exact per component; budget split across components)",
               approximate=False, privacy=EXACT_PRIVACY, fields=("epsilon_split",), draw=_draw_deflation,
               ledger_entry=exponential_entry, ledger_mechanism="exponential", validate=_validate_split,
               component_epsilons=_split_epsilons, guarantee_fields=_composition,
               choice="exact", page_label="exact: sequential deflation", describe_diagnostics=_describe_deflation),
    PcaSampler("gibbs", "matrix Bingham by Gibbs sampling (approximate: MCMC)", approximate=True,
               privacy="approximate: matrix Bingham by Gibbs sampling (MCMC); epsilon is nominal, not a DP claim",
               fields=("gibbs_sweeps", "gibbs_burn_in", "gibbs_thin"), draw=_draw_gibbs,
               ledger_entry=approximate_entry, ledger_mechanism="exponential (Gibbs)", validate=_validate_chain,
               record_fields=_chain_settings,
               caveat=("Gibbs sampling (MCMC) is approximate: the nominal epsilon is not a differential-privacy "
                       "claim"),
               choice="gibbs", page_label="Gibbs: matrix Bingham (approximate DP)",
               spinner="Running the Gibbs chain(s)...", max_preview_draws=3,
               max_preview_draws_note="Gibbs: {n} draws at most (each is a full chain).",
               components_note=(" Gibbs: the columns are a frame of the private subspace ordered by smoothness "
                                "(public post-processing), not by variance: compare the subspaces (subspace "
                                "distance below), not column by column."),
               describe_diagnostics=_describe_gibbs),
)}


def pca_sampler(name: str) -> PcaSampler:
    """The registry entry of a sampler (ParameterError naming the choices otherwise)."""
    return REGISTRY[check_choice("sampler", name, tuple(REGISTRY))]


def default_sampler(k: int) -> str:
    """``sampler = None``: the first exact sampler that draws k components."""
    return next(name for name, s in REGISTRY.items() if not s.approximate and s.draws(k))


def page_choices() -> tuple:
    """The Components page's sampler choices, in registry order (each picks a sampler with k)."""
    return tuple(dict.fromkeys(s.choice for s in REGISTRY.values()))


def sampler_for(choice: str, k: int) -> str:
    """The sampler a page choice means for k components (the first entry offered under it that draws k)."""
    return next(name for name, s in REGISTRY.items() if s.choice == choice and s.draws(k))


def samplers_reading(field: str) -> tuple:
    """Names of the samplers that read a PcaSettings field (e.g. epsilon_split)."""
    return tuple(name for name, s in REGISTRY.items() if field in s.fields)
