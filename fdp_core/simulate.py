"""Simulation designs from the literature (METHODS.md, "Simulation designs to ship").

Each design is a function returning a FunctionalData (and flags where the design itself
looks at the data). :data:`SIMULATIONS` lists them with their exposed parameters so the
app can build its menu without knowing each design.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .data import FunctionalData, from_arrays
from .kernels import eigenbasis


@dataclass(frozen=True)
class Parameter:
    name: str
    label: str
    default: float
    minimum: float
    maximum: float
    integer: bool = False
    help: str = ""


def kl_design(n: int = 25, m: int = 100, p: float = 4.0, rho: float = 0.001, u_range: float = 0.4,
              seed: int = 0) -> FunctionalData:
    """Mirshani et al. (2019): X_i = mu + sum_j j^(-p/2) U_ij v_j, U_ij ~ U(-u_range, u_range).

    v_j are the eigenfunctions of the Gaussian kernel exp(-d^2/rho) on m equally spaced points
    of [0, 1], j running over the numerically non-zero eigenvalues; mu(t) = 0.1 sin(pi t).
    """
    rng = np.random.default_rng(seed)
    grid = np.linspace(0.0, 1.0, int(m))
    basis = eigenbasis("gaussian", rho, grid)
    j = np.arange(1, basis.n_components + 1)
    scores = rng.uniform(-u_range, u_range, (int(n), j.size)) * j ** (-p / 2.0)
    values = 0.1 * np.sin(np.pi * grid) + basis.synthesize(scores)
    meta = pd.DataFrame({"id": [f"sim{i + 1:03d}" for i in range(int(n))]})
    return from_arrays(grid, values, name=f"KL design (n={int(n)}, seed={seed})", metadata=meta)




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
}


def simulate(key: str, **params) -> FunctionalData:
    design = SIMULATIONS[key]
    kwargs = {}
    for spec in design.parameters:
        value = params.get(spec.name, spec.default)
        kwargs[spec.name] = int(value) if spec.integer else float(value)
    return design.make(**kwargs)
