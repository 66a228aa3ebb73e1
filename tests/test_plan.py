"""Planning a release by accuracy across statistics (fdp_core.explore.plan, METHODS.md section 21)."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace

import numpy as np
import pytest
import yaml

from fdp_core.cli import main
from fdp_core.errors import ParameterError
from fdp_core.releases.kde import KdeSettings, plan_kde_release
from fdp_core.releases.mean import MeanSettings, plan_mean_release
from fdp_core.explore.plan import PublicDesign, describe, make_plan, parse_plan, split_by_weight, noise_profile
from fdp_core.publish.replay import parse_config

PUBLIC = {"n": 200, "grid": 50, "value_range": [0, 1]}
MEAN = {"mechanism": "gaussian", "kernel": "matern52", "rho": 0.1}
MEAN_PURE = {"mechanism": "iclp-qr", "kernel": "matern52", "rho": 0.1}
KDE = {"box": [[0, 1]]}


def _plan(statistics, budget=None, public=PUBLIC):
    mapping = {"schema": "fdp.plan/1", "public": dict(public), "statistics": statistics}
    if budget is not None:
        mapping["budget"] = budget
    return make_plan(mapping)


def _mean_radius_at(settings: dict, epsilon: float, design: PublicDesign) -> float:
    """Independent check: plan the mean directly at epsilon on the stand-in and read its radius."""
    s = MeanSettings(**{**settings, "epsilon": epsilon, "value_range": (0.0, 1.0), "tau": None})  # tau from the range
    return plan_mean_release(design.stand_in(), s).l2_error_radius(0.95)


@pytest.mark.parametrize("settings", [MEAN, MEAN_PURE], ids=["gaussian", "iclp-qr"])
def test_target_gives_the_smallest_epsilon_meeting_it(settings):
    plan = _plan([{"kind": "mean", "settings": settings, "target": 0.05}])
    part = plan.parts[0]
    design = PublicDesign.of(PUBLIC)
    # The scaled radius agrees with a direct plan at that epsilon, meets the target, and 1% less misses it.
    assert _mean_radius_at(settings, part.epsilon, design) == pytest.approx(part.radius, rel=1e-9)
    assert _mean_radius_at(settings, part.epsilon, design) <= 0.05 * (1 + 1e-9)
    assert _mean_radius_at(settings, part.epsilon * 0.99, design) > 0.05
    # What the ledger charges (exact discrete export) is at least the calibrated epsilon.
    assert part.charged_epsilon >= part.epsilon * (1 - 1e-9)


def test_density_target_matches_a_direct_plan():
    plan = _plan([{"kind": "kde", "feature": "mean:0:1", "settings": KDE, "target": 0.5}])
    part = plan.parts[0]
    direct = plan_kde_release(np.full(200, 0.5), KdeSettings(box=((0.0, 1.0),), epsilon=part.epsilon))
    assert direct.l2_error_radius(0.95) == pytest.approx(0.5, rel=1e-6)


def test_totals_basic_and_whole_plan_composition():
    plan = _plan([{"kind": "mean", "settings": MEAN, "target": 0.05},
                  {"kind": "kde", "feature": "mean:0:1", "settings": KDE, "target": 0.5},
                  {"kind": "pca", "settings": {"k": 2}, "epsilon": 0.5}])
    assert plan.basic[0] == pytest.approx(sum(p.charged_epsilon for p in plan.parts))
    assert plan.basic[1] == pytest.approx(2e-5)
    # With two Gaussian parts and a pure one, a composed total (GDP + basic or zCDP) is cheaper.
    assert plan.gdp is not None and plan.gdp[0] < plan.basic[0]
    record = plan.to_dict()
    assert record["data_read"] is False and record["cheapest_valid_total"] == plan.gdp[2]


def _brute_force_best(profiles, weights, total, steps=200):
    best = np.inf
    for cut in itertools.product(np.linspace(0.005, 0.995, steps), repeat=len(profiles) - 1):
        if sum(cut) >= 1:
            continue
        shares = list(cut) + [1 - sum(cut)]
        err = sum(w * p.radius(total * s) ** 2 for w, p, s in zip(weights, profiles, shares))
        best = min(best, err)
    return best


@pytest.mark.parametrize("kinds", [("gaussian", "iclp-qr"), ("gaussian", "gaussian"), ("iclp-qr", "iclp-qr")])
def test_weighted_split_is_within_one_percent_of_brute_force(kinds):
    design = PublicDesign.of(PUBLIC)
    settings = {"gaussian": MEAN, "iclp-qr": MEAN_PURE}
    profiles = [noise_profile("mean", MeanSettings(**{**settings[k], "value_range": (0.0, 1.0), "tau": None}), design)
                for k in kinds]
    profiles[1] = replace(profiles[1], radius_ref=profiles[1].radius_ref * 3.0)  # unequal statistics
    weights = [1.0, 2.0]
    split = split_by_weight(profiles, weights, 4.0)
    assert sum(split) == pytest.approx(4.0)
    chosen = sum(w * p.radius(e) ** 2 for w, p, e in zip(weights, profiles, split))
    assert chosen <= _brute_force_best(profiles, weights, 4.0, steps=2000) * 1.01


def test_three_part_split_against_brute_force():
    design = PublicDesign.of(PUBLIC)
    profiles = [noise_profile("mean", MeanSettings(**{**MEAN, "value_range": (0.0, 1.0)}), design),
                noise_profile("mean", MeanSettings(**{**MEAN_PURE, "value_range": (0.0, 1.0)}), design),
                noise_profile("kde", KdeSettings(box=((0.0, 1.0),)), design)]
    weights = [1.0, 0.5, 0.01]
    split = split_by_weight(profiles, weights, 3.0)
    chosen = sum(w * p.radius(e) ** 2 for w, p, e in zip(weights, profiles, split))
    assert chosen <= _brute_force_best(profiles, weights, 3.0, steps=120) * 1.01


def test_weights_use_the_budget_left_after_targets():
    plan = _plan([{"kind": "mean", "settings": MEAN, "target": 0.1},
                  {"kind": "mean", "name": "pure", "settings": MEAN_PURE, "weight": 1},
                  {"kind": "kde", "feature": "mean:0:1", "settings": KDE, "weight": 1}],
                 budget={"epsilon": 8, "delta": 1e-4})
    by_name = {p.statistic.name: p for p in plan.parts}
    # The weights split what the ledger charges (METHODS.md 23), so the plan fits its budget exactly.
    assert plan.basic[0] == pytest.approx(8.0, rel=1e-6) and plan.basic[0] <= 8.0 and plan.fits()
    assert sum(p.epsilon for p in plan.parts) < plan.basic[0]  # calibrated < charged (the discrete export's map)
    assert by_name["1-mean"].radius == pytest.approx(0.1, rel=1e-6)
    assert any(a["rule"].startswith("equal split") for a in plan.alternatives)


def test_a_weighted_plan_fits_its_total_and_says_its_headroom(capsys):
    """Issue 36's check: a Gaussian mean with a target, a Gaussian and a truncated-Gaussian mean with
    weights 1 and 2, n 200, 50 points, total epsilon 6: the charged total fits (it was 6.44)."""
    settings = {"kernel": "matern52", "rho": 0.1, "delta": 1e-6}
    mapping = {"schema": "fdp.plan/1", "public": {"n": 200, "grid": 50, "value_range": [-1, 1]},
               "budget": {"epsilon": 6, "delta": 1e-5},
               "statistics": [{"kind": "mean", "name": "target", "settings": {**settings, "mechanism": "gaussian"},
                               "target": 0.3},
                              {"kind": "mean", "name": "gaussian", "settings": {**settings, "mechanism": "gaussian"},
                               "weight": 1},
                              {"kind": "mean", "name": "truncated",
                               "settings": {**settings, "mechanism": "truncated-gaussian"}, "weight": 2}]}
    plan = make_plan(mapping)
    charged = sum(e.epsilon for p in plan.parts for e in p.entries)  # what the ledger records, entry by entry
    assert plan.fits() and charged <= 6.0 and charged == pytest.approx(6.0, rel=1e-6)
    assert plan.parts[2].charged_epsilon > plan.parts[1].charged_epsilon  # weight 2 gets more
    lines = describe(plan)
    assert lines[-1].startswith("budget: epsilon 6, delta 1e-05: fits, headroom epsilon ")


@pytest.mark.parametrize("mapping, message", [
    ({"public": {"n": 1}, "statistics": [{"kind": "mean", "target": 1}]}, "public.n"),
    ({"public": PUBLIC, "statistics": []}, "non-empty list"),
    ({"public": PUBLIC, "statistics": [{"kind": "mean", "settings": MEAN}]}, "exactly one of"),
    ({"public": PUBLIC, "statistics": [{"kind": "pca", "target": 0.1}]}, "state epsilon"),
    ({"public": PUBLIC, "statistics": [{"kind": "mean", "settings": MEAN, "weight": 1}]}, "need a total 'budget'"),
    ({"public": PUBLIC, "statistics": [{"kind": "mean", "settings": MEAN, "target": True}]}, "must be a number"),
    ({"public": PUBLIC, "statistics": [{"kind": "mean", "settings": {**MEAN, "tau_from_data": True},
                                        "target": 0.1}]}, "data-dependent"),
    ({"public": PUBLIC, "statistics": [{"kind": "nope", "target": 1}]}, "kind must be one of"),
    ({"public": {**PUBLIC, "extra": 1}, "statistics": [{"kind": "mean", "target": 1}]}, "unknown public key"),
])
def test_bad_plans_get_one_specific_line(mapping, message):
    with pytest.raises(ParameterError, match=message):
        parse_plan(mapping)


def _write_plan(tmp_path, statistics, budget=None):
    mapping = {"schema": "fdp.plan/1", "public": {"n": 60, "grid": 27, "value_range": [-0.5, 2.0]},
               "statistics": statistics}
    if budget:
        mapping["budget"] = budget
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(mapping))
    return path


STATS = [{"kind": "mean", "settings": MEAN, "target": 0.3},
         {"kind": "kde", "feature": "l2norm", "settings": {"box": [[0, 2]]}, "target": 2.0}]


def test_cli_prints_the_plan_and_writes_replayable_configs(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["plan", str(_write_plan(tmp_path, STATS)), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "no data were read" in text and "total (basic composition" in text
    record = json.loads((out / "plan.json").read_text())
    assert [p["kind"] for p in record["parts"]] == ["mean", "kde"]
    for name in ("part-1-mean.yaml", "part-2-kde.yaml"):
        config = parse_config(out / name)
        assert config["budget"]["epsilon_total"] == pytest.approx(record["total_basic"]["epsilon"])


def test_commit_charges_every_part_as_one_act(tmp_path, capsys):
    data = "data/example_curves.csv"
    out = tmp_path / "out"
    assert main(["plan", str(_write_plan(tmp_path, STATS)), "--out", str(out), "--data", data, "--commit"]) == 0
    assert (out / "part-1-mean" / "release.json").exists() and (out / "part-2-kde" / "release.csv").exists()
    record = json.loads((out / "plan.json").read_text())
    capsys.readouterr()
    assert main(["ledger", "show", "--data", data]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert len(shown["entries"]) == 2
    assert sum(e["epsilon"] for e in shown["entries"]) == pytest.approx(record["total_basic"]["epsilon"], rel=1e-9)


def test_commit_is_refused_whole_when_the_plan_does_not_fit(tmp_path, capsys):
    data = "data/example_curves.csv"
    assert main(["ledger", "init", "--data", data, "--epsilon", "1", "--delta", "1e-4"]) == 0
    out = tmp_path / "out"
    # The mean alone fits in epsilon 1; with the density it does not: nothing may be committed.
    stats = [{"kind": "mean", "settings": MEAN, "target": 0.6},
             {"kind": "kde", "feature": "l2norm", "settings": {"box": [[0, 2]]}, "target": 0.05}]
    assert main(["plan", str(_write_plan(tmp_path, stats)), "--out", str(out), "--data", data, "--commit"]) == 2
    assert "nothing was committed" in capsys.readouterr().err
    assert not out.exists()
    assert main(["ledger", "show", "--data", data]) == 0
    assert json.loads(capsys.readouterr().out)["entries"] == []


def test_commit_refuses_a_file_with_another_number_of_persons(tmp_path, capsys):
    stats = [{"kind": "mean", "settings": MEAN, "target": 0.3}]
    path = _write_plan(tmp_path, stats)
    mapping = yaml.safe_load(path.read_text())
    mapping["public"]["n"] = 61
    path.write_text(yaml.safe_dump(mapping))
    assert main(["plan", str(path), "--out", str(tmp_path / "o"), "--data", "data/example_curves.csv",
                 "--commit"]) == 2
    assert "made for n = 61" in capsys.readouterr().err


def test_a_declared_range_sets_tau_unless_stated():
    derived = _plan([{"kind": "mean", "settings": MEAN, "target": 0.05}]).parts[0]
    stated = _plan([{"kind": "mean", "settings": {**MEAN, "tau": 1.0}, "target": 0.05}]).parts[0]
    assert derived.statistic.settings.tau is None and stated.statistic.settings.tau == 1.0
    # tau = (hi - lo)/2 = 0.5 for the range [0, 1]: half the sensitivity of tau = 1, a smaller budget.
    assert derived.charged_epsilon < stated.charged_epsilon


def _coverage(draw_norms, radius: float, total: int = 400_000, chunk: int = 50_000) -> float:
    rng = np.random.default_rng(41)
    return float(np.mean(np.concatenate([draw_norms(rng, chunk) <= radius for _ in range(total // chunk)])))


# 400 000 draws: the coverage's Monte Carlo sd is 3.4e-4, so 0.95 - 3 sd = 0.949.
def test_the_planned_mean_radius_holds_with_probability_095():
    """METHODS 25: the plan's radius from the exact law (Imhof), not a saddlepoint; checked by simulating the noise."""
    plan = _plan([{"kind": "mean", "settings": MEAN, "target": 0.05}])
    part = plan.parts[0]
    s = MeanSettings(**{**MEAN, "epsilon": part.epsilon, "value_range": (0.0, 1.0), "tau": None})
    release = plan_mean_release(PublicDesign.of(PUBLIC).stand_in(), s)

    def norms(rng, size):
        z = (rng.standard_normal((size, release.noise_scales.size)) * release.noise_scales) @ release.synthesis.T
        return np.sqrt((z**2) @ release.weights)

    assert 0.949 <= _coverage(norms, part.radius) <= 0.952


