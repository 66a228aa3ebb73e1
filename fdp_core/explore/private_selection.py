"""Tuning that spends budget (METHODS.md 16): choose (phi, rho) or psi from a public finite grid by the
exponential mechanism on the closed-form PCV score. The selection is epsilon-DP (and
epsilon-bounded-range, so rho = epsilon^2 / 8), is charged to the ledger like any release, and the
chosen parameters are then public.

Folds are data-independent and hold persons: the person at position i of the file (i < K m,
m = n // K; positions count every person of the file in order of first appearance, those whose
curves were all dropped for missing values included) goes to fold i mod K; the n - K m trailing
persons (fewer than K) take no part in the selection. n is the number of persons of the file (or
the declared n_public), so fold sizes m are public and a dropped curve moves nobody between folds.
Each person is one row: their curves range-clipped, centred, L2-clipped at tau and averaged
(fdp_core.data.preprocess, as for the mean release); a person without a usable curve is the centre
(a zero row).
The score of grid point g is u(g) = -PCV(g),

    PCV(g) = (1/K) sum_k ||S_g xbar_(-k) - Xbar_k||^2 + V(g),

with xbar_(-k) the mean of the clipped curves of the other folds, Xbar_k the clipped mean of fold k
(so every a_k = S_g xbar_(-k) - Xbar_k has norm <= 2 tau), S_g the linear shrinkage (0 <= s_l <= 1,
zero outside the kept eigenfunctions) and V(g) the release's noise variance at the training size
(K - 1) m, which is public.

Sensitivities (replace one person, i.e. one row of norm <= tau; derivations in the docstrings below):

* ``general``: Delta_u <= 16 tau^2 / (K m), valid for any non-expansive shrinkage (METHODS 16);
* ``linear``: Delta_u = 4 tau^2 (2m - 1) / ((K - 1) m^2) for linear shrinkage, attained as s -> 1;
* ``range`` (default): the exponential mechanism only needs the *spread* of the score changes across
  the grid, max_g,g' [(u_D(g) - u_D'(g)) - (u_D(g') - u_D'(g'))] <= 4 tau^2 (K + 1) / (K (K - 1) m),
  attained up to O(1/m) by s = 1 vs s = 0. Sampling with exp(epsilon u / Delta_range) is epsilon-DP;
  the standard form exp(epsilon u / (2 Delta_u)) is about 3x flatter for K = 5.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .tuning import pcv_scores
from ..errors import ParameterError
from .. import limits
from ..mechanisms.guarantee import Guarantee
from ..releases.mean import MeanSettings
from ..registry import quadratic_penalty_mechanisms
from ..params import check_choice, check_epsilon, check_positive
from ..data.preprocess import bounds_of, file_persons, mechanism_n, prepare_curves
from ..budget.accounting import exponential_entry
from ..budget.charging import charge, settle

SELECTION_BOUNDS = ("range", "linear", "general")
SELECTION_MECHANISMS = quadratic_penalty_mechanisms()  # the PCV score sensitivity needs linear shrinkage
MAX_GRID = limits.MAX_SELECTION_GRID


def selection_folds(n: int, folds: int) -> tuple[int, list[np.ndarray]]:
    """(m, folds): fold k holds records k, k + K, ..., k + (m - 1) K (data-independent, sizes m)."""
    K = int(folds)
    if K < 2:
        raise ParameterError(f"the private selection needs K >= 2 folds, got {folds}")
    m = int(n) // K
    if m < 2:
        raise ParameterError(f"K = {K} folds of n = {n} records leave fewer than 2 records per fold")
    return m, [np.arange(k, K * m, K) for k in range(K)]


def score_sensitivity(tau: float, m: int, K: int, bound: str) -> float:
    """The scale the exponential mechanism divides by: Delta_range, or 2 Delta_u (linear / general).

    linear: with c = I + S^2/(K-1) and W = 2S - S^2 (K-2)/(K-1) (both between 0 and K/(K-1) I, c >= I),
    replacing one curve of fold 1 (its mean moves by d, ||d|| <= 2 tau/m; R = mean of the other folds'
    means) changes K PCV by 2 d^T (c Ybar - W R), Ybar the midpoint of fold 1's old and new means.
    Equivalently ||Z + d||_c^2 - ||Z||_c^2 with ||Z + d||_c <= sqrt(K/(K-1)) 2 tau and
    ||d||_c <= sqrt(K/(K-1)) 2 tau/m, which is at most (K/(K-1)) 4 tau^2 (2m - 1)/m^2: divide by K.
    range: the difference of that change between two grid points is 2 d^T ((c - c') Ybar - (W - W') R)/K
    with ||c - c'|| <= 1/(K-1) and ||W - W'|| <= K/(K-1) (operator norms; also across different rho,
    since only the spectra's ranges enter), so it is at most 2 (2 tau/m)(tau + K tau)/(K (K - 1)).
    """
    tau = check_positive("tau", tau)
    check_choice("bound", bound, SELECTION_BOUNDS)
    if bound == "range":
        return 4.0 * tau**2 * (K + 1) / (K * (K - 1) * m)
    if bound == "linear":
        return 2.0 * 4.0 * tau**2 * (2 * m - 1) / ((K - 1) * m**2)
    return 2.0 * 16.0 * tau**2 / (K * m)


def selection_tau(fd, settings: MeanSettings) -> float:
    """The public tau of the selection: the settings' tau, else the declared range's default.

    With a person column each person's clipped curves are averaged into one row of norm <= tau
    (convexity), so replacing a person moves one row, exactly as replacing a curve does without
    one: every bound below holds with persons for records (METHODS.md 16).
    """
    if settings.tau_from_data:
        raise ParameterError("the private selection needs a public tau (tau from the data is not DP)")
    bounds = bounds_of(settings)
    tau = settings.tau if settings.tau is not None else bounds.default_tau(fd.grid_points)
    if tau is None:
        raise ParameterError("the private selection needs a public tau or a declared value range")
    return check_positive("tau", tau)


def selection_n(fd, settings: MeanSettings) -> int:
    """The public n of the selection: the persons of the file (usable or not), or the declared n_public."""
    bounds = bounds_of(settings)
    return mechanism_n(bounds.n_public, file_persons(fd, bounds.person_column).n_persons)


def selection_counts(fd, settings: MeanSettings) -> dict:
    """NON-PRIVATE counts for the analyst view: curves read, dropped, persons without a usable curve."""
    persons = file_persons(fd, bounds_of(settings).person_column)
    return {"n_curves": fd.n, "n_dropped": fd.report.n_dropped, "n_persons": persons.n_persons,
            "n_persons_without_usable_curve": persons.n_unusable}


def fold_sums(rows: np.ndarray, positions: np.ndarray, m: int, K: int) -> np.ndarray:
    """(K, m_grid) sum of the rows of each fold: the row of the person at file position i goes to
    fold i mod K when i < K m (a person absent from ``positions`` adds a zero row: the centre)."""
    positions = np.asarray(positions, dtype=np.int64)
    used = positions < K * m
    out = np.zeros((K, rows.shape[1]))
    np.add.at(out, positions[used] % K, rows[used])
    return out


def pcv_private_scores(fd, settings: MeanSettings, penalties, rhos, *, folds: int = 5) -> np.ndarray:
    """PCV(g) on the grid penalties x rhos, shape (len(rhos), len(penalties)) (closed form).

    Differs from :func:`fdp_core.explore.tuning.pcv_grid` in what the sensitivity analysis needs: folds by
    record order (data-independent, equal public sizes), clipped held-out means, noise variance at
    the public training size (K - 1) m.
    """
    check_choice("mechanism (private selection)", settings.mechanism, SELECTION_MECHANISMS)
    settings = settings.validated()
    tau = selection_tau(fd, settings)
    penalties = np.asarray(penalties, dtype=float).ravel()
    rhos = np.asarray(rhos, dtype=float).ravel()
    if penalties.size * rhos.size > MAX_GRID:
        raise ParameterError(f"the selection grid has {penalties.size * rhos.size} points; at most {MAX_GRID}")
    for name, values in (("penalty", penalties), ("rho", rhos)):
        if values.size == 0 or not np.all(np.isfinite(values)) or np.any(values <= 0):
            raise ParameterError(f"every {name} of the selection grid must be a finite number > 0")
    weights = fd.weights
    # The same per-record transform as the mean release: clip into the declared range, centre at its
    # midpoint (or the reference), clip to the tau ball, average each person's curves.
    prepared = prepare_curves(fd, bounds_of(settings), tau)
    m, fold_index = selection_folds(prepared.n, folds)
    K = len(fold_index)
    fold_means = fold_sums(prepared.values, prepared.person_index, m, K) / m  # (K, m_grid), norms <= tau
    train_means = (fold_means.sum(axis=0)[None, :] - fold_means) / (K - 1)
    # Held out: each fold's clipped mean; the noise at the public training size (K - 1) m.
    return pcv_scores(settings, penalties, rhos, fd.unit_grid, weights, train_means, fold_means,
                      np.full(K, float((K - 1) * m)), tau)


def exponential_selection(scores: np.ndarray, epsilon: float, scale: float, rng: np.random.Generator,
                          size: int = 1) -> np.ndarray:
    """Indices drawn with P(g) proportional to exp(-epsilon PCV(g) / scale), by Gumbel-max (exact)."""
    logits = -float(epsilon) * np.asarray(scores, dtype=float).ravel() / float(scale)
    return np.argmax(logits[None, :] + rng.gumbel(size=(size, logits.size)), axis=1)


def selection_probabilities(scores: np.ndarray, epsilon: float, scale: float) -> np.ndarray:
    logits = -float(epsilon) * np.asarray(scores, dtype=float).ravel() / float(scale)
    p = np.exp(logits - logits.max())
    return p / p.sum()


@dataclass(frozen=True)
class PrivateSelection:
    """A selection that spent ``epsilon``: the chosen point is public, the scores are not.

    Built by :func:`select_parameters` or :func:`commit_selection`; ``record()`` is its publishable
    form (the grid, the chosen point, the guarantee), ``scores`` stay in the analyst view.

    Examples
    --------
    >>> import numpy as np
    >>> from fdp_core.data.simulate import simulate
    >>> from fdp_core.releases.mean import MeanSettings
    >>> chosen = select_parameters(simulate("kl", n=60, m=30), MeanSettings(tau=1.0), [1e-3], [0.1], epsilon=1.0,
    ...                            rng=np.random.default_rng(0))
    >>> "scores" in chosen.record()
    False
    """

    mechanism: str
    penalties: np.ndarray
    rhos: np.ndarray
    epsilon: float
    bound: str
    folds: int
    fold_size: int
    scale: float
    chosen_penalty: float
    chosen_rho: float
    scores: np.ndarray  # NON-PRIVATE: analyst view only
    guarantee: Guarantee
    public_inputs: dict | None = None  # n (persons of the file), unit of privacy, range, centre, tau

    def record(self) -> dict:
        """Publishable: the grid, the chosen point and the guarantee (never the scores)."""
        return {**(self.public_inputs or {}), "release": "tuning", "mechanism": "exponential mechanism on -PCV", "tuned_for": self.mechanism,
                "penalties": self.penalties, "rhos": self.rhos, "chosen_penalty": self.chosen_penalty,
                "chosen_rho": self.chosen_rho, "epsilon": self.epsilon, "delta": 0.0, "bound": self.bound,
                "folds": self.folds, "fold_size": self.fold_size, "guarantee": self.guarantee.record()}


def select_parameters(fd, settings: MeanSettings, penalties, rhos, *, epsilon: float, folds: int = 5,
                      bound: str = "range", rng: np.random.Generator | None = None) -> PrivateSelection:
    """Choose (penalty, rho) from the public grid, spending ``epsilon`` (pure DP, bounded range).

    Parameters
    ----------
    fd : FunctionalData
        The curves (NON-PRIVATE).
    settings : MeanSettings
        The mean release the parameters are chosen for (its epsilon enters the score's noise term).
    penalties, rhos : sequence of float
        The public grid.
    epsilon : float
        The selection's own budget (the exponential mechanism on minus the PCV score).
    folds : int
    bound : {"range", "linear", "general"}
        The score's sensitivity bound.
    rng : Generator, optional
        Preview randomness; :func:`commit_selection` charges a budget and uses fresh entropy.

    Returns
    -------
    PrivateSelection

    Examples
    --------
    >>> import numpy as np
    >>> from fdp_core.data.simulate import simulate
    >>> from fdp_core.releases.mean import MeanSettings
    >>> chosen = select_parameters(simulate("kl", n=60, m=30), MeanSettings(tau=1.0), [1e-3, 1e-2], [0.05, 0.1],
    ...                            epsilon=1.0, rng=np.random.default_rng(0))
    >>> chosen.chosen_rho in (0.05, 0.1), chosen.guarantee.privacy.startswith('epsilon-DP')
    (True, True)
    """
    epsilon = check_epsilon(epsilon)
    scores = pcv_private_scores(fd, settings, penalties, rhos, folds=folds)
    n = selection_n(fd, settings)
    m, fold_index = selection_folds(n, folds)
    tau = selection_tau(fd, settings)
    scale = score_sensitivity(tau, m, len(fold_index), bound)
    rng = rng if rng is not None else np.random.default_rng()
    index = int(exponential_selection(scores, epsilon, scale, rng)[0])
    r, p = np.unravel_index(index, scores.shape)
    penalties, rhos = np.asarray(penalties, dtype=float).ravel(), np.asarray(rhos, dtype=float).ravel()
    # The score's sensitivity under the general and linear bounds; the scale in use (score_scale)
    # is twice the one chosen, or the score's spread under the range bound: not a sensitivity.
    K = len(fold_index)
    guarantee = Guarantee(
        "epsilon-DP (exponential mechanism; epsilon-bounded range: rho = epsilon^2 / 8)", epsilon, 0.0,
        sensitivities={b: score_sensitivity(tau, m, K, b) / 2 for b in ("general", "linear")},
        details={"score_scale": scale, "bound": bound, "spread_range": score_sensitivity(tau, m, K, "range"),
                 "folds": f"record i -> fold i mod {K} for i < {K * m}; {n - K * m} trailing record(s) unused",
                 "fold_rule": (f"the person at position i of the file (all {n} persons, usable or not) -> fold "
                               f"i mod {K} for i < {K * m}; persons without a usable curve count as the centre")})
    bounds = bounds_of(settings)
    public = {"n": n, **bounds.describe(fd.grid_points), "tau": tau}
    return PrivateSelection(settings.mechanism, penalties, rhos, epsilon, bound, len(fold_index), m, scale,
                            float(penalties[p]), float(rhos[r]), scores, guarantee, public)


def selection_ledger_entry(epsilon: float, scale: float, bound: str, grid_size: int, label: str = ""):
    """The ledger entry of a selection: exponential mechanism, pure epsilon, rho = epsilon^2 / 8."""

    return exponential_entry("tuning", "exponential-pcv", epsilon=check_epsilon(epsilon), sensitivity=scale,
                             noise={"score_scale": scale, "bound": bound, "grid_size": int(grid_size)},
                             label=label or f"parameter selection ({grid_size} grid points)")


def selection_entry(fd, settings: MeanSettings, penalties, rhos, *, epsilon: float, folds: int = 5,
                    bound: str = "range", label: str = ""):
    """What a selection will cost, from public inputs only (n, K, tau, the grid size): nothing computed."""
    m, fold_index = selection_folds(selection_n(fd, settings), folds)
    scale = score_sensitivity(selection_tau(fd, settings), m, len(fold_index), bound)
    return selection_ledger_entry(epsilon, scale, bound, int(np.size(penalties) * np.size(rhos)), label)


def commit_selection(account, fd, settings: MeanSettings, penalties, rhos, *, epsilon: float, folds: int = 5,
                     bound: str = "range", label: str = "", entry=None) -> tuple[PrivateSelection, object]:
    """Charge the budget *before* selecting, select with fresh randomness, then record the entry.

    ``account``: an in-memory Ledger (checked, then committed) or a persistent StoredBudget (charged
    in one locked transaction first; the caller marks the entry complete). A refused selection
    raises BudgetError with nothing computed from the data and nothing recorded. Returns
    (selection, ledger entry).

    Parameters
    ----------
    account : Ledger or StoredBudget
    fd : FunctionalData
    settings : MeanSettings
    penalties, rhos : sequence of float
        The public grid.
    epsilon : float
        The selection's budget.
    folds : int
    bound : {"range", "linear", "general"}
    label : str
        The ledger entry's label.
    entry : LedgerEntry, optional
        The entry already quoted (reused so the charge equals the quote).

    Examples
    --------
    >>> import fdp_core as fdp
    >>> from fdp_core.data.simulate import simulate
    >>> ledger = fdp.Ledger(2.0, 1e-5)
    >>> chosen, entry = commit_selection(ledger, simulate("kl", n=60, m=30), fdp.MeanSettings(tau=1.0), [1e-3],
    ...                                  [0.05, 0.1], epsilon=0.5)
    >>> ledger.spent().epsilon
    0.5
    """
    entry = entry or selection_entry(fd, settings, penalties, rhos, epsilon=epsilon, folds=folds, bound=bound,
                                     label=label)
    ledger = charge(account, entry)
    selection = select_parameters(fd, settings, penalties, rhos, epsilon=epsilon, folds=folds, bound=bound,
                                  rng=np.random.default_rng())
    settle(account, ledger, entry)
    return selection, entry
