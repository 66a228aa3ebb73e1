"""Simulation designs from the literature (METHODS.md, "Simulation designs to ship").

Each design is a function returning a FunctionalData (and flags where the design itself
looks at the data). :data:`SIMULATIONS` lists them with their exposed parameters so the
app can build its menu without knowing each design.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from functools import lru_cache

from .loading import FunctionalData, from_arrays
from ..kernels import eigenbasis, kernel_function, kernel_matrix
from ..threads import small_problem
from .sparse_data import from_observations


@dataclass(frozen=True)
class Parameter:
    name: str
    label: str
    default: float
    minimum: float
    maximum: float
    integer: bool = False
    help: str = ""


KL_RHO, KL_U_RANGE = 0.001, 0.4  # the KL design's kernel range and score range (Mirshani et al.)


def kl_design(n: int = 25, m: int = 100, p: float = 4.0, rho: float = KL_RHO, u_range: float = KL_U_RANGE,
              seed: int = 0) -> FunctionalData:
    """Mirshani et al. (2019): X_i = mu + sum_j j^(-p/2) U_ij v_j, U_ij ~ U(-u_range, u_range).

    v_j are the eigenfunctions of the Gaussian kernel exp(-d^2/rho) on m equally spaced points
    of [0, 1], j running over the numerically non-zero eigenvalues; mu(t) = 0.1 sin(pi t).
    """
    import pandas as pd  # lazy: simulations only; the app's first page (the built-in example) starts without pandas

    rng = np.random.default_rng(seed)
    grid = np.linspace(0.0, 1.0, int(m))
    basis = eigenbasis("gaussian", rho, grid)
    j = np.arange(1, basis.n_components + 1)
    scores = rng.uniform(-u_range, u_range, (int(n), j.size)) * j ** (-p / 2.0)
    values = 0.1 * np.sin(np.pi * grid) + basis.synthesize(scores)
    meta = pd.DataFrame({"id": [f"sim{i + 1:03d}" for i in range(int(n))]})
    return from_arrays(grid, values, name=f"KL design (n={int(n)}, seed={seed})", metadata=meta)


# --------------------------------------------------------------------------- ICLP designs (Lin & Reimherr)
#
# X_i = mu_0 + e_i with e_i a centred Gaussian process with an RBF covariance; four true
# means S1-S4. The paper's ICLP kernel is Matern nu = 1.5 (matern32 here) with rho = 0.1.

ICLP_KERNEL, ICLP_NU, ICLP_RHO = "matern32", 1.5, 0.1
S4_N_TERMS, S4_WEIGHT_SEED = 25, 2024
_S4_REFERENCE_POINTS = 401


def _normal_density(t, mean: float, sd: float) -> np.ndarray:
    # scipy.stats takes ~0.4-0.9 s to import and is needed only here: imported late so that starting the app or
    # the CLI does not pay for it.
    from scipy import stats

    return stats.norm.pdf(np.asarray(t, dtype=float), mean, sd)


def iclp_mean_s1(t) -> np.ndarray:
    """S1: 10 t exp(-t)."""
    t = np.asarray(t, dtype=float)
    return 10.0 * t * np.exp(-t)


def iclp_mean_s2(t) -> np.ndarray:
    """S2: 0.3 f(0.3, 0.05) + 0.7 f(0.8, 0.05), f(a, b) the normal density with mean a, sd b."""
    return 0.3 * _normal_density(t, 0.3, 0.05) + 0.7 * _normal_density(t, 0.8, 0.05)


def iclp_mean_s3(t) -> np.ndarray:
    """S3: 0.2 (f(0, .03) + f(.2, .05) + f(.5, .05) - f(.75, .03) + f(1, .03))."""
    f = _normal_density
    return 0.2 * (f(t, 0.0, 0.03) + f(t, 0.2, 0.05) + f(t, 0.5, 0.05) - f(t, 0.75, 0.03) + f(t, 1.0, 0.03))


@lru_cache(maxsize=1)
def _s4_reference():
    """Eigenpairs of the ICLP kernel on a fine reference grid of [0, 1], signs fixed.

    eigh returns eigenvectors up to sign; each is flipped so that its first clearly
    non-zero value is positive, making the true mean the same on every platform.
    """
    grid = np.linspace(0.0, 1.0, _S4_REFERENCE_POINTS)
    basis = eigenbasis(ICLP_KERNEL, ICLP_RHO, grid)
    phi = np.array(basis.eigenfunctions[:, :S4_N_TERMS])
    for col in phi.T:
        first = col[np.argmax(np.abs(col) > 1e-6 * np.abs(col).max())]
        col *= np.sign(first)
    weights = np.random.default_rng(S4_WEIGHT_SEED).uniform(-1.0, 1.0, S4_N_TERMS)
    return grid, basis.weights, np.array(basis.eigenvalues[:S4_N_TERMS]), phi, weights


def iclp_mean_s4(t) -> np.ndarray:
    """S4: sum of the first 25 eigenfunctions of the ICLP kernel with Uniform(-1, 1) weights.

    The weights are drawn once with a fixed seed (the true mean must not change with the
    data seed). Eigenfunctions at any t by the Nystrom extension
    phi_l(t) = (1 / lambda_l) sum_j w_j k(t, s_j) phi_l(s_j) from the reference grid s.
    """
    grid, w, lam, phi, weights = _s4_reference()
    t = np.asarray(t, dtype=float)
    k = kernel_function(ICLP_KERNEL, t[..., None] - grid, ICLP_RHO)
    return (k * w) @ (phi @ (weights / lam))


def gp_noise(rng: np.random.Generator, n: int, grid: np.ndarray, sd: float, rho: float) -> np.ndarray:
    """n centred GP paths with covariance sd^2 exp(-(s - t)^2 / rho) on ``grid`` (shape (n, m)).

    Sampled through the eigendecomposition of the covariance matrix, negative rounding
    eigenvalues set to 0 (a Cholesky factor fails on this numerically singular matrix).
    """
    cov = sd**2 * kernel_matrix("gaussian", grid, grid, rho)
    with small_problem(grid.size):
        lam, U = np.linalg.eigh((cov + cov.T) / 2.0)
    root = U * np.sqrt(np.maximum(lam, 0.0))
    return rng.standard_normal((int(n), grid.size)) @ root.T


def _iclp_design(mean, label):
    def make(n: int = 100, m: int = 100, noise_sd: float = 0.5, noise_rho: float = 0.1,
             seed: int = 0) -> FunctionalData:
        rng = np.random.default_rng(seed)
        grid = np.linspace(0.0, 1.0, int(m))
        values = mean(grid) + gp_noise(rng, n, grid, noise_sd, noise_rho)
        import pandas as pd  # lazy: simulations only; the app's first page (the built-in example) starts without pandas

        meta = pd.DataFrame({"id": [f"sim{i + 1:03d}" for i in range(int(n))]})
        return from_arrays(grid, values, name=f"{label} (n={int(n)}, seed={seed})", metadata=meta)

    make.__doc__ = (f"Lin & Reimherr design {label}: X_i = mu_0 + e_i on m equally spaced points of [0, 1], "
                    "e_i a centred GP with covariance noise_sd^2 exp(-(s - t)^2 / noise_rho).")
    return make


def _iclp_parameters():
    return (Parameter("n", "curves N", 100, 2, 20000, True),
            Parameter("m", "grid points", 100, 10, 1000, True),
            Parameter("noise_sd", "GP noise sd", 0.5, 1e-3, 10.0,
                      help="standard deviation of the centred Gaussian-process noise e_i(t)"),
            Parameter("noise_rho", "GP noise range", 0.1, 1e-4, 10.0,
                      help="range of the noise's RBF covariance exp(-(s - t)^2 / rho)"),
            Parameter("seed", "seed", 0, 0, 10**6, True))


_ICLP_NOTE = ("X_i = mu_0 + e_i, e_i a centred GP with RBF covariance noise_sd^2 exp(-(s - t)^2 / noise_rho) "
              "(noise defaults are ours). Lin & Reimherr use the ICLP kernel Matern nu = 1.5 (matern32), "
              "rho = 0.1 for the pure-DP mechanisms.")


@dataclass(frozen=True)
class Design:
    key: str
    label: str
    make: object
    parameters: tuple
    true_mean: object = None  # callable t -> mu(t) when the design has a known mean
    description: str = ""


SIMULATIONS = {
    "kl": Design(
        "kl", "KL design (Mirshani et al. 2019)", kl_design,
        (Parameter("n", "curves N", 25, 2, 20000, True),
         Parameter("m", "grid points", 100, 10, 1000, True),
         Parameter("p", "decay p", 4.0, 1.0, 8.0, help="score sd decays as j^(-p/2)"),
         Parameter("seed", "seed", 0, 0, 10**6, True)),
        true_mean=lambda t: 0.1 * np.sin(np.pi * np.asarray(t)),
        description="X_i = 0.1 sin(pi t) + sum_j j^(-p/2) U_ij v_j(t), U ~ Uniform(-0.4, 0.4), "
                    "v_j eigenfunctions of the Gaussian kernel with rho = 0.001."),
    "s1": Design("s1", "ICLP S1: 10 t exp(-t) (Lin & Reimherr)", _iclp_design(iclp_mean_s1, "S1"),
                 _iclp_parameters(), true_mean=iclp_mean_s1, description="mu_0(t) = 10 t exp(-t). " + _ICLP_NOTE),
    "s2": Design("s2", "ICLP S2: two bumps (Lin & Reimherr)", _iclp_design(iclp_mean_s2, "S2"),
                 _iclp_parameters(), true_mean=iclp_mean_s2,
                 description="mu_0 = 0.3 f(0.3, 0.05) + 0.7 f(0.8, 0.05), f(a, b) the normal density with mean a "
                             "and sd b. " + _ICLP_NOTE),
    "s3": Design("s3", "ICLP S3: five spikes (Lin & Reimherr)", _iclp_design(iclp_mean_s3, "S3"),
                 _iclp_parameters(), true_mean=iclp_mean_s3,
                 description="mu_0 = 0.2 (f(0, .03) + f(.2, .05) + f(.5, .05) - f(.75, .03) + f(1, .03)), f the "
                             "normal density. " + _ICLP_NOTE),
    "s4": Design("s4", "ICLP S4: 25 eigenfunctions (Lin & Reimherr)", _iclp_design(iclp_mean_s4, "S4"),
                 _iclp_parameters(), true_mean=iclp_mean_s4,
                 description=f"mu_0 = sum of the first {S4_N_TERMS} eigenfunctions of the ICLP kernel (Matern "
                             f"nu = 1.5, rho = 0.1) with Uniform(-1, 1) weights drawn once (seed "
                             f"{S4_WEIGHT_SEED}). " + _ICLP_NOTE),
}


# A design's public value range: computed from its parameters alone (never from the draws), so
# the app may pre-fill it as a public fact. KL: a sure bound, |mu| + u_range sum_j j^(-p/2) |v_j(t)|
# at its largest over the grid. ICLP designs (Gaussian noise, unbounded): the true mean's extremes
# widened by GP_RANGE_SDS noise standard deviations, a point outside has probability below 1e-6.
GP_RANGE_SDS = 5.0


def design_value_range(key: str, **params) -> tuple[tuple[float, float], str]:
    """(lo, hi) and how it follows from the design's public description (no data are read)."""
    design = SIMULATIONS[key]
    values = {spec.name: params.get(spec.name, spec.default) for spec in design.parameters}
    grid = np.linspace(0.0, 1.0, int(values["m"]))
    if key == "kl":
        basis = eigenbasis("gaussian", KL_RHO, grid)
        j = np.arange(1, basis.n_components + 1)
        spread = KL_U_RANGE * np.abs(basis.eigenfunctions) @ (j ** (-float(values["p"]) / 2.0))
        bound = float(np.max(np.abs(0.1 * np.sin(np.pi * grid)) + spread))
        return (-bound, bound), ("the KL design's sure bound: |0.1 sin(pi t)| + 0.4 sum_j j^(-p/2) |v_j(t)| at its "
                                 "largest")
    mean = np.asarray(design.true_mean(grid), dtype=float)
    sd = float(values["noise_sd"])
    return ((float(mean.min()) - GP_RANGE_SDS * sd, float(mean.max()) + GP_RANGE_SDS * sd),
            f"the design's true mean widened by {GP_RANGE_SDS:g} noise standard deviations ({GP_RANGE_SDS:g} x "
            f"{sd:g})")


