"""Budget ledger: what each committed release cost, how the costs compose (METHODS.md 8).

One ledger = one data set and one neighbouring relation (replace one curve); every
sensitivity in fdp_core uses that relation, so the costs of different releases can be
added up. Each committed release is a frozen :class:`LedgerEntry` that keeps the
release's *native* privacy curve, because the right way to compose depends on it:

============== ============================== ==================================
curve          mechanisms                     native parameter
============== ============================== ==================================
gaussian       GP mean, Hall KDE              mu = Delta / sigma (mu-GDP); rho = mu^2 / 2
pure           Laplace, ICLP, FRL, Bernstein  epsilon (delta = 0); rho = epsilon^2 / 2
bounded_range  exponential mechanism (PCA)    epsilon (delta = 0); rho = epsilon^2 / 8
zcdp           discrete-Gaussian exports      rho from OpenDP's own privacy map
approximate    matrix Bingham by Gibbs        nominal epsilon only: not a DP claim
============== ============================== ==================================

Why these zCDP values: a Gaussian mechanism with L2 sensitivity Delta and noise sigma is
(Delta^2 / (2 sigma^2))-zCDP, exactly mu^2 / 2 (Bun & Steinke 2016, Prop. 1.6); epsilon-DP
implies (epsilon^2 / 2)-zCDP (ibid., Prop. 1.4); the exponential mechanism is
epsilon-bounded-range, which implies (epsilon^2 / 8)-zCDP (Cesar & Rogers 2021).
For PCA by sequential deflation, one entry with the total epsilon = sum eps_j is
conservative: sum eps_j^2 / 8 <= (sum eps_j)^2 / 8.

Two different questions, two different tools:

* **Totals** (:func:`compose`): when every release's parameters were fixed in advance,
  the minimum of the valid totals at a target delta is a valid guarantee — basic
  (sum epsilon, sum delta); GDP for the Gaussian part (mu = sqrt(sum mu_i^2), exact
  conversion) + basic for the rest; zCDP (rho = sum rho_i, Canonne-Kamath-Steinke
  conversion).
* **Filter** (:meth:`Ledger.check`): in the app, parameters are chosen after seeing
  earlier outputs. Then only a privacy filter is valid: refuse a release that would take
  the running sum past the budget. Basic (sum of epsilon and of delta, Rogers, Roth,
  Ullman & Vadhan 2016) is the **default**; the zCDP filter (sum of rho against the rho
  whose CKS conversion at delta_total gives epsilon_total; Feldman & Zrnic 2021 for
  adaptively chosen rho) is selectable. The filter's guarantee is the total budget
  (epsilon_total, delta_total) itself.

Approximate (Gibbs) entries are excluded from every DP total and shown separately; the
filter still charges their nominal cost so a budget cannot be bypassed with them.
"""

from __future__ import annotations

import dataclasses
import functools
import datetime as _dt
import math
import uuid
from dataclasses import dataclass, field
from typing import Iterable, Mapping

import numpy as np

from ..errors import BudgetError, ParameterError
from ..params import check_choice, check_nonnegative, check_positive
# The conversions between privacy curves live with the typed events; they are re-exported here,
# where the ledger's readers have always found them.
from .privacy_events import (CURVES, PrivacyEvent, cks_delta, cks_epsilon, event_of, gdp_delta,  # noqa: F401
                             gdp_epsilon)

KINDS = ("mean", "kde", "pca")
# Releases of METHODS 13-16 (covariance, regression, a parameter selection that spends budget).
# Kept apart from KINDS, which the app's split controls iterate over; the ledger accepts both.
SUMMARY_KINDS = ("covariance", "regression", "tuning")
LEDGER_KINDS = KINDS + SUMMARY_KINDS
FILTERS = ("basic", "zcdp")
NEIGHBOURING = "replace one curve"
# The same relation at the person level: every curve of one person replaced (a person column in use,
# or a sparse file's ids). What a person-level release's ledger.json states (issue 38).
PERSON_NEIGHBOURING = "replace one person (all of their curves)"
NEIGHBOURING_RELATIONS = (NEIGHBOURING, PERSON_NEIGHBOURING)
SCHEMA = "fdp.ledger/1"

