"""Is a release useful? One stated rule, shared by every page that states an accuracy.

A noise radius alone says nothing to a reader: 33 is small for pressures in pascals and
useless for temperatures on a declared range of 90 degrees. The verdict compares the error
with the *scale* of what is released, fixed by public inputs only:

* a mean: the width hi - lo of the declared public range (the L2 norm is taken over the
  domain rescaled to [0, 1], so an error of constant size e has norm e, directly comparable
  with the width);
* a density: the L2 norm of the uniform density on the public box (the flattest density the
  release could be);
* a covariance function: tau^2, the largest Hilbert-Schmidt norm the covariance of curves of
  L2 norm at most tau can have.

The error is the 95% L2 noise radius plus, when the analyst view knows it, the bias of the
estimator's target against the plain average (triangle inequality: 95% of releases lie within
their sum of that average). Rule (``RULE``):

    share = (noise radius + bias) / scale
    green  "useful"              share <= 10%
    amber  "rough"               10% < share <= 25%
    red    "not useful"          share > 25%
    grey   "unrated"             no public scale (no declared range for a mean)

The thresholds are conventions, stated wherever a verdict is shown; they are not part of any
privacy guarantee. For a mean, :func:`mean_verdict` also names the smallest epsilon that would
turn it green, from the Trade-offs page's target-accuracy tool
(:func:`fdp_core.explore.sweeps.epsilon_for_accuracy`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

GREEN_SHARE = 0.10
AMBER_SHARE = 0.25
LEVELS = ("green", "amber", "red", "unrated")
RULE = (f"Verdict rule: the 95% L2 noise radius plus the bias, as a share of the public scale (a mean: the declared "
        f"range's width), is green (useful) up to {GREEN_SHARE:.0%}, amber (rough) up to {AMBER_SHARE:.0%}, red "
        "(not useful at this epsilon) beyond; unrated without a public scale.")
WORDS = {"green": "useful", "amber": "rough", "red": "not useful", "unrated": "unrated"}
COLOURS = {"green": "green", "amber": "amber", "red": "red", "unrated": "grey"}
TRADEOFF_POINTER = "Trade-offs page, 'Which epsilon reaches a target accuracy?'"


@dataclass(frozen=True)
class Verdict:
    """A traffic-light reading of one release's accuracy, in plain words."""

    level: str  # one of LEVELS
    headline: str
    share: float | None  # (radius + bias) / scale
    radius: float
    bias: float | None
    scale: float | None
    scale_name: str
    target_radius: float | None = None  # the noise radius a green verdict needs (None: bias alone is too large)
    suggested_epsilon: float | None = None
    what: str = "release"
    error_name: str = "Noise radius"  # what ``radius`` measures (components: the variance they miss)

    @property
    def word(self) -> str:
        """The verdict in one or two words, as every place that carries it writes it."""
        return WORDS[self.level]

    @property
    def colour(self) -> str:
        return COLOURS[self.level]

    def record(self, basis: str) -> dict:
        """The verdict as a release record states it; ``basis`` says what it was computed from."""
        return {"level": self.level, "word": self.word, "colour": self.colour,
                "share": None if self.share is None else round(float(self.share), 6), "basis": basis, "rule": RULE}

    @property
    def useful(self) -> bool:
        return self.level == "green"

    def sentence(self) -> str:
        """The verdict, the numbers behind it and what to do next."""
        if self.scale is None:
            return (f"{self.headline} The noise radius is {self.radius:.3g}; declare a public range to compare it "
                    "with the scale of the data.")
        parts = [f"{self.headline} {self.error_name} {self.radius:.3g}"]
        if self.bias is not None:
            parts.append(f" + bias {self.bias:.3g}")
        parts.append(f" = {self.share:.0%} of {self.scale_name}, {self.scale:.3g}.")
        if self.level != "green":
            if self.target_radius is None:
                parts.append(" The bias alone exceeds the green share: more epsilon cannot fix it (less smoothing, "
                             "a wider tau or a public reference curve can).")
            elif self.suggested_epsilon is not None:
                parts.append(f" A noise radius of {self.target_radius:.3g} would be green: epsilon = "
                             f"{self.suggested_epsilon:.3g} reaches it with these settings ({TRADEOFF_POINTER}).")
            elif self.what == COMPONENTS:
                parts.append(" More epsilon, fewer components k or more persons bring the private components "
                             "closer to the best ones.")
            elif self.what == "mean":
                parts.append(f" A noise radius of {self.target_radius:.3g} would be green; see the "
                             f"{TRADEOFF_POINTER} (or more persons).")
            else:  # the noise scale falls like 1/epsilon (exactly for Laplace noise, about so for Gaussian)
                parts.append(f" A noise radius of {self.target_radius:.3g} would be green: about "
                             f"{self.radius / self.target_radius:.2g} times this epsilon, or more persons.")
        return "".join(parts)


def verdict(radius: float, scale: float | None, *, bias: float | None = None, scale_name: str = "the public scale",
            what: str = "release", error_name: str = "Noise radius") -> Verdict:
    """The verdict of an error ``radius`` (+ ``bias``) against a public ``scale`` (see the module's rule)."""
    radius = float(radius)
    total = radius + (float(bias) if bias is not None else 0.0)
    if scale is None or not (float(scale) > 0 and math.isfinite(float(scale))):
        return Verdict("unrated", f"Accuracy of this {what} unrated (no public scale).", None, radius, bias, None,
                       scale_name, what=what, error_name=error_name)
    scale = float(scale)
    share = total / scale
    if share <= GREEN_SHARE:
        level, headline = "green", f"Useful: this {what} is accurate at this epsilon."
    elif share <= AMBER_SHARE:
        level, headline = "amber", f"Rough: this {what} is only roughly accurate at this epsilon."
    else:
        level, headline = "red", f"Not useful at this epsilon: the noise can hide the shape of this {what}."
    target = GREEN_SHARE * scale - (float(bias) if bias is not None else 0.0)
    return Verdict(level, headline, share, radius, bias, scale, scale_name, target if target > 0 else None,
                   what=what, error_name=error_name)


