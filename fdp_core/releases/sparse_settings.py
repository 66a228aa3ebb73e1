"""The public settings of a sparse mean release (METHODS.md section 20), apart from the release.

Split from fdp_core/releases/sparse.py so that ``release mean`` can offer the sparse route's
options (generated from these fields) without importing the route itself, its data reader and
its smoother (issue 42: the dense route's command line near ``import numpy``). sparse.py
re-exports every name here.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, replace

import numpy as np

from .. import limits
from ..errors import ParameterError
from ..kernels import KERNEL_NAMES, matern_nu
from ..limits import MAX_OUTPUT_POINTS, MAX_TAU, check_at_most
from ..mechanisms.calibration import CALIBRATIONS
from ..mechanisms.families import noise_family
from ..params import (check_choice, check_delta, check_epsilon, check_eta, check_finite, check_integer,
                     check_open_unit, check_positive)
from ..data.public_grid import parse_domain
from ..settings_fields import CALIBRATION, DELTA, EPSILON, ETA, KERNEL, NU, RHO, VALUE_RANGE, Control, documented_settings, option

NOISES = ("gaussian", "laplace")
MAX_BASIS = limits.MAX_SPARSE_BASIS


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