def simulate(key: str, **params) -> FunctionalData:
    """Curves from one of the literature's public simulation designs (METHODS.md, "Simulation designs").

    Parameters
    ----------
    key : str
        The design: ``"kl"`` (Mirshani et al.'s Karhunen-Loeve design) or ``"s1"`` .. ``"s4"``
        (Lin & Reimherr's ICLP designs); :data:`SIMULATIONS` lists them with their parameters.
    **params
        The design's parameters (``n``, ``m``, ``seed``, ...); a missing one takes its default.

    Returns
    -------
    FunctionalData
        ``n`` curves on ``m`` points of [0, 1].

    Examples
    --------
    >>> fd = simulate("kl", n=50, m=40, seed=1)
    >>> fd.data_matrix.shape
    (50, 40)
    """
    design = SIMULATIONS[key]
    kwargs = {}
    for spec in design.parameters:
        value = params.get(spec.name, spec.default)
        kwargs[spec.name] = int(value) if spec.integer else float(value)
    return design.make(**kwargs)


# --------------------------------------------------------------------------- density examples (METHODS.md 4)

# Hall, Rinaldo & Wasserman (2013)'s KDE example and the settings of their paper: the
# Gaussian-process mechanism with their sqrt 2 bound and the classical calibration.
HALL_EXAMPLE = {"n": 100, "centers": (0.3, 0.7), "sd": 0.1, "bandwidth": 0.1, "epsilon": 1.0, "delta": 0.1,
                "grid_size": 1000, "box": ((0.0, 1.0),), "mechanism": "gaussian", "bound": "paper",
                "calibration": "classical"}


