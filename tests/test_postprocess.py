"""Free post-processing (fdp_core/releases/postprocess.py): on by default, stated in the record, the same on every path."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fdp_core.publish import export
from fdp_core.budget.accounting import Ledger
from fdp_core.cli import main
from fdp_core.data.loading import load_curves
from fdp_core.releases.kde import KdeSettings
from fdp_core.releases.mean import MeanSettings
from fdp_core.releases.postprocess import NONE_DECLARED, SWITCHED_OFF, finish_density, finish_mean, mean_steps

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "data" / "example_curves.csv"
# A low epsilon: the noise reaches well outside [0, 1], so the projection has work to do.
MEAN_ARGS = ["release", "mean", "--preview", "--data", str(EXAMPLE), "--kernel", "matern52", "--rho", "0.1", "--epsilon", "0.2",
             "--value-range", "0,1.5", "--seed", "4"]


def test_mean_projection_never_moves_the_release_away_from_a_target_in_the_range():
    rng = np.random.default_rng(0)
    settings = MeanSettings(value_range=(0.0, 1.5))
    for _ in range(200):
        target = rng.uniform(0.0, 1.5, 30)
        raw = target + rng.normal(0.0, 1.0, 30)
        done = finish_mean(raw, settings)
        assert done.values.min() >= 0.0 and done.values.max() <= 1.5
        assert np.all(np.abs(done.values - target) <= np.abs(raw - target))  # pointwise, hence in L2
    assert finish_mean(raw, MeanSettings()).steps == (NONE_DECLARED,)  # no range: released as drawn
    assert np.array_equal(finish_mean(raw, MeanSettings()).values, raw)
    off = finish_mean(raw, MeanSettings(value_range=(0.0, 1.5), raw_release=True))
    assert np.array_equal(off.values, raw) and off.steps == (SWITCHED_OFF,)


def test_bernstein_is_projected_onto_its_own_public_bounds():
    settings = MeanSettings(mechanism="bernstein", lo=-1.0, hi=2.0)
    assert np.array_equal(finish_mean(np.array([-3.0, 0.5, 4.0]), settings).values, [-1.0, 0.5, 2.0])
    assert "[-1, 2]" in mean_steps(settings)[0]


def test_density_is_clipped_at_zero_and_integrates_to_one():
    weights = np.full(11, 0.1)
    weights[[0, -1]] = 0.05  # trapezoid on [0, 1]
    raw = np.sin(np.linspace(0.0, 6.0, 11)) + 0.3
    done = finish_density(raw, weights, KdeSettings())
    assert done.values.min() >= 0.0 and float(done.values @ weights) == pytest.approx(1.0)
    assert np.all((done.values == 0) == (raw <= 0))
    uniform = finish_density(-np.ones(11), weights, KdeSettings())  # nothing positive left
    assert np.allclose(uniform.values, 1.0) and float(uniform.values @ weights) == pytest.approx(1.0)
    assert np.array_equal(finish_density(raw, weights, KdeSettings(raw_release=True)).values, raw)


def test_cli_mean_release_is_projected_and_says_so(tmp_path):
    assert main([*MEAN_ARGS, "--out", str(tmp_path / "on")]) == 0
    assert main([*MEAN_ARGS, "--no-post-processing", "--out", str(tmp_path / "off")]) == 0
    on, off = (pd.read_csv(tmp_path / name / "release.csv")["value"].to_numpy() for name in ("on", "off"))
    assert off.min() < 0.0 or off.max() > 1.5, "the test needs a draw leaving the range"
    np.testing.assert_allclose(on, np.clip(off, 0.0, 1.5))  # same seed: the projection of the same draw
    record = json.loads((tmp_path / "on" / "release.json").read_text())
    assert record["post_processing"] == [mean_steps(MeanSettings(value_range=(0.0, 1.5)))[0]]
    assert json.loads((tmp_path / "off" / "release.json").read_text())["post_processing"] == [SWITCHED_OFF]
    analyst = json.loads((tmp_path / "on" / "analyst_view.json").read_text())
    np.testing.assert_allclose(analyst["raw_release"], off)  # the release as drawn, for comparison
    assert analyst["post_processing_moved_l2"] > 0 and "raw_release" not in record


def test_stream_engine_agrees_with_the_local_one(tmp_path):
    assert main([*MEAN_ARGS, "--out", str(tmp_path / "local")]) == 0
    assert main([*MEAN_ARGS, "--engine", "stream", "--chunk-rows", "7", "--out", str(tmp_path / "stream")]) == 0
    local, stream = (pd.read_csv(tmp_path / name / "release.csv")["value"].to_numpy() for name in ("local", "stream"))
    np.testing.assert_allclose(stream, local, rtol=1e-9, atol=1e-9)
    records = [json.loads((tmp_path / name / "release.json").read_text()) for name in ("local", "stream")]
    assert records[0]["post_processing"] == records[1]["post_processing"]


def test_committed_and_replayed_releases_are_post_processed():
    fd = load_curves(EXAMPLE)
    settings = MeanSettings(epsilon=0.2, value_range=(0.0, 1.5), tau=None)
    release = export.commit_mean(Ledger(5.0, 1e-5), fd, settings)
    values = release.table["value"].to_numpy()
    assert values.min() >= 0.0 and values.max() <= 1.5
    assert release.record["post_processing"] == list(mean_steps(settings))
    np.testing.assert_allclose(np.clip(release.analyst["raw_release"], 0.0, 1.5), values)
    replayed, _ = export.replay(release.config, fd)
    assert replayed.record["post_processing"] == release.record["post_processing"]
    assert replayed.table["value"].between(0.0, 1.5).all()


def test_committed_density_is_a_density():
    fd = load_curves(EXAMPLE)
    settings = KdeSettings(box=((0.0, 2.0),), epsilon=0.3)
    release = export.commit_kde(Ledger(5.0, 1e-5), fd, "max", settings)
    assert release.table["density"].min() >= 0.0
    x = release.table["x"].to_numpy()
    assert np.trapezoid(release.table["density"].to_numpy(), x) == pytest.approx(1.0, rel=1e-9)
    assert release.record["post_processing"][:2] == ["negative values set to 0",
                                                     "rescaled to integrate to 1 over the public box"]
