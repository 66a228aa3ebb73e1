"""Plan once (issue 27): settings validated once at the boundary, one analytic bisection per plan,
mechanisms returning a typed frozen plan.

Calls are counted with a profile hook on the functions' code objects, so every binding of the
name (``from ..params import check_epsilon`` in any module) is seen.
"""

from __future__ import annotations

import collections
import dataclasses
import sys

import numpy as np
import pytest

from fdp_core.budget.accounting import Ledger
from fdp_core.data.loading import from_arrays
from fdp_core.errors import ParameterError
from fdp_core.mechanisms import calibration
from fdp_core.mechanisms.coefficient_noise import CoefficientNoise
from fdp_core.mechanisms.gaussian import gaussian_mean_noise
from fdp_core.params import check_epsilon, is_validated
from fdp_core.publish import export
from fdp_core.registry import mean_mechanism
from fdp_core.releases.mean import MEAN_MECHANISMS, MeanSettings, plan_mean_release

GRID = np.linspace(0, 1, 25)
EXTRA = {"iclp-qr": {"eta": 2.0}, "frl": {"M": 5}, "bernstein": {"K": 8, "lo": -2.0, "hi": 2.0},
         "truncated-gaussian": {"M": 5}}


def _data():
    rng = np.random.default_rng(3)
    return from_arrays(GRID, np.sin(np.pi * GRID)[None, :] * rng.normal(size=(40, 1)) + 0.1 * rng.normal(size=(40, 25)))


def _settings(mechanism: str) -> MeanSettings:
    return MeanSettings(mechanism=mechanism, kernel="matern52", rho=0.2, epsilon=1.0, delta=1e-5, tau=1.0,
                        **EXTRA.get(mechanism, {}))


def _uses_analytic(mechanism: str) -> bool:
    """The Gaussian mechanisms (analytic calibration by default) bisect; the Laplace ones do not."""
    return mean_mechanism(mechanism).uses_delta


def _count(call) -> collections.Counter:
    """Calls of check_epsilon and of the analytic bisection while ``call()`` runs (the cache emptied first)."""
    names = {check_epsilon.__code__: "validations", calibration._analytic_log_unit.__wrapped__.__code__: "bisections"}
    counts = collections.Counter()

    def hook(frame, event, arg):
        if event == "call" and frame.f_code in names:
            counts[names[frame.f_code]] += 1

    calibration._analytic_log_unit.cache_clear()
    sys.setprofile(hook)
    try:
        call()
    finally:
        sys.setprofile(None)
    return counts


@pytest.mark.parametrize("mechanism", MEAN_MECHANISMS)
def test_a_plan_validates_epsilon_once_and_bisects_at_most_once(mechanism):
    fd = _data()
    counts = _count(lambda: plan_mean_release(fd, _settings(mechanism)))
    assert counts["validations"] == 1
    assert counts["bisections"] == (1 if _uses_analytic(mechanism) else 0)  # the sigma in use and both bounds' table


@pytest.mark.parametrize("mechanism", MEAN_MECHANISMS)
def test_a_commit_validates_epsilon_once(mechanism):
    """The plan, the record, the trade-off chart (31 epsilons of fdp's own grid) and the audit trust it."""
    fd = _data()
    counts = _count(lambda: export.commit_mean(Ledger(50.0, 1e-3), fd, _settings(mechanism)))
    assert counts["validations"] == 1
    # Gaussian: one bisection per epsilon of the chart; the plan's own epsilon is among them (cached).
    assert counts["bisections"] == (31 if _uses_analytic(mechanism) else 0)


def test_validated_settings_carry_the_fact_and_changed_settings_lose_it():
    s = _settings("gaussian")
    assert not is_validated(s)
    v = s.validated()
    assert v is s and is_validated(v)
    assert _count(v.validated)["validations"] == 0  # trusted
    changed = dataclasses.replace(v, epsilon=2.0)
    assert not is_validated(changed)
    assert _count(changed.validated)["validations"] == 1
    assert v == _settings("gaussian") and dataclasses.asdict(v) == dataclasses.asdict(_settings("gaussian"))
    assert vars(v) == vars(_settings("gaussian"))  # the mark is no attribute: provenance and copies never see it