def hall_mixture_points(n: int = 100, *, centers=(0.3, 0.7), sd: float = 0.1, seed: int = 0) -> np.ndarray:
    """Hall et al.'s KDE example: an equal mixture of N(0.3, sd^2) and N(0.7, sd^2), shape (n,).

    Use with :data:`HALL_EXAMPLE` (h = 0.1, epsilon = 1, delta = 0.1, 1000-point grid on [0, 1]).
    """
    rng = np.random.default_rng(seed)
    component = rng.integers(0, len(centers), int(n))
    return np.asarray(centers, dtype=float)[component] + sd * rng.standard_normal(int(n))


def mixture_2d_points(n: int = 500, *, seed: int = 0) -> np.ndarray:
    """2-d example on [0, 1]^2: 0.6 N((0.3, 0.3), 0.1^2 I) + 0.4 N((0.7, 0.65), diag(0.12^2, 0.08^2)), (n, 2)."""
    rng = np.random.default_rng(seed)
    first = rng.random(int(n)) < 0.6
    means = np.where(first[:, None], [0.3, 0.3], [0.7, 0.65])
    sds = np.where(first[:, None], [0.1, 0.1], [0.12, 0.08])
    return means + sds * rng.standard_normal((int(n), 2))


def mixture_density(x, *, centers=(0.3, 0.7), sd: float = 0.1) -> np.ndarray:
    """True density of :func:`hall_mixture_points` (for error-vs-truth curves).

    >>> round(float(mixture_density(0.3)), 4)
    1.9954
    """
    x = np.asarray(x, dtype=float)
    z = (x[..., None] - np.asarray(centers)) / sd
    return np.exp(-0.5 * z**2).mean(axis=-1) / (sd * math.sqrt(2.0 * math.pi))


