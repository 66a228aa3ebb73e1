"""The neighbour test (tests/test_publishable.py) for the bands and the synthetic curves (METHODS.md 18-19).

Same data sets D and D' (one person's curve clipped or dropped), same settings and seed:
release.json must be identical except the noised output, and release.csv identical except the
columns computed from the noised releases (the curve, its bands, the synthetic curves). The
analyst view must see the difference.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from test_publishable import _analyst, _assert_same, _read_folder, _run, pair  # noqa: F401  (pair: fixture)

from fdp_core.releases.mean import MEAN_MECHANISMS

# Computed from the noised mean and second moment: they move with the noise (post-processing).
BAND_COLUMNS = {"value", "privacy_lower", "privacy_upper", "ci_lower", "ci_upper", "mean_lower", "mean_upper",
                "mean_centre"}
# The mean band's smoother is chosen from the releases (METHODS 25): its choice moves with the noise too.
NOISED_KEYS = {"confidence_quantile", "released_mean", "mean_band_family", "mean_band_parameter", "mean_band_bias_l2",
               "mean_band_quantile"}


def _strip(record: dict) -> dict:
    record = {k: v for k, v in record.items() if k not in {"created_utc", "timestamp"}}
    if "band" in record:
        record["band"] = {k: v for k, v in record["band"].items() if k not in NOISED_KEYS}
    return {k: v for k, v in record.items() if k not in NOISED_KEYS}


def _compare(out_a, out_b, noised_columns):
    files_a, files_b = _read_folder(out_a), _read_folder(out_b)
    assert set(files_a) == set(files_b) == {"release.json", "release.csv"}
    _assert_same(_strip(json.loads(files_a["release.json"])), _strip(json.loads(files_b["release.json"])))
    a, b = (pd.read_csv(pd.io.common.StringIO(f["release.csv"])) for f in (files_a, files_b))
    assert list(a.columns) == list(b.columns) and a.shape == b.shape
    kept = [c for c in a.columns if not noised_columns(c)]
    assert kept, "nothing left to compare"
    pd.testing.assert_frame_equal(a[kept], b[kept], check_exact=True)


@pytest.mark.parametrize("mechanism", MEAN_MECHANISMS)
@pytest.mark.parametrize("neighbour", ["clipped", "dropped"])
def test_mean_with_bands_does_not_depend_on_one_person(mechanism, neighbour, pair, tmp_path):  # noqa: F811
    def args_for(which):
        return ["release", "mean", "--preview", "--data", str(pair[which]), "--mechanism", mechanism, "--psi", "0.02", "--M", "5",
                "--K", "6", *(["--eta", "1"] if mechanism == "iclp-ar" else []), "--kernel", "matern52", "--rho",
                "0.2", "--epsilon", "1", "--value-range", "0,1", "--person-column", "subject", "--n-public",
                str(pair["n_persons"]), "--seed", "7", "--confidence-band", "0.9", "--band-share", "0.3",
                "--smoothness-bound", "0.5", *([] if mechanism == "bernstein" else ["--tau", "0.3"])]
    out_a, out_b = _run(args_for("D"), tmp_path / "a"), _run(args_for(neighbour), tmp_path / "b")
    _compare(out_a, out_b, lambda c: c in BAND_COLUMNS)
    key = "n_dropped" if neighbour == "dropped" else "n_range_clipped"
    assert _analyst(out_a)[key] != _analyst(out_b)[key]


@pytest.mark.parametrize("neighbour", ["clipped", "dropped"])
def test_synthetic_curves_do_not_depend_on_one_person(neighbour, pair, tmp_path):  # noqa: F811
    def args_for(which):
        return ["release", "synthetic", "--data", str(pair[which]), "--kernel", "matern52", "--rho", "0.2",
                "--epsilon", "1", "--value-range", "0,1", "--tau", "0.3", "--person-column", "subject",
                "--n-public", str(pair["n_persons"]), "--n-synthetic", "20", "--seed", "7"]
    out_a, out_b = _run(args_for("D"), tmp_path / "a"), _run(args_for(neighbour), tmp_path / "b")
    _compare(out_a, out_b, lambda c: c != "id")
    assert _analyst(out_a)["comparison"] != _analyst(out_b)["comparison"]


@pytest.mark.parametrize("mechanism", ["gaussian", "iclp-qr", "bernstein"])
@pytest.mark.parametrize("neighbour", ["clipped", "dropped"])
def test_committed_bundle_with_bands_does_not_depend_on_one_person(mechanism, neighbour, pair):  # noqa: F811
    from fdp_core.publish import export
    from fdp_core.budget.accounting import Ledger
    from fdp_core.publish.band_commit import commit_mean_with_band
    from fdp_core.data.loading import load_curves
    from fdp_core.releases.mean import MeanSettings
    from test_publishable import _compare_files

    settings = MeanSettings(mechanism=mechanism, kernel="matern52", rho=0.2, epsilon=1.0, psi=0.02, K=6,
                            tau=None if mechanism == "bernstein" else 0.3, n_public=pair["n_persons"],
                            value_range=(0.0, 1.0), person_column="subject", confidence_band=0.9)

    def commit(which):
        ledger = Ledger(50.0, 1e-3)
        release = commit_mean_with_band(ledger, load_curves(pair[which]), settings, data_label="data.csv")
        files = {name: content.decode() for name, content in export.bundle_files(release, ledger).items()}
        return release, files, [e.id for e in ledger.entries]

    (ra, fa, ids_a), (rb, fb, ids_b) = commit("D"), commit(neighbour)
    assert set(fa) == set(export.BUNDLE_FILES) and "analyst_view.json" not in fa
    for files in (fa, fb):
        files["release.json"] = json.dumps(_strip(json.loads(files["release.json"])))
        table = pd.read_csv(pd.io.common.StringIO(files["release.csv"]))
        assert list(table.columns) == ["t", "value", "privacy_lower", "privacy_upper", "ci_lower", "ci_upper"]
        files["release.csv"] = table[["t"]].to_csv(index=False)
    _compare_files(fa, fb, ids_a + ids_b)
    key = "n_dropped" if neighbour == "dropped" else "n_range_clipped"
    assert ra.analyst[key] != rb.analyst[key]
