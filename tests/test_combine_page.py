"""AppTest: the Combine sites page checks uploaded site bundles, shows the combined curve, exports it."""

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from fdp_core.budget.accounting import Ledger
from fdp_core.data.loading import FunctionalData
from fdp_core.publish import export, kinds
from fdp_core.publish.protocol import CommitRequest
from fdp_core.releases.mean import MeanSettings
from fdp_ui.combine_view import BUNDLES_KEY

APP = str(Path(__file__).resolve().parents[1] / "app.py")
GRID = np.linspace(0.0, 1.0, 20)


def _zip(seed: int, n: int, epsilon: float, kernel: str = "matern52") -> bytes:
    rng = np.random.default_rng(seed)
    values = np.clip(0.5 + 0.2 * np.sin(2 * np.pi * GRID) + rng.normal(0, 0.05, (n, GRID.size)), 0, 1)
    fd = FunctionalData(GRID, values, pd.DataFrame({"subject": np.arange(n)}))
    settings = MeanSettings(mechanism="gaussian", kernel=kernel, rho=0.1, epsilon=epsilon, delta=1e-5,
                            value_range=(0.0, 1.0), person_column="subject")
    ledger = Ledger(10.0, 1e-3)
    release = kinds.commit("mean", ledger, CommitRequest(fd, settings, label=f"site {seed}"))
    return export.export_zip(release, ledger)


@pytest.fixture(scope="module")
def bundles():
    return (("north", _zip(1, 50, 1.0)), ("south", _zip(2, 40, 2.0)))


def _page(named) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("pages/combine.py")
    at.session_state[BUNDLES_KEY] = named
    at.run()
    assert not at.exception, at.exception
    return at


def test_combine_page_shows_the_combined_curve_and_exports_it(bundles):
    at = _page(bundles)
    assert not at.error
    table = at.dataframe[-1].value
    assert list(table["site"]) == ["north", "south"]
    assert abs(table["weight"].sum() - 1) < 1e-12
    combined = next(m for m in at.metric if m.label == "combined expected squared L2 error")
    assert float(combined.value) < table["expected squared L2 error"].min()
    # The export button carries the combined bundle (its files, the same weights).
    from fdp_core.publish.combine import combine_sites
    from fdp_core.publish.combine_files import export_zip
    from fdp_core.publish.site_bundle import read_zip

    expected = export_zip(combine_sites([read_zip(data, label) for label, data in bundles]))
    with zipfile.ZipFile(io.BytesIO(expected)) as archive:
        record = json.loads(archive.read("fdp_combined/release.json"))
        assert sorted(Path(n).name for n in archive.namelist()) == ["README.txt", "release.csv", "release.json",
                                                                   "report.html"]
    assert [s["weight"] for s in record["sites"]] == pytest.approx(list(table["weight"]), rel=1e-12)


def test_combine_page_refuses_sites_with_other_settings_in_one_line(bundles):
    at = _page((bundles[0], ("east", _zip(3, 30, 1.0, kernel="gaussian"))))
    assert len(at.error) == 1 and "differ in kernel" in at.error[0].value


def test_combine_page_asks_for_two_bundles():
    at = _page(())
    assert any("two or more site bundles" in i.value for i in at.info)
