"""Function-on-scalar regression release (METHODS.md 14; Lin & Reimherr, appendix C.2).

Y_i(t) = sum_k X_ik beta_k(t) + error. The release needs two sufficient statistics:
T1 = (1/n) sum_i X_i X_i^T (q x q) and T2 = (1/n) sum_i X_i y_i^T (q x L, y_i the coefficients of
the centred, clipped curve), shrunk per column by s_l. Each gets Gaussian noise with its share of
the budget (gamma for T1, 1 - gamma for T2; the ledger charges both). Then, by post-processing,
beta~ = (T1~ symmetrised, eigenvalues floored at a public kappa)^(-1) T2~, and the public centre c
is added back to the intercept function.

Covariates come from named metadata columns: ``NAME`` for a numeric column, ``NAME=LEVEL`` for
the indicator of one level of a text column (e.g. ``sex=male``). The intercept is kept at 1 and
the other covariates are clipped jointly to the Euclidean ball of radius sqrt(B^2 - 1), so
||X_i|| <= B without biasing the intercept.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from .covariance import CovarianceSettings, centred_clipped_curves, person_weights
from ..data.loading import FunctionalData
from ..errors import DataError, ParameterError, shown
from .estimators import shrinkage
from ..kernels import KERNEL_NAMES, eigenbasis
from ..mechanisms.calibration import CALIBRATIONS, gaussian_sigma
from ..mechanisms.families import GAUSSIAN
from ..mechanisms.guarantee import Guarantee
from ..limits import MAX_TAU, check_at_most
from ..params import check_choice, check_delta, check_epsilon, check_eta, check_open_unit, check_positive
from ..publish.release import randomness_fields
from ..settings_fields import documented_settings
from ..settings_fields import (CALIBRATION, CENTRE, CENTRE_RANGE, DELTA, EPSILON, ETA, KERNEL, N_PUBLIC, NU,
                              PERSON_COLUMN, RHO, Control, option)
from ..sensitivity import regression_t1_sensitivity_frobenius, regression_t2_sensitivity_cm

NOT_PUBLISHABLE = "analyst view: computed from the raw data without noise; do not publish"


def parse_covariates(text) -> tuple[str, ...]:
    names = tuple(p.strip() for p in (text.split(",") if isinstance(text, str) else text) if str(p).strip())
    if not names:
        raise ParameterError("name at least one covariate column (e.g. --covariates case,sex=male)")
    return names


@documented_settings
@dataclass(frozen=True)
class RegressionSettings:
    """Public choices of a regression release (curves: as for the covariance, METHODS 12-13).

    Page controls (``controls``): the Covariance & regression page ("covariance"), which centres
    the curves as its covariance does and offers the data's own columns as covariates (a
    data-dependent choice list, so the page keeps that widget).

    Examples
    --------
    >>> RegressionSettings(covariates=("age",), lo=0.0, hi=1.0).covariates
    ('age',)
    """

    covariates: tuple = option((), parse=parse_covariates, required=True,
                               help="metadata columns: NAME (numeric) or NAME=LEVEL (indicator of a text level), "
                                    "joined by ',' (e.g. case,sex=male); an intercept is always included")
    bound_b: float = option(2.0, flag="--B", required=True,
                            help="public bound B > 1 on ||X_i|| (intercept 1 kept; others clipped to sqrt(B^2 - 1))",
                            controls=(Control("covariance", "reg_B"),))
    kernel: str = option("matern52", KERNEL, required=True)
    rho: float = option(0.1, RHO, required=True)
    nu: float | None = option(None, NU)
    eta: float = option(1.5, ETA)
    phi: float = option(1e-3, help="penalty phi > 0 (shrinkage of T2's columns)")
    epsilon: float = option(1.0, EPSILON, required=True)
    delta: float = option(1e-5, DELTA, help="delta in (0, 1)")
    tau: float | None = option(None, help="public L2 bound of the centred curves (required with --centre)")
    calibration: str = option("analytic", CALIBRATION)
    centre: float | None = option(None, CENTRE)
    lo: float | None = option(None, CENTRE_RANGE)  # --value-range LO,HI sets lo and hi
    hi: float | None = None
    gamma: float = option(0.3, help="share of the budget for T1 (the rest: T2)",
                          controls=(Control("covariance", "reg_gamma"),))
    kappa: float = option(0.05, help="public eigenvalue floor of T1~ before inverting",
                          controls=(Control("covariance", "reg_kappa"),))
    person_column: str | None = option(None, PERSON_COLUMN)
    n_public: int | None = option(None, N_PUBLIC)

    def validated(self) -> "RegressionSettings":
        parse_covariates(self.covariates)
        b = check_positive("B (covariate norm bound)", self.bound_b)
        check_at_most("B", b, MAX_TAU, "T1's sensitivity scales with B^2")
        if b <= 1:
            raise ParameterError(f"B must exceed 1 (the intercept alone has norm 1), got {self.bound_b!r}")
        check_choice("kernel", self.kernel, KERNEL_NAMES)
        check_positive("rho", self.rho)
        check_positive("phi", self.phi)
        check_eta(self.eta)
        check_epsilon(self.epsilon)
        check_delta(self.delta)
        check_choice("calibration", self.calibration, CALIBRATIONS)
        check_open_unit("gamma (T1's share of the budget)", self.gamma)
        check_positive("kappa (eigenvalue floor of T1)", self.kappa)
        self.curve_settings().validated()
        return self

    def curve_settings(self) -> CovarianceSettings:
        return CovarianceSettings(kernel=self.kernel, rho=self.rho, nu=self.nu, eta=self.eta, phi=self.phi,
                                  tau=self.tau, centre=self.centre, lo=self.lo, hi=self.hi,
                                  person_column=self.person_column, n_public=self.n_public)


def covariate_matrix(metadata: pd.DataFrame, covariates, bound_b: float) -> tuple[np.ndarray, int, list[str]]:
    """(n x q) design with the intercept 1 first, the others clipped to norm sqrt(B^2 - 1).

    Returns (X, number of rows clipped, column labels).
    """
    names = parse_covariates(covariates)
    columns, labels = [], ["intercept"]
    for spec in names:
        name, _, level = spec.partition("=")
        if name not in metadata.columns:
            raise DataError(f"covariate column {name!r} is not in the file's metadata columns "
                            f"({', '.join(map(str, metadata.columns)) or 'none'})")
        col = metadata[name]
        if level:
            indicator = (col.astype(str) == level).to_numpy(dtype=float)
            if not indicator.any():
                levels = ", ".join(map(str, col.astype(str).unique()[:5]))
                raise DataError(f"covariate {shown(spec)} matches no row: {shown(name)} has no level {shown(level)} "
                                f"(levels: {levels}); an all-zero column carries no information")
            columns.append(indicator)
            labels.append(f"{name}={level}")
            continue
        numeric = pd.to_numeric(col, errors="coerce")
        if numeric.isna().any():
            bad = col[numeric.isna()].astype(str).unique()[:3]
            raise DataError(f"covariate {name!r} has non-numeric values ({', '.join(bad)}): name one level as "
                            f"{name}=LEVEL for its indicator")
        if not numeric.any():
            raise DataError(f"covariate {shown(name)} is zero in every row; an all-zero column carries no information")
        columns.append(numeric.to_numpy(dtype=float))
        labels.append(name)
    Z = np.column_stack(columns)
    radius = np.sqrt(bound_b**2 - 1.0)
    norms = np.linalg.norm(Z, axis=1)
    over = norms > radius
    Z[over] *= np.nextafter(radius / norms[over], 0.0)[:, None]
    return np.column_stack([np.ones(Z.shape[0]), Z]), int(over.sum()), labels


def floored_inverse(T1: np.ndarray, kappa: float) -> np.ndarray:
    """(T1 symmetrised, eigenvalues floored at kappa)^(-1): always defined, post-processing."""
    values, vectors = np.linalg.eigh((T1 + T1.T) / 2.0)
    return (vectors / np.maximum(values, kappa)) @ vectors.T


@dataclass(frozen=True)
class RegressionRelease:
    """A planned regression release (T1 and T2): noise laws and guarantees public, the estimates
    NON-PRIVATE. Built by :func:`plan_regression_release`.

    Examples
    --------
    >>> import numpy as np
    >>> from fdp_core.data.loading import from_arrays
    >>> t = np.linspace(0, 1, 20)
    >>> age = np.linspace(-1, 1, 60)
    >>> fd = from_arrays(t, 0.5 + 0.1 * age[:, None] * np.sin(np.pi * t), metadata={"age": age})
    >>> plan_regression_release(fd, RegressionSettings(covariates=("age",), lo=0.0, hi=1.0)).n
    60
    """

    settings: RegressionSettings
    labels: list
    grid_points: np.ndarray
    eigenvalues: np.ndarray
    eigenfunctions: np.ndarray
    t1: np.ndarray = field(repr=False)  # NON-PRIVATE
    t2: np.ndarray = field(repr=False)  # NON-PRIVATE (shrunk)
    t1_sigma: float
    t2_sigma: float
    t1_sensitivity: float
    t2_sensitivity: float
    t2_scales: np.ndarray = field(repr=False)
    n: int
    n_clipped_curves: int
    n_clipped_covariates: int
    guarantee: Guarantee  # the whole release; details["t1"], details["t2"]: each part's own Guarantee
    design: np.ndarray = field(repr=False)  # NON-PRIVATE
    curves: np.ndarray = field(repr=False)  # NON-PRIVATE raw curves (OLS reference)
    basis_tail: dict | None = None  # a long grid's top-L basis (METHODS 27): public numbers, else None

    @property
    def q(self) -> int:
        return len(self.labels)

    def sample_statistics(self, rng: np.random.Generator, size: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """(T1~ (size, q, q) symmetrised, T2~ (size, q, L)): the mechanism's outputs."""
        t1 = self.t1 + self.t1_sigma * rng.standard_normal((size, self.q, self.q))
        t1 = (t1 + np.swapaxes(t1, 1, 2)) / 2.0
        t2 = self.t2 + self.t2_scales * rng.standard_normal((size, self.q, self.eigenvalues.size))
        return t1, t2

    def coefficient_functions(self, t1: np.ndarray, t2: np.ndarray) -> np.ndarray:
        """beta~_k(t) on the grid, (size, q, m); post-processing of (T1~, T2~); c added to the intercept."""
        beta = np.stack([floored_inverse(a, self.settings.kappa) @ b for a, b in zip(t1, t2)])
        functions = beta @ self.eigenfunctions.T
        functions[:, 0, :] += self.settings.curve_settings().centre_value
        return functions

    def sample(self, rng: np.random.Generator, size: int = 1) -> np.ndarray:
        return self.coefficient_functions(*self.sample_statistics(rng, size))

    def nonprivate_functions(self) -> np.ndarray:
        """beta from the shrunk, clipped statistics without noise (q, m). NON-PRIVATE."""
        return self.coefficient_functions(self.t1[None], self.t2[None])[0]

    def ols(self) -> np.ndarray:
        """Ordinary least squares on the raw curves and the (clipped) design (q, m). NON-PRIVATE."""
        return np.linalg.lstsq(self.design, self.curves, rcond=None)[0]

    @property
    def expected_sq_error_t1(self) -> float:
        """E||T1~ - T1||_F^2 after symmetrisation: sigma1^2 (q^2 + q) / 2."""
        return self.t1_sigma**2 * (self.q**2 + self.q) / 2.0

    @property
    def expected_sq_error_t2(self) -> float:
        """E||T2~ - T2_hat||^2 (sum over the q coefficient functions of squared L2 norms): q sigma2^2 sum lambda."""
        return float(np.sum(self.t2_scales**2))


