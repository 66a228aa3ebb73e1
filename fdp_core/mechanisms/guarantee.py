"""The typed guarantee a mechanism returns with its noise plan, before any noise is drawn.

Like OpenDP's privacy map, a :class:`Guarantee` answers "what does this release promise?"
from public inputs only: the privacy type, epsilon and delta, the sensitivity in use and
in which norm, both bounds (tight and paper) and the mechanism's own published figures
(a sigma table, the Laplace scales, M, the Bernstein lattice...). It is frozen: nothing
downstream can change a promise after the noise was calibrated to it. :meth:`record` is
the dictionary written under ``"guarantee"`` in every publishable release record.

>>> g = Guarantee("epsilon-DP", 1.0, 0.0, 0.2, "l1 norm", "sensitivity_l1", 0.2, 0.4,
...               bound_label="tight", details={"M": 5})
>>> g.record()["sensitivity_l1"], g.record()["M"], g.details["M"]
(0.2, 5, 5)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping


@dataclass(frozen=True)
class Guarantee:
    """What one release promises (public inputs only; never anything the data determine)."""

    privacy: str  # "(epsilon, delta)-DP" | "epsilon-DP"
    epsilon: float
    delta: float  # 0 for pure epsilon-DP
    sensitivity: float  # the bound in use, in ``sensitivity_norm``
    sensitivity_norm: str
    sensitivity_key: str  # the record's historical name for it: sensitivity_cm, sensitivity_l1c, sensitivity_l1
    sensitivity_tight: float
    sensitivity_paper: float
    bound_label: str | None = None
    bound_labels: Mapping | None = None
    noise: str | None = None  # the noise law in words
    gdp_mu: float | None = None  # Gaussian noise only: Delta / sigma, the Gaussian-DP parameter
    details: Mapping = field(default_factory=dict)  # the mechanism's own published figures

    def __post_init__(self):
        # Read-only views: a frozen record whose dictionaries could still be edited would not be frozen.
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))
        if self.bound_labels is not None:
            object.__setattr__(self, "bound_labels", MappingProxyType(dict(self.bound_labels)))

    def sensitivity_for(self, bound: str) -> float:
        """The sensitivity under ``bound`` ("tight" or "paper")."""
        return {"tight": self.sensitivity_tight, "paper": self.sensitivity_paper}[bound]

    def record(self) -> dict:
        """The publishable dictionary (the ``"guarantee"`` field of a release record)."""
        out = {"privacy": self.privacy, "epsilon": self.epsilon, "delta": self.delta}
        if self.noise is not None:
            out["noise"] = self.noise
        out.update({"sensitivity_norm": self.sensitivity_norm, self.sensitivity_key: self.sensitivity,
                    "sensitivity_tight": self.sensitivity_tight, "sensitivity_paper": self.sensitivity_paper})
        if self.bound_labels is not None:
            out["bound_labels"] = dict(self.bound_labels)
        if self.bound_label is not None:
            out["bound_label"] = self.bound_label
        if self.gdp_mu is not None:
            out["gdp_mu"] = self.gdp_mu
        out.update(self.details)
        return out
