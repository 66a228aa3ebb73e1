"""Illustrative privacy settings by harm level, for people who do not know where to start.

Plain data. The numbers are in the range seen in published deployments and the
literature, not a recommendation for any particular release: the right budget depends
on the data, the population, what else is released and the law that applies.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ParameterError

DISCLAIMER = "Illustrative only — not legal guidance."


@dataclass(frozen=True)
class Preset:
    name: str
    harm_level: str
    epsilon: float  # total budget for the session
    delta: float  # total delta; pure-DP mechanisms (delta = 0) spend none of it
    description: str


PRESETS: tuple[Preset, ...] = (
    Preset(
        name="Low harm / public statistics",
        harm_level="low",
        epsilon=2.0,
        delta=1e-5,
        description=("Aggregate curves whose disclosure would cause little harm (e.g. average growth "
                     "curves of a large, non-sensitive cohort). Visible noise is kept small; an "
                     "adversary's edge over guessing is moderate."),
    ),
    Preset(
        name="Moderate",
        harm_level="moderate",
        epsilon=1.0,
        delta=1e-6,
        description=("Personal but not especially sensitive measurements. epsilon = 1 is the common "
                     "reference point in the literature; delta well below 1/n."),
    ),
    Preset(
        name="High harm / health data",
        harm_level="high",
        epsilon=0.3,
        delta=1e-7,
        description=("Health, imaging or other data whose disclosure could harm the person (e.g. brain "
                     "tract profiles). Strong protection; expect visibly noisier curves and prefer "
                     "fewer, well-chosen releases."),
    ),
    Preset(
        name="Classroom demo (literature settings)",
        harm_level="teaching",
        epsilon=1.0,
        delta=0.1,
        description=("epsilon = 1, delta = 0.1 as in the simulations of Hall et al. (2013) and Mirshani "
                     "et al. (2019), to reproduce their figures. delta = 0.1 is far too large for a real "
                     "release: never publish with it."),
    ),
)


def preset(name: str) -> Preset:
    """Look a preset up by its name (as shown in PRESETS)."""
    for p in PRESETS:
        if p.name == name:
            return p
    raise ParameterError(f"unknown preset {name!r}; choose one of: {', '.join(p.name for p in PRESETS)}")
