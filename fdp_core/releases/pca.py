"""Private functional principal components: the exponential mechanism (METHODS.md section 5).

Pipeline: curves -> coefficients in a basis b_1..b_p orthonormal in the weighted inner
product <f, g>_w = sum_j w_j f(t_j) g(t_j) -> optional centring by a *released* mean ->
divide by tau and clip the final rows to norm <= 1 -> draw V (p x k, orthonormal) with
density proportional to etr(V^T A V),

    A = (eps/2) X^T X - (gamma/2) Cinv,    Cinv = diag(1/c_j),

with respect to the uniform measure (Chaudhuri, Sarwate & Sinha 2013; Awan, Kenney,
Reimherr & Slavkovic 2019 for the functional version). Why this is eps-DP: the utility
u(V) = ||X V||_F^2 = sum_i ||V^T x_i||^2 has every term in [0, 1] once the rows are
clipped to the unit ball, so replacing one curve changes it by at most 1 (sensitivity 1)
and exp(eps u / 2) is the exponential mechanism. The base term -(gamma/2) tr(V^T Cinv V)
is fixed and data-independent (c_j = kernel eigenvalues, or j^-3 for the Fourier basis),
so it changes the output distribution but not the privacy guarantee.

The private components are the functions sum_j V_jl b_j on the grid. Everything else in
:class:`PrivatePCAResult` that is computed from the raw data (the non-private FPCA, the
scree, the variance ratio and the subspace distance) is the analyst's view: it is listed
in ``NOT_PRIVATE`` and must never be published.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from functools import lru_cache

import numpy as np

from ..data.loading import CLIP_COUNT_RTOL, DATA_DEPENDENT_TAU, FunctionalData, unit_interval
from ..errors import DataError, ParameterError
from .. import limits
from ..kernels import KERNEL_NAMES, eigenbasis, trapezoid_weights
from ..mechanisms.bingham import exponential_mechanism_from_gram, single_blas_thread
from ..mechanisms.guarantee import Guarantee
from ..params import (check_choice, check_epsilon, check_integer, check_l2_clip, check_nonnegative, check_positive,
                      check_tau, default_l2_clip, short_repr)
from ..data.preprocess import PublicBounds, bounds_of, clip_values, declared_n, file_persons, person_row_weights
from ..registry.pca import REGISTRY as SAMPLER_REGISTRY
from ..registry.pca import default_sampler, pca_sampler, samplers_reading
from ..publish.release import randomness_fields
from ..settings_fields import documented_settings
from ..settings_fields import (EPSILON, KERNEL, N_PUBLIC, NU, PERSON_COLUMN, REFERENCE, RHO, TAU, TAU_FROM_DATA,
                              VALUE_RANGE, Control, number_list, option)

PCA_BASES = ("kernel", "fourier")
PCA_SAMPLERS = tuple(SAMPLER_REGISTRY)  # the CLI's --sampler choices (fdp_core/registry/pca.py)
PCA_CENTRING = ("none", "released-mean", "sample-mean", "public")  # public: c = (lo + hi)/2 or the reference
MAX_COMPONENTS = limits.MAX_PCA_COMPONENTS
TRACE_FRACTION = 0.99  # kernel basis: smallest p whose eigenvalues explain this share of the trace
FOURIER_DEFAULT_P = 40
NOT_PRIVATE = ("nonprivate_components", "nonprivate_coefficients", "scree", "explained_variance_ratio",
               "variance_ratio", "subspace_distance")
SAMPLE_MEAN_CENTRING = ("centred by the raw sample mean: the release is not differentially private "
                        "(centre by a released mean, whose budget counts, or not at all)")
FLOATING_POINT_NOTE = ("the Bingham sampler uses floating-point arithmetic (numpy Generator); no hardened "
                       "implementation of it exists, so the guarantee is idealised real-arithmetic DP")


# --------------------------------------------------------------------------- validation helpers

def check_gamma(value) -> float:
    """Strength gamma >= 0 of the base measure (0 = uniform on the Stiefel manifold)."""
    return check_nonnegative("gamma (base-measure strength)", value)


# --------------------------------------------------------------------------- settings

def _zero_is_auto(thin) -> int | None:
    """The Components page's thinning box: 0 means automatic (None)."""
    return int(thin) or None


