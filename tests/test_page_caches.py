"""Work the pages share between reruns and sessions (issue 40): what is kept must be what a fresh
computation gives, and must be keyed by everything it reads."""

from dataclasses import replace

import numpy as np
import pytest

from fdp_core.data.loading import from_arrays
from fdp_core.releases.mean import MeanSettings, plan_mean_release
from fdp_ui import drafts

T = np.linspace(0, 1, 30)
CURVES = 0.5 + 0.2 * np.sin(np.pi * T) * np.random.default_rng(4).uniform(0.5, 1.5, (50, 1))


@pytest.mark.parametrize("mechanism", ["gaussian", "iclp-qr", "bernstein"])
def test_mean_plan_from_kept_sums_equals_a_fresh_plan_at_every_epsilon(mechanism):
    fd = from_arrays(T, CURVES)
    base = MeanSettings(mechanism=mechanism, value_range=(0.0, 1.0))
    for epsilon in (0.5, 1.7):
        settings = replace(base, epsilon=epsilon)
        kept, fresh = drafts.mean_plan(fd, settings), plan_mean_release(fd, settings)
        assert kept.settings == fresh.settings
        np.testing.assert_array_equal(kept.noise_scales, fresh.noise_scales)
        np.testing.assert_array_equal(kept.estimate_coefficients, fresh.estimate_coefficients)
        np.testing.assert_array_equal(kept.raw_mean, fresh.raw_mean)
        assert (kept.n, kept.tau, kept.sensitivity, kept.n_clipped) == (fresh.n, fresh.tau, fresh.sensitivity,
                                                                       fresh.n_clipped)


def test_mean_sums_are_kept_per_data_and_per_setting_they_read():
    fd = from_arrays(T, CURVES)
    settings = MeanSettings(value_range=(0.0, 1.0))
    drafts.mean_plan(fd, settings)
    calls = []
    original = drafts.mean_sums
    drafts.mean_sums = lambda *a: calls.append(1) or original(*a)
    try:
        drafts.mean_plan(fd, replace(settings, epsilon=3.0, delta=1e-6))  # epsilon, delta: the same sums
        assert calls == []
        other_data = from_arrays(T, CURVES[::-1] * 0.9)
        assert drafts.mean_plan(other_data, settings).raw_mean == pytest.approx(plan_mean_release(
            other_data, settings).raw_mean)
        drafts.mean_plan(fd, replace(settings, value_range=(0.0, 2.0)))  # a setting the sums read
        assert len(calls) == 2
    finally:
        drafts.mean_sums = original
