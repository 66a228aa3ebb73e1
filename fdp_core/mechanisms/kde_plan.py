"""What a density mechanism hands back: the estimate on the grid, its noise law and its guarantee.

Both density mechanisms (hall_kde.py, iclp_kde.py) return a :class:`KdeNoisePlan`;
``fdp_core.releases.kde.plan_kde_release`` adds the fields every density release shares (mechanism,
label, bound label, box, grid, n) to its :class:`~fdp_core.mechanisms.guarantee.Guarantee`
and wraps it into a ``KdeRelease``. The noise object
(``noise``) is the mechanism's own law on the grid; the app, the CLI and the commit use only
its common methods: ``draw(rng, size)`` (previews), ``scales`` (independent noise scales of
the coefficients the commit releases) and ``synthesize(coefficients)`` (grid values).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .guarantee import Guarantee


@dataclass(frozen=True)
class KdeNoisePlan:
    """A planned density, everything but the draw (NON-PRIVATE: ``density`` and ``coefficients``)."""

    box: tuple  # checked public box
    grids: tuple  # per-axis grid in box coordinates
    weights: np.ndarray = field(repr=False)  # trapezoid weights in box coordinates, grid-shaped
    n: int
    n_clipped_box: int
    bound: str  # the sensitivity bound in use ("exact" | "paper")
    density: np.ndarray = field(repr=False)  # (G,) or (G1, G2); NON-PRIVATE
    noise: object = field(repr=False)
    expected_sq_l2_error: float
    guarantee: Guarantee = field(repr=False)  # epsilon, delta, both bounds' sensitivities, the noise law
    sigma: float | None = None
    laplace_scales: np.ndarray | None = field(default=None, repr=False)
    bandwidth: float | None = None
    data_dependent_flags: tuple = ()
    coefficients: np.ndarray | None = field(default=None, repr=False)  # NON-PRIVATE
    iclp_axis: object = field(default=None, repr=False)

    @property
    def sensitivity(self) -> float:
        return self.guarantee.sensitivity