@pytest.mark.parametrize("epsilon", [0.0, -1.0, float("nan"), 1e7])
def test_library_entry_points_still_validate_raw_settings(epsilon):
    with pytest.raises(ParameterError, match="epsilon"):
        plan_mean_release(_data(), dataclasses.replace(_settings("gaussian"), epsilon=epsilon))
    with pytest.raises(ParameterError, match="epsilon"):
        calibration.analytic_sigma(1.0, epsilon, 1e-5)


def test_a_mechanism_called_with_raw_numbers_validates_them():
    lam = np.array([1.0, 0.5, 0.25])
    with pytest.raises(ParameterError, match="epsilon"):
        gaussian_mean_noise(lam, np.zeros(3), eta=1.5, phi=1e-3, tau=1.0, n=10, epsilon=-1.0, delta=1e-5,
                            bound="tight", calibration="analytic")


def test_one_calibration_gives_the_same_sigmas_as_the_separate_functions():
    cal = calibration.GaussianCalibration.of(0.7, 1e-6)
    for sensitivity in (1e-3, 0.37, 12.0):
        assert cal.analytic(sensitivity) == calibration.analytic_sigma(sensitivity, 0.7, 1e-6)
        assert cal.classical(sensitivity) == calibration.classical_sigma(sensitivity, 0.7, 1e-6)
        assert cal.both(sensitivity) == calibration.gaussian_sigma_both(sensitivity, 0.7, 1e-6)
    with pytest.raises(ParameterError, match="classical calibration is only valid for epsilon <= 1"):
        calibration.GaussianCalibration.of(2.0, 1e-6).sigma(1.0, "classical")


def test_mechanisms_return_a_typed_frozen_plan():
    lam = np.array([1.0, 0.5, 0.25])
    noise = gaussian_mean_noise(lam, np.ones(3), eta=1.5, phi=1e-3, tau=1.0, n=10, epsilon=1.0, delta=1e-5,
                                bound="tight", calibration="analytic")
    assert isinstance(noise, CoefficientNoise)
    assert noise.sigma == noise.guarantee.details["sigma_table"]["tight/analytic"]
    np.testing.assert_array_equal(noise.noise_scales, noise.sigma * np.sqrt(lam))
    with pytest.raises(dataclasses.FrozenInstanceError):
        noise.sigma = 0.0


def test_a_commit_with_a_confidence_band_validates_each_settings_object_once():
    """The whole settings, the mean's part and the second moment's part: three objects, three checks
    (before: the mean part and the second moment were planned again for the commit, 7 checks)."""
    from fdp_core.publish.band_commit import commit_mean_with_band

    fd = _data()
    settings = dataclasses.replace(_settings("gaussian"), confidence_band=0.9)
    counts = _count(lambda: commit_mean_with_band(Ledger(50.0, 1e-3), fd, settings))
    assert counts["validations"] == 3
    # Validated settings are trusted: only the two parts derived from them are checked.
    counts = _count(lambda: commit_mean_with_band(Ledger(50.0, 1e-3), fd, settings.validated()))
    assert counts["validations"] == 2


@pytest.mark.parametrize("mechanism", ["gaussian", "iclp"])
@pytest.mark.parametrize("centring", ["public", "released-mean"])
def test_a_covariance_commit_validates_epsilon_once(mechanism, centring):
    """The calibration of the covariance's (and its released mean's) split epsilon trusts the validated settings."""
    from fdp_core.publish.commit_summaries import commit_covariance
    from fdp_core.releases.covariance import CovarianceSettings

    settings = CovarianceSettings(mechanism=mechanism, kernel="matern52", rho=0.2, lo=-3.0, hi=3.0, epsilon=1.0,
                                  delta=1e-5 if mechanism == "gaussian" else 0.0, centring=centring)
    counts = _count(lambda: commit_covariance(Ledger(50.0, 1e-3), _data(), settings))
    assert counts["validations"] == 1


def test_a_covariance_plan_still_refuses_a_bad_epsilon():
    from fdp_core.releases.covariance import CovarianceSettings, plan_covariance_release

    with pytest.raises(ParameterError, match="epsilon"):
        plan_covariance_release(_data(), CovarianceSettings(kernel="matern52", rho=0.2, lo=-3.0, hi=3.0,
                                                            epsilon=-1.0, delta=1e-5))
