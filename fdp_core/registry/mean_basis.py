"""The basis a mean mechanism releases in: what Bernstein's registry entry carries differently.

Every mean mechanism releases sum_l (c_l + noise_l) b_l(t). The kernel mechanisms (Gaussian,
ICLP, FRL, truncated Gaussian) take b_l = the kernel's eigenfunctions on the data grid and read
the curves centred and clipped to the tau ball; Bernstein takes b_v = the Bernstein polynomials
and reads the values clipped to its public [lo, hi], at the lattice v / K (METHODS.md 3). A
:class:`MeanBasis` holds everything that differs (the per-record transform that the sums take,
the plan of the noise, the words the record, the pages and the commit use), so that
``fdp_core/releases/mean.py`` and the pages plan and describe every mechanism through its entry,
with no flag to branch on. Modules whose method only exists in the kernel eigenbasis (the
band's smoother, the audits' worst-case pairs, the streamed accumulator) ask :attr:`MeanBasis.kernel`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from ..data.loading import DATA_DEPENDENT_TAU
from ..data.preprocess import data_tau, prepare_curves
from ..kernels import eigenbasis
from ..mechanisms.coefficient_noise import CoefficientNoise
from ..mechanisms.guarantee import Guarantee
from ..params import check_l2_clip
from ..releases.estimators import lattice_interpolation_matrix


@dataclass(frozen=True)
class NoisePlan:
    """What a mechanism adds to the mean's coefficients, in its basis (the registry's plan)."""

    estimate_coefficients: np.ndarray  # NON-PRIVATE: the smoothed estimate's coefficients
    noise_scales: np.ndarray  # sd (gaussian) or Laplace scale b_l, per coefficient
    n_components: int  # how many basis functions the release uses (synthesis columns)
    sensitivity: float
    sigma: float | None
    guarantee: Guarantee
    synthesis: np.ndarray | None = None  # (m, n_components): the basis on the grid (set by MeanBasis.plan)
    expected_sq_l2_error: float | None = None  # closed form (set by MeanBasis.plan)
    # A long grid's top-L basis (METHODS 27): {grid_points, components, omitted_eigenvalue_sum, kernel_trace},
    # all public; None when the basis is complete.
    basis_tail: dict | None = None

    @classmethod
    def of(cls, noise: CoefficientNoise, n_components: int, **basis_fields) -> "NoisePlan":
        """The registry's plan from a mechanism's typed noise and the basis functions the release uses."""
        return cls(noise.estimate_coefficients, noise.noise_scales, n_components, noise.sensitivity, noise.sigma,
                   noise.guarantee, **basis_fields)


def resolve_tau(fd, settings) -> tuple[float, tuple]:
    """The norm bound to clip at, with the data-dependent flag when it was read off the data.

    Explicit tau first; else the one the public value range implies ((hi - lo)/2). Read off
    the data, it is the largest norm the clip actually sees: after the range clip and centring.
    """
    if settings.tau_from_data:
        return data_tau(fd, settings.bounds), (DATA_DEPENDENT_TAU,)
    if settings.tau is None:
        return float(settings.bounds.default_tau(fd.grid_points)), ()
    return float(settings.tau), ()


# --------------------------------------------------------------------------- kernel eigenbasis

def _kernel_clip(settings) -> None:
    """The L2 clip needs its public tau (or the value range's, or the data's, flagged)."""
    check_l2_clip(settings.tau, settings.value_range, settings.tau_from_data)


def _kernel_sums(fd, settings) -> dict:
    """Range clip, centre, L2 clip at tau, average per person (fdp_core.data.preprocess)."""
    tau, flags = resolve_tau(fd, settings)
    prepared = prepare_curves(fd, settings.bounds, tau)
    return dict(n=prepared.n, offset=prepared.centre, n_range_clipped=prepared.n_range_clipped,
                n_clipped=prepared.n_norm_clipped, tau=tau, total=prepared.values.sum(axis=0),
                data_dependent_flags=flags, n_unusable=prepared.n_unusable)


def _kernel_plan(entry, settings, unit_grid, weights, total, n, tau):
    """Project the clipped mean on the kernel's eigenfunctions; the entry's own noise plan."""
    basis = eigenbasis(settings.kernel, settings.rho, unit_grid, weights, nu=settings.nu)
    noise = entry.plan_noise(settings, basis.eigenvalues, basis.n_components, basis.coefficients(total / n), tau, n)
    return replace(noise, synthesis=basis.eigenfunctions[:, :noise.n_components],
                   expected_sq_l2_error=entry.expected_sq_l2_error(noise.noise_scales), basis_tail=basis.tail())


def _kernel_range(settings) -> tuple | None:
    if settings.value_range is None:
        return None
    lo, hi = settings.value_range
    return float(lo), float(hi)


def _kernel_clip_summary(plan, settings, unit: str) -> str:
    g = plan.guarantee
    kept = (f"{g.details['n_active']} of {g.details['n_components']} components active (the rest released as exact "
            f"zeros)" if "n_active" in g.details else f"{plan.synthesis.shape[1]} basis functions")
    return (f"n = {plan.n} {unit} (after {plan.n_dropped} curves dropped), {plan.n_clipped} curves clipped at "
            f"tau = {plan.tau:.4g}; {kept}.")


def _kernel_settings_summary(entry, s) -> list:
    parts = [f"kernel {s.kernel}", f"rho = {s.rho:g}", "tau from the data" if s.tau_from_data else f"tau = {s.tau:g}",
             f"{s.bound} bound"]
    # The mechanism's own settings, as its registry entry lists them.
    return parts + [f"{s.calibration} calibration" if name == "calibration" else f"{name} = {getattr(s, name):.3g}"
                    for name in entry.fields if name != "delta"]


# --------------------------------------------------------------------------- Bernstein lattice

def _lattice_clip(settings) -> None:
    """Nothing beyond the entry's own check of K and [lo, hi] (registry/mean.py): tau plays no role."""


