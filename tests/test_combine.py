"""Several sites, one curve (METHODS.md 26, issue 43): the combine command and its checks."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fdp_core.budget.accounting import Ledger
from fdp_core.cli import main
from fdp_core.data.loading import FunctionalData, load_curves
from fdp_core.publish import export, kinds
from fdp_core.publish.protocol import CommitRequest
from fdp_core.publish.combine import combine_sites, optimal_weights
from fdp_core.publish.site_bundle import read_dir
from fdp_core.releases.mean import MeanSettings

ROOT = Path(__file__).resolve().parents[1]
GRID = np.linspace(0.0, 1.0, 25)


def _curves(n: int, seed: int) -> FunctionalData:
    rng = np.random.default_rng(seed)
    values = 0.5 + 0.2 * np.sin(2 * np.pi * GRID)[None, :] * rng.normal(1, 0.3, (n, 1)) \
        + rng.normal(0, 0.05, (n, GRID.size))
    return FunctionalData(GRID, np.clip(values, 0, 1), pd.DataFrame({"subject": [f"p{seed}-{i}" for i in range(n)]}))


def _settings(epsilon: float, **changes) -> MeanSettings:
    return MeanSettings(**{**dict(mechanism="gaussian", kernel="matern52", rho=0.1, epsilon=epsilon, delta=1e-5,
                                  value_range=(0.0, 1.0), person_column="subject"), **changes})


def _site(folder: Path, fd: FunctionalData, settings: MeanSettings) -> Path:
    """A committed site bundle: charged to the site's own ledger, exported as the CLI would."""
    ledger = Ledger(10.0, 1e-3)
    release = kinds.commit("mean", ledger, CommitRequest(fd, settings, label=folder.name,
                                                         data_label=f"{folder.name}.csv"))
    export.export_folder(release, folder, ledger, include_analyst_view=True)
    return folder


@pytest.fixture(scope="module")
def sites(tmp_path_factory):
    base = tmp_path_factory.mktemp("sites")
    return [_site(base / f"site{k}", _curves(n, k), _settings(eps))
            for k, (n, eps) in enumerate([(40, 0.5), (60, 1.0), (50, 2.0)])]


class _Result:
    def __init__(self, returncode: int, stderr: str):
        self.returncode, self.stderr = returncode, stderr


