"""Private kernel density estimates in 1-d and 2-d: the release (METHODS.md section 4).

A density release is a public box T, a public grid over it, and one mechanism from the
registry (fdp_core/registry/kde.py): Hall, Rinaldo & Wasserman's Gaussian-process KDE
((epsilon, delta)-DP, fdp_core/mechanisms/hall_kde.py) or ICLP-KDE (Lin & Reimherr, pure
epsilon-DP, fdp_core/mechanisms/iclp_kde.py). The box, grid and observation helpers are in
fdp_core/releases/box.py, the sensitivity bounds in fdp_core/sensitivity.py, the example data in
fdp_core/data/simulate.py. This module holds what every density release shares: the settings,
the release object (estimate, noise law, guarantee), the planner that dispatches to the
registry, and the publishable record.

Expected squared L2 errors are in box coordinates for every mechanism. 2-d grids are product
grids and the kernels product kernels, so Gram matrices and covariance operators are
Kronecker products (the G^2 x G^2 matrix is never decomposed).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from .box import Box, box_widths, check_box, parse_box
from ..errors import ParameterError
from ..params import short_repr
from ..mechanisms.guarantee import Guarantee
from ..mechanisms.iclp_kde import IclpAxis
from ..mechanisms.kde_plan import KdeNoisePlan
from ..mechanisms.weighted_chi2 import monte_carlo_upper_quantile
from ..registry.kde import REGISTRY, KdeMechanism, kde_mechanism
from .postprocess import density_steps
from ..publish.release import randomness_fields
from ..sensitivity import KDE_BOUNDS
from ..settings_fields import documented_settings
from ..settings_fields import (CALIBRATION, DELTA, EPSILON, ETA, KERNEL, N_PUBLIC, NU, PERSON_COLUMN, RAW_RELEASE,
                              RHO, VALUE_RANGE, Control, option)

# Views of the registry (fdp_core/registry/kde.py): the CLI's --mechanism choices and labels.
KDE_MECHANISMS = tuple(REGISTRY)
KDE_MECHANISM_LABELS = {name: m.label for name, m in REGISTRY.items()}
NOISE_CHUNK_ENTRIES = 2**19  # grid values per Monte Carlo chunk of the error radii (4 MB of float64)


# --------------------------------------------------------------------------- the release object

@dataclass(frozen=True)
class KdeRelease:
    """A planned private density: deterministic parts computed, noise drawn on demand.

    ``density`` is the NON-PRIVATE estimate (analyst view, never publish); ``sample``
    draws sanitized densities. ``guarantee`` is the typed privacy promise read by the UI, the
    export and the tests; ``guarantee.record()`` is its published form.

    Built by :func:`plan_kde_release`.

    Examples
    --------
    >>> import numpy as np
    >>> plan = plan_kde_release(np.linspace(0.1, 0.9, 50), KdeSettings(box=((0.0, 1.0),), epsilon=1.0))
    >>> plan.n, plan.sample(np.random.default_rng(0), 1).shape
    (50, (1, 512))
    """

    mechanism: str
    box: Box
    grids: tuple  # per-axis grid in box coordinates
    density: np.ndarray = field(repr=False)  # (G,) or (G1, G2); NON-PRIVATE
    weights: np.ndarray = field(repr=False)  # trapezoid weights in box coordinates, grid-shaped
    n: int
    n_clipped_box: int
    sensitivity: float
    sigma: float | None
    laplace_scales: np.ndarray | None = field(repr=False)  # unit-coordinate b_l (ICLP)
    bandwidth: float | None
    expected_sq_l2_error: float
    guarantee: Guarantee = field(repr=False)
    data_dependent_flags: tuple = ()
    coefficients: np.ndarray | None = field(default=None, repr=False)  # NON-PRIVATE (ICLP, unit coords)
    iclp_axis: IclpAxis | None = field(default=None, repr=False)
    _noise: object = field(default=None, repr=False)

    @property
    def d(self) -> int:
        return len(self.grids)

    def __repr__(self) -> str:
        return short_repr("KdeRelease", mechanism=self.mechanism, privacy=self.guarantee.privacy,
                          epsilon=float(self.guarantee.epsilon), box=[tuple(map(float, b)) for b in self.box],
                          n=self.n, bandwidth=None if self.bandwidth is None else float(self.bandwidth),
                          sigma=None if self.sigma is None else float(self.sigma),
                          expected_sq_l2_error=float(self.expected_sq_l2_error))

    @property
    def grid(self) -> np.ndarray:
        """The 1-d grid (1-d densities only)."""
        if self.d != 1:
            raise ParameterError("a 2-d density has two grids: use .grids")
        return self.grids[0]

    @property
    def grid_shape(self) -> tuple:
        return tuple(g.size for g in self.grids)

    @property
    def m(self) -> int:
        return int(np.prod(self.grid_shape))

    @property
    def noise_law(self):
        """The mechanism's noise object: ``draw``, ``scales`` and ``synthesize`` (fdp_core/mechanisms/kde_plan.py)."""
        return self._noise

    def noise(self, rng: np.random.Generator, size: int = 1) -> np.ndarray:
        """``size`` noise fields on the grid, shape (size, *grid_shape)."""
        return self._noise.draw(rng, int(size))

    def sample(self, rng: np.random.Generator, size: int = 1) -> np.ndarray:
        """``size`` independent sanitized densities on the grid, shape (size, *grid_shape)."""
        return self.density + self.noise(rng, size)

    def _noise_norms(self, n_draws: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """(L2 norms, sup norms) of ``n_draws`` noise fields, drawn in chunks of ~4 MB: all at once
        held (n_draws, m) several times over (~400 MB on a 64 x 64 grid) per session (issue 40)."""
        rng, weights = np.random.default_rng(seed), self.weights.ravel()
        chunk = max(1, NOISE_CHUNK_ENTRIES // self.m)
        l2, sup = [], []
        for start in range(0, n_draws, chunk):
            size = min(chunk, n_draws - start)
            draws = self.noise(rng, size).reshape(size, -1)
            l2.append(np.sqrt((draws**2) @ weights))
            sup.append(np.abs(draws).max(axis=1))
        return np.concatenate(l2), np.concatenate(sup)

    def l2_error_radius(self, prob: float = 0.95, n_draws: int = 4000) -> float:
        """r with P(||release - estimate||_L2(T) <= r) >= prob (Monte Carlo, fixed seed): an upper confidence
        bound on the quantile (99.9%), so the radius the plan states holds (METHODS 21, 25)."""
        return monte_carlo_upper_quantile(self._noise_norms(n_draws, 12345)[0], prob)

    def sup_error_radius(self, prob: float = 0.95, n_draws: int = 4000) -> float:
        """r with P(max over the grid of |release - estimate| <= r) ~ prob (Monte Carlo, fixed seed)."""
        return float(np.quantile(self._noise_norms(n_draws, 54321)[1], prob))

    def unit_coefficients(self, values: np.ndarray) -> np.ndarray:
        """ICLP only: unit-coordinate eigen-coefficients of box-coordinate density values
        (shape (..., *grid_shape) -> (..., L) or (..., L1, L2)); exact on released values."""
        if self.iclp_axis is None:
            raise ParameterError("unit_coefficients is defined for the ICLP mechanism only")
        volume = float(np.prod(box_widths(self.box)))
        P = self.iclp_axis.basis.projector
        v = np.asarray(values, dtype=float) * volume
        if self.d == 1:
            return v @ P
        return P.T @ v @ P


def _release(entry: KdeMechanism, plan: KdeNoisePlan) -> KdeRelease:
    """The mechanism's plan with the fields every density release shares added to its guarantee."""
    grid_size = plan.grids[0].size
    flags = plan.data_dependent_flags
    label = entry.bound_labels[plan.bound]
    guarantee = replace(plan.guarantee, bound_label=label, details={
        "mechanism": entry.name,
        "mechanism_label": entry.label,
        "neighbouring": "replace one observation (one individual)",
        "sensitivity_bound": plan.bound,
        "sensitivity_bound_label": label,  # the density records' historical name for bound_label
        "box": [list(b) for b in plan.box],
        "d": len(plan.box),
        "grid_size": grid_size,
        "grid_shape": [grid_size] * len(plan.box),
        "n": plan.n,
        "data_dependent_flags": list(flags),
        "differentially_private": not flags,
        "arithmetic": "idealised real-arithmetic DP (floating-point numpy sampler)",
        **plan.guarantee.details,
    })
    return KdeRelease(mechanism=entry.name, box=plan.box, grids=plan.grids, density=plan.density,
                      weights=plan.weights, n=plan.n, n_clipped_box=plan.n_clipped_box, sensitivity=plan.sensitivity,
                      sigma=plan.sigma, laplace_scales=plan.laplace_scales, bandwidth=plan.bandwidth,
                      expected_sq_l2_error=plan.expected_sq_l2_error, guarantee=guarantee, data_dependent_flags=flags,
                      coefficients=plan.coefficients, iclp_axis=plan.iclp_axis, _noise=plan.noise)


# --------------------------------------------------------------------------- settings for app and CLI

def _typed_bandwidth(h) -> float | None:
    """The Release page's bandwidth box: a bandwidth, or 0 for the data-free default rule (None)."""
    return float(h) if float(h) > 0 else None


@documented_settings
@dataclass(frozen=True)
class KdeSettings:
    """Every public choice behind a density release (all of it goes into the provenance).

    Page controls (``controls``): the Density page ("density") and the Release page's density
    commit ("release"). The Density page's box (one pair of limits per axis), grid (one slider
    per dimension) and bound (one selector per mechanism) are several widgets for one field, so
    the page composes those fields itself.

    Examples
    --------
    >>> KdeSettings(box=((0.0, 2.0),), epsilon=0.5).mechanism
    'gaussian'
    """

    mechanism: str = option("gaussian", choices=KDE_MECHANISMS,
                            help="; ".join(f"{name}: {m.label}" for name, m in REGISTRY.items()),
                            controls=(Control("density", "density_mechanism"), Control("release", "rel_kde_mechanism")))
    # The Release page types the box as text (LO,HI or LO1,HI1,LO2,HI2), starting from 0,2.
    box: tuple = option(((0.0, 1.0),), parse=parse_box, required=True,
                        help="public box LO,HI (1-d) or LO1,HI1,LO2,HI2 (2-d); observations are clipped to it. Write "
                             "--box=-1,2 when LO is negative",
                        controls=(Control("release", "rel_kde_box", default="0,2", to_field=parse_box),))
    epsilon: float = option(1.0, EPSILON, required=True)
    delta: float = option(1e-5, DELTA)  # Gaussian mechanism only
    # Gaussian mechanism only; None = data-free default rule. The Density page's number is the h
    # used when its "default bandwidth rule" box is unticked; the Release page's 0 means the rule.
    bandwidth: float | None = option(None, group="bandwidth",
                                     help="Gaussian bandwidth h > 0 in feature units (default: box width * "
                                          "n^(-1/(4+d)))",
                                     controls=(Control("density", "density_bandwidth", default=0.1),
                                               Control("release", "rel_kde_bandwidth", default=0.0,
                                                       to_field=_typed_bandwidth)))
    data_dependent_bandwidth: bool = option(False, flag="--bandwidth-from-data", group="bandwidth",
                                            help="Silverman's rule (data-dependent: the release is then NOT "
                                                 "differentially private)",
                                            controls=(Control("density", "density_h_silverman"),))
    grid_size: int | None = option(None, help="grid points per axis (default 512 in 1-d, 64 in 2-d)")
    bound: str = option("exact", choices=KDE_BOUNDS, help="sensitivity bound: exact (attained) or paper")
    calibration: str = option("analytic", CALIBRATION,  # Gaussian mechanism only
                              controls=(Control("density", "density_calibration"),))
    kernel: str = option("matern32", KERNEL)  # ICLP only
    rho: float = option(0.1, RHO)
    nu: float | None = option(None, NU)
    eta: float = option(1.5, ETA, help="ICLP estimation kernel power eta > 1")
    # Public inputs of the per-record transform (METHODS.md 11-12): applied by the caller when it
    # turns curves into observations (features.person_features); plan_kde_release takes points.
    person_column: str | None = option(None, PERSON_COLUMN,
                                       help="metadata column identifying the person behind each curve: one "
                                            "observation per person (the average of their curves' features, each "
                                            "clipped to the box first)")
    value_range: tuple | None = option(None, VALUE_RANGE,
                                       help="public range of the curve values: curves are clipped pointwise to it "
                                            "before their features are computed")
    # n: the persons of the file (usable or not), or this declared number; persons without a usable
    # curve are observed at the box centre (features.person_features).
    n_public: int | None = option(None, N_PUBLIC)
    raw_release: bool = option(False, RAW_RELEASE)  # False: free post-processing on (fdp_core/releases/postprocess.py)


def plan_kde_release(points, settings: KdeSettings, *, feature=None, per_person: bool = False) -> KdeRelease:
    """Validate the settings and compute everything but the random draw.

    Parameters
    ----------
    points : FunctionalData, PersonFeatures, KdeSums or array of shape (n,) or (n, d)
        Curves (with ``feature``: each curve's feature is clipped to the box, then averaged per
        person of ``settings.person_column``, METHODS.md 11), observations already one per person
        (:func:`fdp_core.data.features.person_features`), their streamed sums, or bare points.
    settings : KdeSettings
        The public choices; the mechanism is the registry entry named by ``settings.mechanism``.
    feature : str, optional
        The per-curve feature spec (e.g. ``"mean:0:1"``), required when ``points`` are curves.
    per_person : bool
        Bare points that are already one observation per person. With a person column and bare
        points this must be said: otherwise n would count curves, not persons, and the release
        would protect curves only.

    Examples
    --------
    >>> import numpy as np, fdp_core as fdp
    >>> grid = np.linspace(0, 1, 11)
    >>> data = fdp.from_arrays(grid, np.vstack([grid * (1 + i / 10) for i in range(6)]),
    ...                        metadata={"person": [1, 1, 2, 2, 3, 3]})
    >>> settings = fdp.KdeSettings(box=((0.0, 2.0),), epsilon=1.0, person_column="person")
    >>> fdp.plan_kde_release(data, settings, feature="mean:0:1").n   # three persons, not six curves
    3
    """
    from ..data.features import PersonFeatures, person_features  # lazy: the feature parser, on use
    from ..data.loading import FunctionalData  # lazy: the loader, on use

    if isinstance(points, FunctionalData):
        if feature is None:
            raise ParameterError("a density of curves needs feature=... (e.g. 'mean:0:1' or 'value:0.5'): the "
                                 "per-curve number whose density is released")
        points = person_features(points, feature, check_box(settings.box), person_column=settings.person_column,
                                 value_range=settings.value_range, n_public=settings.n_public)
    if isinstance(points, PersonFeatures):
        points = points.points
    elif isinstance(points, np.ndarray | list | tuple) and settings.person_column is not None and not per_person:
        raise ParameterError(f"person_column {settings.person_column!r} needs the curves: pass the FunctionalData "
                             "with feature=... (one observation per person), or per_person=True for points that are "
                             "already one per person")
    entry = kde_mechanism(settings.mechanism)
    entry.validate(settings)
    return _release(entry, entry.plan_noise(points, settings))


def release_table(release: KdeRelease, values: np.ndarray) -> pd.DataFrame:
    """One sanitized density as a table: x (or x1, x2) and density, one row per grid node."""
    values = np.asarray(values, dtype=float)
    if values.shape != release.grid_shape:
        raise ParameterError(f"values of shape {values.shape} do not match the grid {release.grid_shape}")
    if release.d == 1:
        return pd.DataFrame({"x": release.grids[0], "density": values})
    x1, x2 = np.meshgrid(release.grids[0], release.grids[1], indexing="ij")
    return pd.DataFrame({"x1": x1.ravel(), "x2": x2.ravel(), "density": values.ravel()})


def release_record(release: KdeRelease, *, feature: str | None = None, n_dropped: int | None = None,
                   seed: int | None = None, person_column: str | None = None, value_range=None,
                   n_public: int | None = None, raw_release: bool = False) -> dict:
    """The publishable record of one sanitized density: public inputs and the noise law only.

    Counts computed from the data (observations clipped to the box, curves dropped) are in
    :func:`analyst_view`; ``n_dropped`` is accepted for compatibility and ignored here.
    """
    g = release.guarantee
    flags = list(release.data_dependent_flags)
    return {
        "release": "kde",
        "mechanism": release.mechanism,
        "epsilon": g.epsilon,
        "delta": g.delta,
        "tau": None,  # no norm bound: a KDE bounds observations by the box instead
        "bound": g.details["sensitivity_bound"],
        "calibration": g.details.get("calibration"),
        "n": release.n,
        "m": release.m,
        "unit_of_privacy": (f"person (column '{person_column}'): one averaged observation each" if person_column
                            else "curve (one observation each)"),
        "person_column": person_column,
        "value_range": None if value_range is None else [float(v) for v in value_range],
        # n: the persons of the file, usable or not (those without a usable curve sit at the box centre)
        "n_policy": "declared public" if n_public is None else "declared public (fixed by the user)",
        "sensitivity": release.sensitivity,
        "sigma": release.sigma,
        "laplace_scales": None if release.laplace_scales is None else release.laplace_scales.ravel(),
        "expected_sq_l2_error": release.expected_sq_l2_error,
        "l2_error_radius_95": release.l2_error_radius(0.95),
        "post_processing": list(density_steps(raw_release)),  # public settings only (fdp_core/releases/postprocess.py)
        "data_dependent_flags": flags,
        "differentially_private": not flags,
        "bandwidth": release.bandwidth,
        "box": [list(b) for b in release.box],
        "grid_size": release.grid_shape[0],
        "feature": feature,
        "guarantee": g.record(),
        **randomness_fields(seed),
    }


def analyst_view(release: KdeRelease, *, n_dropped: int = 0, n_curves: int | None = None,
                 n_outside_box: int | None = None, n_unusable: int = 0) -> dict:
    """Counts computed from the data without noise (never publish)."""
    view = {"n_persons": release.n, "n_curves": release.n if n_curves is None else int(n_curves),
            "n_dropped": int(n_dropped), "n_persons_without_usable_curve": int(n_unusable),
            "n_clipped": int(release.n_clipped_box if n_outside_box is None else n_outside_box),
            "n_clipped_meaning": "observations (one per curve) with a coordinate outside the box, moved onto it"}
    if release.data_dependent_flags and release.bandwidth is not None:
        view["bandwidth_from_data"] = release.bandwidth
    return view
