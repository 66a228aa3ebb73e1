"""Private mean of sparse, irregular curves through private normal equations (METHODS.md section 20).

Person i has m_i observations (t_ij, y_ij) at their own times on a public domain [a, b]. With a
public basis phi_1..phi_J of the kernel (Nystrom extension of the cached eigenbasis, so phi can
be evaluated at any t) each person contributes

    A_i = (1/m_i) sum_j phi(t_ij) phi(t_ij)^T,    b_i = (1/m_i) sum_j (y_ij - c) phi(t_ij),

and the pooled penalised estimate is beta = (A + phi_s Lambda^-eta)^-1 b with A, b the averages
over the n persons. A and b are released with noise (Gaussian or Laplace, budget split gamma /
1 - gamma); the solve, with A~ symmetrised and its eigenvalues floored at a public kappa, is
post-processing. Every bound rests on the public Christoffel bounds R2 >= ||phi(t)||_2^2 and
R1 >= ||phi(t)||_1^2, which :class:`SparseBasis` enforces at every t (it rescales the rare
phi(t) above them, so the bounds hold exactly, not only on the grid where they were measured).
"""

from __future__ import annotations

import math
from dataclasses import MISSING, asdict, dataclass, field, replace
from functools import lru_cache

import numpy as np

from ..errors import DataError, ParameterError
from ..kernels import KERNEL_NAMES, eigenbasis, kernel_matrix, matern_nu
from .. import limits
from ..limits import MAX_OUTPUT_POINTS, MAX_TAU, check_at_most
from ..mechanisms.calibration import CALIBRATIONS, gaussian_sigma
from ..mechanisms.families import noise_family
from ..mechanisms.guarantee import Guarantee
from ..params import (check_choice, check_delta, check_epsilon, check_eta, check_finite, check_integer,
                     check_open_unit, check_positive)
from ..publish.release import randomness_fields
from ..sensitivity import (sparse_b_sensitivity_l1, sparse_b_sensitivity_l2, sparse_gram_sensitivity_frobenius,
                          sparse_gram_sensitivity_l1)
from ..data.sparse_data import SparseData, parse_domain
from .smoother import pooled_local_linear
from ..settings_fields import CALIBRATION, DELTA, EPSILON, ETA, KERNEL, NU, RHO, VALUE_RANGE, Control, documented_settings, option

NOISES = ("gaussian", "laplace")
MAX_BASIS = limits.MAX_SPARSE_BASIS
SAFETY = 1.01  # the Christoffel bounds are the fine-grid maxima times this
BASIS_GRID = 201  # public grid of the eigendecomposition on [0, 1]
CHECK_GRID = 4001  # finer public grid on which R2 and R1 are measured
# The eigenbasis lives on [-margin, 1 + margin] but observations only on [0, 1]: the Christoffel
# function peaks at the ends of the basis' interval, so widening it lowers R2 on [0, 1] (and with it
# every sensitivity) while A stays well conditioned.
BASIS_MARGIN = 0.1
CHUNK = 50_000  # observations per block when accumulating A and b (a 50,000 x 201 kernel block: 80 MB)
NOT_PUBLISHABLE = "analyst view: computed from the raw data without noise; do not publish"


# The options of the sparse route: the shared ones keep ``release mean``'s flags (one --epsilon for
# both routes); the sparse ones their own (--domain, --sparse-noise, --basis-size, ...).
SPARSE_VALUE_RANGE = replace(VALUE_RANGE, required=True, cli_default=None,
                             help="public range of every observed value, declared without looking at the data: values "
                                  "are clipped to it and centred at (LO + HI)/2; b's sensitivity scales with "
                                  "(HI - LO)/2. Write --value-range=-5,40 when LO is negative")