def _combine(paths, out: Path, *extra):
    """The command in this process (``main``: the CLI's own exit status and message)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["combine", *map(str, paths), "--out", str(out), *extra])
    return _Result(code, err.getvalue())


def test_combine_writes_the_weighted_sum_with_a_smaller_stated_error(sites, tmp_path):
    result = _combine(sites, tmp_path / "out", "--labels", "A", "B", "C")
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "ledger.sqlite3").exists()  # the default ledger (conftest) was never opened: no charge
    record = json.loads((tmp_path / "out" / "release.json").read_text())
    table = pd.read_csv(tmp_path / "out" / "release.csv")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["README.txt", "release.csv", "release.json",
                                                                     "report.html"]
    weights = np.array([s["weight"] for s in record["sites"]])
    assert abs(weights.sum() - 1.0) < 1e-12 and np.all(weights > 0)
    curves = np.stack([pd.read_csv(p / "release.csv")["value"].to_numpy() for p in sites])
    assert np.max(np.abs(table["value"].to_numpy() - weights @ curves)) < 1e-9
    assert [s["label"] for s in record["sites"]] == ["A", "B", "C"]
    assert [s["release_id"] for s in record["sites"]] == [json.loads((p / "release.json").read_text())["id"]
                                                          for p in sites]
    assert record["weights"]["sampling_variance_source"] == "none"
    assert all(record["expected_sq_l2_error"] < s["expected_sq_l2_error"] for s in record["sites"])
    # Independent computation of the noise-only weights from the sites' own stated errors.
    errors = np.array([json.loads((p / "release.json").read_text())["expected_sq_l2_error"] for p in sites])
    np.testing.assert_allclose(weights, (1 / errors) / np.sum(1 / errors), rtol=1e-9)
    np.testing.assert_allclose(record["expected_sq_l2_error"], 1 / np.sum(1 / errors), rtol=1e-9)


def test_declared_sampling_variance_moves_weight_towards_large_sites(sites):
    loaded = [read_dir(p) for p in sites]
    v = 0.05
    combined = combine_sites(loaded, sampling_variance=v)
    n = np.array([40, 60, 50])
    e = v / n + np.array([s.noise_sq_l2_error for s in combined.sites])
    np.testing.assert_allclose(combined.weights, (1 / e) / np.sum(1 / e), rtol=1e-12)
    assert combined.source == "declared" and combined.expected_sq_l2_error < e.min()
    w, _, err = optimal_weights(n, e - v / n, v)
    # Any other weights summing to 1 do worse (the optimum of a convex quadratic).
    other = np.full(3, 1 / 3)
    assert err <= float(np.sum(other**2 * e))


def _variant(src: Path, dst: Path, edit) -> Path:
    dst.mkdir()
    for f in src.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())
    edit(dst)
    return dst


def _edit_json(key, factor):
    def edit(folder):
        record = json.loads((folder / "release.json").read_text())
        record[key] = record[key] * factor
        (folder / "release.json").write_text(json.dumps(record))
    return edit


def _edit_curve(folder):
    table = pd.read_csv(folder / "release.csv")
    table.loc[3, "value"] = min(1.0, table.loc[3, "value"] + 0.01) if table.loc[3, "value"] < 0.99 else 0.5
    table.to_csv(folder / "release.csv", index=False)


def _edit_scale(folder):
    coefs = pd.read_csv(folder / "coefficients.csv")
    coefs["noise_scale"] *= 0.9
    coefs["value"] = coefs["noise_scale"] * coefs["unit_value"]
    coefs.to_csv(folder / "coefficients.csv", index=False)


def _edit_shape(folder):
    record = json.loads((folder / "release.json").read_text())
    record["charged"] = 5  # a field of the wrong shape
    (folder / "release.json").write_text(json.dumps(record))


@pytest.mark.parametrize("edit, words", [(_edit_json("sigma", 0.9), "does not verify: sigma"),
                                         (_edit_json("n", 2), "n in config.yaml differs"),
                                         (_edit_shape, "malformed bundle"),
                                         (_edit_curve, "release.csv is not the curve"),
                                         (_edit_scale, "noise scales differ")])
def test_a_site_that_does_not_verify_is_refused(sites, tmp_path, edit, words):
    bad = _variant(sites[1], tmp_path / "bad", edit)
    result = _combine([sites[0], bad, sites[2]], tmp_path / "out")
    assert result.returncode == 2 and words in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("n", [10**400, 1e300, 0, -5, 2.5, True, "40"])
def test_an_absurd_n_is_refused_in_one_line(sites, tmp_path, n):
    """n is a count every public quantity depends on: 10^400 overflowed float64 and 0 divided by
    zero (tracebacks, exit 1) before it was checked."""
    def edit(folder):
        record = json.loads((folder / "release.json").read_text())
        record["n"] = n
        (folder / "release.json").write_text(json.dumps(record))
    bad = _variant(sites[1], tmp_path / "bad", edit)
    result = _combine([sites[0], bad], tmp_path / "out")
    assert result.returncode == 2 and "release.json's n" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_site_files_and_names_follow_the_hostile_input_rules(sites, tmp_path):
    """A site's config.yaml is YAML fdp is handed (the 256 KB cap, as replay reads it); labels are
    names: a given one with a control or bidirectional character is refused, a folder's name is
    cleaned of them, so every message stays one line."""
    def pad(folder):
        config = folder / "config.yaml"
        config.write_text(config.read_text() + "#" + "x" * (300 * 1024) + "\n")
    big = _variant(sites[1], tmp_path / "big", pad)
    result = _combine([sites[0], big], tmp_path / "out")
    assert result.returncode == 2 and "config.yaml" in result.stderr and "256 KB" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()
    result = _combine(sites[:2], tmp_path / "out", "--labels", "A", "B\u202eevil")
    assert result.returncode == 2 and "site label" in result.stderr and not (tmp_path / "out").exists()
    odd = _variant(sites[1], tmp_path / "odd\nname\u202e", lambda folder: None)
    pad(odd)
    result = _combine([sites[0], odd], tmp_path / "out")
    assert result.returncode == 2 and "site oddname: config.yaml" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert read_dir(sites[0], "site\tzero\u200f").label == "sitezero"


def test_preview_and_other_settings_are_refused_in_one_line(sites, tmp_path):
    data = tmp_path / "d.csv"
    fd = _curves(30, 9)
    pd.concat([fd.metadata, pd.DataFrame(fd.data_matrix, columns=[repr(float(t)) for t in GRID])],
              axis=1).to_csv(data, index=False)
    preview = tmp_path / "preview"
    subprocess.run([sys.executable, "-m", "fdp_core", "release", "mean", "--data", str(data), "--person-column",
                    "subject", "--value-range", "0,1", "--kernel", "matern52", "--rho", "0.1", "--epsilon", "1",
                    "--out", str(preview)], check=True, capture_output=True, cwd=ROOT, timeout=300)
    result = _combine([sites[0], preview], tmp_path / "out")
    assert result.returncode == 2 and "not a committed" in result.stderr
    other = _site(tmp_path / "other", _curves(30, 9), _settings(1.0, kernel="gaussian"))
    result = _combine([sites[0], other], tmp_path / "out")
    assert result.returncode == 2 and "differ in kernel" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()
    wide = _site(tmp_path / "wide", _curves(30, 9), _settings(1.0, value_range=(0.0, 2.0)))
    result = _combine([sites[0], wide], tmp_path / "out")
    assert result.returncode == 2 and "differ in value range" in result.stderr


def _normalised(record: dict) -> dict:
    for site in record["sites"]:
        site.pop("release_id")
    return record


def test_combination_is_post_processing_of_the_published_files(sites, tmp_path):
    """Neighbour test on one site: D and D' (one person replaced) committed at site B; the combined
    files move only through B's noised curve: weights, stated errors and every other field agree,
    and the combined curves differ by exactly w_B times the difference of B's published curves."""
    fd = _curves(60, 1)
    values = fd.data_matrix.copy()
    values[-1] = 1.0  # the last person replaced by one at the top of the range
    neighbour = FunctionalData(GRID, values, fd.metadata)
    b_d = _site(tmp_path / "B_D", fd, _settings(1.0))
    b_n = _site(tmp_path / "B_Dprime", neighbour, _settings(1.0))
    # The analyst views (not publishable) differ wildly; combine must never read them.
    (b_n / "analyst_view.json").write_text("{not json")
    out_d, out_n = tmp_path / "out_d", tmp_path / "out_n"
    assert _combine([sites[0], b_d, sites[2]], out_d, "--labels", "A", "B", "C").returncode == 0
    assert _combine([sites[0], b_n, sites[2]], out_n, "--labels", "A", "B", "C").returncode == 0
    rec_d, rec_n = (json.loads((o / "release.json").read_text()) for o in (out_d, out_n))
    assert _normalised(rec_d) == _normalised(rec_n)
    w_b = rec_d["sites"][1]["weight"]
    diff = pd.read_csv(out_d / "release.csv")["value"] - pd.read_csv(out_n / "release.csv")["value"]
    site_diff = pd.read_csv(b_d / "release.csv")["value"] - pd.read_csv(b_n / "release.csv")["value"]
    assert np.max(np.abs(diff - w_b * site_diff)) < 1e-12