def _lattice_sums(fd, s) -> dict:
    """Bernstein: clip values pointwise to its [lo, hi] (then the declared range), average per
    person (lattice values are linear in the clipped curve, so this averages lattice values),
    no centring and no L2 clip: its sensitivity (K + 1)(hi - lo)/n needs values in [lo, hi] only."""
    K = int(s.K)
    lo, hi = (float(v) for v in s.bernstein_range)
    bounds = replace(s.bounds, value_range=None, reference=None)
    clipped = np.clip(fd.data_matrix, lo, hi)
    n_outside = int(np.sum(np.any(clipped != fd.data_matrix, axis=1)))
    if s.value_range is not None:
        clipped = np.clip(clipped, *s.value_range)
    prepared = prepare_curves(replace(fd, data_matrix=clipped), bounds, None)  # no centring: values stay in units
    # Persons fixed by n_public but absent from the data count at lo: pad so the sum / n is kept.
    # The clip again makes every computed person row lie in [lo, hi] whatever the rounding.
    rows = np.clip(prepared.values, lo, hi)
    if prepared.n > rows.shape[0]:
        rows = np.vstack([rows, np.full((prepared.n - rows.shape[0], fd.m), lo)])
    lattice = rows @ lattice_interpolation_matrix(fd.unit_grid, K)
    return dict(n=prepared.n, offset=np.zeros(fd.m), n_range_clipped=n_outside, n_clipped=n_outside,
                total=np.add.reduce(lattice, axis=0), n_unusable=prepared.n_unusable)


