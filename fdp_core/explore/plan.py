"""Planning a release by accuracy across several statistics (METHODS.md section 21).

A privacy officer signs off a *plan*: several statistics of one data set (a mean, a
density of a feature, a covariance, principal components), each with

* a **target** accuracy (the 95% L2 radius of its noise, in the statistic's own units:
  data units for a mean, density units for a density, squared data units for a covariance
  surface in Hilbert-Schmidt norm), or
* a **weight** (the total budget is then split to minimise the weighted squared radii), or
* a fixed **epsilon** (principal components: the exponential mechanism has no closed-form
  error radius, so its budget is stated, not derived).

Everything here is computed from *public* quantities only: the declared n, the grid, the
value range, tau and the kernels. Each statistic is planned once on a public stand-in (the
declared n persons, all equal to the centre, on the declared grid) at a reference epsilon;
its noise radius does not depend on the data values. Every mechanism's noise scale is its
sensitivity (independent of epsilon) times a unit scale u(epsilon, delta): 1/epsilon for
Laplace-type noise, sigma(1, epsilon, delta) of its calibration for Gaussian noise. So the
radius at any epsilon is the reference radius times u(epsilon)/u(reference), exactly, and
the smallest epsilon meeting a target is a monotone root (closed form for Laplace noise,
bisection on log epsilon for the Gaussian calibrations).

Totals. Basic composition (sum of epsilons, sum of deltas) is what the ledger's default
filter charges, part by part. When every part is Gaussian the plan's parameters are fixed in
advance, so Gaussian-DP composition is valid for the plan as a whole: mu = sqrt(sum mu_s^2)
with mu_s = Delta_s / sigma_s, converted to (epsilon, delta) at the plan's total delta. Both
are reported and the cheaper valid one is named.

Total first. With weights w_s and squared radii e_s(eps) = r_s(eps)^2: pure parts have
e_s = k_s / eps_s^2, so under basic composition eps_s is proportional to (w_s k_s)^(1/3)
(Lagrange); Gaussian parts are split numerically (each keeps its own delta; the sum of the
epsilons is the budget left after the fixed and targeted parts). For all-Gaussian weighted
parts, the GDP split is shown beside it: e_s = k_s / mu_s^2, so mu_s^2 is proportional to
sqrt(w_s k_s).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Mapping

import numpy as np
from scipy import optimize

from ..budget.accounting import compose, exponential_entry
from ..errors import ParameterError
from ..mechanisms.calibration import gaussian_sigma
from ..params import check_delta, check_epsilon, check_positive
from ..limits import MAX_GRID_POINTS, MAX_PLAN_CELLS, MAX_PLAN_PERSONS, MAX_PLAN_STATISTICS
from ..releases.box import check_box
from ..releases.covariance_radius import chunk_size, symmetrise

PLAN_SCHEMA = "fdp.plan/1"
PLAN_KINDS = ("mean", "kde", "covariance", "pca")
EPSILON_RANGE = (1e-4, 1e3)  # where the smallest epsilon for a target is searched
REFERENCE_EPSILON = 1.0
DESIGN_STAND_IN = "the declared design (n identical curves at the centre of the range)"
_STATISTIC_KEYS = {"kind", "name", "settings", "target", "weight", "epsilon", "feature"}
_PUBLIC_KEYS = {"n", "grid", "domain", "value_range", "person_column"}
_PLAN_KEYS = {"schema", "public", "budget", "statistics", "data"}
RADIUS_UNITS = {"mean": "data units (95% L2 radius of the noise)",
                "kde": "density units (95% L2 radius of the noise)",
                "covariance": "squared data units (95% Hilbert-Schmidt radius of the noise)",
                "pca": "no closed-form radius (epsilon stated)"}


# --------------------------------------------------------------------------- the public stand-in

@dataclass(frozen=True)
class PublicDesign:
    """What the plan may know about the data: all of it declared public, none of it read from a file."""

    n: int
    grid: np.ndarray = field(repr=False)
    value_range: tuple[float, float] | None = None
    person_column: str | None = None

    @classmethod
    def of(cls, mapping: Mapping) -> "PublicDesign":
        unknown = sorted(set(map(str, mapping)) - _PUBLIC_KEYS)
        if unknown:
            raise ParameterError(f"plan: unknown public key(s) {', '.join(unknown)} (known: "
                                 f"{', '.join(sorted(_PUBLIC_KEYS))})")
        n = mapping.get("n")
        if isinstance(n, float) and n.is_integer():
            n = int(n)  # 1e3 in YAML is a float: a whole one is a count
        if isinstance(n, bool) or not isinstance(n, int) or n < 2:
            raise ParameterError(f"plan: public.n (the declared number of persons) must be an integer >= 2, got {n!r}")
        if n > MAX_PLAN_PERSONS:
            raise ParameterError(f"plan: public.n = {n:g} is above the limit of {MAX_PLAN_PERSONS:,} persons (the plan "
                                 "prices each statistic on n stand-in curves held in memory)")
        grid = _grid_of(mapping.get("grid", 101), mapping.get("domain", (0.0, 1.0)))
        if n * grid.size > MAX_PLAN_CELLS:
            raise ParameterError(f"plan: public.n x grid = {n:,} x {grid.size} = {n * grid.size:,} values, above the "
                                 f"limit of {MAX_PLAN_CELLS:,} (the stand-in curves the plan prices on are held in "
                                 "memory): declare a coarser grid")
        value_range = mapping.get("value_range")
        if value_range is not None:
            value_range = _pair("public.value_range", value_range)
        person = mapping.get("person_column")
        if person is not None and (not isinstance(person, str) or not person.strip()):
            raise ParameterError(f"plan: public.person_column must be a column name, got {person!r}")
        return cls(n, grid, value_range, person)

    def stand_in(self):
        """n identical curves at the centre of the range on the declared grid (no data value)."""
        from ..data.loading import FunctionalData  # lazy: pandas and the loader, only for the stand-in

        centre = 0.0 if self.value_range is None else 0.5 * (self.value_range[0] + self.value_range[1])
        return FunctionalData(self.grid, np.full((self.n, self.grid.size), centre))


def _pair(name: str, value) -> tuple[float, float]:
    if not isinstance(value, (list, tuple)) or len(value) != 2 or any(isinstance(v, bool) for v in value):
        raise ParameterError(f"plan: {name} must be a pair [lo, hi], got {value!r}")
    try:
        lo, hi = float(value[0]), float(value[1])
    except (TypeError, ValueError):
        raise ParameterError(f"plan: {name} must be two numbers, got {value!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ParameterError(f"plan: {name} needs finite lo < hi, got {value!r}")
    return lo, hi


def _grid_of(grid, domain) -> np.ndarray:
    if isinstance(grid, bool):
        raise ParameterError(f"plan: public.grid must be a number of points or a list of t, got {grid!r}")
    if isinstance(grid, int):
        if not 3 <= grid <= MAX_GRID_POINTS:
            raise ParameterError(f"plan: public.grid must have 3..{MAX_GRID_POINTS} points, got {grid}")
        lo, hi = _pair("public.domain", domain)
        return np.linspace(lo, hi, grid)
    try:
        points = np.asarray(grid, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError("plan: public.grid must be a number of points or a list of numbers") from None
    if points.ndim != 1 or not 3 <= points.size <= MAX_GRID_POINTS or not np.all(np.isfinite(points)) \
            or np.any(np.diff(points) <= 0):
        raise ParameterError(f"plan: public.grid must be 3..{MAX_GRID_POINTS} strictly increasing finite numbers")
    return points


# --------------------------------------------------------------------------- one statistic's noise

@lru_cache(maxsize=4096)
def _gaussian_unit_scale(epsilon: float, delta: float, calibration: str | None) -> float:
    """sigma at sensitivity 1 (a bisection of the exact privacy profile for the analytic calibration), remembered:
    every radius divides by the reference epsilon's, and the plan's bisections and the Plan page's radius curves
    ask for the same public (epsilon, delta) again and again (~670 calibrations, half the plan's CPU, issue 40)."""
    return gaussian_sigma(1.0, epsilon, delta, calibration)


@dataclass(frozen=True)
class NoiseProfile:
    """How one statistic's 95% radius moves with its budget (public, planned once).

    ``radius_ref``: the radius at ``epsilon_ref`` (and ``delta``); ``gaussian``: the noise is
    Gaussian with the given calibration (then ``mu_ref`` = Delta / sigma at the reference).
    """

    radius_ref: float
    epsilon_ref: float
    delta: float  # 0 for pure mechanisms
    gaussian: bool
    calibration: str | None = None
    mu_ref: float | None = None

    def unit_scale(self, epsilon: float) -> float:
        if self.gaussian:
            return _gaussian_unit_scale(float(epsilon), float(self.delta), self.calibration)
        return 1.0 / epsilon

    def radius(self, epsilon: float) -> float:
        return self.radius_ref * self.unit_scale(epsilon) / self.unit_scale(self.epsilon_ref)

    def radius_at_mu(self, mu: float) -> float:
        """Gaussian only: the radius when sigma = Delta / mu."""
        return self.radius_ref * self.mu_ref / mu

    def mu(self, epsilon: float) -> float | None:
        return 1.0 / self.unit_scale(epsilon) if self.gaussian else None

    def epsilon_for(self, target: float) -> float | None:
        """Smallest epsilon in EPSILON_RANGE whose radius is <= target (None if unreachable)."""
        lo, hi = EPSILON_RANGE
        upper = min(hi, 1.0) if self.gaussian and self.calibration == "classical" else hi
        goal = target * (1.0 - 1e-9)
        if self.radius(upper) > goal:
            return None
        if self.radius(lo) <= goal:
            return lo
        if not self.gaussian:
            eps = self.epsilon_ref * self.radius_ref / goal
        else:
            a, b = math.log(lo), math.log(upper)
            while b - a > 1e-11:
                mid = 0.5 * (a + b)
                a, b = (mid, b) if self.radius(math.exp(mid)) > goal else (a, mid)
            eps = math.exp(b)
        while self.radius(eps) > goal:  # rounding: step up until the target provably holds
            eps *= 1.0 + 1e-12
        return eps


def _covariance_radius(plan, prob: float = 0.95, draws: int = 4000) -> float:
    """The 95% radius of ||symmetrised noise||_HS (the eigenbasis is orthonormal, so the HS norm of the surface
    is that of the coefficient matrix), provably. Entry (i, j) of the symmetrised noise is (a_ij + a_ji) / 2, so
    the squared norm is sum_i a_ii^2 + sum_{i<j} (a_ij + a_ji)^2 / 2 (+ the mean's noise): Gaussian noise makes it
    a weighted chi-square with variances s_ii^2 and (s_ij^2 + s_ji^2) / 2, inverted exactly (weighted_chi2.py);
    Laplace noise: Monte Carlo (fixed seed) with an upper confidence bound on the quantile."""
    from ..mechanisms.weighted_chi2 import monte_carlo_upper_quantile  # lazy: with the release modules

    if plan.family.uses_delta:
        square = np.asarray(plan.scales, dtype=float) ** 2
        upper = np.triu_indices(square.shape[0], 1)
        variances = [np.diag(square), (square[upper] + square.T[upper]) / 2.0]
        if plan.released_mean:
            variances.append(np.asarray(plan.mean_scales, dtype=float) ** 2)
        return float(plan.family.l2_quantile_radius(np.sqrt(np.concatenate(variances)), prob))
    rng = np.random.default_rng(20260)
    # In chunks of ~4 MB from the same stream (a generator's draws do not depend on how they are split): all
    # (4000, L, L) at once held ~300 MB several times over at L = 100 (issue 40).
    chunk, totals = chunk_size(plan.scales.size), []
    for start in range(0, draws, chunk):
        noise = symmetrise(plan.family.standard(rng, (min(chunk, draws - start),) + plan.scales.shape) * plan.scales)
        totals.append(np.sum(noise**2, axis=(1, 2)))
    total = np.concatenate(totals)
    if plan.released_mean:
        mean_noise = plan.family.standard(rng, (draws,) + plan.mean_scales.shape) * plan.mean_scales
        total = total + np.sum(mean_noise**2, axis=1)
    return monte_carlo_upper_quantile(np.sqrt(total), prob)


def noise_profile(kind: str, settings, design: PublicDesign, feature: str | None = None,
                  stand_in=None) -> NoiseProfile:
    """Plan ``kind`` on the public stand-in at the reference epsilon; read off its radius.

    ``stand_in``: a public data set with the declared design (sealed mode: a public file or
    curves simulated from the design); else n identical curves at the centre of the range.
    """
    ref = replace(settings, epsilon=REFERENCE_EPSILON)
    if kind == "mean":
        from ..releases.mean import plan_mean_release  # lazy: pandas + release modules, on use

        if stand_in is not None:
            plan = plan_mean_release(stand_in, replace(ref, n_public=None))
        else:  # the design's stand-in has no person column: its rows are the declared persons
            plan = plan_mean_release(design.stand_in(), replace(ref, person_column=None, n_public=None))
        guarantee, radius = plan.guarantee, plan.l2_error_radius(0.95)
        calibration = getattr(ref, "calibration", None)
    elif kind == "kde":
        from ..releases.kde import plan_kde_release  # lazy: pandas + release modules, on use
        from ..releases.kde_radii import l2_upper_radius  # lazy: with the release modules

        box = check_box(ref.box)
        centre = np.array([0.5 * (lo + hi) for lo, hi in box])
        points = np.tile(centre, (design.n, 1)) if len(box) > 1 else np.full(design.n, centre[0])
        release = plan_kde_release(points, replace(ref, box=box, person_column=None))
        guarantee, radius, calibration = release.guarantee, l2_upper_radius(release, 0.95), ref.calibration
    elif kind == "covariance":
        from ..releases.covariance import plan_covariance_release  # lazy: pandas + release modules, on use

        release = plan_covariance_release(stand_in, ref) if stand_in is not None else \
            plan_covariance_release(design.stand_in(), replace(ref, person_column=None))
        guarantee, radius, calibration = release.guarantee, _covariance_radius(release), ref.calibration
    else:
        raise ParameterError(f"plan: a {kind} statistic has no closed-form radius; state its epsilon")
    gaussian = guarantee.gdp_mu is not None
    delta = float(guarantee.delta or 0.0) if gaussian else 0.0
    return NoiseProfile(float(radius), REFERENCE_EPSILON, delta, gaussian, calibration if gaussian else None,
                        float(guarantee.gdp_mu) if gaussian else None)


# --------------------------------------------------------------------------- the plan

@dataclass(frozen=True)
class Statistic:
    """One line of a plan: a kind, its settings and how its budget is decided."""

    name: str
    kind: str
    settings: object
    target: float | None = None
    weight: float | None = None
    epsilon: float | None = None
    feature: str | None = None

    @property
    def rule(self) -> str:
        return "target" if self.target is not None else "weight" if self.weight is not None else "epsilon"


def charged_entries(kind: str, settings, design: PublicDesign, feature: str | None = None, fd=None) -> list:
    """The ledger entries a commit of this statistic would make: the exact discrete export's own
    privacy map (a little above the calibrated epsilon), planned on the stand-in, nothing drawn.
    Data-free: the cost depends on n, the grid, tau and the settings only. ``fd``: the data the
    commit will use (the plan's commit checks the entries of the very file it releases), else
    the design's stand-in."""
    from ..publish import commit  # lazy: the commit modules load only when a plan is priced

    if fd is None:  # the stand-in has no person column: its rows are the declared persons
        fd = design.stand_in()
        if kind != "pca":
            settings = replace(settings, person_column=None)
    if kind == "mean":
        return [commit.prepare_mean_commit(fd, settings).entry]
    if kind == "kde":
        return [commit.prepare_kde_commit(fd, feature, settings).entry]
    if kind == "covariance":
        from ..publish.commit_summaries import prepare_covariance_commit  # lazy: as above

        return [p.entry for p in prepare_covariance_commit(fd, settings)]
    # PCA: the exponential mechanism is charged its epsilon

    return [exponential_entry("pca", str(getattr(settings, "sampler", None) or "pca"), epsilon=settings.epsilon)]


@dataclass(frozen=True)
class PlannedPart:
    statistic: Statistic
    epsilon: float  # the calibration's epsilon (what sets the noise)
    delta: float
    radius: float | None  # 95% radius at epsilon (None: PCA)
    gaussian: bool
    mu: float | None
    entries: tuple = field(default=(), repr=False)  # the ledger entries its commit makes

    @property
    def charged_epsilon(self) -> float:
        return float(sum(e.epsilon for e in self.entries))

    @property
    def charged_delta(self) -> float:
        return float(sum(e.delta for e in self.entries))

    def to_dict(self) -> dict:
        s = self.statistic
        return {"name": s.name, "kind": s.kind, "rule": s.rule, "target": s.target, "weight": s.weight,
                "feature": s.feature, "epsilon": self.charged_epsilon, "delta": self.charged_delta,
                "calibration_epsilon": self.epsilon, "calibration_delta": self.delta, "radius_95": self.radius,
                "radius_units": RADIUS_UNITS[s.kind], "noise": "gaussian" if self.gaussian else "pure",
                "gdp_mu": self.mu}


@dataclass(frozen=True)
class ReleasePlan:
    """The budget of every statistic and the totals (public: no data was read).

    Built by :func:`make_plan`; ``to_dict()`` is plan.json, ``fits()`` checks the budget.

    Examples
    --------
    >>> plan = make_plan({"schema": "fdp.plan/1", "public": {"n": 200, "grid": 50, "value_range": [0, 1]},
    ...                   "statistics": [{"name": "mean", "kind": "mean", "settings": {"kernel": "matern52",
    ...                                                                            "rho": 0.1}, "epsilon": 1.0}]})
    >>> plan.basic[0] > 1.0   # the charged epsilon of the exact discrete noise
    True
    """

    parts: tuple[PlannedPart, ...]
    design: PublicDesign
    budget: tuple[float, float] | None
    basic: tuple[float, float]
    gdp: tuple | None  # (epsilon, delta, method): a cheaper valid total of the whole plan (GDP or zCDP), if any
    alternatives: tuple[dict, ...] = ()
    profiles: Mapping = field(default_factory=dict, repr=False)  # statistic name -> NoiseProfile (not PCA)
    computed_on: str = DESIGN_STAND_IN  # what the plan's numbers were computed on (never the private data)

    @property
    def cheapest(self) -> str:
        return self.gdp[2] if self.gdp is not None and self.gdp[0] < self.basic[0] else "basic"

    def fits(self) -> bool:
        return self.budget is None or (self.basic[0] <= self.budget[0] * (1 + 1e-12)
                                       and self.basic[1] <= self.budget[1] * (1 + 1e-12))

    def to_dict(self) -> dict:
        return {"schema": PLAN_SCHEMA, "n": self.design.n, "grid_points": int(self.design.grid.size),
                "value_range": None if self.design.value_range is None else list(self.design.value_range),
                "person_column": self.design.person_column,
                "budget": None if self.budget is None else {"epsilon": self.budget[0], "delta": self.budget[1]},
                "parts": [p.to_dict() for p in self.parts],
                "total_basic": {"epsilon": self.basic[0], "delta": self.basic[1]},
                "total_whole_plan": None if self.gdp is None else {"epsilon": self.gdp[0], "delta": self.gdp[1],
                                                                    "method": self.gdp[2]},
                "cheapest_valid_total": self.cheapest,
                "charged_by_the_ledger": ("each part at its own (epsilon, delta) (basic filter; the zCDP filter "
                                          "charges sum rho)"),
                "alternatives": list(self.alternatives),
                "fits_budget": self.fits(),
                "data_read": False,
                "computed_on": self.computed_on}


def parse_plan(mapping: Mapping) -> tuple[PublicDesign, tuple[float, float] | None, list[Statistic]]:
    """Validate a plan mapping (YAML): the public design, the optional total budget, the statistics."""
    if not isinstance(mapping, Mapping):
        raise ParameterError("plan must be a YAML mapping with 'public' and 'statistics'")
    if mapping.get("schema", PLAN_SCHEMA) != PLAN_SCHEMA:
        raise ParameterError(f"plan: schema must be '{PLAN_SCHEMA}', got {mapping.get('schema')!r}")
    unknown = sorted(set(map(str, mapping)) - _PLAN_KEYS)
    if unknown:
        raise ParameterError(f"plan: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(_PLAN_KEYS))})")
    if not isinstance(mapping.get("public"), Mapping):
        raise ParameterError("plan: 'public' must be a mapping (n, grid, value_range, ...)")
    design = PublicDesign.of(mapping["public"])
    budget = mapping.get("budget")
    if budget is not None:
        if not isinstance(budget, Mapping) or set(map(str, budget)) - {"epsilon", "delta"}:
            raise ParameterError("plan: 'budget' must be a mapping with epsilon and delta")
        budget = (_number("budget.epsilon", budget.get("epsilon"), check_epsilon),
                  _number("budget.delta", budget.get("delta", 0.0), _check_delta_or_zero))
    items = mapping.get("statistics")
    if not isinstance(items, list) or not items:
        raise ParameterError("plan: 'statistics' must be a non-empty list")
    if len(items) > MAX_PLAN_STATISTICS:
        raise ParameterError(f"plan: {len(items):,} statistics; the limit is {MAX_PLAN_STATISTICS} per plan "
                             "(each is priced and becomes a part of one bundle): split it into several plans")
    stats = [_statistic(i, item, design) for i, item in enumerate(items, start=1)]
    names = [s.name for s in stats]
    if len(set(names)) != len(names):
        raise ParameterError(f"plan: statistic names must differ, got {names}")
    if any(s.weight is not None for s in stats) and budget is None:
        raise ParameterError("plan: statistics with a weight need a total 'budget' (epsilon, delta) to split")
    return design, budget, stats


def _check_delta_or_zero(value) -> float:
    return 0.0 if value == 0 else check_delta(value)


def _number(name: str, value, check) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParameterError(f"plan: {name} must be a number, got {value!r}")
    try:
        return float(check(value))
    except ParameterError as exc:
        raise ParameterError(f"plan: {name}: {exc}") from None


def _statistic(index: int, item, design: PublicDesign) -> Statistic:
    from ..settings_fields import settings_from_config  # lazy: pandas + release modules, on use

    if not isinstance(item, Mapping):
        raise ParameterError(f"plan: statistic {index} must be a mapping (kind, settings, target/weight/epsilon)")
    unknown = sorted(set(map(str, item)) - _STATISTIC_KEYS)
    if unknown:
        raise ParameterError(f"plan: statistic {index}: unknown key(s) {', '.join(unknown)}")
    kind = item.get("kind")
    if kind not in PLAN_KINDS:
        raise ParameterError(f"plan: statistic {index}: kind must be one of {', '.join(PLAN_KINDS)}, got {kind!r}")
    rules = [key for key in ("target", "weight", "epsilon") if item.get(key) is not None]
    if len(rules) != 1:
        raise ParameterError(f"plan: statistic {index} ({kind}) needs exactly one of target, weight or epsilon, "
                             f"got {rules or 'none'}")
    if kind == "pca" and rules[0] != "epsilon":
        raise ParameterError(f"plan: statistic {index} (pca): components have no closed-form radius; state epsilon")
    values = {key: _number(f"statistic {index}.{key}", item[key], lambda v: check_positive(key, v))
              for key in rules}
    settings = item.get("settings") or {}
    if not isinstance(settings, Mapping):
        raise ParameterError(f"plan: statistic {index}: settings must be a mapping")
    cls = _settings_class(kind)
    public = {}
    names = {f for f in cls.__dataclass_fields__}
    # The declared range and person column are the data set's: every part uses them.
    if design.value_range is not None and "value_range" in names and "value_range" not in settings:
        public["value_range"] = tuple(design.value_range)
    if design.value_range is not None and kind == "mean" and "tau" not in settings:
        # As the app does: with a declared range, tau is (hi - lo)/2 of it (a default tau of 1 could be
        # looser than the range allows and cost budget for nothing).
        public["tau"] = None
    if design.value_range is not None and kind == "covariance" and "lo" not in settings:
        public["lo"], public["hi"] = design.value_range
    if design.person_column is not None and "person_column" in names:
        public["person_column"] = design.person_column
    try:
        obj = settings_from_config(cls, {**public, **dict(settings)})
        if kind == "kde":
            obj = replace(obj, box=check_box(obj.box))
        else:
            obj = obj.validated()
    except ParameterError as exc:
        raise ParameterError(f"plan: statistic {index} ({kind}): {' '.join(str(exc).split())}") from None
    if getattr(obj, "confidence_band", None) is not None:
        # A band splits the mean's budget with a second moment: its radius is not the mean's planned here.
        raise ParameterError(f"plan: statistic {index} (mean): a confidence band is not planned (its second moment "
                             "takes part of the budget); plan the mean without it, or commit the band on its own")
    if getattr(obj, "tau_from_data", False) or getattr(obj, "data_dependent_bandwidth", False):
        raise ParameterError(f"plan: statistic {index} ({kind}): data-dependent settings cannot be planned or "
                             "committed (the plan reads no data)")
    feature = item.get("feature")
    if kind == "kde" and not isinstance(feature, str):
        raise ParameterError(f"plan: statistic {index} (kde) needs a feature (e.g. 'mean', 'l2norm', 'value:0.5')")
    name = item.get("name") or f"{index}-{kind}"
    return Statistic(str(name), kind, obj, values.get("target"), values.get("weight"), values.get("epsilon"), feature)


def _settings_class(kind: str):
    if kind == "mean":
        from ..releases.mean import MeanSettings as cls  # lazy: pandas + release modules, on use
    elif kind == "kde":
        from ..releases.kde import KdeSettings as cls  # lazy: as above
    elif kind == "covariance":
        from ..releases.covariance import CovarianceSettings as cls  # lazy: as above
    else:
        from ..releases.pca import PcaSettings as cls  # lazy: as above
    return cls


def make_plan(mapping: Mapping, stand_in=None, *, stand_in_label: str = "the public stand-in") -> ReleasePlan:
    """Targets first, fixed epsilons, then the rest of the budget split by weight.

    ``stand_in``: a public FunctionalData with the declared design (sealed mode, checked by
    :func:`fdp_core.data.stand_in.matched_stand_in`) on which every number is computed;
    ``stand_in_label`` is recorded as ``computed_on``. The numbers do not depend on the curves' values.

    Parameters
    ----------
    mapping : mapping
        The plan as read from PLAN.yaml: ``public`` (n, grid, value range, person column),
        ``statistics`` (each with a target 95% radius, a weight or an epsilon) and an optional ``budget``.
    stand_in : FunctionalData, optional
        A public stand-in with the declared design (sealed mode).
    stand_in_label : str

    Returns
    -------
    ReleasePlan
        Every part's charged epsilon and accuracy, the totals, and whether it fits the budget.

    Examples
    --------
    >>> plan = make_plan({"schema": "fdp.plan/1",
    ...                   "public": {"n": 142, "grid": 93, "value_range": [0, 1]},
    ...                   "statistics": [{"name": "mean", "kind": "mean",
    ...                                   "settings": {"kernel": "matern52", "rho": 0.1}, "epsilon": 1.0}]})
    >>> len(plan.parts), plan.fits()
    (1, True)
    """
    design, budget, stats = parse_plan(mapping)
    profiles = {s.name: noise_profile(s.kind, s.settings, design, s.feature, stand_in)
                for s in stats if s.kind != "pca"}
    epsilons: dict[str, float] = {}
    for s in stats:
        if s.target is not None:
            eps = profiles[s.name].epsilon_for(s.target)
            if eps is None:
                p = profiles[s.name]
                raise ParameterError(f"plan: {s.name}: the target radius {s.target:g} is not reachable for "
                                     f"epsilon <= {EPSILON_RANGE[1]:g} (radius there: {p.radius(EPSILON_RANGE[1]):.4g})")
            epsilons[s.name] = eps
        elif s.epsilon is not None:
            epsilons[s.name] = s.epsilon
    weighted = [s for s in stats if s.weight is not None]
    alternatives: list[dict] = []
    if weighted:
        # The weights split what the ledger will CHARGE (METHODS.md 23): the budget left after the
        # other parts' charged epsilons, solved on each weighted part's map calibrated -> charged.
        def charge(s, eps):
            return _charged_epsilon(s, eps, design, stand_in)

        spent = sum(charge(s, epsilons[s.name]) for s in stats if s.name in epsilons)
        left = budget[0] - spent
        if left <= 0:
            raise ParameterError(f"plan: the targets and fixed epsilons already cost {spent:.4g}, "
                                 f"the budget is {budget[0]:g}: nothing is left for the weighted statistics")
        split = split_charged(weighted, [profiles[s.name] for s in weighted], left, charge)
        epsilons.update({s.name: e for s, e in zip(weighted, split)})
        equal = [left / len(weighted)] * len(weighted)
        alternatives.append({"rule": "equal split of the weighted statistics' budget",
                             "weighted_sq_radius": _weighted_error(weighted, profiles, equal),
                             "chosen_weighted_sq_radius": _weighted_error(weighted, profiles, split)})
    parts = []
    for s in stats:
        eps = epsilons[s.name]
        entries = tuple(charged_entries(s.kind, replace(s.settings, epsilon=eps), design, s.feature, fd=stand_in))
        if s.kind == "pca":
            parts.append(PlannedPart(s, eps, 0.0, None, False, None, entries))
            continue
        p = profiles[s.name]
        parts.append(PlannedPart(s, eps, p.delta, p.radius(eps), p.gaussian, p.mu(eps), entries))
    basic = (sum(p.charged_epsilon for p in parts), sum(p.charged_delta for p in parts))
    # Every valid total of the entries the commit will make, at the plan's total delta (the
    # parameters are fixed in advance, so GDP and zCDP totals are valid for the plan as a whole).
    report = compose([e for p in parts for e in p.entries], basic[1])
    gdp = None
    for total in report.totals:
        alternatives.append({"rule": f"the whole plan, {total.method} composition", "epsilon": total.epsilon,
                             "delta": total.delta, "detail": total.detail})
        if total.method != "basic" and total.delta <= basic[1] * (1 + 1e-12) and \
                (gdp is None or total.epsilon < gdp[0]) and total.epsilon < basic[0]:
            gdp = (total.epsilon, total.delta, total.method)
    return ReleasePlan(tuple(parts), design, budget, basic, gdp, tuple(alternatives), profiles,
                       DESIGN_STAND_IN if stand_in is None else stand_in_label)


def _weighted_error(stats, profiles, epsilons) -> float:
    return float(sum(s.weight * profiles[s.name].radius(e) ** 2 for s, e in zip(stats, epsilons)))


def split_by_weight(profiles: list[NoiseProfile], weights: list[float], total: float) -> list[float]:
    """Epsilons (summing to ``total``) minimising sum_s w_s r_s(eps_s)^2.

    Pure parts only: the Lagrange closed form eps_s proportional to (w_s k_s)^(1/3) with
    k_s = r_s(1)^2. Otherwise numerical: the objective is convex in each eps_s (every unit
    scale is convex and decreasing), minimised over the simplex in softmax coordinates,
    started from the pure-noise closed form.
    """
    w = np.asarray(weights, dtype=float)
    k = np.array([p.radius(1.0) ** 2 for p in profiles])
    start = (w * k) ** (1.0 / 3.0)
    start = total * start / start.sum()
    if not any(p.gaussian for p in profiles) or len(profiles) == 1:
        return [float(e) for e in start]

    def objective(z: np.ndarray) -> float:
        share = np.exp(z - z.max())
        eps = total * share / share.sum()
        return float(sum(wi * p.radius(max(e, 1e-12)) ** 2 for wi, p, e in zip(w, profiles, eps)))

    z0 = np.log(start)
    result = optimize.minimize(objective, z0, method="Nelder-Mead",
                               options={"xatol": 1e-10, "fatol": 1e-14 * max(objective(z0), 1e-300),
                                        "maxiter": 4000, "maxfev": 8000})
    z = result.x if result.fun <= objective(z0) else z0
    share = np.exp(z - z.max())
    return [float(e) for e in total * share / share.sum()]


def _charged_epsilon(s: Statistic, eps: float, design: PublicDesign, stand_in=None) -> float:
    """g_s(eps): the epsilon the ledger charges for statistic ``s`` calibrated at ``eps`` (its exact
    discrete export's privacy map, planned without data; a little above ``eps``)."""
    return float(sum(e.epsilon for e in charged_entries(s.kind, replace(s.settings, epsilon=eps), design, s.feature,
                                                          fd=stand_in)))


@dataclass(frozen=True)
class _ChargedScale:
    """A profile seen in charged epsilons: radius(x) = the profile's radius at x / ratio (ratio = g(eps) / eps)."""

    profile: NoiseProfile
    ratio: float

    @property
    def gaussian(self) -> bool:
        return self.profile.gaussian

    def radius(self, charged: float) -> float:
        return self.profile.radius(charged / self.ratio)


def split_charged(stats, profiles: list[NoiseProfile], total: float, charge, rounds: int = 3) -> list[float]:
    """Calibration epsilons minimising sum_s w_s r_s(eps_s)^2 subject to sum_s g_s(eps_s) <= ``total``.

    ``charge(s, eps)`` is g_s, the monotone map from a part's calibrated epsilon to its charged
    one (METHODS.md 23). Each g_s is nearly linear, so the weighted problem is solved in charged
    coordinates with g_s(eps) ~ c_s eps, c_s re-read at the solution (a few rounds); the result is
    then shrunk until the exact charges provably fit ``total``.
    """
    weights = [s.weight for s in stats]
    ratios = [1.0] * len(stats)
    for _ in range(rounds):
        split = split_by_weight([_ChargedScale(p, c) for p, c in zip(profiles, ratios)], weights, total)
        eps = [x / c for x, c in zip(split, ratios)]
        charged = [charge(s, e) for s, e in zip(stats, eps)]
        ratios = [g / e for g, e in zip(charged, eps)]
    for _ in range(60):  # g is monotone: shrinking every part lowers the sum
        if sum(charged) <= total:
            return eps
        shrink = min(total / sum(charged), 1.0 - 1e-9)
        eps = [e * shrink for e in eps]
        charged = [charge(s, e) for s, e in zip(stats, eps)]
    raise ParameterError(f"plan: the weighted parts' charges could not be fitted to epsilon {total:.6g}")


def gdp_split(profiles: list[NoiseProfile], weights: list[float], mu_total: float) -> list[float]:
    """Gaussian parts under GDP: mu_s^2 proportional to sqrt(w_s k_s), k_s = (r_s mu_s)^2 (Lagrange)."""
    k = np.array([(p.radius_ref * p.mu_ref) ** 2 for p in profiles])
    share = np.sqrt(np.asarray(weights, dtype=float) * k)
    return [float(math.sqrt(mu_total**2 * s / share.sum())) for s in share]


# --------------------------------------------------------------------------- replay configs of a plan

def part_settings(part: PlannedPart):
    """The settings a part is committed with: its own, at the planned epsilon."""
    settings = replace(part.statistic.settings, epsilon=part.epsilon)
    if part.statistic.kind == "pca" and getattr(settings, "epsilon_split", None):
        settings = replace(settings, epsilon_split=None)
    return settings


def part_name(index: int, part: PlannedPart) -> str:
    """The part's file stem in a plan's folder: part-<i>-<kind> (its replay config, its bundle's subfolder)."""
    return f"part-{index}-{part.statistic.kind}"


def part_configs(plan: ReleasePlan, *, budget_name: str | None = None) -> list[tuple[str, dict]]:
    """(file name, replay config) of every part: each a config.yaml the replay command commits.

    The budget section holds the plan's total (or its basic total when none was given).
    """
    from ..publish.commit import CONFIG_SCHEMA  # lazy: the commit modules load only when configs are written
    from ..settings_fields import config_of  # lazy: as above

    eps_total, delta_total = plan.budget if plan.budget is not None else plan.basic
    budget = {"epsilon_total": float(eps_total), "delta_total": float(delta_total), "filter": "basic",
              "split": None}
    if budget_name:
        budget["name"] = budget_name
    out = []
    for i, part in enumerate(plan.parts, start=1):
        s = part.statistic
        settings = part_settings(part)
        data = {"missing": "drop", "n": plan.design.n}
        if s.kind == "kde":
            data["feature"] = s.feature
        config = {"schema": CONFIG_SCHEMA, "kind": s.kind, "settings": config_of(settings), "data": data,
                  "export": {}, "budget": budget, "replays": f"plan part {i} ({s.name})"}
        out.append((f"{part_name(i, part)}.yaml", config))
    return out


def headroom(plan: ReleasePlan) -> tuple[float, float] | None:
    """(epsilon, delta) the plan leaves of its budget after the ledger's charges (None without a budget)."""
    if plan.budget is None:
        return None
    return max(plan.budget[0] - plan.basic[0], 0.0), max(plan.budget[1] - plan.basic[1], 0.0)


def describe(plan: ReleasePlan) -> list[str]:
    """The plan in plain lines (CLI output, report)."""
    lines = [f"plan for n = {plan.design.n} persons (declared public), {plan.design.grid.size} grid points"
             + ("" if plan.design.value_range is None else
                f", range {plan.design.value_range[0]:g}..{plan.design.value_range[1]:g}")
             + "; no data were read"
             + ("" if plan.computed_on == DESIGN_STAND_IN else f" (computed on {plan.computed_on})")]
    for p in plan.parts:
        s = p.statistic
        how = (f"target radius {s.target:g}" if s.target is not None else
               f"weight {s.weight:g}" if s.weight is not None else "epsilon stated")
        radius = "" if p.radius is None else f", 95% radius {p.radius:.4g} {RADIUS_UNITS[s.kind].split(' (')[0]}"
        lines.append(f"  {s.name}: {how} -> charged epsilon {p.charged_epsilon:.4g}, delta {p.charged_delta:.3g}"
                     f"{radius} (noise calibrated at epsilon {p.epsilon:.4g})")
    lines.append(f"total (basic composition, what the ledger's basic filter charges): epsilon {plan.basic[0]:.4g}, "
                 f"delta {plan.basic[1]:.3g}")
    if plan.gdp is not None:
        lines.append(f"cheaper valid total of the plan as a whole (GDP/zCDP, parameters fixed in advance): epsilon "
                     f"{plan.gdp[0]:.4g} at delta {plan.gdp[1]:.3g} (the ledger's zCDP filter charges by rho)")
    if plan.budget is not None:
        room = headroom(plan)
        lines.append(f"budget: epsilon {plan.budget[0]:g}, delta {plan.budget[1]:g}: "
                     + (f"fits, headroom epsilon {room[0]:.4g}, delta {room[1]:.3g} (budget minus the charged total)"
                        if plan.fits() else "does NOT fit"))
    return lines