# --------------------------------------------------------------------------- sparse curves (METHODS.md 20)

SPARSE_EXAMPLE = {"n": 500, "visits": (2, 10), "noise_sd": 0.1, "seed": 20, "domain": (0.0, 1.0),
                  "value_range": (-1.0, 2.0)}


def sparse_true_mean(t) -> np.ndarray:
    """The known mean of the sparse design: 0.4 + 0.5 sin(pi t) + 0.2 cos(3 pi t) on [0, 1]."""
    t = np.asarray(t, dtype=float)
    return 0.4 + 0.5 * np.sin(np.pi * t) + 0.2 * np.cos(3.0 * np.pi * t)


def sparse_design(n: int = 500, *, visits=(2, 10), noise_sd: float = 0.1, seed: int = 20):
    """A sparse design: person i has m_i ~ Uniform{visits} visits at independent Uniform(0, 1) times.

    Y_ij = mu(t_ij) + xi_i1 sqrt(2) cos(pi t_ij) + xi_i2 sqrt(2) sin(pi t_ij) + e_ij, with
    xi_i1 ~ N(0, 0.3^2), xi_i2 ~ N(0, 0.2^2) (each person's own smooth deviation) and e_ij ~ N(0, noise_sd^2);
    mu = :func:`sparse_true_mean`. Returns a SparseData (ids p00001, ...).
    """

    rng = np.random.default_rng(seed)
    m = rng.integers(int(visits[0]), int(visits[1]) + 1, size=int(n))
    person = np.repeat(np.arange(int(n)), m)
    t = rng.uniform(0.0, 1.0, person.size)
    xi = rng.normal(0.0, 1.0, (int(n), 2)) * np.array([0.3, 0.2])
    y = (sparse_true_mean(t) + np.sqrt(2.0) * (xi[person, 0] * np.cos(np.pi * t) + xi[person, 1] * np.sin(np.pi * t))
         + rng.normal(0.0, noise_sd, person.size))
    ids = np.array([f"p{i + 1:05d}" for i in range(int(n))], dtype=object)[person]
    return from_observations(ids, np.round(t, 6), np.round(y, 6), name="sparse design")
