"""Choosing smoothing parameters (METHODS.md section 6): PSS, privacy-safe selection.

Plain functions; PSS never looks at the data, so it costs no privacy budget, but it uses
the sample size n: n must itself be public (say so wherever it is offered).
"""

from __future__ import annotations

import math

from .errors import ParameterError
from .kernels import KERNEL_NAMES, matern_nu
from .params import check_choice, check_epsilon

PSS_GAUSSIAN_ETA = 1.5


def eigenvalue_decay_rate(kernel: str, nu: float | None = None) -> float | None:
    """beta with lambda_j ~ j^(-beta): 2 nu + 1 for a Matern kernel in 1-d; None for the
    Gaussian kernel, whose eigenvalues decay faster than any power."""
    check_choice("kernel", kernel, KERNEL_NAMES)
    nu = matern_nu(kernel, nu)
    return None if nu is None else 2.0 * nu + 1.0


def pss_defaults(kernel: str, nu: float | None, n: int, epsilon: float) -> tuple[float, float]:
    """Privacy-safe defaults (eta, psi) for the penalised means (Lin & Reimherr).

    Matern family (decay beta = 2 nu + 1): eta = 1 + 2 / beta and
    psi = (n eps^2)^(-eta beta / (beta + 2)); for that eta the exponent is exactly -1, so
    psi = 1 / (n eps^2). Gaussian kernel: eta = 1.5 and psi = 1 / (n eps^2).
    ``n`` must be public (the size of the data set is then part of what is disclosed).
    """
    epsilon = check_epsilon(epsilon)
    if int(n) != n or n < 1:
        raise ParameterError(f"n must be a positive integer, got {n!r}")
    beta = eigenvalue_decay_rate(kernel, nu)
    if beta is None:
        return PSS_GAUSSIAN_ETA, 1.0 / (n * epsilon**2)
    eta = 1.0 + 2.0 / beta
    psi = math.exp(-eta * beta / (beta + 2.0) * math.log(n * epsilon**2))
    return eta, psi