@documented_settings
@dataclass(frozen=True)
class PcaSettings:
    """Every public choice behind a private PCA release (all of it goes into the provenance).

    ``p = None`` picks the dimension automatically: for the kernel basis the smallest p
    whose eigenvalues explain >= 99% of the kernel's trace, for the Fourier basis
    min(40, (m - 1) // 2); either is raised to k + 1 if needed. ``sampler = None`` means
    "exact" for k = 1 and "deflation" for k > 1. ``epsilon_split`` (deflation only) gives
    eps_1..eps_k, which must add up to epsilon; the default is an equal split.

    Page controls (``controls``): the Components page ("components") and the Release page's
    components commit ("release"). The Components page's p (restarted from the library's rule
    for every grid), epsilon split (a radio and one weight per component) and burn-in (a share
    of the sweeps) are not one widget's value, so the page composes those fields itself.

    Examples
    --------
    >>> s = PcaSettings(k=2, value_range=(0, 1))
    >>> s.centring, s.sampler_name   # centred at the range's midpoint, as on the command line
    ('public', 'deflation')
    """

    k: int = option(1, help="number of components, 1..5",
                    controls=(Control("components", "pca_k"), Control("release", "rel_pca_k")))
    basis: str = option("kernel", choices=PCA_BASES,
                        help="kernel eigenfunctions (default) or a Fourier basis, both orthonormal in the weighted L2 "
                             "inner product of the grid",
                        controls=(Control("components", "pca_basis"), Control("release", "rel_pca_basis")))
    p: int | None = option(None, help="basis dimension p > k (default: 99%% of the kernel trace; Fourier "
                                      "min(40, (m-1)//2))")
    kernel: str = option("matern52", KERNEL)
    rho: float = option(0.1, RHO)
    nu: float | None = option(None, NU)
    epsilon: float = option(1.0, EPSILON, required=True)
    gamma: float = option(1.0, help="strength gamma >= 0 of the public base measure exp(-(gamma/2) tr(V^T C^-1 V)); "
                                    "0 = uniform",
                          controls=(Control("components", "pca_gamma"), Control("release", "rel_pca_gamma")))
    # The widgets hold a choice that names the sampler once k is known (registry.pca.sampler_for):
    # the pages give this field.
    sampler: str | None = option(None, choices=PCA_SAMPLERS,
                                 help="; ".join(f"{name}: {s.label}" for name, s in SAMPLER_REGISTRY.items())
                                 + " (default: the first exact sampler that draws k components)",
                                 controls=(Control("components", "pca_sampler", default="exact"),
                                           Control("release", "rel_pca_sampler", default="deflation")))
    epsilon_split: tuple | None = option(None, parse=number_list("--epsilon-split"),
                                         help="deflation: per-component epsilons, comma separated, adding up to "
                                              "--epsilon (default: equal split)")
    tau: float | None = option(None, TAU, help="public L2 norm bound; coefficient rows (after centring) are clipped "
                                              "to it. Required without --value-range, which implies (HI - LO)/2")
    tau_from_data: bool = option(False, TAU_FROM_DATA,
                                 help="use the largest centred coefficient row norm (data-dependent: the release is "
                                      "then NOT differentially private)")
    # The command line derives the default (public with a value range, else none) and spells a
    # released mean with --released-mean FILE.
    # None: "public" (the range's midpoint) when a value range is declared, else "none": the
    # command line's and the app's rule, decided in __post_init__ so Python agrees with both.
    centring: str | None = option(None, choices=("none", "public"), cli_default=None,
                           implied=lambda s: "public" if s.value_range is not None else "none",
                           spelled=(("released-mean", "--released-mean RELEASED_MEAN_CSV"),),
                           help="public: centre at (LO + HI)/2 or the --reference curve (no privacy cost; the default "
                                "with --value-range); none: no centring (the default otherwise)",
                           controls=(Control("components", "pca_centring", default="none"),))
    # The pages start from a chain short enough for a preview.
    gibbs_sweeps: int = option(20_000, help="sweeps of the Gibbs chain (--sampler gibbs)",
                               controls=(Control("components", "pca_sweeps", default=2000),
                                         Control("release", "rel_pca_sweeps", default=2000)))
    gibbs_burn_in: int | None = option(None, help="Gibbs sweeps discarded before states are kept")
    gibbs_thin: int | None = option(None, help="keep every thin-th Gibbs state after the burn-in",
                                    controls=(Control("components", "pca_thin", default=0, to_field=_zero_is_auto),))
    # Public inputs of the per-record transform (fdp_core.data.preprocess, METHODS.md 11-12).
    value_range: tuple | None = option(None, VALUE_RANGE)
    reference: tuple | None = option(None, REFERENCE)
    person_column: str | None = option(None, PERSON_COLUMN)
    n_public: int | None = option(None, N_PUBLIC)

    def __post_init__(self):
        # tau = None follows the declared range, as on the command line (params.default_l2_clip)
        object.__setattr__(self, "tau", default_l2_clip(self.tau, self.value_range, self.tau_from_data))
        if self.centring is None:  # one rule for Python, the command line and the app (the Option's implied)
            object.__setattr__(self, "centring", "public" if self.value_range is not None else "none")

    @property
    def bounds(self) -> PublicBounds:
        return bounds_of(self)

    @property
    def sampler_name(self) -> str:
        return self.sampler if self.sampler is not None else default_sampler(self.k)

    def validated(self) -> "PcaSettings":
        """Check every field (the data-dependent checks k < p and n >= k come later)."""
        k = check_integer("k (number of components)", self.k, 1)
        if k > MAX_COMPONENTS:
            raise ParameterError(f"k (number of components) must be between 1 and {MAX_COMPONENTS}, got {k}")
        check_choice("basis", self.basis, PCA_BASES)
        if self.p is not None:
            check_integer("p (basis dimension)", self.p, 2)
        if self.basis == "kernel":
            check_choice("kernel", self.kernel, KERNEL_NAMES)
            check_positive("rho", self.rho)
        eps = check_epsilon(self.epsilon)
        check_gamma(self.gamma)
        sampler = pca_sampler(self.sampler_name)  # its own fields: fdp_core/registry/pca.py
        if not sampler.draws(k):
            raise ParameterError(sampler.max_k_message.format(k=k))
        if self.epsilon_split is not None and not sampler.splits_epsilon:
            raise ParameterError(f"epsilon_split applies only to the {', '.join(samplers_reading('epsilon_split'))} "
                                 "sampler")
        sampler.validate(self, k, eps)
        bounds = self.bounds
        check_l2_clip(self.tau, bounds.value_range, self.tau_from_data)
        check_choice("centring", self.centring, PCA_CENTRING)
        if self.centring == "public" and bounds.value_range is None:
            raise ParameterError("centring 'public' centres at (lo + hi)/2 or a reference curve: declare a public "
                                 "value range (--value-range)")
        return self

    def component_epsilons(self) -> tuple:
        """eps_1..eps_k actually spent per component (deflation) or (epsilon,) otherwise."""
        return pca_sampler(self.sampler_name).component_epsilons(self)