def test_the_planned_covariance_radius_holds_with_probability_095():
    from fdp_core.explore.plan import REFERENCE_EPSILON
    from fdp_core.releases.covariance import CovarianceSettings, plan_covariance_release, symmetrise

    design = PublicDesign.of({**PUBLIC, "grid": 20})  # 400 noise entries per draw: 200 000 draws in seconds
    settings = CovarianceSettings(kernel="matern52", rho=0.1, epsilon=REFERENCE_EPSILON, lo=0.0, hi=1.0, tau=None)
    radius = noise_profile("covariance", settings, design).radius_ref
    release = plan_covariance_release(design.stand_in(), settings)

    def norms(rng, size):
        total = np.zeros(size)
        noise = symmetrise(rng.standard_normal((size,) + release.scales.shape) * release.scales)
        total = np.sum(noise**2, axis=(1, 2))
        if release.released_mean:
            total += np.sum((rng.standard_normal((size, release.mean_scales.size)) * release.mean_scales)**2, 1)
        return np.sqrt(total)

    # 200 000 draws: sd 4.9e-4, 0.95 - 3 sd = 0.9485.
    assert 0.9485 <= _coverage(norms, radius, total=200_000, chunk=10_000) <= 0.9525


@pytest.mark.parametrize("centring", ["public", "released-mean"])
def test_the_planned_laplace_covariance_radius_is_drawn_in_chunks(centring):
    """Issue 40: the planner's ICLP covariance radius draws its (draws, L, L) Laplace noise chunk by chunk from
    the same stream: the same radius as every draw held at once, at a peak of a few 4 MB chunks."""
    from chunked_monte_carlo import chunked_equals_unchunked

    from fdp_core.explore.plan import _covariance_radius
    from fdp_core.mechanisms.weighted_chi2 import monte_carlo_upper_quantile
    from fdp_core.releases.covariance import CovarianceSettings, plan_covariance_release, symmetrise

    design = PublicDesign.of({**PUBLIC, "grid": 40})
    release = plan_covariance_release(design.stand_in(), CovarianceSettings(mechanism="iclp", lo=0.0, hi=1.0,
                                                                             centring=centring))
    rng, draws = np.random.default_rng(20260), 1500
    noise = symmetrise(rng.laplace(0.0, 1.0, (draws,) + release.scales.shape) * release.scales)
    total = np.sum(noise**2, axis=(1, 2))
    del noise
    if release.released_mean:
        total = total + np.sum((rng.laplace(0.0, 1.0, (draws, release.mean_scales.size)) * release.mean_scales)**2, 1)
    expected = monte_carlo_upper_quantile(np.sqrt(total), 0.95)
    assert 4 * 2**19 * 8 < draws * release.scales.size * 8 * 3  # the limit is below three unchunked arrays
    chunked_equals_unchunked(lambda: _covariance_radius(release, draws=draws), expected, peak_limit=4 * 2**19 * 8)