def test_pure_and_gaussian_band_sites_combine_with_bands_and_released_sampling_term(tmp_path):
    """A Gaussian site and a pure (ICLP, Laplace coefficients) site with the same smoother, both with bands."""
    mechanisms = [dict(mechanism="gaussian"), dict(mechanism="iclp-qr", psi=0.001)]
    paths = [_site(tmp_path / f"s{k}", _curves(n, 20 + k), _settings(eps, eta=2.0, confidence_band=0.95, **mech))
             for k, (n, eps, mech) in enumerate([(60, 1.0, mechanisms[0]), (80, 2.0, mechanisms[1])])]
    combined = combine_sites([read_dir(p) for p in paths])
    assert [s.record["privacy"] for s in combined.sites] == ["(epsilon, delta)-DP", "epsilon-DP"]
    assert combined.source == "released" and combined.sampling_variance > 0
    b = combined.bands
    assert b is not None and np.all(b["ci_upper"] - b["ci_lower"] >= b["privacy_upper"] - b["privacy_lower"] - 1e-12)
    assert b["confidence_quantile"] >= b["gaussian_union_bound_quantile"]
    assert combined.expected_sq_l2_error < combined.site_errors.min()


def test_dti_three_sites(shared_data, tmp_path):
    """The issue's outside check: DTI split by subject into 3 sites at epsilon 0.5 / 1 / 2."""
    frame = pd.read_csv(shared_data / "dti_cca.csv")
    subjects = np.array(sorted(frame["subject"].unique()))
    paths = []
    for k, (eps, part) in enumerate(zip((0.5, 1.0, 2.0), np.array_split(subjects, 3))):
        frame[frame["subject"].isin(part)].to_csv(tmp_path / f"dti{k}.csv", index=False)
        paths.append(_site(tmp_path / f"dti{k}", load_curves(tmp_path / f"dti{k}.csv"), _settings(eps)))
    result = subprocess.run([sys.executable, "-m", "fdp_core", "combine", *map(str, paths), "--out",
                             str(tmp_path / "out")], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    record = json.loads((tmp_path / "out" / "release.json").read_text())
    weights = np.array([s["weight"] for s in record["sites"]])
    curves = np.stack([pd.read_csv(p / "release.csv")["value"].to_numpy() for p in paths])
    assert abs(weights.sum() - 1) < 1e-12
    # Sites released with another kernel: one line, exit 2, nothing written (the real process).
    other = _site(tmp_path / "dti_other", load_curves(tmp_path / "dti2.csv"), _settings(2.0, kernel="gaussian"))
    refused = subprocess.run([sys.executable, "-m", "fdp_core", "combine", str(paths[0]), str(paths[1]), str(other),
                              "--out", str(tmp_path / "refused")], capture_output=True, text=True, cwd=ROOT,
                             timeout=300)
    assert refused.returncode == 2 and "differ in kernel" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and not (tmp_path / "refused").exists()
    assert np.max(np.abs(pd.read_csv(tmp_path / "out" / "release.csv")["value"].to_numpy() - weights @ curves)) < 1e-9
    assert all(record["expected_sq_l2_error"] < s["expected_sq_l2_error"] for s in record["sites"])
