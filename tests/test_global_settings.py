"""The sidebar's GlobalSettings is built by keyword only (issue 27: no 14-positional calls)."""

import dataclasses

import pytest

from fdp_core.releases.kde import KdeSettings
from fdp_ui.sidebar import GlobalSettings

VALUES = dict(kernel="matern52", rho=0.1, nu=None, eta=1.5, phi=1e-3, epsilon=1.0, delta=1e-5, tau=2.0,
              tau_from_data=False, seed=0, n_clipped=3)


def test_positional_construction_is_refused():
    with pytest.raises(TypeError):
        GlobalSettings(*VALUES.values())


def test_keyword_construction_and_the_settings_fields():
    g = GlobalSettings(**VALUES, value_range=(0.0, 1.0), person_column="id")
    assert not g.tutorial
    fields = g.fields_of(KdeSettings)
    names = {f.name for f in dataclasses.fields(KdeSettings)}
    assert set(fields) <= names and fields["epsilon"] == 1.0
    assert g.bounds == {"value_range": (0.0, 1.0), "person_column": "id"}