@documented_settings
@dataclass(frozen=True)
class SparseSettings:
    """Public choices of a sparse mean release (all declared before looking at the data).

    Every field carries its command-line option and page control (fdp_core/settings_fields.py):
    ``release mean --sparse``, the replay config and the sparse Mean and Trade-offs views are
    generated from them.

    Examples
    --------
    >>> SparseSettings(domain=(0.0, 1.0), value_range=(-1.0, 2.0)).domain
    (0.0, 1.0)
    """

    domain: tuple = option(MISSING, required=True, cli_default=None, flag="--domain", parse=parse_domain,
                           metavar="A,B", help="public domain of t for --sparse (observations outside it are "
                                               "dropped)")  # (a, b)
    value_range: tuple = option(MISSING, SPARSE_VALUE_RANGE)  # (lo, hi): centre c = (lo + hi) / 2, h = (hi - lo) / 2
    kernel: str = option("matern52", KERNEL, required=True)
    rho: float = option(0.2, RHO, required=True)
    nu: float | None = option(None, NU)
    eta: float = option(1.5, ETA)
    phi: float = option(1e-3, help="penalty phi_s > 0 on the mean's squared norm in H(C^eta)")
    n_basis: int = option(8, flag="--basis-size", metavar="J", controls=(Control("mean", "sparse_J"),),
                          help="--sparse: number of basis functions J (1..60, default 8)")  # J
    epsilon: float = option(1.0, EPSILON, required=True)
    delta: float = option(1e-5, DELTA)
    noise: str = option("gaussian", flag="--sparse-noise", choices=NOISES, controls=(Control("mean", "sparse_noise"),),
                        help="--sparse: Gaussian noise ((epsilon, delta)-DP, default) or Laplace (epsilon-DP)")
    calibration: str = option("analytic", CALIBRATION)
    gamma: float = option(0.25, flag="--sparse-gamma", controls=(Control("mean", "sparse_gamma"),),
                          help="--sparse: share of the budget for A (the rest: b; default 0.25)")
    kappa: float = option(0.1, flag="--sparse-kappa", controls=(Control("mean", "sparse_kappa"),),
                          help="--sparse: public eigenvalue floor of A before solving (default 0.1)")
    output_points: int = option(101, flag="--output-points",
                                help="--sparse: points of the public output grid on the domain")

    def validated(self) -> "SparseSettings":
        a, b = (check_finite("domain", v) for v in self.domain)
        if not a < b:
            raise ParameterError(f"the domain A,B needs A < B, got {self.domain!r}")
        lo, hi = (check_finite("value range", v) for v in self.value_range)
        if not lo < hi:
            raise ParameterError(f"the value range LO,HI needs LO < HI, got {self.value_range!r}")
        check_at_most("value range half-width", (hi - lo) / 2, MAX_TAU, "b's sensitivity scales with it")
        check_choice("kernel", self.kernel, KERNEL_NAMES)
        check_positive("rho", self.rho)
        if self.kernel == "matern":
            matern_nu(self.kernel, self.nu)
        check_eta(self.eta)
        check_positive("phi", self.phi)
        J = check_integer("number of basis functions J", self.n_basis, 1)
        if J > MAX_BASIS:
            raise ParameterError(f"the number of basis functions J must be at most {MAX_BASIS}, got {J}")
        check_epsilon(self.epsilon)
        check_choice("noise", self.noise, NOISES)
        if noise_family(self.noise).uses_delta:
            check_delta(self.delta)
        check_choice("calibration", self.calibration, CALIBRATIONS)
        check_open_unit("gamma (A's share of the budget)", self.gamma)
        check_positive("kappa (eigenvalue floor of A)", self.kappa)
        check_integer("output grid points", self.output_points, 2)
        check_at_most("--output-points", self.output_points, MAX_OUTPUT_POINTS,
                      "the released curve is drawn and stored at every point")
        return self

    @property
    def centre(self) -> float:
        return (float(self.value_range[0]) + float(self.value_range[1])) / 2.0

    @property
    def half_width(self) -> float:
        return (float(self.value_range[1]) - float(self.value_range[0])) / 2.0

    def output_grid(self) -> np.ndarray:
        return np.linspace(float(self.domain[0]), float(self.domain[1]), int(self.output_points))

    def to_unit(self, t) -> np.ndarray:
        a, b = float(self.domain[0]), float(self.domain[1])
        return (np.asarray(t, dtype=float) - a) / (b - a)


