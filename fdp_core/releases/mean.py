"""Mean-function release pipeline: clip -> eigenbasis -> estimator -> mechanism.

Every mean mechanism of METHODS.md 2-3 releases  sum_l (c_l + noise_l) b_l(t): estimator
coefficients c_l in some basis b_l plus independent noise per coefficient. A
:class:`MeanRelease` holds exactly that, plus the guarantee, so the app, the CLI and the
tests read one record. It holds the non-private estimate for the analyst view; the
release record it writes (:func:`release_record`) never contains it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from functools import lru_cache

import numpy as np

from ..data.loading import FunctionalData
from ..errors import ParameterError
from ..kernels import KERNEL_NAMES
from ..long_grid import tail_sentence
from ..mechanisms.calibration import CALIBRATIONS
from ..mechanisms.families import NoiseFamily, noise_family
from ..mechanisms.guarantee import Guarantee
from ..mechanisms.weighted_chi2 import monte_carlo_upper_quantile
from ..params import (check_choice, check_epsilon, check_open_unit, check_positive, default_l2_clip,
                      short_repr, validate_once)
from .postprocess import mean_steps
from ..data.meta_columns import metadata_view
from ..data.preprocess import PublicBounds, bounds_of, person_average, person_codes
from ..registry import MEAN_REGISTRY, mean_mechanism
from .estimators import shrinkage
from ..registry.mean_basis import resolve_tau  # noqa: F401  (public here since before the registry held it)
from ..publish.release import randomness_fields
from ..sensitivity import BOUNDS
from ..settings_fields import documented_settings
from ..settings_fields import (CALIBRATION, DELTA, EPSILON, ETA, KERNEL, N_PUBLIC, NU, PERSON_COLUMN, RAW_RELEASE,
                              REFERENCE, RHO, TAU, TAU_FROM_DATA, VALUE_RANGE, Control, log10_control, option)

# Views of the registry (fdp_core/registry/mean.py): names by privacy type, labels.
MEAN_MECHANISMS = tuple(MEAN_REGISTRY)
GAUSSIAN_MECHANISMS = tuple(name for name, m in MEAN_REGISTRY.items() if m.uses_delta)
PURE_DP_MECHANISMS = tuple(name for name, m in MEAN_REGISTRY.items() if not m.uses_delta)
ICLP_MECHANISMS = tuple(name for name, m in MEAN_REGISTRY.items() if m.penalty == "psi")
MECHANISM_LABELS = {name: m.label for name, m in MEAN_REGISTRY.items()}
BAND_FIELDS = ("confidence_band", "band_share", "smoothness_bound")  # release mean only (fdp_core/releases/bands.py)


@documented_settings
@dataclass(frozen=True)
class MeanSettings:
    """Every public choice behind a mean release (all of it goes into the provenance).

    Examples
    --------
    >>> s = MeanSettings(value_range=(0, 1), epsilon=1.0)
    >>> s.tau is None, s.kernel, s.phi   # tau follows the range at plan time: (1 - 0)/2
    (True, 'matern52', 0.001)
    """

    mechanism: str = option("gaussian", choices=MEAN_MECHANISMS, controls=(Control("mean", "mean_mechanism"),),
                            help="; ".join(f"{name}: {m.privacy}" for name, m in MEAN_REGISTRY.items())
                            + " (delta is ignored by the epsilon-DP ones)")
    kernel: str = option("matern52", KERNEL, required=True)
    rho: float = option(0.1, RHO, required=True)
    nu: float | None = option(None, NU)
    eta: float = option(1.5, ETA)
    phi: float = option(1e-3, help="penalty phi > 0 (Gaussian mechanism)")
    epsilon: float = option(1.0, EPSILON, required=True)
    delta: float = option(1e-5, DELTA)
    tau: float | None = option(None, TAU)  # None: (hi - lo)/2 from value_range, as on the command line and in the app
    tau_from_data: bool = option(False, TAU_FROM_DATA)
    bound: str = option("tight", choices=BOUNDS, controls=(Control("mean", "mean_bound"),),
                        help="sensitivity bound: tight (attained or Cauchy-Schwarz) or paper (published closed form)")
    calibration: str = option("analytic", CALIBRATION, controls=(Control("mean", "mean_calibration"),))
    psi: float = option(1e-3, help="penalty psi > 0 (iclp-qr, iclp-ar)",  # ICLP penalty
                        controls=(log10_control("mean", "mean_log_psi"),))
    M: int = option(20, help="number of eigenfunctions M >= 1 (frl)",  # FRL truncation
                    controls=(Control("mean", "mean_M"),))
    K: int = option(20, help="Bernstein lattice size K >= 1 (K + 1 points)", controls=(Control("mean", "mean_K"),))
    # Bernstein: public range of the curve values (default: value_range); the page starts from [0, 1].
    lo: float | None = option(None, help="public lower bound of every curve value (required for bernstein)",
                              controls=(Control("mean", "mean_lo", default=0.0),))
    hi: float | None = option(None, help="public upper bound of every curve value (required for bernstein)",
                              controls=(Control("mean", "mean_hi", default=1.0),))
    # Public inputs of the per-record transform (fdp_core.data.preprocess, METHODS.md 11-12).
    value_range: tuple | None = option(None, VALUE_RANGE)  # (lo, hi): clip pointwise, centre at (lo + hi)/2
    reference: tuple | None = option(None, REFERENCE)  # public reference curve ((t, value), ...) replacing the centre
    person_column: str | None = option(None, PERSON_COLUMN)  # metadata column grouping curves by person
    n_public: int | None = option(None, N_PUBLIC)  # declared persons (None: those in the data, declared public)
    # Uncertainty bands (METHODS.md 18, fdp_core/releases/bands.py): post-processing, except that the confidence band
    # spends band_share of epsilon (and delta) on a private second moment.
    confidence_band: float | None = option(None, help="level in (0, 1), e.g. 0.95: also release a simultaneous "
                                                      "confidence band for the population's smoothed mean and the "
                                                      "privacy band (spends --band-share of the budget on a second "
                                                      "moment)")
    band_share: float = option(0.2, help="share of epsilon (and delta) spent on the second moment behind "
                                         "--confidence-band; the mean gets the rest")
    smoothness_bound: float | None = option(None, help="public bound B on the centred mean's norm in H(C^eta): "
                                                       "adds the smoothing-bias bound and a widened band")
    raw_release: bool = option(False, RAW_RELEASE)  # False: free post-processing on (fdp_core/releases/postprocess.py)

    def __post_init__(self):
        # tau = None follows the declared range, as on the command line (params.default_l2_clip)
        object.__setattr__(self, "tau", default_l2_clip(self.tau, self.value_range, self.tau_from_data))

    @property
    def bounds(self) -> PublicBounds:
        return bounds_of(self)

    @property
    def bernstein_range(self) -> tuple:
        """Bernstein's [lo, hi]: its own lo/hi, else the declared value range."""
        if self.lo is None and self.hi is None and self.value_range is not None:
            return tuple(float(v) for v in self.value_range)
        return self.lo, self.hi

    @validate_once
    def validated(self) -> "MeanSettings":
        """Check every field the chosen mechanism uses; delta is ignored by pure epsilon-DP ones.

        Once: the returned settings carry the fact (params.validate_once), and the plan, the
        mechanisms and the commit trust it instead of re-checking."""
        check_choice("kernel", self.kernel, KERNEL_NAMES)
        check_positive("rho", self.rho)
        check_epsilon(self.epsilon)
        check_choice("bound", self.bound, BOUNDS)
        check_choice("calibration", self.calibration, CALIBRATIONS)
        self.bounds  # validates value_range, reference, person_column, n_public
        if self.confidence_band is not None:
            check_open_unit("confidence_band (the band's level)", self.confidence_band)
            check_open_unit("band_share (the second moment's share of the budget)", self.band_share)
        if self.smoothness_bound is not None:
            check_positive("smoothness_bound", self.smoothness_bound)
        mechanism = mean_mechanism(self.mechanism)
        mechanism.validate(self)
        mechanism.basis.validate_clip(self)  # tau for the kernel eigenbasis; Bernstein clips to [lo, hi] instead
        return self


