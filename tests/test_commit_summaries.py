"""Covariance and regression commits: exact discrete noise on the 2^k grid, both parts checked before any
noise, ledger entries, export bundle without private values, report, replay with fresh noise."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from fdp_core.publish import export
from fdp_core.budget.accounting import Ledger
from fdp_core.cli import main
from fdp_core.publish.commit_summaries import commit_covariance, commit_regression
from fdp_core.releases.covariance import CovarianceSettings, plan_covariance_release
from fdp_core.data.loading import FunctionalData, load_curves, to_wide_csv
from fdp_core.errors import BudgetError
from fdp_core.mechanisms import discrete
from fdp_core.releases.regression import RegressionSettings

GRID = np.linspace(0, 1, 15)


def _data(n=40, seed=3):
    rng = np.random.default_rng(seed)
    values = 0.5 + 0.2 * np.sin(np.pi * GRID) * rng.normal(1, 0.3, (n, 1)) + rng.normal(0, 0.05, (n, GRID.size))
    meta = pd.DataFrame({"group": rng.integers(0, 2, n), "sex": rng.choice(["f", "m"], n)})
    return FunctionalData(GRID, values, metadata=meta)


COV = {"gaussian": CovarianceSettings(kernel="matern52", rho=0.3, lo=0.0, hi=1.0, epsilon=1.0, delta=1e-5,
                                      centring="released-mean", gamma=0.3),
       "iclp": CovarianceSettings(mechanism="iclp", kernel="matern52", rho=0.3, lo=0.0, hi=1.0, epsilon=1.0)}
REG = RegressionSettings(covariates=("group", "sex=m"), bound_b=1.8, kernel="matern52", rho=0.3, lo=0.0, hi=1.0,
                         epsilon=2.0, delta=1e-5, gamma=0.4)


@pytest.mark.parametrize("mechanism", ["gaussian", "iclp"])
def test_covariance_commit_uses_the_exact_sampler_on_its_grid(mechanism):
    ledger = Ledger(5.0, 1e-4)
    release = commit_covariance(ledger, _data(), COV[mechanism], data_label="synthetic")
    coef = release.coefficients
    k = release.record["noise_sampler"]["granularity_exp"]
    units = coef["unit_value"].to_numpy()
    np.testing.assert_array_equal(units / 2.0**k, np.round(units / 2.0**k))
    parts = 2 if mechanism == "gaussian" else 1
    assert len(ledger.entries) == parts and all(e.kind == "covariance" for e in ledger.entries)
    if mechanism == "gaussian":
        assert all(e.curve == "zcdp" for e in ledger.entries)
        assert sum(e.epsilon for e in ledger.entries) > 0 and "released_mean" in release.record
    else:
        assert ledger.entries[0].curve == "pure" and ledger.entries[0].epsilon == pytest.approx(1.0)
    surface = release.table["value"].to_numpy().reshape(GRID.size, GRID.size)
    np.testing.assert_allclose(surface, surface.T, atol=1e-12)
    plan = plan_covariance_release(_data(), COV[mechanism])
    assert not np.allclose(surface, plan.surface(plan.nonprivate_covariance()))


def test_two_part_release_is_refused_whole_before_any_noise(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("sampler called for a refused release")

    monkeypatch.setattr(discrete, "discrete_gaussian_release", refuse)
    ledger = Ledger(1.0, 1e-5)  # the covariance part (0.8 of epsilon 1.2) fits alone, not with the mean part
    with pytest.raises(BudgetError):
        commit_covariance(ledger, _data(), CovarianceSettings(kernel="matern52", rho=0.3, lo=0.0, hi=1.0,
                                                              epsilon=1.2, delta=1e-5, centring="released-mean"))
    with pytest.raises(BudgetError):
        commit_regression(ledger, _data(), REG)
    assert ledger.entries == []


def test_regression_commit_charges_t1_and_t2():
    ledger = Ledger(5.0, 1e-4)
    release = commit_regression(ledger, _data(), REG)
    assert [e.mechanism for e in ledger.entries] == ["gaussian (T1)", "gaussian (T2)"]
    assert list(release.table.columns) == ["t", "beta_intercept", "beta_group", "beta_sex=m"]
    assert set(release.coefficients["part"]) == {"T1", "T2"}
    assert release.record["t1_entry"]["id"] == ledger.entries[0].id


def _no_private_numbers(files, fd):
    text = b"".join(files.values()).decode()
    for v in fd.data_matrix.ravel()[:200]:
        assert repr(float(v)) not in text


@pytest.mark.parametrize("kind", ["covariance", "regression"])
def test_bundle_report_and_replay(kind, tmp_path, capsys):
    fd = _data()
    data = tmp_path / "data.csv"
    data.write_text(to_wide_csv(fd))  # metadata columns included
    loaded = load_curves(data)
    ledger = Ledger(6.0, 1e-4)
    commit = commit_covariance if kind == "covariance" else commit_regression
    original = commit(ledger, loaded, COV["gaussian"] if kind == "covariance" else REG, data_label="data.csv")
    files = export.bundle_files(original, ledger)
    assert set(files) == set(export.BUNDLE_FILES)
    report = files["report.html"].decode()
    assert kind in report and "Privacy statement" in report
    _no_private_numbers(files, loaded)
    with zipfile.ZipFile(io.BytesIO(export.export_zip(original, ledger))) as z:
        assert len(z.namelist()) == len(export.BUNDLE_FILES)
    export.export_folder(original, tmp_path / "original", ledger)
    out = tmp_path / "replayed"
    assert main(["replay", str(tmp_path / "original" / "config.yaml"), "--data", str(data), "--out", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    first = json.loads((tmp_path / "original" / "release.json").read_text())
    again = json.loads((out / "release.json").read_text())
    assert again["settings"] == first["settings"] and again["id"] != first["id"]
    a, b = pd.read_csv(tmp_path / "original" / "release.csv"), pd.read_csv(out / "release.csv")
    assert a.columns.tolist() == b.columns.tolist() and not np.allclose(a.iloc[:, -1], b.iloc[:, -1])
    config = yaml.safe_load((out / "config.yaml").read_text())
    assert config["kind"] == kind
    replay_ledger = json.loads((out / "ledger.json").read_text())
    assert len(replay_ledger["entries"]) == 2
    # The bundle's own check script verifies these kinds too (fdp_core.publish.verify: draws nothing).
    import os
    import subprocess
    import sys

    rerun = subprocess.run([sys.executable, str(tmp_path / "original" / "release.py"), str(data)],
                           capture_output=True, text=True, timeout=300,
                           env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert rerun.stdout.strip().endswith("verified") and f"'{kind}'" in rerun.stdout