def plan_regression_release(fd: FunctionalData, settings: RegressionSettings) -> RegressionRelease:
    """Function-on-scalar regression (METHODS.md 14): T1 and T2 planned, nothing drawn.

    Parameters
    ----------
    fd : FunctionalData
        The curves, with the covariates as metadata columns (NON-PRIVATE).
    settings : RegressionSettings
        The covariates, their public bound B, the curves' centre and tau, kernel and budget.

    Returns
    -------
    RegressionRelease
        Both parts' noise laws and guarantees; ``sample(rng)`` draws previews of the coefficients.

    Examples
    --------
    >>> import numpy as np
    >>> from fdp_core.data.loading import from_arrays
    >>> t = np.linspace(0, 1, 20)
    >>> age = np.linspace(-1, 1, 60)
    >>> fd = from_arrays(t, 0.5 + 0.1 * age[:, None] * np.sin(np.pi * t), metadata={"age": age})
    >>> plan = plan_regression_release(fd, RegressionSettings(covariates=("age",), lo=0.0, hi=1.0))
    >>> plan.labels
    ['intercept', 'age']
    """
    s = settings.validated()
    X, n_clipped_cov, labels = covariate_matrix(fd.metadata, s.covariates, s.bound_b)
    if X.shape[0] != fd.n:
        raise DataError(f"{X.shape[0]} covariate rows for {fd.n} curves")
    cs = s.curve_settings()
    # Person level (METHODS 11): T1, T2 average each person's X X^T and X y^T (norms <= B^2, B tau).
    w, n, _ = person_weights(fd, cs)
    q = X.shape[1]
    if n < q + 1:
        raise ParameterError(f"a regression on {q} covariates (intercept included) needs more than {q} persons")
    curves, n_clipped = centred_clipped_curves(fd, cs)
    basis = eigenbasis(s.kernel, s.rho, fd.unit_grid, fd.weights, nu=s.nu)
    lam = basis.eigenvalues
    y = basis.coefficients(curves)
    shrink = shrinkage(lam, s.eta, s.phi)
    Xw = X * w[:, None]
    t1 = Xw.T @ X / n
    t2 = shrink * (Xw.T @ y) / n
    g = float(s.gamma)
    eps1, delta1, eps2, delta2 = g * s.epsilon, g * s.delta, (1 - g) * s.epsilon, (1 - g) * s.delta
    sens1 = regression_t1_sensitivity_frobenius(s.bound_b, n)
    sens2 = regression_t2_sensitivity_cm(lam, shrink, s.bound_b, cs.tau_value, n)
    sigma1 = gaussian_sigma(sens1, eps1, delta1, s.calibration)
    sigma2 = gaussian_sigma(sens2, eps2, delta2, s.calibration)
    t1_part = Guarantee(GAUSSIAN.privacy, eps1, delta1, sensitivity=sens1, sensitivity_norm="Frobenius norm",
                        sensitivity_key="sensitivity_frobenius", gdp_mu=sens1 / sigma1, details={"sigma": sigma1},
                        noise="iid N(0, sigma^2) on all q x q entries, then symmetrised")
    t2_part = Guarantee(GAUSSIAN.privacy, eps2, delta2, sensitivity=sens2,
                        sensitivity_norm="Cameron-Martin norm (q copies of C)", sensitivity_key="sensitivity_cm",
                        gdp_mu=sens2 / sigma2, details={"sigma": sigma2},
                        noise="N(0, sigma^2 lambda_l) on entry (k, l): q copies of the GP with covariance C")
    guarantee = Guarantee(
        GAUSSIAN.privacy, float(s.epsilon), float(s.delta),
        bound_label="T1: sqrt(2) B^2 / n (attained); T2: 2 B tau max_l s_l / sqrt(lambda_l) / n (attained)",
        details={"composition": f"T1 with (gamma epsilon, gamma delta), T2 with the rest (gamma = {g:g}); the ledger "
                                "charges both; beta~ is post-processing",
                 "t1": t1_part, "t2": t2_part})
    return RegressionRelease(settings=s, labels=labels, grid_points=fd.grid_points, eigenvalues=lam,
                             eigenfunctions=basis.eigenfunctions, t1=t1, t2=t2, t1_sigma=sigma1, t2_sigma=sigma2,
                             t1_sensitivity=sens1, t2_sensitivity=sens2,
                             t2_scales=np.tile(sigma2 * np.sqrt(lam), (q, 1)), n=n, n_clipped_curves=n_clipped,
                             n_clipped_covariates=n_clipped_cov, guarantee=guarantee, design=X, curves=fd.data_matrix,
                             basis_tail=basis.tail())