@dataclass(frozen=True)
class SparseBasis:
    """phi_1..phi_J of a kernel on [0, 1], evaluable at any t, with its public Christoffel bounds."""

    kernel: str
    rho: float
    nu: float | None
    eigenvalues: np.ndarray  # lambda_1..lambda_J (the operator on [0, 1])
    grid: np.ndarray  # the public grid of the eigendecomposition
    nystrom: np.ndarray = field(repr=False)  # (grid, J): w_k phi_l(t_k) / lambda_l
    r2: float  # >= ||phi(t)||_2^2 for every t (enforced)
    r1: float  # >= ||phi(t)||_1^2 for every t (enforced)

    @property
    def n_basis(self) -> int:
        return int(self.eigenvalues.size)

    def raw(self, u) -> np.ndarray:
        """Nystrom extension phi_l(u) = (1 / lambda_l) sum_k w_k k(u, t_k) phi_l(t_k), shape (len(u), J)."""
        u = np.atleast_1d(np.asarray(u, dtype=float))
        return kernel_matrix(self.kernel, u, self.grid, self.rho, self.nu) @ self.nystrom

    def evaluate(self, u) -> np.ndarray:
        """phi(u) rescaled (rarely, and only between grid points) so ||phi||_2^2 <= R2 and ||phi||_1^2 <= R1."""
        phi = self.raw(u)
        sq2 = np.sum(phi**2, axis=1)
        sq1 = np.sum(np.abs(phi), axis=1) ** 2
        scale = np.minimum(1.0, np.sqrt(np.minimum(self.r2 / np.maximum(sq2, 1e-300),
                                                   self.r1 / np.maximum(sq1, 1e-300))))
        return phi * scale[:, None]


@lru_cache(maxsize=16)
def _sparse_basis(kernel: str, rho: float, nu, n_basis: int, margin: float) -> SparseBasis:
    grid = np.linspace(-margin, 1.0 + margin, BASIS_GRID)
    basis = eigenbasis(kernel, rho, grid, nu=nu)
    J = min(int(n_basis), basis.n_components)
    lam = np.array(basis.eigenvalues[:J])
    nystrom = basis.projector[:, :J] / lam
    for a in (lam, nystrom):
        a.setflags(write=False)
    check = np.linspace(0.0, 1.0, CHECK_GRID)
    phi = kernel_matrix(kernel, check, grid, rho, nu) @ nystrom
    r2 = SAFETY * float(np.max(np.sum(phi**2, axis=1)))
    r1 = SAFETY * float(np.max(np.sum(np.abs(phi), axis=1) ** 2))
    return SparseBasis(kernel, float(rho), nu, lam, grid, nystrom, r2, r1)


def sparse_basis(settings: SparseSettings) -> SparseBasis:
    """The public basis of the settings' kernel (cached; J capped by the kernel's numerical rank)."""
    nu = matern_nu(settings.kernel, settings.nu) if settings.kernel == "matern" else None
    return _sparse_basis(settings.kernel, float(settings.rho), nu, int(settings.n_basis), BASIS_MARGIN)


@dataclass(frozen=True)
class SparseStatistics:
    """A = (1/n) sum A_i and b = (1/n) sum b_i (NON-PRIVATE) and counts for the analyst view."""

    A: np.ndarray
    b: np.ndarray
    n: int
    n_observations: int
    n_outside_domain: int  # observations dropped (t outside [a, b])
    n_values_clipped: int  # values clipped to the range


def accumulate_normal_equations(A: np.ndarray, b: np.ndarray, basis: SparseBasis, settings: SparseSettings,
                                u: np.ndarray, y: np.ndarray, weights: np.ndarray) -> None:
    """Add sum_j w_j phi(u_j) phi(u_j)^T to A and sum_j w_j (clip(y_j) - c) phi(u_j) to b, in place.

    ``u``: times already on [0, 1] (inside the domain); ``weights``: 1 / m_i of each observation's person.
    Blocks of CHUNK observations keep the memory bounded (the streamed route calls this per chunk).
    """
    lo, hi = float(settings.value_range[0]), float(settings.value_range[1])
    for start in range(0, u.size, CHUNK):
        part = slice(start, start + CHUNK)
        phi = basis.evaluate(u[part])
        w = weights[part]
        A += (phi * w[:, None]).T @ phi
        b += phi.T @ (w * (np.clip(y[part], lo, hi) - settings.centre))


def sparse_statistics(data: SparseData, settings: SparseSettings, basis: SparseBasis | None = None
                      ) -> SparseStatistics:
    """Each person's A_i and b_i averaged over the n persons of the file.

    Observations with t outside the public domain are dropped (a person left with none adds
    A_i = 0, b_i = 0, still inside the bounds); values are clipped to the public range first.
    """
    s = settings
    basis = basis or sparse_basis(s)
    person, _ = data.person_index()
    n = int(person.max()) + 1
    u = s.to_unit(data.t)
    inside = (u >= 0.0) & (u <= 1.0)
    m = np.bincount(person[inside], minlength=n).astype(float)
    lo, hi = float(s.value_range[0]), float(s.value_range[1])
    J = basis.n_basis
    A = np.zeros((J, J))
    b = np.zeros(J)
    accumulate_normal_equations(A, b, basis, s, u[inside], data.y[inside], 1.0 / m[person[inside]])
    return SparseStatistics((A + A.T) / (2.0 * n), b / n, n, data.n_observations, int((~inside).sum()),
                            int(np.sum((data.y < lo) | (data.y > hi))))


