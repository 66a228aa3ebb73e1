"""Data-free starting points of the Density page: the public box and the bandwidth.

- Box: a feature that is a curve value (the value at t0, an average over [u, v], the
  maximum) cannot leave the public value range declared on the Data page, so that range is
  a public box for it; the page starts from it instead of waiting for the user to type one.
- Bandwidth: Silverman's rule h = 1.06 s n^(-1/(4+d)) for observations spread evenly over
  the box (s = width / sqrt 12, the standard deviation of a uniform law on it). It uses only
  the public box and n, like fdp_core.releases.box.default_bandwidth (h = width n^(-1/(4+d))), but is
  3.3 times narrower: that rule smooths the DTI values at one point of the tract into a
  single hump.
"""

from __future__ import annotations

import math

import numpy as np

from fdp_core.releases.box import box_widths, check_box

VALUE_FEATURES = ("value", "mean", "max")  # features in the curves' own units


def suggested_bandwidth(box, n: int) -> float:
    box = check_box(box)
    d = len(box)
    width = float(np.exp(np.mean(np.log(box_widths(box)))))  # 2-d: side of the square of the same area
    return 1.06 * width / math.sqrt(12.0) * float(n) ** (-1.0 / (4 + d))


def public_box(kinds, value_range) -> list[tuple[float, float]] | None:
    """The declared value range on every axis whose feature is a curve value, else None."""
    if value_range is None or any(k not in VALUE_FEATURES for k in kinds):
        return None
    lo, hi = (float(v) for v in value_range)
    return [(lo, hi)] * len(kinds)


def prefill_box(state, box_keys, kinds, value_range) -> bool:
    """Fill an empty box from the declared range (before the box widgets are drawn)."""
    if any(state.get(k) is not None for pair in box_keys for k in pair):
        return False
    box = public_box(kinds, value_range)
    if box is None:
        return False
    for (lo_key, hi_key), (lo, hi) in zip(box_keys, box):
        state[lo_key], state[hi_key] = lo, hi
    return True
