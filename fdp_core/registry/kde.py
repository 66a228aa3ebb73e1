"""The density mechanisms, one registry entry each (METHODS.md 4).

An entry is everything fdp needs to know about a density mechanism without branching on its
name: its label and privacy type, the :class:`~fdp_core.releases.kde.KdeSettings` fields it reads and
the refusals they need, how it plans a release (it calls the mechanism's function in
``fdp_core/mechanisms/``), the bound labels of its guarantee, which sufficient statistic a
chunk contributes when streaming, the pieces of an exact discrete commit (coefficients,
noise scales, float-error bound, post-processing) and how the Density page shows it.
``kde.plan_kde_release``, ``commit.prepare_kde_commit``/``commit_kde``, ``stream.kde_mode``
and ``pages/density.py`` read the entry.

The names "gaussian" and "iclp" are CLI values (``--mechanism``): never rename them.

>>> kde_mechanism("iclp").privacy
'pure epsilon-DP (delta = 0)'
>>> kde_mechanism("laplace")
Traceback (most recent call last):
...
fdp_core.errors.ParameterError: mechanism must be one of gaussian, iclp; got 'laplace'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import ParameterError
from ..mechanisms.calibration import CALIBRATIONS
from ..mechanisms.families import GAUSSIAN, NoiseFamily, noise_family
from ..mechanisms.hall_kde import hall_float_error_bound, hall_kde
from ..mechanisms.iclp_kde import ICLP_KDE_PRIVACY, iclp_float_error_bound, iclp_kde
from ..params import check_choice, check_eta
from ..sensitivity import KDE_BOUNDS


@dataclass(frozen=True)
class CommitPieces:
    """What an exact discrete commit releases: coefficients (NON-PRIVATE) with independent noise scales."""

    coefficients: np.ndarray  # shaped like scales; ``release.noise_law.synthesize`` maps them to the grid
    scales: np.ndarray  # sd (Gaussian) or Laplace scale b per coefficient
    float_error_bound: float  # worst case of the float error of coefficients / scales (commit.py)


@dataclass(frozen=True)
class NoiseTable:
    """The Density page's noise-scale table of one release: a title, rows and a caption."""

    title: str
    rows: list
    caption: str
    help: str | None = None


@dataclass(frozen=True)
class KdeMechanism:
    """One density mechanism: metadata, its refusals, its plan, its commit and its display."""

    name: str
    label: str
    noise: str  # noise family: "gaussian" | "laplace"
    privacy: str  # the guarantee's privacy statement (the mechanism's Guarantee states the same)
    fields: tuple  # the KdeSettings fields it reads beyond mechanism, box, epsilon, grid_size, bound
    validate: Callable  # validate(settings): data-free refusals beyond the mechanism function's own checks
    plan_noise: Callable  # plan_noise(points or KdeSums, settings) -> KdeNoisePlan
    bound_labels: dict  # the guarantee's bound_label per KDE bound
    stream_mode: Callable  # stream_mode(settings) -> "counts" | "bumps" | "points": what a chunk adds
    commit_pieces: Callable  # commit_pieces(release) -> CommitPieces
    post_processing: str  # how the commit maps released coefficients to the density
    # How the Density page shows it (plain words; the formulas are in docs/METHODS.md).
    short: str = ""  # titles and table rows
    menu: str = ""  # the mechanism selector
    color: str = "#1f77b4"
    page_key: str = ""  # its page widgets: density_<page_key>_bound
    bound_control: str = ""  # the bound selector's label
    bound_choices: dict | None = None  # bound -> its name on the selector
    bound_names: dict | None = None  # bound -> its name in the sensitivity table
    bound_help: str = ""
    preview_salt: int = 0  # the page's preview draws use g.rng(preview_salt)
    noise_scale_key: str = ""  # key in guarantee.details of the number the noise is proportional to
    noise_scale_name: str = ""
    noise_shape_keys: tuple = ()  # keys in guarantee.details that fix the noise law up to its scale
    noise_table: Callable | None = None  # noise_table(release, plan_at_bound) -> NoiseTable
    error_hint: Callable = lambda settings: ""  # a fix to suggest when planning fails
    settings_caption: Callable = lambda settings, d: ""  # what the page says about the settings it uses

    @property
    def family(self) -> NoiseFamily:
        return noise_family(self.noise)

    @property
    def uses_delta(self) -> bool:
        return self.family.uses_delta

    def noise_scale(self, release) -> float:
        """The scale the release's noise is proportional to (sigma, or the largest Laplace scale)."""
        return release.guarantee.details[self.noise_scale_key]

    def noise_scale_text(self, release) -> str:
        return f"{self.noise_scale_name} = {self.noise_scale(release):.4g}"

    def noise_shape(self, release) -> tuple:
        """Everything the noise depends on except its overall scale (the page caches radii by it)."""
        details = release.guarantee.details
        return (self.name, release.box, release.grid_shape, *(details[k] for k in self.noise_shape_keys))