def penalty_diagonal(eigenvalues: np.ndarray, eta: float, phi: float) -> np.ndarray:
    """phi_s lambda_l^-eta: the RKHS penalty of H(C^eta) in the eigenbasis (as in estimators.shrinkage)."""
    return float(phi) / np.asarray(eigenvalues, dtype=float) ** float(eta)


def floored_solve(A: np.ndarray, b: np.ndarray, kappa: float, penalty: np.ndarray) -> np.ndarray:
    """beta = (A symmetrised with eigenvalues floored at kappa + diag(penalty))^-1 b: post-processing."""
    values, vectors = np.linalg.eigh((A + A.T) / 2.0)
    floored = (vectors * np.maximum(values, kappa)) @ vectors.T
    return np.linalg.solve(floored + np.diag(penalty), b)


@dataclass(frozen=True)
class SparseRelease:
    """Everything but the draw: statistics (NON-PRIVATE), noise scales and the guarantee.

    Built by :func:`plan_sparse_release`; ``statistics`` is NON-PRIVATE, everything else public.

    Examples
    --------
    >>> from pathlib import Path
    >>> from fdp_core.data.sparse_data import read_long
    >>> data = read_long(Path(__file__).parents[2] / "data" / "example_sparse.csv")
    >>> plan_sparse_release(data, SparseSettings(domain=(0.0, 1.0), value_range=(-1.0, 2.0))).guarantee.privacy
    '(epsilon, delta)-DP'
    """

    settings: SparseSettings
    basis: SparseBasis
    statistics: SparseStatistics = field(repr=False)  # NON-PRIVATE
    output_grid: np.ndarray
    output_basis: np.ndarray = field(repr=False)  # (P, J) phi on the output grid (public)
    penalty: np.ndarray
    scale_a: float  # per-entry noise scale of A (sd or Laplace b)
    scale_b: float
    sensitivity_a: float
    sensitivity_b: float
    guarantee: Guarantee

    @property
    def n(self) -> int:
        return self.statistics.n

    @property
    def family(self):
        return noise_family(self.settings.noise)

    def sample_statistics(self, rng: np.random.Generator, size: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """(A~ (size, J, J) symmetrised, b~ (size, J)): the mechanism's outputs."""
        J = self.basis.n_basis
        A = self.statistics.A + self.scale_a * self.family.standard(rng, (size, J, J))
        b = self.statistics.b + self.scale_b * self.family.standard(rng, (size, J))
        return (A + np.swapaxes(A, 1, 2)) / 2.0, b

    def coefficients(self, A: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.stack([floored_solve(a, v, self.settings.kappa, self.penalty) for a, v in zip(A, b)])

    def curves(self, beta: np.ndarray) -> np.ndarray:
        """mu(t) = c + sum_l beta_l phi_l(t) on the output grid, (size, P)."""
        return self.settings.centre + np.asarray(beta) @ self.output_basis.T

    def sample(self, rng: np.random.Generator, size: int = 1) -> np.ndarray:
        return self.curves(self.coefficients(*self.sample_statistics(rng, size)))

    def nonprivate_curve(self) -> np.ndarray:
        """The same estimate from A and b without noise (P,). NON-PRIVATE."""
        return self.curves(self.coefficients(self.statistics.A[None], self.statistics.b[None]))[0]

    def evaluate(self, beta: np.ndarray, t) -> np.ndarray:
        """The released mean at any t of the domain (post-processing of beta)."""
        return self.settings.centre + self.basis.evaluate(self.settings.to_unit(t)) @ np.asarray(beta)


def _part(family, epsilon, delta, sensitivity, scale, norm, key, noise) -> Guarantee:
    gaussian = family.uses_delta
    return Guarantee(family.privacy, float(epsilon), float(delta), sensitivity=float(sensitivity),
                     sensitivity_norm=norm, sensitivity_key=key,
                     gdp_mu=float(sensitivity / scale) if gaussian else None,
                     details={"sigma" if gaussian else "laplace_scale": float(scale)}, noise=noise)


def plan_sparse_release(data: SparseData | None, settings: SparseSettings, *,
                        statistics: SparseStatistics | None = None) -> SparseRelease:
    """Statistics, sensitivities (METHODS.md 20), noise scales and the typed guarantee.

    ``statistics``: A and b accumulated elsewhere (the streamed route, fdp_core/engines/sparse_stream.py);
    then ``data`` may be None.

    Parameters
    ----------
    data : SparseData or None
        The observations (NON-PRIVATE); None when ``statistics`` are given.
    settings : SparseSettings
        The public domain of t, the value range, the kernel and the budget (METHODS.md 20).
    statistics : SparseStatistics, optional
        A and b accumulated elsewhere.

    Returns
    -------
    SparseRelease
        The private normal equations' noise scales, sensitivities and guarantee; ``sample(rng)``
        draws previews of the mean on ``output_grid``.

    Examples
    --------
    >>> import numpy as np
    >>> from pathlib import Path
    >>> from fdp_core.data.sparse_data import read_long
    >>> data = read_long(Path(__file__).parents[2] / "data" / "example_sparse.csv")
    >>> plan = plan_sparse_release(data, SparseSettings(domain=(0.0, 1.0), value_range=(-1.0, 2.0), epsilon=4.0))
    >>> plan.n, plan.sample(np.random.default_rng(0), 1).shape[0]
    (500, 1)
    """
    s = settings.validated()
    basis = sparse_basis(s)
    stats = statistics if statistics is not None else sparse_statistics(data, s, basis)
    n, J = stats.n, basis.n_basis
    if n < 2:
        name = data.name if data is not None else "the data"
        raise DataError(f"{name}: a sparse mean release needs at least 2 persons, found {n}")
    family = noise_family(s.noise)
    g = float(s.gamma)
    eps_a, eps_b = g * s.epsilon, (1.0 - g) * s.epsilon
    delta = family.delta_or_zero(s.delta)
    delta_a, delta_b = g * delta, (1.0 - g) * delta
    h = s.half_width
    if family.uses_delta:
        sens_a = sparse_gram_sensitivity_frobenius(basis.r2, n)
        sens_b = sparse_b_sensitivity_l2(basis.r2, h, n)
        scale_a = gaussian_sigma(sens_a, eps_a, delta_a, s.calibration)
        scale_b = gaussian_sigma(sens_b, eps_b, delta_b, s.calibration)
        norms = ("Frobenius norm", "sensitivity_frobenius", "l2 norm", "sensitivity_l2")
        laws = ("iid N(0, sigma^2) on all J x J entries of A, then symmetrised", "iid N(0, sigma^2) on the J entries of b")
    else:
        sens_a = sparse_gram_sensitivity_l1(basis.r1, basis.r2, J, n)
        sens_b = sparse_b_sensitivity_l1(basis.r1, h, n)
        scale_a, scale_b = sens_a / eps_a, sens_b / eps_b
        norms = ("l1 norm (all J x J entries)", "sensitivity_l1", "l1 norm", "sensitivity_l1")
        laws = ("iid Laplace(b) on all J x J entries of A, then symmetrised", "iid Laplace(b) on the J entries of b")
    part_a = _part(family, eps_a, delta_a, sens_a, scale_a, norms[0], norms[1], laws[0])
    part_b = _part(family, eps_b, delta_b, sens_b, scale_b, norms[2], norms[3], laws[1])
    guarantee = Guarantee(
        family.privacy, float(s.epsilon), float(delta),
        bound_label=("A: sqrt(2) R2 / n (Frobenius), b: 2 h sqrt(R2) / n (attained up to the 1.01 safety factor)"
                     if family.uses_delta else
                     "A: min(2 R1, sqrt(2) J R2) / n (l1), b: 2 h sqrt(R1) / n (attained up to the 1.01 safety factor)"),
        noise=f"{family.name} noise on the normal equations (A, b); the floored solve is post-processing",
        details={"composition": f"A with gamma of the budget, b with the rest (gamma = {g:g}); the ledger charges "
                                "both; beta~ = (A~ floored at kappa + phi Lambda^-eta)^-1 b~ is post-processing",
                 "A": part_a, "b": part_b, "n_basis": J, "christoffel_R2": basis.r2, "christoffel_R1": basis.r1,
                 "basis_interval": [-BASIS_MARGIN, 1.0 + BASIS_MARGIN],
                 "kappa": float(s.kappa), "n": n})
    out_grid = s.output_grid()
    return SparseRelease(s, basis, stats, out_grid, basis.evaluate(s.to_unit(out_grid)),
                         penalty_diagonal(basis.eigenvalues, s.eta, s.phi), float(scale_a), float(scale_b),
                         float(sens_a), float(sens_b), guarantee)


def sparse_settings_record(settings: SparseSettings) -> dict:
    out = asdict(settings)
    out["domain"], out["value_range"] = list(settings.domain), list(settings.value_range)
    return out


def sparse_release_record(plan: SparseRelease, values: np.ndarray, *, seed: int | None = None) -> dict:
    """The publishable record: public settings, n (declared public), the guarantee and the noised mean."""
    s = plan.settings
    return {"kind": "mean", "route": "sparse", "method": "private normal equations (METHODS.md 20)",
            "settings": sparse_settings_record(s), "n": plan.n, "n_unit": "persons",
            "unit_of_privacy": "person (all observations sharing an id)",
            "unit_statement": "one person's observations (all visits sharing an id)",
            "guarantee": plan.guarantee.record(), "grid": plan.output_grid, "values": np.asarray(values),
            **randomness_fields(seed)}


def sparse_analyst_view(plan: SparseRelease, values: np.ndarray, data: SparseData | None) -> dict:
    """Everything computed from the data without noise: counts, the gap to the noiseless estimate
    and to the non-private pooled local-linear smoother (Yao, Mueller & Wang 2005; not for a
    streamed file, whose observations are never held in memory)."""

    st = plan.statistics
    grid = plan.output_grid
    nonprivate = plan.nonprivate_curve()
    span = grid[-1] - grid[0]

    def l2(a, b):
        return float(math.sqrt(np.trapezoid((np.asarray(a) - np.asarray(b)) ** 2, grid) / span))

    out = {"note": NOT_PUBLISHABLE, "n_persons": st.n, "n_observations": st.n_observations,
           "n_outside_domain": st.n_outside_domain, "n_values_clipped": st.n_values_clipped,
           "nonprivate_estimate": nonprivate, "l2_gap_to_nonprivate_estimate": l2(values, nonprivate),
           "l2_norm": "root mean square over the domain: sqrt((1/(b-a)) integral (f - g)^2)"}
    if data is None:
        out["pooled_smoother"] = "not computed: the file was streamed"
        return out
    smooth = pooled_local_linear(data, grid, domain=plan.settings.domain)
    visits = data.visits_per_person()
    out.update({"visits_per_person": {"min": int(visits.min()), "median": float(np.median(visits)),
                                      "max": int(visits.max())},
                "pooled_smoother": smooth.values, "pooled_smoother_bandwidth": smooth.bandwidth,
                "l2_gap_to_pooled_smoother": l2(values, smooth.values),
                "l2_gap_nonprivate_estimate_to_smoother": l2(nonprivate, smooth.values)})
    return out


def sparse_ledger_entries(plan: SparseRelease, *, label: str = "") -> list:
    """The two ledger entries of a sparse release (A and b, each with its share of the budget).

    The ledger composes them like any two releases (basic, GDP, zCDP or PLD), so a sparse mean
    is charged exactly what its guarantee says: gamma epsilon + (1 - gamma) epsilon under basic
    composition, mu = sqrt(mu_A^2 + mu_b^2) for Gaussian noise under GDP.
    """
    from ..budget.accounting import gaussian_entry, pure_entry  # lazy: privacy events, not for `release mean --help`

    out = []
    for part, scale, sensitivity in (("A", plan.scale_a, plan.sensitivity_a), ("b", plan.scale_b, plan.sensitivity_b)):
        g = plan.guarantee.details[part]
        noise = {"part": part, "n_basis": plan.basis.n_basis, "route": "sparse"}
        text = f"{label} (sparse mean, {part})".strip()
        if plan.family.uses_delta:
            out.append(gaussian_entry("mean", f"sparse-{plan.family.name}", sensitivity=sensitivity, sigma=scale,
                                      epsilon=g.epsilon, delta=g.delta, sensitivity_norm=g.sensitivity_norm,
                                      noise=noise, label=text))
        else:
            out.append(pure_entry("mean", f"sparse-{plan.family.name}", epsilon=g.epsilon, sensitivity=sensitivity,
                                  sensitivity_norm=g.sensitivity_norm, noise={"laplace_scale": scale, **noise},
                                  label=text))
    return out