@dataclass(frozen=True)
class MeanRelease:
    """A planned mean release: deterministic parts computed, noise drawn on demand.

    Built by :func:`plan_mean_release`. Public (data-free given n): ``settings``, ``grid_points``,
    ``n``, ``tau``, ``sensitivity``, ``sigma``, ``expected_sq_l2_error``, ``guarantee`` and the
    radii ``l2_error_radius(p)`` / ``sup_error_radius(p)``. NON-PRIVATE (analyst view only):
    ``estimate``, ``raw_mean`` (per person with a person column), ``bias()``, the counts.

    Examples
    --------
    >>> import numpy as np
    >>> from fdp_core.data.loading import from_arrays
    >>> t = np.linspace(0, 1, 30)
    >>> plan = plan_mean_release(from_arrays(t, np.outer(np.linspace(0.2, 0.8, 50), 1 + t) / 2),
    ...                          MeanSettings(value_range=(0, 1)))
    >>> round(plan.l2_error_radius(0.95), 3) > 0, plan.privacy
    (True, '(epsilon, delta)-DP')
    """

    settings: MeanSettings
    grid_points: np.ndarray
    synthesis: np.ndarray  # (m, L): basis functions b_l on the grid
    weights: np.ndarray  # quadrature weights of the L2 inner product
    estimate_coefficients: np.ndarray = field(repr=False)  # NON-PRIVATE: analyst view only
    offset: np.ndarray = field(repr=False)  # public centre c(t), added back after the noise
    noise_scales: np.ndarray = field(repr=False)  # sd (gaussian) or Laplace scale b_l (laplace)
    noise: str  # "gaussian" | "laplace"
    tau: float | None  # None for Bernstein (clips values to [lo, hi] instead)
    n: int  # persons (declared public): the n of every sensitivity
    n_clipped: int  # NON-PRIVATE (analyst view): curves shrunk by the L2 clip (Bernstein: by the range)
    n_dropped: int  # NON-PRIVATE (analyst view)
    sensitivity: float
    sigma: float | None
    expected_sq_l2_error: float
    guarantee: Guarantee
    data_dependent_flags: tuple = ()
    # NON-PRIVATE: mean of the raw curves (of each person's average curve with a person column, in memory)
    raw_mean: np.ndarray | None = field(default=None, repr=False)
    n_curves: int = 0  # NON-PRIVATE when a person column groups curves (analyst view)
    n_range_clipped: int = 0  # NON-PRIVATE: curves with a value outside the public range
    n_unusable: int = 0  # NON-PRIVATE: persons of the file without a usable curve (counted as the centre)
    basis_tail: dict | None = None  # public: a long grid's top-L basis and its omitted tail (METHODS 27)

    @property
    def m(self) -> int:
        return int(self.grid_points.size)

    @property
    def privacy(self) -> str:
        return self.guarantee.privacy

    def __repr__(self) -> str:
        s = self.settings
        return short_repr("MeanRelease", mechanism=s.mechanism, privacy=self.privacy, epsilon=float(s.epsilon),
                          delta=float(self.delta), n=self.n, m=self.m, tau=None if self.tau is None else float(self.tau),
                          sigma=None if self.sigma is None else float(self.sigma),
                          expected_sq_l2_error=float(self.expected_sq_l2_error),
                          l2_error_radius_95=float(self.l2_error_radius(0.95)))

    @property
    def delta(self) -> float:
        """delta of the guarantee: 0 for the pure epsilon-DP mechanisms."""
        return self.family.delta_or_zero(self.settings.delta)

    @property
    def family(self) -> NoiseFamily:
        return noise_family(self.noise)

    @property
    def estimate(self) -> np.ndarray:
        """The non-private estimate on the grid (data units). Analyst view: never publish."""
        return self.offset + self.synthesis @ self.estimate_coefficients

    def noise_coefficients(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return self.family.standard(rng, (size, self.noise_scales.size)) * self.noise_scales

    def sample(self, rng: np.random.Generator, size: int = 1) -> np.ndarray:
        """``size`` independent sanitized means on the grid, shape (size, m)."""
        return self.offset + (self.estimate_coefficients + self.noise_coefficients(rng, size)) @ self.synthesis.T

    def bias(self) -> float | None:
        """||estimate - raw sample mean|| (L2 over [0, 1]): smoothing + clipping + centring. NON-PRIVATE."""
        if self.raw_mean is None:
            return None
        diff = self.estimate - self.raw_mean
        return float(np.sqrt(max(float(diff**2 @ self.weights), 0.0)))

    def pointwise_bias(self) -> float | None:
        """max_t |estimate(t) - raw sample mean(t)|: the largest pointwise bias. NON-PRIVATE."""
        if self.raw_mean is None:
            return None
        return float(np.max(np.abs(self.estimate - self.raw_mean)))

    def total_error(self) -> float | None:
        """sqrt(bias^2 + E||noise||^2): root expected squared L2 distance to the raw mean. NON-PRIVATE."""
        b = self.bias()
        return None if b is None else float(np.sqrt(b * b + self.expected_sq_l2_error))

    def l2_error_radius(self, prob: float = 0.95) -> float:
        """r with P(||release - estimate||_L2 <= r) = prob."""
        return _noise_radius("l2", self, prob)

    def sup_error_radius(self, prob: float = 0.95) -> float:
        """r with P(max_t |release(t) - estimate(t)| <= r) ~ prob (Monte Carlo, fixed seed)."""
        return _noise_radius("sup", self, prob)


def _noise_radius(kind: str, plan: "MeanRelease", prob: float) -> float:
    """Error radii are positively homogeneous in the noise scales: compute them once per
    *shape* of the scale vector (cached) and rescale, so moving epsilon or delta never
    re-runs the Monte Carlo or the saddlepoint search."""
    top = float(np.max(plan.noise_scales, initial=0.0))
    if top == 0.0:
        return 0.0
    # Rounded so that the same shape at another epsilon hits the cache despite last-bit noise.
    unit = np.round(plan.noise_scales / top, 12)
    return top * _unit_radius(kind, plan.noise, unit.tobytes(), np.ascontiguousarray(plan.synthesis).tobytes(),
                              plan.synthesis.shape, plan.weights.tobytes(), float(prob))


@lru_cache(maxsize=256)
def _unit_radius(kind, noise, unit_bytes, synthesis_bytes, shape, weights_bytes, prob) -> float:
    scales = np.frombuffer(unit_bytes)
    synthesis = np.frombuffer(synthesis_bytes).reshape(shape)
    weights = np.frombuffer(weights_bytes)
    family = noise_family(noise)
    if kind == "l2":
        gram = synthesis.T @ (weights[:, None] * synthesis)
        # ||Z||^2 = xi^T D G D xi (D the scales, G the basis's Gram matrix): independent coordinates along the
        # eigenvectors of D G D, so the exact law where the family has one (Gaussian: a weighted chi-square).
        if np.allclose(gram, np.eye(shape[1]), atol=1e-8):
            exact = family.l2_quantile_radius(scales, prob)
        else:
            variances = np.linalg.eigvalsh(scales[:, None] * gram * scales[None, :])
            exact = family.l2_quantile_radius(np.sqrt(np.clip(variances, 0.0, None)), prob)
        if exact is not None:
            return exact
    rng = np.random.default_rng(12345)
    coefs = family.standard(rng, (4000, scales.size))
    draws = (coefs * scales) @ synthesis.T
    if kind == "l2":  # Monte Carlo (Laplace): an upper confidence bound on the quantile, so the radius holds
        return monte_carlo_upper_quantile(np.sqrt((draws**2) @ weights), prob)
    return float(np.quantile(np.abs(draws).max(axis=1), prob))


@dataclass(frozen=True)
class MeanSums:
    """Everything a mean release reads from the data (METHODS.md 17): n and the sum over
    persons of the per-record transform of fdp_core.data.preprocess (range clip, centring, L2 clip,
    person average), or for Bernstein the sum of the person-level lattice values.

    Computed in memory by :func:`mean_sums`, chunk by chunk by fdp_core/engines/stream.py or by a Dask
    reduction; :func:`plan_mean_release` plans from it with the same code for all three."""

    grid_points: np.ndarray
    unit_grid: np.ndarray
    weights: np.ndarray
    n: int  # the mechanism's n: persons (or the declared n_public)
    n_dropped: int
    n_curves: int
    raw_sum: np.ndarray  # NON-PRIVATE (analyst view): sum of the raw curves
    offset: np.ndarray  # public centre c(t)
    n_range_clipped: int = 0
    n_clipped: int = 0
    tau: float | None = None  # None: Bernstein
    total: np.ndarray | None = None  # (m,) sum of person-level clipped centred curves, or (K + 1,) lattice sums
    data_dependent_flags: tuple = ()
    n_unusable: int = 0  # NON-PRIVATE: persons of the file without a usable curve
    # NON-PRIVATE: what raw_sum is divided by; None: n_curves (the streamed engines sum curves)
    raw_count: int | None = None


def _raw_sum(fd: FunctionalData, person_column: str | None) -> tuple[np.ndarray, int | None]:
    """Sum of the raw curves, or of each person's average raw curve with a person column (the raw
    mean then averages persons, as the release does). NON-PRIVATE: analyst view only."""
    if person_column is None:
        return fd.data_matrix.sum(axis=0), None
    codes, n_persons = person_codes(metadata_view(fd), person_column, fd.n)
    return person_average(fd.data_matrix, codes, n_persons).sum(axis=0), n_persons


def mean_sums(fd: FunctionalData, settings: MeanSettings) -> MeanSums:
    """The sufficient statistics of ``fd`` for ``settings`` (in memory): the per-record transform
    of the mechanism's basis (fdp_core/registry/mean_basis.py) summed over persons."""
    settings = settings.validated()
    raw_sum, raw_count = _raw_sum(fd, settings.person_column)
    common = dict(grid_points=fd.grid_points, unit_grid=fd.unit_grid, weights=fd.weights,
                  n_dropped=fd.report.n_dropped, raw_sum=raw_sum, n_curves=fd.n)
    return MeanSums(**common, raw_count=raw_count, **mean_mechanism(settings.mechanism).basis.summarise(fd, settings))


def plan_mean_release(fd: FunctionalData | MeanSums, settings: MeanSettings) -> MeanRelease:
    """Validate settings, clip, project and calibrate: everything but the random draw.

    ``fd`` is the curves, or their :class:`MeanSums` (streamed, or from a Dask reduction).
    The mechanism's registry entry plans the noise in its basis (kernel eigenbasis or Bernstein).

    Parameters
    ----------
    fd : FunctionalData or MeanSums
        The curves (NON-PRIVATE), or their sufficient statistics.
    settings : MeanSettings
        Every public choice; tau and the centre follow ``value_range`` when declared.

    Returns
    -------
    MeanRelease
        ``sample(rng, size)`` draws previews; ``n``, ``tau``, ``sigma``, ``sensitivity``,
        ``expected_sq_l2_error`` and ``l2_error_radius(0.95)`` are public (data-free given n).

    Examples
    --------
    >>> import numpy as np
    >>> from fdp_core.data.loading import from_arrays
    >>> t = np.linspace(0, 1, 40)
    >>> fd = from_arrays(t, 0.5 + 0.2 * np.sin(np.pi * t) * np.linspace(0.5, 1.5, 80)[:, None])
    >>> plan = plan_mean_release(fd, MeanSettings(value_range=(0, 1), epsilon=1.0))
    >>> plan.n, plan.tau, plan.sample(np.random.default_rng(0), 2).shape
    (80, 0.5, (2, 40))
    """
    settings = settings.validated()
    mechanism = mean_mechanism(settings.mechanism)
    sums = fd if isinstance(fd, MeanSums) else mean_sums(fd, settings)
    n = sums.n
    if sums.total is None or sums.total.size != mechanism.basis.statistic_size(settings, sums.grid_points.size):
        raise ParameterError("these sufficient statistics were taken for other settings: recompute them with the "
                             "release settings")
    noise = mechanism.basis.plan(mechanism, settings, sums.unit_grid, sums.weights, sums.total, n, sums.tau)
    return MeanRelease(settings=settings, grid_points=sums.grid_points, weights=sums.weights,
                       n_dropped=sums.n_dropped, raw_mean=sums.raw_sum / (sums.raw_count or sums.n_curves), n_curves=sums.n_curves,
                       n=n, offset=sums.offset, n_range_clipped=sums.n_range_clipped, n_clipped=sums.n_clipped,
                       n_unusable=sums.n_unusable, tau=sums.tau, data_dependent_flags=sums.data_dependent_flags,
                       synthesis=noise.synthesis, estimate_coefficients=noise.estimate_coefficients,
                       noise_scales=noise.noise_scales, noise=mechanism.noise, sensitivity=noise.sensitivity,
                       sigma=noise.sigma, expected_sq_l2_error=noise.expected_sq_l2_error, guarantee=noise.guarantee,
                       basis_tail=noise.basis_tail)


def basis_truncation(plan: MeanRelease) -> dict | None:
    """The accuracy statement's tail of a long grid's top-L basis (METHODS 27), public numbers only.

    The omitted eigenvalues sum to at most T = ``omitted_eigenvalue_sum`` (the kernel's trace
    minus the retained Rayleigh quotients; Ky Fan), so each is at most T. A penalised mechanism
    would have shrunk an omitted component by s(T) = T^eta / (T^eta + penalty) at most, and the
    clipped mean has L2 norm at most tau: leaving the tail out moves the estimate by at most
    s(T) tau. A truncating mechanism (first M <= L components) omits nothing it would have kept.
    This is a bias, not noise: it is not in the expected squared L2 error.
    """
    tail = plan.basis_tail
    if tail is None:
        return None
    s = plan.settings
    penalty = mean_mechanism(s.mechanism).penalty
    T = float(tail["omitted_eigenvalue_sum"])
    shrink = 0.0 if penalty is None else float(shrinkage(np.array([T]), s.eta, getattr(s, penalty))[0])
    return {**tail, "omitted_share_of_trace": T / tail["kernel_trace"],
            "omitted_component_shrinkage_max": shrink, "truncation_bias_l2_max": shrink * float(plan.tau)}


def release_record(plan: MeanRelease, values: np.ndarray, *, seed: int | None = None) -> dict:
    """The publishable record of one sanitized mean: public inputs and the noise law only.

    Never the data, the estimate or any count computed from the data (curves clipped or
    dropped, curves per person): those are in :func:`analyst_view`. ``n`` is the number of
    persons, a declared public input (``n_policy``).
    """
    s = plan.settings
    record = {
        "release": "mean",
        "mechanism": s.mechanism,
        "kernel": s.kernel,
        "rho": s.rho,
        "nu": s.nu,
        "eta": s.eta,
        "phi": s.phi,
        "epsilon": s.epsilon,
        "delta": plan.delta,
        "tau": plan.tau,
        "bound": s.bound,
        "calibration": s.calibration if plan.family.uses_delta else None,
        "n": plan.n,
        "m": plan.m,
        **s.bounds.describe(),
        "sensitivity": plan.sensitivity,
        "sigma": plan.sigma,
        "expected_sq_l2_error": plan.expected_sq_l2_error,
        "l2_error_radius_95": plan.l2_error_radius(0.95),
        "post_processing": list(mean_steps(s)),  # public settings only (fdp_core/releases/postprocess.py)
        "data_dependent_flags": list(plan.data_dependent_flags),
        "differentially_private": not plan.data_dependent_flags,
        "guarantee": plan.guarantee.record(),
        **randomness_fields(seed),
        "settings": asdict(s),
    }
    record.update(mean_mechanism(s.mechanism).record_fields(s, plan))
    truncation = basis_truncation(plan)
    if truncation is not None:
        record["basis_truncation"] = truncation
    assert values.shape == (plan.m,)
    return record


def analyst_view(plan: MeanRelease) -> dict:
    """What the analyst may see but must not publish: counts and errors computed from the data."""
    bias = plan.bias()
    noise_sd = math.sqrt(plan.expected_sq_l2_error)
    view = {
        "n_curves": plan.n_curves,
        "n_persons": plan.n,
        "n_dropped": plan.n_dropped,
        "n_persons_without_usable_curve": plan.n_unusable,
        "n_clipped": plan.n_clipped,
        "n_clipped_meaning": mean_mechanism(plan.settings.mechanism).basis.n_clipped_meaning,
        "n_range_clipped": plan.n_range_clipped,
        "bias_l2": bias,
        "bias_sup": plan.pointwise_bias(),
        "noise_rms_l2": noise_sd,
        "noise_l2_radius_95": plan.l2_error_radius(0.95),
        "total_rms_error_l2": plan.total_error(),
        "accuracy": accuracy_sentence(plan),
    }
    return view


def accuracy_sentence(plan: MeanRelease) -> str:
    """Plain words: noise, bias (against the raw mean of the curves) and their total."""
    radius = plan.l2_error_radius(0.95)
    bias = plan.bias()
    text = (f"The noise moves the release by less than {radius:.3g} (L2, 95% of the time) around the private "
            f"method's own target.")
    if bias is not None:
        text += (f" That target itself differs from the plain average of the raw curves by {bias:.3g} in L2 "
                 f"(by up to {plan.pointwise_bias():.3g} at a single point) through smoothing, clipping and "
                 f"centring, so the release is typically {plan.total_error():.3g} away from that average "
                 "(root mean square of both).")
    truncation = basis_truncation(plan)
    if truncation is not None:
        text += tail_sentence(truncation, f"uses the kernel's top {truncation['components']} eigenfunctions", "it",
                              truncation["truncation_bias_l2_max"], "L2")
    return text