# --------------------------------------------------------------------------- Hall et al. (Gaussian)

def _plan_gaussian(points, s):
    return hall_kde(points, s.box, epsilon=s.epsilon, delta=s.delta, bandwidth=s.bandwidth, grid_size=s.grid_size,
                    bound=s.bound, calibration=s.calibration, data_dependent_bandwidth=s.data_dependent_bandwidth)


def _stream_gaussian(s) -> str:
    # A fixed bandwidth makes the bump sums additive over chunks; a rule needs n or the data.
    return "bumps" if s.bandwidth is not None and not s.data_dependent_bandwidth else "points"


def _commit_gaussian(release) -> CommitPieces:
    # Release c = U^T f plus independent Gaussian noise of sd sigma sqrt(lambda~_j): its whitened
    # shift is the Mahalanobis norm of the grid difference, at most the RKHS sensitivity.
    noise = release.noise_law
    scales = noise.scales
    return CommitPieces(noise.to_coefficients(release.density), scales,
                        hall_float_error_bound(release.n, release.bandwidth, scales))


def _gaussian_noise_table(release, plan_at) -> NoiseTable:
    gq = release.guarantee
    sigmas = gq.details["sigma_table"]
    rows = [{"bound": b, **{c: "refused (epsilon > 1)" if sigmas[f"{b}/{c}"] is None else sigmas[f"{b}/{c}"]
                            for c in CALIBRATIONS}} for b in KDE_BOUNDS]
    caption = (f"In use: {gq.details['sensitivity_bound']} / {gq.details['calibration']}, sigma = "
               f"{release.sigma:.4g}, privacy curve mu = {gq.gdp_mu:.3g}; h = {release.bandwidth:.4g}, box diameter "
               f"D = {gq.details['box_diameter']:.4g}. Noise: {gq.noise}.")
    return NoiseTable("**Noise scale sigma: both bounds x both calibrations**", rows, caption,
                      help="mu = sensitivity / sigma: the one number of the Gaussian mechanism's privacy curve "
                           "(Gaussian differential privacy); it composes as sqrt(mu_1^2 + mu_2^2 + ...). Smaller = "
                           "more private.")


# --------------------------------------------------------------------------- ICLP-KDE

def _validate_iclp(s) -> None:
    if s.bandwidth is not None or s.data_dependent_bandwidth:
        raise ParameterError("the bandwidth applies to the Gaussian (Hall) KDE; ICLP-KDE's smoothing is set by "
                             "rho and eta")
    check_eta(s.eta, minimum=1.0, strict=True)


def _plan_iclp(points, s):
    return iclp_kde(points, s.box, epsilon=s.epsilon, kernel=s.kernel, rho=s.rho, eta=s.eta, nu=s.nu,
                    grid_size=s.grid_size, bound=s.bound)


def _commit_iclp(release) -> CommitPieces:
    # The eigen-coefficients (unit coordinates) with their Laplace scales b_l: scaled sensitivity epsilon.
    return CommitPieces(release.coefficients, release.laplace_scales,
                        iclp_float_error_bound(release.iclp_axis, release.n, release.laplace_scales))


ICLP_BOUND_NAMES = {"exact": "exact (grid-node pairs, attained)", "paper": "cheaper (triangle bound)"}


def _iclp_noise_table(release, plan_at) -> NoiseTable:
    gq = release.guarantee.details
    plans = {b: release if b == gq["sensitivity_bound"] else plan_at(b) for b in KDE_BOUNDS}
    rows = [{"bound": ICLP_BOUND_NAMES[b], "largest b_l": float(p.laplace_scales.max()),
             "smallest b_l": float(p.laplace_scales.min()), "expected sq. L2 error": p.expected_sq_l2_error}
            for b, p in plans.items()]
    caption = (f"{gq['laplace_scale_formula']}; {gq['n_components']} coefficients, in unit coordinates "
               f"(density divided by the box volume {gq['box_volume']:.4g}). Laplace scale b: variance 2 b^2.")
    return NoiseTable("**Laplace noise scales: both bounds**", rows, caption)