def _lattice_plan(entry, s, unit_grid, weights, total, n, tau):
    """Laplace noise on the K + 1 lattice means; the Bernstein polynomials synthesise the curve."""
    from ..mechanisms.bernstein import bernstein_expected_sq_l2_error, bernstein_mean_noise  # lazy: Bernstein only

    K = int(s.K)
    lo, hi = (float(v) for v in s.bernstein_range)
    noise = bernstein_mean_noise(None, unit_grid, weights, K=K, lo=lo, hi=hi, n=n, epsilon=s.epsilon,
                                 lattice_means=total / n)
    return NoisePlan.of(noise, K + 1, synthesis=noise.synthesis,
                        expected_sq_l2_error=bernstein_expected_sq_l2_error(K, float(noise.noise_scales[0])))


def _lattice_range(settings) -> tuple | None:
    lo, hi = settings.bernstein_range
    if lo is not None and hi is not None:
        return float(lo), float(hi)
    return _kernel_range(settings)


def _lattice_clip_summary(plan, settings, unit: str) -> str:
    return (f"n = {plan.n} (after {plan.n_dropped} curves dropped); {plan.n_clipped} have values outside "
            f"[{settings.lo:g}, {settings.hi:g}] and are clipped; lattice of {settings.K + 1} points.")


def _lattice_settings_summary(entry, s) -> list:
    lo, hi = s.bernstein_range
    return [f"K = {s.K}", f"values clipped to [{lo:g}, {hi:g}]"]


# --------------------------------------------------------------------------- the two bases

@dataclass(frozen=True)
class MeanBasis:
    """How a mean mechanism reads the curves, plans its noise and describes its coefficients."""

    name: str
    kernel: bool  # the kernel's eigenbasis: reads kernel, rho and tau (curves centred, clipped to the tau ball)
    validate_clip: Callable  # validate_clip(settings): ParameterError when the per-record clip lacks its bound
    summarise: Callable  # summarise(fd, settings) -> the MeanSums fields the data gives (n, offset, counts, total)
    statistic_size: Callable  # statistic_size(settings, m) -> size of the summed statistic (grid or lattice)
    # plan(entry, settings, unit_grid, weights, total, n, tau) -> NoisePlan with synthesis and expected error
    plan: Callable
    public_range: Callable  # public_range(settings) -> the (lo, hi) the release is projected onto, or None
    n_clipped_meaning: str  # analyst view
    synthesis_note: str  # how the committed coefficients become the curve (commit record)
    index: Callable  # index(size) -> the coefficient table's index column(s), by name
    scale_symbol: str  # the pages' name of a Laplace noise scale
    coefficient_word: str  # what the noisy coefficients are, in the pages' words
    clip_summary: Callable  # clip_summary(plan, settings, unit) -> the Mean page's line on n and clipping
    settings_summary: Callable  # settings_summary(entry, settings) -> the Release page's parts after epsilon, delta


KERNEL_EIGENBASIS = MeanBasis(
    "kernel eigenbasis", True, _kernel_clip, _kernel_sums, lambda s, m: m, _kernel_plan, _kernel_range,
    n_clipped_meaning="curves shrunk by the L2 clip at tau (after the range clip and centring)",
    synthesis_note="curve(t) = c(t) + sum_l value_l b_l(t) with b_l the eigenfunctions of the kernel on the data "
                   "grid and c the public centre (0 without a declared value range)",
    index=lambda size: {"index": np.arange(1, size + 1)}, scale_symbol="b_1", coefficient_word="coefficients",
    clip_summary=_kernel_clip_summary, settings_summary=_kernel_settings_summary)

BERNSTEIN_LATTICE = MeanBasis(
    "Bernstein lattice", False, _lattice_clip, _lattice_sums, lambda s, m: int(s.K) + 1, _lattice_plan, _lattice_range,
    n_clipped_meaning="curves with a value outside [lo, hi] (clipped)",
    synthesis_note="curve(t) = sum_v value_v C(K, v) t^v (1 - t)^(K - v) on the grid rescaled to [0, 1]",
    index=lambda size: {"lattice_point": np.arange(size) / (size - 1)}, scale_symbol="lambda", coefficient_word="lattice values",
    clip_summary=_lattice_clip_summary, settings_summary=_lattice_settings_summary)
