"""The typed guarantee a mechanism returns with its noise plan, before any noise is drawn.

Like OpenDP's privacy map, a :class:`Guarantee` answers "what does this release promise?"
from public inputs only: the privacy type, epsilon and delta, the sensitivity in use and
in which norm, its value under every bound the mechanism knows (tight and paper, exact and
paper, Ky Fan and sqrt 2...) and the mechanism's own published figures (a sigma table, the
Laplace scales, M, the Bernstein lattice, a PCA sampler's composition...). It is frozen:
nothing downstream can change a promise after the noise was calibrated to it.
:meth:`record` is the dictionary written under ``"guarantee"`` in every publishable release
record. Every kind of release returns one: means, densities, principal components,
covariances, regressions (one Guarantee per part, T1 and T2, in ``details``) and the
private parameter selection. Only privacy, epsilon and delta are common to all of them: the
exponential mechanism's utility has a sensitivity but no noise norm, and a selection's score
scale is not a sensitivity, so every other field may be left out.

>>> g = Guarantee("epsilon-DP", 1.0, 0.0, sensitivity=0.2, sensitivity_norm="l1 norm",
...               sensitivity_key="sensitivity_l1", sensitivities={"tight": 0.2, "paper": 0.4},
...               bound_label="tight", details={"M": 5})
>>> g.record()["sensitivity_l1"], g.record()["sensitivity_paper"], g.record()["M"], g.details["M"]
(0.2, 0.4, 5, 5)
>>> Guarantee("epsilon-DP", 1.0, 0.0, details={"part": g}).record()["part"]["bound_label"]
'tight'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping


@dataclass(frozen=True)
class Guarantee:
    """What one release promises (public inputs only; never anything the data determine)."""

    privacy: str  # "(epsilon, delta)-DP" | "epsilon-DP" | the mechanism's own statement
    epsilon: float
    delta: float  # 0 for pure epsilon-DP
    sensitivity: float | None = None  # the bound in use, in ``sensitivity_norm``
    sensitivity_norm: str | None = None  # None where the sensitivity is not of a noise vector (exponential mechanism)
    # The record's historical name for the sensitivity in use: sensitivity_cm, sensitivity_l1c, sensitivity_l1...
    sensitivity_key: str = "sensitivity"
    sensitivities: Mapping | None = None  # every bound -> its sensitivity, published as sensitivity_<bound>
    bound_label: str | None = None
    bound_labels: Mapping | None = None
    noise: str | None = None  # the noise law in words
    gdp_mu: float | None = None  # Gaussian noise only: Delta / sigma, the Gaussian-DP parameter
    details: Mapping = field(default_factory=dict)  # the mechanism's own published figures (a part: a Guarantee)

    def __post_init__(self):
        # Read-only views: a frozen record whose dictionaries could still be edited would not be frozen.
        for name in ("details", "sensitivities", "bound_labels"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, MappingProxyType(dict(value)))

    def sensitivity_for(self, bound: str) -> float:
        """The sensitivity under ``bound`` (e.g. "tight" or "paper")."""
        return self.sensitivities[bound]

    def record(self) -> dict:
        """The publishable dictionary (the ``"guarantee"`` field of a release record)."""
        out = {"privacy": self.privacy, "epsilon": self.epsilon, "delta": self.delta}
        if self.noise is not None:
            out["noise"] = self.noise
        if self.sensitivity_norm is not None:
            out["sensitivity_norm"] = self.sensitivity_norm
        if self.sensitivity is not None:
            out[self.sensitivity_key] = self.sensitivity
        out.update({f"sensitivity_{bound}": value for bound, value in (self.sensitivities or {}).items()})
        if self.bound_labels is not None:
            out["bound_labels"] = dict(self.bound_labels)
        if self.bound_label is not None:
            out["bound_label"] = self.bound_label
        if self.gdp_mu is not None:
            out["gdp_mu"] = self.gdp_mu
        out.update({key: value.record() if isinstance(value, Guarantee) else value
                    for key, value in self.details.items()})
        return out
