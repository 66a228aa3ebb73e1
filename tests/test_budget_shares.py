"""A share of the budget or a band's level: a number strictly between 0 and 1, refused otherwise
with one message that names it (params.check_open_unit, used by every settings class that has one)."""

import math

import pytest

from fdp_core.errors import ParameterError
from fdp_core.params import check_open_unit
from fdp_core.releases.covariance import CovarianceSettings
from fdp_core.releases.mean import MeanSettings
from fdp_core.releases.regression import RegressionSettings
from fdp_core.releases.sparse import SparseSettings

SETTINGS = {
    "gamma (the mean's share of the budget)":
        lambda v: CovarianceSettings(centre=0.0, tau=1.0, centring="released-mean", gamma=v),
    "gamma (T1's share of the budget)": lambda v: RegressionSettings(covariates=("age",), lo=0.0, hi=1.0, gamma=v),
    "gamma (A's share of the budget)": lambda v: SparseSettings(domain=(0.0, 1.0), value_range=(-1.0, 2.0), gamma=v),
    "band_share (the second moment's share of the budget)":
        lambda v: MeanSettings(value_range=(0, 1), confidence_band=0.95, band_share=v),
    "confidence_band (the band's level)": lambda v: MeanSettings(value_range=(0, 1), confidence_band=v),
}


@pytest.mark.parametrize("name", SETTINGS)
@pytest.mark.parametrize("value", [0.0, 1.0, -0.5, 1.5, math.nan, math.inf, "half"])
def test_a_share_outside_the_open_unit_interval_is_refused_with_its_name(name, value):
    with pytest.raises(ParameterError, match=r"^" + name.replace("(", r"\(").replace(")", r"\)") + " must be"):
        SETTINGS[name](value).validated()


@pytest.mark.parametrize("name", SETTINGS)
def test_a_share_inside_is_accepted(name):
    SETTINGS[name](0.25).validated()
    assert check_open_unit(name, "0.25") == 0.25
