"""``python -m fdp_core release mean``: a round trip for every mechanism, and refusals (exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fdp_core.cli import main
from fdp_core.data.loading import load_curves
from fdp_core.registry import mean_mechanism
from fdp_core.releases.mean import MEAN_MECHANISMS, MeanSettings, plan_mean_release
from fdp_core.releases.postprocess import finish_mean

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "data" / "example_curves.csv"
BASE = ["release", "mean", "--preview", "--data", str(EXAMPLE), "--kernel", "matern52", "--rho", "0.1", "--epsilon", "1",
        "--tau", "1"]
# Every mechanism gets every mechanism-specific option (each reads only its own), as the library settings below.
MECHANISM_OPTIONS = ["--psi", "0.02", "--M", "6", "--K", "8", "--lo", "0", "--hi", "1.5"]
REQUIRED = ("mechanism", "kernel", "rho", "eta", "phi", "epsilon", "delta", "tau", "bound", "calibration", "n", "m",
            "n_policy", "unit_of_privacy", "sensitivity", "sigma", "expected_sq_l2_error", "data_dependent_flags")
# Computed from the data without noise: only in analyst_view.json, never in the publishable record.
ANALYST_ONLY = ("n_dropped", "n_clipped")


def _cli(args, **kwargs):
    return subprocess.run([sys.executable, "-m", "fdp_core", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, **kwargs)


@pytest.mark.parametrize("mechanism", MEAN_MECHANISMS)
def test_round_trip(mechanism, tmp_path):
    out = tmp_path / mechanism
    result = _cli([*BASE, "--mechanism", mechanism, *MECHANISM_OPTIONS, *(["--eta", "1"] if mechanism == "iclp-ar" else []), "--seed", "3", "--out", str(out)])
    assert result.returncode == 0, result.stderr
    record = json.loads((out / "release.json").read_text())
    table = pd.read_csv(out / "release.csv")
    for key in REQUIRED:
        assert key in record, key
    analyst = json.loads((out / "analyst_view.json").read_text())
    assert analyst["publishable"] is False and "NOT FOR PUBLICATION" in analyst["warning"]
    for key in ANALYST_ONLY:
        assert key not in record and key in analyst, key
    assert list(table.columns) == ["t", "value"]
    fd = load_curves(EXAMPLE)
    np.testing.assert_allclose(table["t"], fd.grid_points)
    assert record["mechanism"] == mechanism and record["n"] == fd.n and record["m"] == fd.m
    # The record matches the library's own plan for the same settings.
    settings = MeanSettings(mechanism=mechanism, kernel="matern52", rho=0.1, epsilon=1.0, tau=1.0,
                            eta=1.0 if mechanism == "iclp-ar" else 1.5, psi=0.02, M=6, K=8, lo=0.0, hi=1.5)
    plan = plan_mean_release(fd, settings)
    assert record["sensitivity"] == pytest.approx(plan.sensitivity, rel=1e-12)
    assert record["expected_sq_l2_error"] == pytest.approx(plan.expected_sq_l2_error, rel=1e-12)
    # The demo seed makes the release reproducible; the non-private estimate is never written.
    expected = finish_mean(plan.sample(np.random.default_rng(3), 1)[0], settings).values  # post-processed
    assert record["post_processing"] == list(finish_mean(expected, settings).steps)
    np.testing.assert_allclose(table["value"], expected, rtol=1e-9, atol=1e-12)
    assert not np.allclose(table["value"], plan.estimate)
    if mean_mechanism(mechanism).uses_delta:
        assert record["sigma"] > 0 and 0 < record["delta"] < 1 and record["privacy"] == "(epsilon, delta)-DP"
        return
    assert record["delta"] == 0.0 and record["sigma"] is None and record["calibration"] is None
    assert record["privacy"] == "epsilon-DP"
    np.testing.assert_allclose(record["laplace_scales"], plan.noise_scales, rtol=1e-12)
    assert record["sensitivity_l1"] == pytest.approx(plan.sensitivity)
    if mechanism.startswith("iclp"):
        assert record["sensitivity_l1c"] == pytest.approx(plan.sensitivity) and record["psi"] == 0.02
    if mechanism == "frl":
        assert record["M"] == 6
    if mechanism == "bernstein":
        assert (record["K"], record["lo"], record["hi"]) == (8, 0.0, 1.5)


def test_delta_is_ignored_for_pure_dp(tmp_path):
    code = main([*BASE, "--mechanism", "iclp-qr", "--delta", "0", "--out", str(tmp_path)])
    assert code == 0
    assert json.loads((tmp_path / "release.json").read_text())["delta"] == 0.0


@pytest.mark.parametrize("extra, message", [
    (["--mechanism", "bernstein"], "lo and hi"),
    (["--mechanism", "bernstein", "--lo", "1", "--hi", "1"], "lo < hi"),
    (["--mechanism", "iclp-qr", "--eta", "1"], "eta > 1"),
    (["--mechanism", "frl", "--M", "0"], "M"),
    (["--mechanism", "frl", "--M", "500"], "keeps only"),
    (["--mechanism", "bernstein", "--K", "0", "--lo", "0", "--hi", "1"], "K"),
    (["--mechanism", "iclp-ar", "--psi", "-1"], "psi"),
])
def test_bad_input_exits_2_with_one_line(extra, message, tmp_path, capsys):
    out = tmp_path / "out"
    assert main([*BASE, *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and message in err and err.count("\n") == 1
    assert not out.exists()  # never a half-written release


def test_bad_input_exit_code_from_a_real_process(tmp_path):
    result = _cli([*BASE, "--mechanism", "bernstein", "--out", str(tmp_path / "x")])
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "lo and hi" in result.stderr