def basis_truncation(plan: RegressionRelease) -> dict | None:
    """A long grid's tail (METHODS 27) as a stated bias of T2, public numbers only.

    Every omitted eigenvalue is at most T (the trace minus the Ritz values), so an omitted column of
    T2 would have been shrunk by at most s(T) = T^eta / (T^eta + phi); the unshrunk T2, an average over
    persons of z y^T with ||z|| <= B and ||y|| <= tau, has HS norm at most B tau. Leaving the tail out
    moves T2 by at most s(T) B tau (Frobenius over covariates, L2 over t). beta~ = T1~^-1 T2~ is
    post-processing through a noisy inverse: no data-free bound is stated for it.
    """
    tail = plan.basis_tail
    if tail is None:
        return None
    s = plan.settings
    T = float(tail["omitted_eigenvalue_sum"])
    shrink = float(shrinkage(np.array([T]), s.eta, s.phi)[0])
    return {**tail, "omitted_share_of_trace": T / tail["kernel_trace"], "omitted_component_shrinkage_max": shrink,
            "truncation_bias_t2_max": shrink * float(s.bound_b) * float(s.curve_settings().tau_value)}


def bands(plan: RegressionRelease, rng: np.random.Generator, draws: int = 200, level: float = 0.95) -> dict:
    """Pointwise noise bands of beta~_k(t): quantiles over ``draws`` releases of the same data.
    They show the noise only (centred on this data set's statistics): analyst view."""
    functions = plan.sample(rng, draws)
    a = (1 - level) / 2
    return {"lower": np.quantile(functions, a, axis=0), "upper": np.quantile(functions, 1 - a, axis=0),
            "median": np.median(functions, axis=0)}