def mean_scale(settings) -> float | None:
    """A mean's public scale: the width of the range it is projected onto (None without one)."""
    from ..releases.postprocess import mean_range  # lazy: the registry and mechanisms (21 modules) for one verdict

    bounds = mean_range(settings)
    return None if bounds is None else bounds[1] - bounds[0]


def mean_verdict(plan, fd=None, *, with_bias: bool = True) -> Verdict:
    """The verdict of a planned mean release; with ``fd``, the smallest epsilon that would be green.

    ``with_bias`` adds the analyst-view bias (computed from the data: for the screen, never a
    publishable file)."""
    bias = plan.bias() if with_bias else None
    v = verdict(plan.l2_error_radius(0.95), mean_scale(plan.settings), bias=bias,
                scale_name="the declared range's width", what="mean")
    if fd is None or v.level in ("green", "unrated") or v.target_radius is None:
        return v
    from .sweeps import epsilon_for_accuracy  # lazy: pandas and the sweeps (32 modules), only for a red verdict's hint

    try:
        found = epsilon_for_accuracy(fd, plan.settings, "l2_radius_95", v.target_radius,
                                     mechanisms=(plan.settings.mechanism,))
    except Exception:  # an unreachable target is not an error of the page: the pointer stays
        return v
    eps = found[0].epsilon if found else None
    return replace(v, suggested_epsilon=eps)


def density_scale(weights) -> float:
    """The L2 norm of the uniform density on the box under the grid's quadrature weights."""
    return 1.0 / math.sqrt(float(np.sum(np.asarray(weights, dtype=float))))


def density_verdict(release, radius: float) -> Verdict:
    """The verdict of a density release's 95% L2 noise radius against the uniform density's norm."""
    return verdict(radius, density_scale(release.weights), scale_name="the uniform density's L2 norm",
                   what="density")


def covariance_verdict(radius: float, tau: float) -> Verdict:
    """The verdict of a covariance function's Hilbert-Schmidt noise radius against tau^2."""
    return verdict(radius, float(tau) ** 2, scale_name="tau^2 (the largest possible covariance size)",
                   what="covariance")


COMPONENTS = "release of components"


def components_verdict(variance_ratios) -> Verdict:
    """The verdict of private components: the share of the best k components' variance they miss
    (1 - the variance ratio, averaged over the page's draws), under the same thresholds. Analyst
    view: the variance ratio reads the raw data."""
    missed = 1.0 - float(np.mean(np.asarray(variance_ratios, dtype=float)))
    return verdict(max(missed, 0.0), 1.0, scale_name="the variance the best k components capture",
                   what=COMPONENTS, error_name="Variance missed")


def sparse_mean_verdict(l2_distances, value_range) -> Verdict:
    """The verdict of a sparse mean: the 95th percentile of the L2 distances of preview draws from the
    estimate without noise, against the declared range's width. Analyst view: the noised normal
    equations are solved with the data's A, so the distances depend on the data."""
    radius = float(np.quantile(np.asarray(l2_distances, dtype=float), 0.95))
    scale = None if value_range is None else float(value_range[1] - value_range[0])
    return verdict(radius, scale, scale_name="the declared range's width", what="sparse mean")


END_SHARE = 0.10  # the outer tenth of the domain at each end
END_BIAS_SHARE = 0.02  # of the range's width


def end_shrinkage_note(plan) -> str | None:
    """A note when the estimator's target is pulled towards a constant centre at the ends of the domain.

    Penalised estimators shrink towards the centre they subtract; with the range's midpoint as
    the centre, a curve far from it at an end (growth at age 1 and 18) is biased there. Returned
    when no reference curve is declared, the largest pointwise bias lies in the outer tenth of the
    domain, exceeds 2% of the range's width and points towards the centre. Analyst view (the bias
    is computed from the data)."""
    s = plan.settings
    if plan.raw_mean is None or s.value_range is None or s.reference is not None or not np.any(plan.offset):
        return None
    diff = plan.estimate - plan.raw_mean
    m = diff.size
    k = max(1, int(math.ceil(END_SHARE * m)))
    worst = int(np.argmax(np.abs(diff)))
    width = float(s.value_range[1] - s.value_range[0])
    towards_centre = np.sign(diff[worst]) == np.sign(plan.offset[worst] - plan.raw_mean[worst])
    if not (worst < k or worst >= m - k) or abs(diff[worst]) <= END_BIAS_SHARE * width or not towards_centre:
        return None
    t = float(plan.grid_points[worst])
    return (f"The target is pulled towards the range's centre ({plan.offset[worst]:.4g}) at the end of the domain: "
            f"at t = {t:.4g} it is {plan.estimate[worst]:.4g} where the raw mean is {plan.raw_mean[worst]:.4g} "
            f"(bias {diff[worst]:+.3g}). Smoothing shrinks towards the centre it subtracts; a public reference curve "
            "(e.g. a published norm such as a growth standard's medians) as the centre removes most of this bias.")