def _iclp_hint(s) -> str:
    return " Raise eta in the sidebar (Smoothing): ICLP-KDE needs eta > 1." if s.eta <= 1 else ""


def _iclp_caption(s, d: int) -> str:
    nu_text = f", nu = {s.nu:g}" if s.nu is not None else ""
    product = (" In 2-d the noise kernel is the product of two 1-d kernels; for Matern and exponential kernels "
               "that is not the isotropic kernel of the ICLP paper." if d == 2 and s.kernel != "gaussian" else "")
    return (f"ICLP-KDE uses the sidebar's kernel ({s.kernel}, rho = {s.rho:g}{nu_text}) on the box rescaled to "
            f"[0, 1] per axis, and the estimation kernel K^eta with eta = {s.eta:g} (must be > 1). Observations "
            f"are snapped to the nearest grid node; delta = 0.{product}")


REGISTRY: dict[str, KdeMechanism] = {m.name: m for m in (
    KdeMechanism(
        "gaussian", "Gaussian-process KDE (Hall, Rinaldo & Wasserman 2013), (epsilon, delta)-DP", "gaussian",
        GAUSSIAN.privacy, fields=("delta", "bandwidth", "data_dependent_bandwidth", "calibration"),
        validate=lambda s: None, plan_noise=_plan_gaussian,
        bound_labels={"exact": "box-exact: sqrt(2 (1 - exp(-D^2/(2 h^2)))) / (n (2 pi h^2)^(d/2)), attained "
                               "by opposite corners",
                      "paper": "paper (Hall et al. 2013): sqrt(2) / (n (2 pi h^2)^(d/2))"},
        stream_mode=_stream_gaussian, commit_pieces=_commit_gaussian,
        post_processing="density = U c~ (U: eigenvectors of the Gaussian Gram matrix on the grid; U1 C~ U2^T in 2-d)",
        short="Hall GP-KDE", menu="Hall GP-KDE, (epsilon, delta)-DP", color="#1f77b4", page_key="hall",
        bound_control="Hall bound", bound_choices={"exact": "exact", "paper": "paper"},
        bound_names={"exact": "exact (box diameter, attained)", "paper": "paper (Hall et al., sqrt 2)"},
        bound_help="exact: the largest RKHS distance of two observations in the box (opposite corners, attained). "
                   "paper: Hall et al.'s sqrt 2 bound, never smaller.",
        preview_salt=21, noise_scale_key="sigma", noise_scale_name="sigma", noise_shape_keys=("bandwidth",),
        noise_table=_gaussian_noise_table),
    KdeMechanism(
        "iclp", "ICLP-KDE (Lin & Reimherr), pure epsilon-DP", "laplace", ICLP_KDE_PRIVACY,
        fields=("kernel", "rho", "nu", "eta"), validate=_validate_iclp, plan_noise=_plan_iclp,
        bound_labels={"exact": "exact: (1/n) max over grid-node pairs of sum_l lambda_l^(eta-1/2) "
                               "|phi_l(x)/c(x) - phi_l(x')/c(x')|, attained",
                      "paper": "triangle bound: (2/n) max over single grid nodes of sum_l lambda_l^(eta-1/2) "
                               "|phi_l(x)/c(x)|"},
        stream_mode=lambda s: "counts", commit_pieces=_commit_iclp,
        post_processing="density = sum_l value_l phi_l(x) / box volume (unit-coordinate eigenfunctions)",
        short="ICLP-KDE", menu="ICLP-KDE, pure epsilon-DP", color="#ff7f0e", page_key="iclp",
        bound_control="ICLP bound", bound_choices={"exact": "exact", "paper": "cheaper"},
        bound_names=ICLP_BOUND_NAMES,
        bound_help="exact: the largest ||.||_{1,C} distance of two grid nodes' bumps (attained). cheaper: twice "
                   "the largest single bump (triangle inequality), never smaller.",
        preview_salt=22, noise_scale_key="laplace_scale_max", noise_scale_name="Laplace b_1",
        noise_shape_keys=("kernel", "rho", "nu"), noise_table=_iclp_noise_table, error_hint=_iclp_hint,
        settings_caption=_iclp_caption),
)}


def kde_mechanism(name: str) -> KdeMechanism:
    """The registry entry of a density mechanism (ParameterError naming the choices otherwise)."""
    return REGISTRY[check_choice("mechanism", name, tuple(REGISTRY))]