def release_record(plan: RegressionRelease, *, seed: int | None = None) -> dict:
    """Publishable record: public inputs and the guarantee only (no clipping counts)."""
    s = plan.settings
    cs = s.curve_settings()
    record = {
        "release": "regression",
        "mechanism": "gaussian",
        "privacy": plan.guarantee.privacy,
        "epsilon": s.epsilon,
        "delta": s.delta,
        "covariates": plan.labels,
        "bound_b": s.bound_b,
        "kappa": s.kappa,
        "gamma": s.gamma,
        "centre": cs.centre_value,
        "value_range": None if s.lo is None else [float(s.lo), float(s.hi)],
        "tau": cs.tau_value,
        "n": plan.n,
        "unit_of_privacy": f"person (column '{s.person_column}')" if s.person_column else "curve",
        "m": int(plan.grid_points.size),
        "n_components": int(plan.eigenvalues.size),
        "guarantee": plan.guarantee.record(),
        "expected_sq_error_t1": plan.expected_sq_error_t1,
        "expected_sq_error_t2": plan.expected_sq_error_t2,
        "data_dependent_flags": [],
        "differentially_private": True,
        **randomness_fields(seed),
        "settings": {**asdict(s), "covariates": list(parse_covariates(s.covariates))},
    }
    truncation = basis_truncation(plan)
    if truncation is not None:
        record["basis_truncation"] = truncation
    return record


def analyst_view(plan: RegressionRelease, released: np.ndarray, rng: np.random.Generator) -> dict:
    ols = plan.ols()
    band = bands(plan, rng)
    return {
        "warning": NOT_PUBLISHABLE,
        "n_clipped_curves": plan.n_clipped_curves,
        "n_clipped_covariates": plan.n_clipped_covariates,
        "covariates": plan.labels,
        "t": plan.grid_points,
        "ols": {label: ols[k] for k, label in enumerate(plan.labels)},
        "band_lower": {label: band["lower"][k] for k, label in enumerate(plan.labels)},
        "band_upper": {label: band["upper"][k] for k, label in enumerate(plan.labels)},
        "l2_distance_to_ols": {label: float(np.sqrt(((released[k] - ols[k]) ** 2) @ _weights(plan)))
                               for k, label in enumerate(plan.labels)},
    }


def _weights(plan: RegressionRelease) -> np.ndarray:
    return FunctionalData(plan.grid_points, np.zeros((1, plan.grid_points.size))).weights
