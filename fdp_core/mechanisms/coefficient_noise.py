"""What a mean mechanism hands back: a typed, frozen plan of the noise on the estimate's coefficients.

Every mean mechanism of METHODS.md 2-3 releases sum_l (c_l + noise_l) b_l(t). Its noise
function (gaussian.py, truncated_gaussian.py, iclp.py, frl.py, bernstein.py) returns one
:class:`CoefficientNoise` with named fields instead of a tuple each caller unpacks by
position; the mean registry (fdp_core/registry/mean.py) reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .guarantee import Guarantee


@dataclass(frozen=True)
class CoefficientNoise:
    """The estimate's coefficients, the independent noise on each and the guarantee it gives."""

    estimate_coefficients: np.ndarray = field(repr=False)  # NON-PRIVATE: the estimator's coefficients
    noise_scales: np.ndarray = field(repr=False)  # sd (Gaussian) or Laplace scale b_l, per coefficient
    sensitivity: float  # the sensitivity in use (the bound the settings chose)
    guarantee: Guarantee = field(repr=False)
    sigma: float | None = None  # Gaussian: the calibrated sigma (scales are sigma times a fixed profile)
    # The basis on the grid when the mechanism brings its own (Bernstein's polynomials); None: the
    # kernel eigenbasis the release planned with.
    synthesis: np.ndarray | None = field(default=None, repr=False)
    n_clipped: int | None = None  # NON-PRIVATE: Bernstein from raw values, curves clipped to [lo, hi]