# Relative slack when comparing a running sum with a budget: three releases of 1/3 must
# fit a budget of 1 despite floating-point addition. 1e-12 of a budget is no privacy loss
# anyone can measure.
_BUDGET_SLACK = 1e-12
# Relative tolerance of the consistency checks between stored native parameters.
_REL_TOL = 1e-9


# --------------------------------------------------------------------------- conversions

# Cached: every Ledger (and each read of the persistent ledger, several per app rerun) needs it,
# and the bisection over the CKS bound costs milliseconds; it is a pure function of its inputs.
@functools.lru_cache(maxsize=256)
def zcdp_rho_budget(epsilon: float, delta: float) -> float:
    """Largest rho whose CKS conversion at ``delta`` stays within ``epsilon`` (rounded down)."""
    epsilon = check_positive("epsilon_total", epsilon)
    if not 0 < delta < 1:
        raise ParameterError(
            f"the zCDP filter needs a total delta in (0, 1) (zCDP never gives delta = 0); got {delta!r}")
    lo, hi = 0.0, epsilon  # eps(rho) >= rho, so rho <= epsilon
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if cks_epsilon(mid, delta) <= epsilon:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * hi:
            break
    return lo


# --------------------------------------------------------------------------- entries

def _new_id() -> str:
    return uuid.uuid4().hex[:12]


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _jsonable(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= _REL_TOL * max(abs(a), abs(b), 1e-300)


@dataclass(frozen=True, kw_only=True)
class LedgerEntry:
    """One committed (or candidate) release and its native privacy parameters.

    Build entries with :func:`gaussian_entry`, :func:`pure_entry`, :func:`exponential_entry`,
    :func:`discrete_gaussian_entry` or :func:`approximate_entry`; the constructor checks
    that the stored numbers are consistent (e.g. that a Gaussian entry's claimed
    (epsilon, delta) really follows from its mu), so a malformed record cannot enter.

    ``epsilon``/``delta`` are the (epsilon, delta)-DP guarantee of this release alone (used
    by basic composition and the basic filter); ``mu`` (Gaussian only) and ``rho`` are its
    native GDP / zCDP parameters; ``noise`` holds the noise parameter(s) (sigma, Laplace
    scales, grid...), JSON-ready.

    Built by the entry helpers above, or by a quote (:func:`fdp_core.publish.kinds.quote`).

    Examples
    --------
    >>> entry = pure_entry("mean", "iclp-qr", epsilon=0.5)
    >>> entry.epsilon, entry.delta, entry.kind
    (0.5, 0.0, 'mean')
    """

    kind: str
    mechanism: str
    curve: str
    epsilon: float
    delta: float
    rho: float | None
    mu: float | None = None
    sensitivity: float | None = None
    sensitivity_norm: str = ""
    noise: dict = field(default_factory=dict)
    label: str = ""
    id: str = field(default_factory=_new_id)
    timestamp: str = field(default_factory=_now)

    def __post_init__(self):
        check_choice("kind", self.kind, LEDGER_KINDS)
        check_choice("curve", self.curve, CURVES)
        for name in ("epsilon", "delta", "rho", "mu", "sensitivity"):
            x = getattr(self, name)
            if x is None and name not in ("epsilon", "delta"):
                continue
            object.__setattr__(self, name, check_nonnegative(f"{name} of a ledger entry", x))
        if self.delta >= 1:
            raise ParameterError(f"delta of a ledger entry must be < 1, got {self.delta!r}")
        object.__setattr__(self, "noise", dict(_jsonable(self.noise)))
        # The typed event of its curve checks that the stored numbers are consistent.
        object.__setattr__(self, "_event", event_of(self.curve, epsilon=self.epsilon, delta=self.delta, rho=self.rho,
                                                    mu=self.mu))

    @property
    def event(self) -> PrivacyEvent:
        """The release's typed privacy event (fdp_core.budget.privacy_events): how it composes and reads."""
        return self._event

    @property
    def approximate(self) -> bool:
        """True when the sampler is approximate (Gibbs): no DP claim rests on this entry."""
        return self.event.approximate

    def to_dict(self) -> dict:
        return _jsonable(dataclasses.asdict(self))

    @classmethod
    def from_dict(cls, data: Mapping) -> "LedgerEntry":
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ParameterError(f"unknown ledger entry field(s): {', '.join(unknown)}")
        return cls(**dict(data))


def gaussian_entry(kind: str, mechanism: str, *, sensitivity: float, sigma: float, epsilon: float,
                   delta: float, sensitivity_norm: str = "", noise: Mapping | None = None,
                   label: str = "") -> LedgerEntry:
    """Entry of a (continuous) Gaussian release: mu = Delta / sigma, rho = mu^2 / 2."""
    sensitivity, sigma = check_positive("sensitivity", sensitivity), check_positive("sigma", sigma)
    mu = sensitivity / sigma
    return LedgerEntry(kind=kind, mechanism=mechanism, curve="gaussian", epsilon=epsilon, delta=delta,
                       mu=mu, rho=mu * mu / 2, sensitivity=sensitivity, sensitivity_norm=sensitivity_norm,
                       noise={"sigma": sigma, **(noise or {})}, label=label)


def pure_entry(kind: str, mechanism: str, *, epsilon: float, sensitivity: float | None = None,
               sensitivity_norm: str = "", noise: Mapping | None = None, label: str = "") -> LedgerEntry:
    """Entry of a pure epsilon-DP release (Laplace, ICLP, FRL, Bernstein): rho = epsilon^2 / 2."""
    epsilon = check_positive("epsilon", epsilon)
    return LedgerEntry(kind=kind, mechanism=mechanism, curve="pure", epsilon=epsilon, delta=0.0,
                       rho=epsilon**2 / 2, sensitivity=sensitivity, sensitivity_norm=sensitivity_norm,
                       noise=dict(noise or {}), label=label)


def exponential_entry(kind: str, mechanism: str, *, epsilon: float, sensitivity: float = 1.0,
                      noise: Mapping | None = None, label: str = "") -> LedgerEntry:
    """Entry of an exact exponential-mechanism release (epsilon-bounded range): rho = epsilon^2 / 8."""
    epsilon = check_positive("epsilon", epsilon)
    return LedgerEntry(kind=kind, mechanism=mechanism, curve="bounded_range", epsilon=epsilon, delta=0.0,
                       rho=epsilon**2 / 8, sensitivity=sensitivity, sensitivity_norm="utility",
                       noise=dict(noise or {}), label=label)


def discrete_gaussian_entry(kind: str, mechanism: str, *, rho: float, delta: float,
                            sensitivity: float | None = None, sensitivity_norm: str = "",
                            noise: Mapping | None = None, label: str = "") -> LedgerEntry:
    """Entry of a discrete-Gaussian export: ``rho`` as reported by the sampler's privacy map.

    Its (epsilon, delta) view, used by the basic filter and basic composition, is the CKS
    conversion of rho at this release's ``delta``. The continuous Balle-Wang profile is
    *not* used: it is the profile of the continuous Gaussian, not of the discrete sampler.
    """
    rho = check_positive("rho", rho)
    if not 0 < delta < 1:
        raise ParameterError(f"delta must be in (0, 1), got {delta!r}")
    return LedgerEntry(kind=kind, mechanism=mechanism, curve="zcdp", epsilon=cks_epsilon(rho, delta),
                       delta=delta, rho=rho, sensitivity=sensitivity, sensitivity_norm=sensitivity_norm,
                       noise=dict(noise or {}), label=label)


def discrete_entry(plan, kind: str, mechanism: str, *, delta: float | None = None, sensitivity: float | None = None,
                   sensitivity_norm: str = "", label: str = "") -> "LedgerEntry":
    """The entry of an exact discrete release, from the sampler's own privacy map (METHODS.md 8-9).

    ``plan`` is a :class:`fdp_core.mechanisms.discrete.DiscretePlan`: discrete Laplace gives a
    pure epsilon; discrete Gaussian gives the map's zCDP rho, stated as (epsilon, delta) at ``delta``.
    """
    noise = {"sampler": plan.sampler, "granularity_exp": plan.granularity_exp,
             "unit_noise_scale": plan.unit_noise_scale, "opendp_version": plan.opendp_version}
    if plan.epsilon is not None:
        return pure_entry(kind, mechanism, epsilon=plan.epsilon, sensitivity=sensitivity,
                          sensitivity_norm=sensitivity_norm, noise=noise, label=label)
    if delta is None:
        raise ParameterError("a discrete-Gaussian release needs the delta at which to state its (epsilon, delta)")
    return discrete_gaussian_entry(kind, mechanism, rho=plan.rho, delta=delta, sensitivity=sensitivity,
                                   sensitivity_norm=sensitivity_norm, noise=noise, label=label)


def approximate_entry(kind: str, mechanism: str, *, epsilon: float, delta: float = 0.0,
                      rho: float | None = None, noise: Mapping | None = None, label: str = "") -> LedgerEntry:
    """Entry of an approximate-sampler release (matrix Bingham by Gibbs): not a DP claim.

    ``epsilon``/``delta`` are the nominal parameters the sampler targets; ``rho`` defaults
    to the nominal epsilon^2 / 8 of an exact exponential mechanism. Only the filter uses
    them (so the budget cannot be bypassed); DP totals exclude the entry.
    """
    epsilon = check_positive("epsilon", epsilon)
    return LedgerEntry(kind=kind, mechanism=mechanism, curve="approximate", epsilon=epsilon, delta=delta,
                       rho=epsilon**2 / 8 if rho is None else rho, sensitivity=1.0, sensitivity_norm="utility",
                       noise=dict(noise or {}), label=label)


# --------------------------------------------------------------------------- composition

@dataclass(frozen=True)
class Total:
    """A composed (epsilon, delta) guarantee and how it was obtained."""

    method: str  # "basic", "gdp+basic", "zcdp"
    epsilon: float
    delta: float
    detail: str


@dataclass(frozen=True)
class CompositionReport:
    """All valid totals at ``delta_target`` and the smallest epsilon among them.

    ``best`` is None when no total reaches the target delta (e.g. the releases' own deltas
    already add up to more). The totals assume parameters fixed in advance; see ``notes``.
    """

    delta_target: float
    totals: tuple[Total, ...]
    best: Total | None
    mu_gaussian: float | None  # sqrt(sum mu_i^2) over the Gaussian entries
    rho_total: float  # sum of rho over the DP entries
    gaussian_only: bool  # every DP entry is Gaussian (then mu_gaussian describes everything)
    n_entries: int
    n_approximate: int
    approximate_nominal: Total | None  # basic sum over the approximate entries alone
    notes: tuple[str, ...]

    def to_dict(self) -> dict:
        return _jsonable(dataclasses.asdict(self))


_ADAPTIVE_NOTE = ("These totals assume every release's parameters were fixed before any output was seen. "
                  "When parameters were chosen after seeing earlier outputs, the valid guarantee is the "
                  "privacy filter's: the ledger's total budget.")
_APPROX_NOTE = ("Approximate (Gibbs) releases are excluded from the DP totals: their sampler is not exact, "
                "so no differential-privacy claim covers them.")


def basic_composition(entries: Iterable[LedgerEntry]) -> tuple[float, float]:
    """(sum epsilon, sum delta): valid for any (epsilon, delta)-DP releases, even adaptively chosen."""
    entries = list(entries)
    return math.fsum(e.epsilon for e in entries), math.fsum(e.delta for e in entries)


def gdp_composition(entries: Iterable[LedgerEntry], delta_target: float) -> Total | None:
    """GDP for the Gaussian part (mu = sqrt(sum mu_i^2), exact conversion) + basic for the rest.

    The Gaussian part receives delta_target minus the other entries' deltas. None when
    there is no Gaussian entry (the total would equal basic) or no delta is left for it.
    """
    entries = [e for e in entries if not e.approximate]
    gaussian = [e for e in entries if e.event.gaussian]
    rest = [e for e in entries if not e.event.gaussian]
    if not gaussian:
        return None
    mu = math.sqrt(math.fsum(e.mu**2 for e in gaussian))
    eps_rest, delta_rest = basic_composition(rest)
    delta_gaussian = delta_target - delta_rest
    if delta_gaussian <= 0:
        return None
    eps_gaussian = gdp_epsilon(mu, delta_gaussian)
    detail = (f"{len(gaussian)} Gaussian release(s): mu = {mu:.4g} -> epsilon {eps_gaussian:.4g} at delta "
              f"{delta_gaussian:.3g}; other releases by basic composition: epsilon {eps_rest:.4g}, "
              f"delta {delta_rest:.3g}")
    return Total("gdp+basic", eps_gaussian + eps_rest, delta_target, detail)


def zcdp_composition(entries: Iterable[LedgerEntry], delta_target: float) -> Total | None:
    """rho = sum rho_i, converted with the CKS bound at delta_target; None if delta_target is 0."""
    entries = [e for e in entries if not e.approximate]
    if not entries or not 0 < delta_target < 1:
        return None
    rho = math.fsum(e.rho for e in entries)
    eps = cks_epsilon(rho, delta_target)
    return Total("zcdp", eps, delta_target, f"rho = {rho:.4g} (zCDP), CKS conversion at delta {delta_target:.3g}")


# Discretisation of the privacy-loss grid: pessimistic (upper) estimates, so a coarser grid only
# loosens the total. 1e-4 keeps a ledger of tens of releases well under a second.
PLD_DISCRETISATION = 1e-4


def _entry_pld(entry: LedgerEntry):
    """Privacy-loss distribution dominating one release (its event's: exact for Gaussian DP, the
    generic (epsilon, delta) one otherwise; dp-accounting, pessimistic estimates)."""
    return entry.event.pld(PLD_DISCRETISATION)


def pld_composition(entries: Iterable[LedgerEntry], delta_target: float) -> Total | None:
    """Total by composing privacy-loss distributions (Google's dp-accounting PLD accountant).

    Valid for parameters fixed in advance, like the other totals; tighter than basic/GDP/zCDP when
    Gaussian and pure releases are mixed. None without DP entries or for delta_target = 0.
    """
    entries = [e for e in entries if not e.approximate]
    if not entries or not 0 < delta_target < 1:
        return None
    composed = _entry_pld(entries[0])
    for e in entries[1:]:
        composed = composed.compose(_entry_pld(e))
    eps = float(composed.get_epsilon_for_delta(delta_target))
    return Total("pld", max(eps, 0.0), delta_target,
                 f"privacy-loss distributions of {len(entries)} release(s) composed (dp-accounting, pessimistic "
                 f"discretisation {PLD_DISCRETISATION:g})")


def compose(entries: Iterable[LedgerEntry], delta_target: float, *, pld: bool = False) -> CompositionReport:
    """Every valid total at ``delta_target`` and the minimum of them (ties go to the simplest).

    ``pld=True`` adds the dp-accounting PLD total (optional: it needs the dp-accounting package).

    Parameters
    ----------
    entries : iterable of LedgerEntry
        The releases to compose.
    delta_target : float
        The delta at which the totals are stated.
    pld : bool
        Add the privacy-loss-distribution total (the 'pld' extra).

    Returns
    -------
    CompositionReport
        ``totals`` (one per valid rule: basic, GDP, zCDP, ...) and ``best``, the smallest epsilon.

    Examples
    --------
    >>> report = compose([pure_entry("mean", "iclp-qr", epsilon=1.0)] * 2, 1e-6)
    >>> report.best.epsilon <= 2.0
    True
    """
    if not (0 <= delta_target < 1) or not math.isfinite(delta_target):
        raise ParameterError(f"target delta must be in [0, 1), got {delta_target!r}")
    entries = list(entries)
    dp_entries = [e for e in entries if not e.approximate]
    approx = [e for e in entries if e.approximate]
    eps_b, delta_b = basic_composition(dp_entries)
    totals = [Total("basic", eps_b, delta_b, f"sum of {len(dp_entries)} release(s)' epsilon and delta")]
    extra = (pld_composition(dp_entries, delta_target),) if pld else ()
    for total in (gdp_composition(dp_entries, delta_target), zcdp_composition(dp_entries, delta_target), *extra):
        if total is not None:
            totals.append(total)
    valid = [t for t in totals if t.delta <= delta_target * (1 + _BUDGET_SLACK)]
    best = min(valid, key=lambda t: t.epsilon) if valid else None  # min keeps the first on ties
    gaussian = [e for e in dp_entries if e.event.gaussian]
    mu = math.sqrt(math.fsum(e.mu**2 for e in gaussian)) if gaussian else None
    notes = [_ADAPTIVE_NOTE]
    if approx:
        notes.append(_APPROX_NOTE)
    eps_a, delta_a = basic_composition(approx)
    nominal = Total("basic (nominal)", eps_a, delta_a, "approximate releases: not a DP claim") if approx else None
    return CompositionReport(
        delta_target=float(delta_target), totals=tuple(totals), best=best, mu_gaussian=mu,
        rho_total=math.fsum(e.rho for e in dp_entries),
        gaussian_only=bool(dp_entries) and len(gaussian) == len(dp_entries),
        n_entries=len(entries), n_approximate=len(approx), approximate_nominal=nominal, notes=tuple(notes))


# --------------------------------------------------------------------------- the ledger

@dataclass(frozen=True)
class Budget:
    """An amount of budget: (epsilon, delta) for the basic filter, rho for the zCDP filter."""

    epsilon: float
    delta: float
    rho: float | None  # None when delta is 0 (zCDP cannot express a pure budget)


def _normalise_split(split: Mapping[str, float] | None) -> dict[str, float] | None:
    if split is None:
        return None
    weights = {}
    for kind, w in split.items():
        check_choice("split kind", kind, LEDGER_KINDS)
        weights[kind] = check_nonnegative(f"split weight of {kind!r}", w)
    total = math.fsum(weights.values())
    if total <= 0:
        raise ParameterError("split weights must not all be zero")
    # The original kinds always appear (kinds left out get nothing); the summary kinds only when named,
    # so existing splits keep their exact shape.
    shares = {kind: weights.get(kind, 0.0) / total for kind in KINDS}
    shares.update({kind: weights[kind] / total for kind in SUMMARY_KINDS if kind in weights})
    return shares


def _fmt(budget: Budget, filter_name: str) -> str:
    if filter_name == "zcdp":
        return f"rho {budget.rho:.4g}"
    return f"epsilon {budget.epsilon:.4g}, delta {budget.delta:.3g}"


@dataclass
class Ledger:
    """Total budget, optional split across mean/kde/pca, and the committed releases.

    Use :meth:`check` with a candidate entry *before* drawing any noise, and
    :meth:`commit` after; a refused release records nothing. ``filter`` is "basic" by
    default (sum of epsilon and of delta); "zcdp" compares the sum of rho with the rho
    that (epsilon_total, delta_total) corresponds to under the CKS conversion.

    ``split`` maps kinds to weights (normalised to shares; kinds left out get nothing);
    every share applies to epsilon, delta and rho alike. Without a split only the total
    budget binds.

    Parameters
    ----------
    epsilon_total, delta_total : float
        The budget (delta_total 0 for a pure-DP budget).
    split : mapping of kind -> share, optional
        Shares of the total reserved per kind of release (mean, kde, pca, ...).
    filter : {"basic", "zcdp"}
        How the releases' parameters add up against the total.
    entries : list of LedgerEntry
        Releases already committed.

    Examples
    --------
    >>> ledger = Ledger(epsilon_total=2.5, delta_total=0.0)
    >>> _ = ledger.commit(pure_entry("mean", "iclp-qr", epsilon=1.0))
    >>> _ = ledger.commit(pure_entry("mean", "iclp-qr", epsilon=1.0))
    >>> ledger.remaining().epsilon
    0.5
    >>> ledger.check(pure_entry("mean", "iclp-qr", epsilon=1.0))
    Traceback (most recent call last):
    ...
    fdp_core.errors.BudgetError: release refused, nothing recorded: ...
    """

    epsilon_total: float
    delta_total: float
    split: dict[str, float] | None = None
    filter: str = "basic"
    entries: list[LedgerEntry] = field(default_factory=list)

    def __post_init__(self):
        self.epsilon_total = check_positive("epsilon_total", self.epsilon_total)
        d = float(self.delta_total)
        if not (0 <= d < 1) or not math.isfinite(d):
            raise ParameterError(f"delta_total must be in [0, 1), got {self.delta_total!r} (0 for a pure-DP budget)")
        self.delta_total = d
        check_choice("filter", self.filter, FILTERS)
        if self.filter == "zcdp" and d == 0:
            raise ParameterError("the zCDP filter needs delta_total > 0; use the basic filter for a pure-DP budget")
        self.split = _normalise_split(self.split)
        self.entries = list(self.entries)
        self._rho_total = zcdp_rho_budget(self.epsilon_total, d) if d > 0 else None

    # -- budgets -----------------------------------------------------------------
    @property
    def rho_total(self) -> float | None:
        """The zCDP budget equivalent to (epsilon_total, delta_total); None if delta_total = 0."""
        return self._rho_total

    def total(self) -> Budget:
        return Budget(self.epsilon_total, self.delta_total, self._rho_total)

    def share(self, kind: str) -> Budget:
        """The budget of one kind: its split share, or the whole budget without a split."""
        check_choice("kind", kind, LEDGER_KINDS)
        w = 1.0 if self.split is None else self.split.get(kind, 0.0)
        rho = None if self._rho_total is None else w * self._rho_total
        return Budget(w * self.epsilon_total, w * self.delta_total, rho)

    def spent(self, kind: str | None = None) -> Budget:
        """What the committed entries (approximate ones at their nominal cost) have used."""
        chosen = [e for e in self.entries if kind is None or e.kind == kind]
        return Budget(math.fsum(e.epsilon for e in chosen), math.fsum(e.delta for e in chosen),
                      math.fsum(e.rho for e in chosen if e.rho is not None))

    def remaining(self, kind: str | None = None) -> Budget:
        """Budget left overall (kind=None) or in one kind's share, never below zero.

        For a kind, what is left is also capped by what is left overall.
        """
        cap = self.total() if kind is None else self.share(kind)
        used = self.spent(kind)
        left = Budget(max(cap.epsilon - used.epsilon, 0.0), max(cap.delta - used.delta, 0.0),
                      None if cap.rho is None else max(cap.rho - used.rho, 0.0))
        if kind is None:
            return left
        overall = self.remaining()
        return Budget(min(left.epsilon, overall.epsilon), min(left.delta, overall.delta),
                      None if left.rho is None else min(left.rho, overall.rho))

    def usage(self) -> dict[str, float]:
        """Fraction of each budget used under the active filter, for the UI meter.

        Keys: "total" and each kind (with a split). Basic filter: the larger of the epsilon
        and delta fractions; zCDP filter: the rho fraction. 1.0 means exhausted.
        """
        def fraction(used: Budget, cap: Budget) -> float:
            if self.filter == "zcdp":
                return used.rho / cap.rho if cap.rho > 0 else (1.0 if used.rho > 0 else 0.0)
            f_eps = used.epsilon / cap.epsilon if cap.epsilon > 0 else (1.0 if used.epsilon > 0 else 0.0)
            f_delta = used.delta / cap.delta if cap.delta > 0 else (1.0 if used.delta > 0 else 0.0)
            return max(f_eps, f_delta)

        out = {"total": fraction(self.spent(), self.total())}
        if self.split is not None:
            for kind in LEDGER_KINDS:
                cap = self.share(kind)
                out[kind] = fraction(self.spent(kind), cap) if cap.epsilon > 0 else 1.0
        return out

    # -- the filter --------------------------------------------------------------
    def _excess(self, candidate: LedgerEntry, used: Budget, cap: Budget) -> bool:
        def over(u: float, c: float, cap_value: float) -> bool:
            return u + c > cap_value * (1 + _BUDGET_SLACK)

        if self.filter == "zcdp":
            return over(used.rho, candidate.rho, cap.rho)
        return over(used.epsilon, candidate.epsilon, cap.epsilon) or over(used.delta, candidate.delta, cap.delta)

    def check(self, candidate: LedgerEntry) -> None:
        """Raise BudgetError if ``candidate`` would exceed the total budget or its kind's share.

        Call this before drawing any noise. Nothing is recorded either way.
        """
        if not isinstance(candidate, LedgerEntry):
            raise ParameterError(f"expected a LedgerEntry, got {type(candidate).__name__}")
        if self.filter == "zcdp" and candidate.rho is None:
            raise BudgetError(f"release '{candidate.label or candidate.mechanism}' has no zCDP parameter rho; "
                              "switch the ledger to the basic filter to commit it")
        asked = Budget(candidate.epsilon, candidate.delta, candidate.rho)
        scopes = [("the total budget", self.total(), self.spent())]
        if self.split is not None:
            share = self.share(candidate.kind)
            scopes.append((f"the '{candidate.kind}' share, {self.split.get(candidate.kind, 0.0):.0%} of the total,",
                           share, self.spent(candidate.kind)))
        for scope, cap, used in scopes:
            if self._excess(candidate, used, cap):
                left = Budget(max(cap.epsilon - used.epsilon, 0.0), max(cap.delta - used.delta, 0.0),
                              None if cap.rho is None else max(cap.rho - used.rho, 0.0))
                filter_text = ("basic filter: sums of epsilon and delta" if self.filter == "basic"
                               else f"zCDP filter: sum of rho against {self._rho_total:.4g}, the zCDP equivalent of "
                                    f"epsilon {self.epsilon_total:g}, delta {self.delta_total:g}")
                raise BudgetError(
                    f"release refused, nothing recorded: it asks for {_fmt(asked, self.filter)} "
                    f"({candidate.kind}, {candidate.mechanism}), but only {_fmt(left, self.filter)} remain of "
                    f"{scope} which is {_fmt(cap, self.filter)} ({filter_text}). Lower this release's epsilon/delta"
                    + (" or change the split." if self.split is not None else "."))

    def commit(self, entry: LedgerEntry) -> LedgerEntry:
        """Record ``entry`` if :meth:`check` passes (otherwise raise and record nothing)."""
        self.check(entry)
        if any(e.id == entry.id for e in self.entries):
            raise BudgetError(f"release {entry.id} is already in the ledger; commit each release once")
        self.entries.append(entry)
        return entry

    def set_split(self, split: Mapping[str, float] | None) -> None:
        """Change the split; refused if a kind has already spent more than its new share."""
        new = _normalise_split(split)
        trial = Ledger(self.epsilon_total, self.delta_total, new, self.filter)
        for kind in LEDGER_KINDS:
            used, cap = self.spent(kind), trial.share(kind)
            if any(e.kind == kind for e in self.entries) and (
                    used.epsilon > cap.epsilon * (1 + _BUDGET_SLACK) or used.delta > cap.delta * (1 + _BUDGET_SLACK)
                    or (self.filter == "zcdp" and used.rho > cap.rho * (1 + _BUDGET_SLACK))):
                raise BudgetError(f"cannot give '{kind}' a share of {_fmt(cap, self.filter)}: it has already "
                                  f"spent {_fmt(used, self.filter)}")
        self.split = new

    def composition(self, delta_target: float | None = None, *, pld: bool = False) -> CompositionReport:
        """Composition report of the committed entries at ``delta_target`` (default delta_total);
        ``pld=True`` adds the PLD accountant's total."""
        return compose(self.entries, self.delta_total if delta_target is None else delta_target, pld=pld)

    # -- serialisation ------------------------------------------------------------
    def to_dict(self, neighbouring: str = NEIGHBOURING) -> dict:
        """``neighbouring``: the relation as the release's unit of privacy words it (NEIGHBOURING_RELATIONS)."""
        if neighbouring not in NEIGHBOURING_RELATIONS:
            raise ParameterError(f"unknown neighbouring relation {neighbouring!r}")
        return {"schema": SCHEMA, "neighbouring": neighbouring, "epsilon_total": self.epsilon_total,
                "delta_total": self.delta_total, "split": None if self.split is None else dict(self.split),
                "filter": self.filter, "entries": [e.to_dict() for e in self.entries]}

    @classmethod
    def from_dict(cls, data: Mapping) -> "Ledger":
        """Rebuild a ledger; every entry is re-validated and the totals must fit the budget."""
        if data.get("schema") != SCHEMA:
            raise ParameterError(f"not a ledger of schema {SCHEMA}: got schema {data.get('schema')!r}")
        if data.get("neighbouring", NEIGHBOURING) not in NEIGHBOURING_RELATIONS:
            raise ParameterError(f"ledger uses neighbouring relation {data.get('neighbouring')!r}; "
                                 f"fdp uses '{NEIGHBOURING}' and never mixes relations")
        ledger = cls(data["epsilon_total"], data["delta_total"], data.get("split"), data.get("filter", "basic"))
        for item in data.get("entries", []):
            ledger.commit(LedgerEntry.from_dict(item))
        return ledger
