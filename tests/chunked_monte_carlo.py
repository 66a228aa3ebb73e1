"""The check shared by the Monte Carlo radii drawn in chunks (issue 40: covariance, density).

A radius drawn chunk by chunk must equal the one from every draw held at once (the same random
stream, so the same quantile to rounding) while its peak memory stays a few chunks.
"""

import tracemalloc

import pytest


def chunked_equals_unchunked(radius_of, expected: float, peak_limit: float) -> float:
    """Run ``radius_of()`` (the chunked Monte Carlo) under tracemalloc; assert it equals ``expected``
    (computed by the caller from all the draws at once, freed before this call) to 1e-12 and that its
    peak traced memory is below ``peak_limit`` bytes. Returns the radius for the caller's own checks."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        radius = radius_of()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert radius == pytest.approx(expected, rel=1e-12)
    assert peak < peak_limit, (peak, peak_limit)
    return radius