# --------------------------------------------------------------------------- bases

@dataclass(frozen=True)
class PcaBasis:
    """b_1..b_p on the grid, orthonormal in <.,.>_w, with the base-measure variances c_j."""

    name: str  # "kernel" | "fourier"
    functions: np.ndarray  # (m, p)
    prior_variances: np.ndarray  # (p,) c_j: Cinv = diag(1 / c_j)
    p_rule: str  # how p was chosen
    # A long grid's top-L kernel basis (METHODS 27): what lies outside the p functions, public numbers
    # only (basis_truncation); None for a grid decomposed in full and for the Fourier basis.
    truncation: dict | None = None

    @property
    def p(self) -> int:
        return int(self.functions.shape[1])


def _raw_fourier(t: np.ndarray, p: int) -> np.ndarray:
    """1, sqrt2 sin(2 pi t), sqrt2 cos(2 pi t), sqrt2 sin(4 pi t), ... (orthonormal in L2[0, 1])."""
    out = np.empty((t.size, p))
    out[:, 0] = 1.0
    for j in range(1, p):
        freq = 2.0 * math.pi * ((j + 1) // 2)
        out[:, j] = math.sqrt(2.0) * (np.sin(freq * t) if j % 2 == 1 else np.cos(freq * t))
    return out


def fourier_basis(grid, weights, p: int) -> np.ndarray:
    """Fourier basis with p functions, re-orthonormalised in <f, g>_w = sum_j w_j f_j g_j.

    On a non-uniform grid the raw Fourier vectors are not orthonormal under the
    quadrature inner product, and a curve of norm tau can then get a coefficient row
    longer than tau. Gram-Schmidt in the given order (B L^-T with G = B^T W B = L L^T)
    keeps span(b_1..b_j) equal to the span of the first j raw functions, so the base
    measure's ordering by frequency (c_j = j^-3) stays meaningful.
    """
    grid = np.asarray(grid, dtype=float)
    weights = np.asarray(weights, dtype=float)
    p = check_integer("p (basis dimension)", p, 1)
    m = grid.size
    if p > m - 1:
        raise ParameterError(f"a Fourier basis with p = {p} functions needs at least p + 1 = {p + 1} grid points "
                             f"(the grid has {m}); choose p <= {m - 1}")
    t = unit_interval(grid)
    raw = _raw_fourier(t, p)
    gram = raw.T @ (weights[:, None] * raw)
    cond = np.linalg.cond(gram)
    if not np.isfinite(cond) or cond > 1e8:
        raise ParameterError(f"a Fourier basis with p = {p} functions is numerically degenerate on this grid of "
                             f"{m} points (Gram condition number {cond:.2g}); choose a smaller p")
    chol = np.linalg.cholesky(gram)
    return np.linalg.solve(chol, raw.T).T


def pca_basis(settings: PcaSettings, grid, weights) -> PcaBasis:
    """The basis of ``settings`` on the (unit) grid, p resolved by the documented rule."""
    grid = np.asarray(grid, dtype=float)
    weights = np.asarray(weights, dtype=float)
    k = int(settings.k)
    if settings.basis == "kernel":
        eb = eigenbasis(settings.kernel, settings.rho, grid, weights, nu=settings.nu)
        lam = eb.eigenvalues
        # The whole trace (a long grid's top L leave out at most tail_trace of it; METHODS 27).
        total = float(np.sum(lam)) + eb.tail_trace
        if settings.p is None:
            share = np.cumsum(lam) / total
            p_trace = min(int(np.searchsorted(share, TRACE_FRACTION) + 1), lam.size)
            p = max(p_trace, k + 1)
            rule = (f"smallest p explaining >= {TRACE_FRACTION:.0%} of the kernel trace (p = {p_trace})"
                    + (f", raised to k + 1 = {p}" if p > p_trace else ""))
            if share[-1] < TRACE_FRACTION:
                rule += (f"; the {lam.size} eigenfunctions computed on this long grid explain "
                         f"{share[-1]:.2%} of it")
        else:
            p = int(settings.p)
            rule = "set by the user"
        if p > lam.size:
            raise ParameterError(f"p = {p} exceeds the {lam.size} numerically non-zero eigenvalues of the "
                                 f"{settings.kernel} kernel with rho = {settings.rho:g} on this grid; choose p <= "
                                 f"{lam.size} or a smaller rho")
        truncation = None
        if eb.truncated:
            outside = max(0.0, eb.trace - float(np.sum(lam[:p])))
            truncation = dict(grid_points=int(grid.size), components=int(lam.size), p=p,
                              omitted_eigenvalue_sum=eb.tail_trace, kernel_trace=eb.trace,
                              omitted_share_of_trace=eb.tail_trace / eb.trace,
                              outside_basis_share_of_trace=outside / eb.trace)
        return PcaBasis("kernel", np.asarray(eb.eigenfunctions[:, :p]), np.asarray(lam[:p]), rule, truncation)
    m = grid.size
    if settings.p is None:
        p = max(min(FOURIER_DEFAULT_P, (m - 1) // 2), k + 1)
        rule = f"default min({FOURIER_DEFAULT_P}, (m - 1) // 2)" + (", raised to k + 1" if p == k + 1 else "")
    else:
        p = int(settings.p)
        rule = "set by the user"
    return PcaBasis("fourier", _fourier_cached(grid.tobytes(), weights.tobytes(), p),
                    np.arange(1, p + 1, dtype=float) ** -3.0, rule)


@lru_cache(maxsize=32)
def _fourier_cached(grid_bytes, weights_bytes, p) -> np.ndarray:
    out = fourier_basis(np.frombuffer(grid_bytes), np.frombuffer(weights_bytes), p)
    out.setflags(write=False)
    return out


# --------------------------------------------------------------------------- mechanism pieces

def coefficient_matrix(values, basis_functions, weights, tau: float, centre=None) -> tuple[np.ndarray, int]:
    """X (n x p): rows <X_i - centre, b_j>_w / tau, each *final* row clipped to norm <= 1.

    Clipping after centring and scaling is what makes the utility's sensitivity 1,
    whatever the centre is. Returns (X, number of rows clipped).
    """
    tau = check_tau(tau)
    values = np.asarray(values, dtype=float)
    if centre is not None:
        values = values - np.asarray(centre, dtype=float)[None, :]
    X = values @ (np.asarray(weights, dtype=float)[:, None] * np.asarray(basis_functions, dtype=float)) / tau
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    over = norms > 1.0
    if np.any(over):
        # nextafter: rounding could otherwise leave a norm of 1 + 1e-16.
        X[over] *= np.nextafter(1.0 / norms[over], 0.0)[:, None]
    # Counted only beyond the tolerance: a row tying with tau (tau from the data) is not "clipped"
    # on one engine and unclipped on another because of summation order (data/loading.beyond_tau).
    return X, int(np.sum(norms > 1.0 + CLIP_COUNT_RTOL))


def exponential_mechanism_matrix(X: np.ndarray, epsilon: float, gamma: float, prior_variances) -> np.ndarray:
    """A = (eps/2) X^T X - (gamma/2) diag(1/c): density etr(V^T A V) is the mechanism.

    Needs rows of X in the unit ball (utility sensitivity 1); eps/2 is the exponential
    mechanism's factor for sensitivity 1.
    """
    X = np.asarray(X, dtype=float)
    if X.size and np.max(np.einsum("ij,ij->i", X, X)) > 1.0 + 1e-12:
        raise ParameterError("rows of the coefficient matrix must have norm <= 1 (clip them first)")
    return exponential_mechanism_from_gram(X.T @ X, epsilon, gamma, prior_variances)


def _canonical_signs(V: np.ndarray) -> np.ndarray:
    """Flip columns so each one's largest-magnitude entry is positive (data-free convention)."""
    idx = np.argmax(np.abs(V), axis=0)
    signs = np.sign(V[idx, np.arange(V.shape[1])])
    return V * np.where(signs == 0, 1.0, signs)


# --------------------------------------------------------------------------- the release

@dataclass(frozen=True)
class PrivatePCAResult:
    """A private PCA release with its guarantee, diagnostics and (separately) the analyst view.

    ``components`` (m, k) and ``coefficients`` (p, k) are the private output. The fields
    named in ``NOT_PRIVATE`` are computed from the raw data: analyst view, never publish.

    Built by :func:`private_pca`. ``components_skfda`` gives the components as rows (k, m), the
    orientation of scikit-learn and scikit-fda.

    Examples
    --------
    >>> import numpy as np
    >>> from fdp_core.data.loading import from_arrays
    >>> t = np.linspace(0, 1, 30)
    >>> X = 0.5 + 0.2 * np.random.default_rng(0).standard_normal((60, 1)) * np.sin(np.pi * t)
    >>> result = private_pca(from_arrays(t, X), PcaSettings(k=1, value_range=(0, 1)), np.random.default_rng(1))
    >>> result.components.shape, result.components_skfda.shape
    ((30, 1), (1, 30))
    """

    settings: PcaSettings
    grid_points: np.ndarray
    basis: PcaBasis = field(repr=False)
    coefficients: np.ndarray  # (p, k) private V
    components: np.ndarray  # (m, k) private components on the grid
    n: int
    n_clipped: int
    tau: float
    guarantee: Guarantee
    diagnostics: dict
    nonprivate_coefficients: np.ndarray = field(repr=False)  # NOT PRIVATE
    nonprivate_components: np.ndarray = field(repr=False)  # NOT PRIVATE
    scree: np.ndarray = field(repr=False)  # NOT PRIVATE: eigenvalues of X^T X / n, descending
    variance_ratio: float = field(repr=False)  # NOT PRIVATE
    subspace_distance: float = field(repr=False)  # NOT PRIVATE
    data_dependent_flags: tuple = ()
    not_private: tuple = NOT_PRIVATE
    n_curves: int = 0  # NOT PRIVATE with a person column (analyst view)
    n_range_clipped: int = 0  # NOT PRIVATE

    @property
    def k(self) -> int:
        return int(self.coefficients.shape[1])

    def __repr__(self) -> str:
        s = self.settings
        return short_repr("PrivatePCAResult", sampler=s.sampler_name, privacy=self.guarantee.privacy,
                          epsilon=float(s.epsilon), k=self.k, n=self.n, m=int(self.grid_points.size),
                          tau=float(self.tau))

    @property
    def components_skfda(self) -> np.ndarray:
        """The private components as rows, (k, m): scikit-fda's and scikit-learn's orientation."""
        return np.ascontiguousarray(self.components.T)

    @property
    def p(self) -> int:
        return self.basis.p

    @property
    def m(self) -> int:
        return int(self.grid_points.size)

    @property
    def explained_variance_ratio(self) -> np.ndarray:
        """Non-private scree as shares of the total (analyst view)."""
        total = float(np.sum(self.scree))
        return self.scree / total if total > 0 else np.zeros_like(self.scree)


def _guarantee(settings: PcaSettings, basis: PcaBasis) -> Guarantee:
    sampler = pca_sampler(settings.sampler_name)
    eps = float(settings.epsilon)
    per_component = settings.component_epsilons()
    base = ("kernel eigenvalues" if basis.name == "kernel" else "j^-3 (Fourier)")
    # The sensitivity is the utility's (rows on the unit ball): the exponential mechanism adds no
    # noise vector, so there is no noise norm and no alternative bound.
    return Guarantee(sampler.privacy, eps, 0.0, sensitivity=1.0, details={
        "mechanism": "exponential",
        "epsilon_per_component": list(per_component),
        "gamma": float(settings.gamma),
        "sampler": sampler.name,
        "sampler_label": sampler.label,
        "approximate": sampler.approximate,
        "zcdp_rho": eps**2 / 8.0,
        "utility": "||X V||_F^2 = sum_i ||V^T x_i||^2, rows x_i clipped to the unit ball",
        "density": "etr(V^T A V), A = (eps/2) X^T X - (gamma/2) diag(1/c_j)",
        "base_measure": f"exp(-(gamma/2) tr(V^T Cinv V)), Cinv = diag(1/c_j), c_j = {base}",
        "floating_point": FLOATING_POINT_NOTE,
        **sampler.guarantee_fields(per_component),
    })


def private_pca(fd: FunctionalData, settings: PcaSettings, rng=None, *, released_mean=None,
                data_dependent_flags=()) -> PrivatePCAResult:
    """Release k private functional principal components of ``fd`` (METHODS.md section 5).

    Parameters
    ----------
    fd : the curves; the basis and the inner product live on ``fd.unit_grid`` with
        trapezoid weights ``fd.weights``.
    settings : :class:`PcaSettings` (validated here).
    rng : numpy Generator or seed.
    released_mean : a mean curve on the grid that was itself *released* under DP (its
        budget is the caller's to count); required when ``settings.centring`` is
        "released-mean", refused otherwise.
    data_dependent_flags : flags inherited from upstream (e.g. a simulation design that
        rescaled its curves using the data); they are carried into the result.

    Examples
    --------
    >>> import numpy as np
    >>> from fdp_core.data.loading import from_arrays
    >>> t = np.linspace(0, 1, 30)
    >>> X = 0.5 + 0.2 * np.random.default_rng(0).standard_normal((60, 1)) * np.sin(np.pi * t)
    >>> private_pca(from_arrays(t, X), PcaSettings(k=2, value_range=(0, 1)), np.random.default_rng(1)).k
    2
    """
    settings = settings.validated()
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    with single_blas_thread():  # p x p work at p <= a few hundred: threads only add overhead
        return _private_pca(fd, settings, rng, released_mean, data_dependent_flags)


@dataclass(frozen=True)
class PcaSums:
    """What private PCA reads from the data (METHODS.md 17): n and G = sum_p M_p, the sum over
    persons of the average outer product of their final coefficient rows (range-clipped,
    centred, divided by tau, clipped to norm <= 1).

    Computed in memory by :func:`pca_sums`, chunk by chunk (fdp_core/engines/stream.py) or by a Dask
    reduction; :func:`private_pca` accepts it in place of the curves."""

    grid_points: np.ndarray
    basis: PcaBasis
    gram: np.ndarray  # (p, p)
    n: int
    n_clipped: int
    tau: float
    n_curves: int
    n_range_clipped: int = 0
    data_dependent_flags: tuple = ()


def pca_centre(settings: PcaSettings, grid_points, released_mean, values=None):
    """(centre or None, flags): the centring of ``settings``; the sample mean needs ``values``."""
    bounds = settings.bounds
    m = np.asarray(grid_points).size
    if settings.centring == "released-mean":
        if released_mean is None:
            raise ParameterError("centring 'released-mean' needs the released mean curve (released_mean=...)")
        centre = np.asarray(released_mean, dtype=float)
        if centre.shape != (m,) or not np.all(np.isfinite(centre)):
            raise ParameterError(f"the released mean must be {m} finite values on the data grid, got shape "
                                 f"{centre.shape}")
        return centre, ()
    if released_mean is not None:
        raise ParameterError("a released mean was given but centring is not 'released-mean'")
    if settings.centring == "sample-mean":
        if values is None:
            raise ParameterError("centring by the raw sample mean needs the curves in memory (and is not "
                                 "differentially private): centre by a released mean instead")
        return values.mean(axis=0), (SAMPLE_MEAN_CENTRING,)
    if settings.centring == "public":
        return bounds.centre(grid_points), ()
    return None, ()


def pca_tau(settings: PcaSettings, grid_points) -> float | None:
    """The public tau (explicit, or the one the value range implies); None with tau_from_data."""
    if settings.tau_from_data:
        return None
    if settings.tau is None:
        return float(settings.bounds.default_tau(grid_points))
    return float(settings.tau)


def pca_sums(fd, settings, released_mean=None, data_dependent_flags=()) -> PcaSums:
    """The sufficient statistics of ``fd`` for ``settings`` (in memory)."""
    k = int(settings.k)
    bounds = settings.bounds
    # Persons of the file, usable or not (METHODS.md 11): one without a usable curve adds nothing to
    # the Gram matrix (a zero row: the centre) but counts in n.
    persons = file_persons(fd, bounds.person_column)
    codes, n_persons = persons.index, persons.n_persons
    if n_persons < k:
        unit = "persons" if bounds.person_column else "curves"
        raise DataError(f"private PCA with k = {k} components needs at least k = {k} {unit}, the data have "
                        f"{n_persons}")
    n = declared_n(bounds.n_public, n_persons)
    flags = list(data_dependent_flags)
    values, n_range_clipped = clip_values(fd.data_matrix, bounds.value_range)
    centre, centre_flags = pca_centre(settings, fd.grid_points, released_mean, values)
    flags.extend(centre_flags)

    basis = pca_basis(settings, fd.unit_grid, fd.weights)
    p = basis.p
    if k >= p:
        raise ParameterError(f"k = {k} components need a basis dimension p > k, got p = {p}; raise p or lower k")
    if settings.tau_from_data:
        # The largest coefficient row the clip actually sees: after the range clip and centring.
        centred = values if centre is None else values - centre[None, :]
        rows = centred @ (fd.weights[:, None] * basis.functions)
        tau = float(np.max(np.sqrt(np.einsum("ij,ij->i", rows, rows))))
        if not tau > 0:
            raise DataError("every centred curve has zero coefficients: tau from the data would be 0")
        flags.append(DATA_DEPENDENT_TAU)
    else:
        tau = pca_tau(settings, fd.grid_points)
    X, n_clipped = coefficient_matrix(values, basis.functions, fd.weights, tau, centre)
    # A person's rows enter as the average of their outer products (METHODS.md 11): weight 1/k_p.
    weights_rows = person_row_weights(codes, n_persons)
    gram = (X * weights_rows[:, None]).T @ X
    return PcaSums(fd.grid_points, basis, gram, n, n_clipped, tau, fd.n, n_range_clipped, tuple(flags))


def _private_pca(fd, settings, rng, released_mean, data_dependent_flags) -> PrivatePCAResult:
    if isinstance(fd, PcaSums):
        if released_mean is not None or data_dependent_flags:
            raise ParameterError("centring and flags are part of the sufficient statistics: give them to pca_sums")
        sums = fd
        k = int(settings.k)
        if sums.n < k:
            raise DataError(f"private PCA with k = {k} components needs at least k = {k} persons, the data have "
                            f"{sums.n}")
        if k >= sums.basis.p:
            raise ParameterError(f"k = {k} components need a basis dimension p > k, got p = {sums.basis.p}; raise "
                                 "p or lower k")
    else:
        sums = pca_sums(fd, settings, released_mean, data_dependent_flags)
    return _release_from_sums(sums, settings, rng)


def _release_from_sums(sums: PcaSums, settings: PcaSettings, rng) -> PrivatePCAResult:
    k = int(settings.k)
    basis, gram, n, tau, n_clipped = sums.basis, sums.gram, sums.n, sums.tau, sums.n_clipped
    flags = list(sums.data_dependent_flags)
    sampler = pca_sampler(settings.sampler_name)
    V, diagnostics = sampler.draw(settings, gram, basis.prior_variances, rng)
    diagnostics = {"sampler": sampler.name, **diagnostics}
    V = _canonical_signs(V)

    # Analyst view (NOT PRIVATE): the non-private FPCA of the same clipped, person-averaged matrix.
    evals, evecs = np.linalg.eigh(gram)
    evals, evecs = evals[::-1], evecs[:, ::-1]
    V_hat = _canonical_signs(evecs[:, :k])
    best = float(np.sum(evals[:k]))
    achieved = float(np.einsum("il,ij,jl->", V, gram, V))
    variance_ratio = achieved / best if best > 0 else float("nan")
    subspace_distance = float(k - np.sum((V.T @ V_hat) ** 2))

    return PrivatePCAResult(
        settings=settings, grid_points=sums.grid_points, basis=basis, coefficients=V,
        components=basis.functions @ V, n=n, n_clipped=n_clipped, tau=tau, n_curves=sums.n_curves,
        n_range_clipped=sums.n_range_clipped,
        guarantee=_guarantee(settings, basis), diagnostics=diagnostics,
        nonprivate_coefficients=V_hat, nonprivate_components=basis.functions @ V_hat,
        scree=np.maximum(evals, 0.0) / n, variance_ratio=variance_ratio,
        subspace_distance=max(subspace_distance, 0.0), data_dependent_flags=tuple(flags))


def release_record(result: PrivatePCAResult, *, seed: int | None = None) -> dict:
    """The publishable record of a private PCA release: public inputs and the guarantee only.

    Everything computed from the data without noise (rows clipped, the variance ratio, the
    subspace distance, the sampler's acceptance rate, which depends on X^T X) is in
    :func:`analyst_view`.
    """
    s = result.settings
    g = result.guarantee
    record = {
        "release": "pca",
        "mechanism": "exponential",
        "k": result.k,
        "p": result.p,
        "basis": s.basis,
        "p_rule": result.basis.p_rule,
        "kernel": s.kernel if s.basis == "kernel" else None,
        "rho": s.rho if s.basis == "kernel" else None,
        "nu": s.nu if s.basis == "kernel" else None,
        "sampler": s.sampler_name,
        "epsilon": float(s.epsilon),
        "delta": 0.0,
        "epsilon_per_component": g.details["epsilon_per_component"],
        "gamma": float(s.gamma),
        "tau": result.tau,
        "centring": s.centring,
        "n": result.n,
        "m": result.m,
        **s.bounds.describe(),
        "approximate": g.details["approximate"],
        "privacy": g.privacy,
        "data_dependent_flags": list(result.data_dependent_flags),
        "differentially_private": not result.data_dependent_flags and not g.details["approximate"],
        "guarantee": g.record(),
        **randomness_fields(seed),
        "settings": asdict(s),
    }
    record.update(pca_sampler(s.sampler_name).record_fields(result.diagnostics))
    truncation = basis_truncation(result)
    if truncation is not None:
        record["basis_truncation"] = truncation
    return record


def basis_truncation(result: PrivatePCAResult) -> dict | None:
    """A long grid's tail (METHODS 27) as a stated restriction of the release, public numbers only.

    The private components are confined to the span of the p basis functions, the kernel's top
    Ritz vectors. The kernel's trace is public and the Ritz values never exceed the true eigenvalues,
    so the kernel (the model the basis stands for) puts at most ``outside_basis_share_of_trace`` of
    its variance outside that span, of which at most ``omitted_share_of_trace`` lies beyond the L
    eigenfunctions computed on the long grid. A component's part there is missing from the release:
    a bias of the search space, not noise, and not a bound on any data set's spectrum.
    """
    tail = result.basis.truncation
    if tail is None:
        return None
    return {**tail, "statement": (
        f"On this {tail['grid_points']:,}-point grid the components lie in the span of the kernel's top "
        f"{tail['p']} eigenfunctions (of {tail['components']} computed); the kernel puts at most "
        f"{tail['outside_basis_share_of_trace']:.2g} of its trace outside that span "
        f"({tail['omitted_share_of_trace']:.2g} beyond the {tail['components']} computed), and a principal "
        "component's part there is not in the release (a bias, not noise).")}


ANALYST_DIAGNOSTICS = ("acceptance_rate", "acceptance_rates", "n_proposed", "acg_b", "trace", "n_spectral_solves")


def analyst_view(result: PrivatePCAResult, *, n_dropped: int = 0, n_unusable: int | None = None) -> dict:
    """Computed from the data without noise: never publish. ``n_unusable``: persons of the file
    without a usable curve (when known)."""
    view = {"n_curves": result.n_curves, "n_persons": result.n, "n_dropped": int(n_dropped),
            "n_clipped": result.n_clipped,
            "n_clipped_meaning": "curves whose coefficient row (after the range clip and centring) was shrunk to tau",
            "n_range_clipped": result.n_range_clipped,
            "variance_ratio": result.variance_ratio, "subspace_distance": result.subspace_distance,
            "explained_variance_ratio": result.explained_variance_ratio[: max(result.k, 5)]}
    if n_unusable is not None:
        view["n_persons_without_usable_curve"] = int(n_unusable)
    for key in ANALYST_DIAGNOSTICS:
        if key in result.diagnostics:
            view[key] = result.diagnostics[key]
    if DATA_DEPENDENT_TAU in result.data_dependent_flags:
        view["tau_from_data"] = result.tau
    return view


# --------------------------------------------------------------------------- simulation design

AWAN_RESCALING_FLAG = ("curves rescaled by the data's largest norm so that every ||X_i|| < 1 (data-dependent "
                       "rescaling): the release is not differentially private")


def simulate_fpca_awan(n: int = 100, seed: int = 0, *, m: int = 100, n_terms: int = 21,
                       score_variance: float = 0.1, fourth_weight: float = 2.0, noise_sd: float = 0.05,
                       ) -> tuple[np.ndarray, np.ndarray, tuple]:
    """The FPCA simulation of Awan, Kenney, Reimherr & Slavkovic (2019), as in METHODS.md.

    m = 100 equally spaced points in [0, 1]; X_i = mu + sum_{j <= 21} a_j U_ij u_j + noise
    with u_j the Fourier functions (1, sqrt2 sin 2 pi t, sqrt2 cos 2 pi t, ...),
    a_j = j^-2 except a_4 = ``fourth_weight`` (the extra weight that makes u_4 the leading
    component), U_ij ~ N(0, score_variance) (variance 0.1), mu = 0 and iid N(0, noise_sd^2)
    noise at each grid point. The curves are then divided by 1.0001 max_i ||X_i||, so every
    ||X_i|| < 1: that rescaling looks at the data and is flagged. The constants mu, the
    noise level and the size of the extra weight are our reading of the design (the paper
    gives the structure); p = 40 Fourier functions, C = diag(j^-3) and k = 1 are the
    paper's mechanism settings.

    Returns (grid, values (n, m), flags).
    """
    n = check_integer("n", n, 1)
    m = check_integer("m", m, 3)
    rng = np.random.default_rng(seed)
    grid = np.linspace(0.0, 1.0, m)
    u = _raw_fourier(grid, n_terms)
    a = np.arange(1, n_terms + 1, dtype=float) ** -2.0
    if n_terms >= 4:
        a[3] = fourth_weight
    scores = rng.normal(0.0, math.sqrt(score_variance), (n, n_terms)) * a
    values = scores @ u.T + rng.normal(0.0, noise_sd, (n, m))
    norms = np.sqrt((values**2) @ trapezoid_weights(grid))
    values = values / (1.0001 * float(norms.max()))
    return grid, values, (AWAN_RESCALING_FLAG,)
