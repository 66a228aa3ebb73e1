"""Sparse, irregular curves (METHODS.md 20): bounds, noise law, audit, intake, CLI and the neighbour test."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from fdp_core.sensitivity import (sparse_b_sensitivity_l1, sparse_b_sensitivity_l2, sparse_gram_sensitivity_frobenius,
                                  sparse_gram_sensitivity_l1)
from fdp_core.data.simulate import sparse_design, sparse_true_mean
from fdp_core.releases.sparse import SAFETY, SparseSettings, floored_solve, plan_sparse_release, sparse_basis, sparse_statistics
from fdp_core.explore.sparse_audit import audit_sparse_mechanism, worst_times
from fdp_core.data.sparse_data import from_observations, sparse_reason

RANGE = (-1.0, 2.0)


def _settings(**kw):
    base = dict(domain=(0.0, 1.0), value_range=RANGE, epsilon=1.0, delta=1e-5)
    base.update(kw)
    return SparseSettings(**base)


def _person_stats(s, times, values):
    """n A_i and n b_i of a single person (n = 1) through the real statistics code."""
    d = from_observations(["x"] * len(times), times, values)
    st = sparse_statistics(d, s)
    return st.A, st.b


# --------------------------------------------------------------------------- the public basis


@pytest.mark.parametrize("kernel,rho,J", [("matern52", 0.2, 8), ("gaussian", 0.1, 12), ("exponential", 0.3, 20)])
def test_christoffel_bounds_hold_at_every_t_and_sit_just_above_the_grid_maximum(kernel, rho, J):
    s = _settings(kernel=kernel, rho=rho, n_basis=J)
    basis = sparse_basis(s)
    t = np.concatenate([np.random.default_rng(0).uniform(0, 1, 50_000), np.linspace(0, 1, 20_001)])
    raw = basis.raw(t)
    # The 1.01 safety factor covers the continuum: the raw basis never exceeds it between check points.
    assert np.max(np.sum(raw**2, axis=1)) <= basis.r2
    assert np.max(np.sum(np.abs(raw), axis=1) ** 2) <= basis.r1
    assert np.max(np.sum(raw**2, axis=1)) >= basis.r2 / SAFETY * (1 - 1e-3)
    phi = basis.evaluate(t)
    assert np.all(np.sum(phi**2, axis=1) <= basis.r2 * (1 + 1e-12))


def test_nystrom_extension_reproduces_the_eigenfunctions_on_the_grid():
    from fdp_core.kernels import eigenbasis

    basis = sparse_basis(_settings())
    grid_basis = eigenbasis(basis.kernel, basis.rho, basis.grid)
    np.testing.assert_allclose(basis.raw(basis.grid), grid_basis.eigenfunctions[:, :basis.n_basis], atol=1e-8)


def test_evaluate_rescales_a_basis_vector_above_the_bounds():
    basis = sparse_basis(_settings())
    inflated = type(basis)(basis.kernel, basis.rho, basis.nu, basis.eigenvalues, basis.grid, basis.nystrom,
                           basis.r2 / 4, basis.r1 / 4)
    phi = inflated.evaluate(np.linspace(0, 1, 500))
    assert np.max(np.sum(phi**2, axis=1)) <= basis.r2 / 4 * (1 + 1e-12)
    assert np.max(np.sum(np.abs(phi), axis=1) ** 2) <= basis.r1 / 4 * (1 + 1e-12)


# --------------------------------------------------------------------------- sensitivity bounds


def _random_person(rng, s, m=None):
    m = m or int(rng.integers(1, 11))
    extremes = rng.random() < 0.5  # half the persons sit at the ends of the range and the domain
    t = rng.choice([0.0, 1.0], m) if extremes else rng.uniform(0, 1, m)
    y = rng.choice(RANGE, m) if extremes else rng.uniform(RANGE[0] - 1, RANGE[1] + 1, m)  # some clipped
    return t, y


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_random_and_adversarial_neighbours_never_exceed_the_bounds(noise):
    s = _settings(noise=noise)
    basis = sparse_basis(s)
    h = s.half_width
    if noise == "gaussian":
        bound_a, bound_b = sparse_gram_sensitivity_frobenius(basis.r2, 1), sparse_b_sensitivity_l2(basis.r2, h, 1)
        norm = lambda x: np.linalg.norm(np.ravel(x))  # noqa: E731
    else:
        bound_a = sparse_gram_sensitivity_l1(basis.r1, basis.r2, basis.n_basis, 1)
        bound_b = sparse_b_sensitivity_l1(basis.r1, h, 1)
        norm = lambda x: np.abs(np.ravel(x)).sum()  # noqa: E731
    rng = np.random.default_rng(3)
    worst_a = worst_b = 0.0
    for _ in range(400):
        a1, b1 = _person_stats(s, *_random_person(rng, s))
        a2, b2 = _person_stats(s, *_random_person(rng, s))
        worst_a, worst_b = max(worst_a, norm(a1 - a2)), max(worst_b, norm(b1 - b2))
    # Adversarial: single visits at every pair of times of a fine grid, values at the range ends.
    t_d, t_dp, shift_a = worst_times(s, "A", n_grid=301)
    a1, _ = _person_stats(s, [t_d], [s.centre])
    a2, _ = _person_stats(s, [t_dp], [s.centre])
    worst_a = max(worst_a, norm(a1 - a2))
    t_star, _, shift_b = worst_times(s, "b", n_grid=2001)
    _, b1 = _person_stats(s, [t_star], [RANGE[1]])
    _, b2 = _person_stats(s, [t_star], [RANGE[0]])
    worst_b = max(worst_b, norm(b1 - b2))
    assert worst_a <= bound_a and worst_b <= bound_b
    # b's bound is attained up to the safety factor (sqrt(1.01) on the norm); A's Frobenius bound nearly.
    assert norm(b1 - b2) >= bound_b / math.sqrt(SAFETY) * (1 - 1e-3)
    assert worst_a >= (0.95 if noise == "gaussian" else 0.8) * bound_a


@pytest.mark.parametrize("kernel,rho,J", [("matern52", 0.2, 8), ("gaussian", 0.1, 12), ("matern52", 0.2, 2)])
@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_continuous_adversarial_search_never_exceeds_the_bounds(kernel, rho, J, noise):
    """Nelder-Mead over the visit times of two persons with 1-3 visits each (values at the range ends, where
    b's shift is largest), from random starts and from the worst grid pair: every A and b shift, in the
    noise's norm (Frobenius and l2 for Gaussian noise, l1 over all entries for Laplace), stays within
    its bound; the best pair found goes through the real statistics code."""
    from scipy import optimize

    s = _settings(kernel=kernel, rho=rho, n_basis=J, noise=noise)
    basis, h = sparse_basis(s), s.half_width
    if noise == "gaussian":
        bound_a, bound_b = sparse_gram_sensitivity_frobenius(basis.r2, 1), sparse_b_sensitivity_l2(basis.r2, h, 1)
        norm = lambda x: float(np.linalg.norm(np.ravel(x)))  # noqa: E731
    else:
        bound_a = sparse_gram_sensitivity_l1(basis.r1, basis.r2, basis.n_basis, 1)
        bound_b = sparse_b_sensitivity_l1(basis.r1, h, 1)
        norm = lambda x: float(np.abs(np.ravel(x)).sum())  # noqa: E731

    def pieces(t, y):  # n A_i and n b_i of one person (n = 1), values already centred
        phi = basis.evaluate(np.clip(t, 0.0, 1.0))
        return phi.T @ phi / len(t), phi.T @ y / len(t)

    rng = np.random.default_rng(11)
    t_d, t_dp, _ = worst_times(s, "A", n_grid=201)
    t_star, _, _ = worst_times(s, "b", n_grid=201)
    found = {"A": (0.0, None), "b": (0.0, None)}
    for m, m_prime in ((1, 1), (1, 2), (2, 3), (3, 3)):
        starts = [rng.uniform(0, 1, m + m_prime) for _ in range(2)]
        starts.append(np.r_[np.full(m, t_d), np.full(m_prime, t_dp)])
        starts.append(np.r_[np.full(m, t_star), np.full(m_prime, t_star)])
        for z0 in starts:
            y, y_prime = rng.choice([-h, h], m), rng.choice([-h, h], m_prime)
            y[0], y_prime[0] = h, -h
            for part in ("A", "b"):
                k = 0 if part == "A" else 1

                def shift(z):
                    return norm(pieces(z[:m], y)[k] - pieces(z[m:], y_prime)[k])

                res = optimize.minimize(lambda z: -shift(z), z0, method="Nelder-Mead",
                                        options=dict(maxiter=300, xatol=1e-7, fatol=1e-13))
                for z in (z0, res.x):
                    value = shift(z)
                    assert value <= (bound_a if part == "A" else bound_b) * (1 + 1e-12), (part, z, value)
                    if value > found[part][0]:
                        found[part] = (value, (np.clip(z[:m], 0, 1), s.centre + y, np.clip(z[m:], 0, 1),
                                               s.centre + y_prime))
    # The best pairs through the real code (sparse_statistics with n = 1): the same shifts, within the bounds.
    for part, bound in (("A", bound_a), ("b", bound_b)):
        t1, y1, t2, y2 = found[part][1]
        first, second = _person_stats(s, t1, y1), _person_stats(s, t2, y2)
        k = 0 if part == "A" else 1
        assert norm(first[k] - second[k]) == pytest.approx(found[part][0], rel=1e-9)
        assert found[part][0] <= bound * (1 + 1e-12)
        assert found[part][0] >= (0.95 if part == "b" or noise == "gaussian" else 0.75) * bound


def test_sqrt2_frobenius_argument_is_attained_by_orthogonal_rank_one_pieces():
    # The inequality ||A - A'||_F <= sqrt(tr(A)^2 + tr(A')^2) is an equality for orthogonal rank-one A, A'.
    p, q = np.array([3.0, 0.0]), np.array([0.0, 3.0])
    diff = np.outer(p, p) - np.outer(q, q)
    assert np.linalg.norm(diff) == pytest.approx(sparse_gram_sensitivity_frobenius(9.0, 1))
    # ... and it holds for averages of rank-one pieces (PSD) of any sizes.
    rng = np.random.default_rng(0)
    for _ in range(2000):
        P, Q = rng.normal(size=(rng.integers(1, 6), 5)), rng.normal(size=(rng.integers(1, 6), 5))
        P /= np.linalg.norm(P, axis=1, keepdims=True)
        Q /= np.linalg.norm(Q, axis=1, keepdims=True)
        A, B = P.T @ P / len(P), Q.T @ Q / len(Q)
        assert np.linalg.norm(A - B) <= math.sqrt(2.0) + 1e-12


def test_the_statistics_are_averages_of_per_person_pieces():
    d = sparse_design(30, seed=5)
    s = _settings()
    st = sparse_statistics(d, s)
    person, m = d.person_index()
    phi = sparse_basis(s).evaluate(d.t)
    A = sum(np.outer(phi[k], phi[k]) / m[person[k]] for k in range(d.n_observations)) / 30
    b = sum((np.clip(d.y[k], *RANGE) - s.centre) * phi[k] / m[person[k]] for k in range(d.n_observations)) / 30
    np.testing.assert_allclose(st.A, A, atol=1e-12)
    np.testing.assert_allclose(st.b, b, atol=1e-12)
    assert st.n == 30 and np.all(np.linalg.eigvalsh(st.A) >= -1e-12)


def test_observations_outside_the_domain_are_dropped_and_the_person_still_counts():
    d = from_observations(["a", "a", "b"], [0.5, 2.0, 3.0], [1.0, 1.0, 1.0])
    st = sparse_statistics(d, _settings())
    assert st.n == 2 and st.n_outside_domain == 2
    a_only = sparse_statistics(from_observations(["a"], [0.5], [1.0]), _settings())
    np.testing.assert_allclose(st.A, a_only.A / 2, atol=1e-14)


# --------------------------------------------------------------------------- noise and the solve


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_noise_follows_the_claimed_law(noise):
    d = sparse_design(200, seed=2)
    plan = plan_sparse_release(d, _settings(noise=noise))
    A, b = plan.sample_statistics(np.random.default_rng(7), 4000)
    J = plan.basis.n_basis
    diag = (A - plan.statistics.A)[:, np.arange(J), np.arange(J)].ravel() / plan.scale_a
    off = (A - plan.statistics.A)[:, 0, 1] * math.sqrt(2.0) / plan.scale_a
    zb = ((b - plan.statistics.b) / plan.scale_b).ravel()
    law = stats.norm if noise == "gaussian" else stats.laplace
    assert stats.kstest(diag, law.cdf).pvalue > 1e-3
    assert stats.kstest(zb, law.cdf).pvalue > 1e-3
    assert np.var(off) == pytest.approx(1.0 if noise == "gaussian" else 2.0, rel=0.1)  # mean of two draws x sqrt2
    np.testing.assert_array_equal(A, np.swapaxes(A, 1, 2))


def test_scales_follow_the_budget_split_and_the_guarantee_records_both_parts():
    d = sparse_design(100, seed=2)
    plan = plan_sparse_release(d, _settings(noise="laplace", gamma=0.4, epsilon=2.0))
    g = plan.guarantee
    assert g.delta == 0 and g.epsilon == 2.0
    assert g.details["A"].epsilon == pytest.approx(0.8) and g.details["b"].epsilon == pytest.approx(1.2)
    assert plan.scale_a == pytest.approx(plan.sensitivity_a / 0.8)
    assert plan.scale_b == pytest.approx(plan.sensitivity_b / 1.2)
    rec = g.record()
    assert rec["A"]["sensitivity_l1"] == plan.sensitivity_a and rec["b"]["laplace_scale"] == plan.scale_b
    gauss = plan_sparse_release(d, _settings(gamma=0.4, epsilon=2.0, delta=1e-6)).guarantee
    assert gauss.details["A"].delta == pytest.approx(4e-7) and gauss.details["b"].delta == pytest.approx(6e-7)
    with pytest.raises(AttributeError):
        g.epsilon = 3.0


def test_floored_solve_is_defined_for_any_noisy_matrix_and_exact_without_noise():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(6, 6))
    beta = floored_solve(A, rng.normal(size=6), 0.1, np.zeros(6))
    assert np.all(np.isfinite(beta))
    M = np.eye(4) * 2.0
    np.testing.assert_allclose(floored_solve(M, np.ones(4), 0.1, np.zeros(4)), np.full(4, 0.5))


def test_the_noiseless_estimate_recovers_the_known_mean():
    d = sparse_design(3000, seed=4)
    plan = plan_sparse_release(d, _settings())
    err = np.sqrt(np.mean((plan.nonprivate_curve() - sparse_true_mean(plan.output_grid)) ** 2))
    assert err < 0.03


# --------------------------------------------------------------------------- black-box audits


@pytest.mark.parametrize("noise,part", [("gaussian", "A"), ("gaussian", "b"), ("laplace", "b")])
def test_black_box_audit_passes_and_flags_the_07_control(noise, part):
    s = _settings(noise=noise, delta=0.05)
    audit = audit_sparse_mechanism(s, 100, part, n_select=40_000, n_test=150_000)
    assert audit.attained_fraction > 0.98
    assert not audit.result.flagged, audit.result
    assert audit.control.flagged, audit.control
    # The epsilon lower bounds: the honest run's below the claim, the control's above it.
    assert audit.epsilon_bound.epsilon <= audit.epsilon < audit.control_epsilon_bound.epsilon


def test_laplace_gram_audit_passes_at_the_claimed_epsilon():
    # J = 4: the loss is spread over 16 entries (its maximum has probability 2^-16), so only the claimed
    # level is checked here; the control is flagged at J = 2 below.
    audit = audit_sparse_mechanism(_settings(noise="laplace", n_basis=4), 100, "A", n_select=20_000, n_test=50_000)
    assert audit.attained_fraction > 0.8
    assert not audit.result.flagged
    assert audit.epsilon_bound.epsilon <= audit.epsilon


def test_laplace_gram_audit_flags_the_07_control_and_reports_both_epsilon_bounds():
    """The pure variant of A (l1 bound min(2 R1, sqrt2 J R2) / n): J = 2 (4 noisy entries), A's share 2."""
    s = _settings(noise="laplace", n_basis=2, epsilon=4.0, gamma=0.5)
    audit = audit_sparse_mechanism(s, 100, "A", n_select=40_000, n_test=150_000)
    assert audit.epsilon == pytest.approx(2.0) and audit.attained_fraction > 0.75
    assert not audit.result.flagged and audit.epsilon_bound.epsilon <= audit.epsilon
    assert audit.control.flagged, audit.control
    assert audit.control_epsilon_bound.epsilon > audit.epsilon  # what the 0.7x control really spends, seen
    # ... and at most what it spends: the pair's shift over 0.7 times the scale.
    assert audit.control_epsilon_bound.epsilon <= audit.attained_fraction * audit.epsilon / 0.7 + 1e-9


# --------------------------------------------------------------------------- intake


def test_sparse_design_is_recognised_as_sparse_and_a_gridded_long_file_is_not():
    verdict = sparse_reason(sparse_design(50, seed=1))
    assert verdict.sparse and "own times" in verdict.reason and 2 <= verdict.visits_min <= verdict.visits_max <= 10
    grid = np.linspace(0, 1, 5)
    same = from_observations(np.repeat(["a", "b", "c"], 5), np.tile(grid, 3), np.arange(15.0))
    assert not sparse_reason(same).sparse
    dense = from_observations(np.repeat(["a", "b"], 30), np.concatenate([np.linspace(0, 1, 30),
                                                                           np.linspace(0.01, 0.99, 30)]), np.ones(60))
    assert not sparse_reason(dense).sparse


# --------------------------------------------------------------------------- ledger


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_ledger_charges_both_parts_and_refuses_beyond_the_budget(noise):
    from fdp_core.budget.accounting import Ledger
    from fdp_core.errors import FdpError
    from fdp_core.releases.sparse import sparse_ledger_entries

    plan = plan_sparse_release(sparse_design(60, seed=1), _settings(noise=noise, epsilon=0.6, delta=1e-6))
    ledger = Ledger(1.0, 1e-5)
    for entry in sparse_ledger_entries(plan):
        ledger.commit(entry)
    spent = ledger.spent()
    assert spent.epsilon == pytest.approx(0.6) and spent.delta == pytest.approx(1e-6 if noise == "gaussian" else 0)
    with pytest.raises(FdpError):
        for entry in sparse_ledger_entries(plan):
            ledger.commit(entry)


# --------------------------------------------------------------------------- CLI and the neighbour test

import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import pandas as pd  # noqa: E402

from fdp_core.cli import main  # noqa: E402
from fdp_core.data.sparse_data import read_long  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SPARSE_EXAMPLE = ROOT / "data" / "example_sparse.csv"
BASE = ["release", "mean", "--preview", "--kernel", "matern52", "--rho", "0.2", "--epsilon", "2", "--value-range=-1,2"]


def test_shipped_example_is_the_documented_design():
    from fdp_core.data.simulate import SPARSE_EXAMPLE as spec

    d = read_long(SPARSE_EXAMPLE)
    again = sparse_design(spec["n"], visits=spec["visits"], noise_sd=spec["noise_sd"], seed=spec["seed"])
    assert d.n == spec["n"] and d.same_values(again)
    assert sparse_reason(d).sparse


def test_cli_releases_a_sparse_file_only_on_the_declared_route(tmp_path, capsys):
    """METHODS.md 24: the route is declared (--sparse), never chosen from the visit counts."""
    for extra, words in (([], "--grid A,B,M"), (["--domain", "0,1"], "add --sparse")):
        assert main([*BASE, "--data", str(SPARSE_EXAMPLE), *extra, "--seed", "1", "--out", str(tmp_path / "x")]) == 2
        assert words in capsys.readouterr().err and not (tmp_path / "x").exists()
    out = tmp_path / "auto"
    assert main([*BASE, "--data", str(SPARSE_EXAMPLE), "--sparse", "--domain", "0,1", "--seed", "1",
                 "--out", str(out)]) == 0
    record = json.loads((out / "release.json").read_text())
    table = pd.read_csv(out / "release.csv")
    assert record["route"] == "sparse" and record["n"] == 500 and record["guarantee"]["epsilon"] == 2.0
    assert list(table.columns) == ["t", "value"] and len(table) == 101
    analyst = json.loads((out / "analyst_view.json").read_text())
    assert analyst["publishable"] is False and analyst["l2_gap_to_pooled_smoother"] > 0
    assert "n_values_clipped" not in record and "pooled_smoother" not in record


def test_cli_laplace_variant_and_renamed_columns(tmp_path):
    frame = pd.read_csv(SPARSE_EXAMPLE).rename(columns={"id": "child", "t": "age", "value": "height"})
    frame["age"] = 2 + 16 * frame["age"]
    path = tmp_path / "growth.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "lap"
    assert main([*BASE, "--data", str(path), "--id-column", "child", "--t-column", "age", "--value-column",
                 "height", "--sparse", "--domain", "2,18", "--sparse-noise", "laplace", "--seed", "2",
                 "--out", str(out)]) == 0
    record = json.loads((out / "release.json").read_text())
    assert record["guarantee"]["privacy"] == "epsilon-DP" and record["guarantee"]["delta"] == 0
    assert record["grid"][0] == 2 and record["grid"][-1] == 18


@pytest.mark.parametrize("extra,message", [
    ([], "--domain A,B"),
    (["--domain", "1,0"], "A < B"),
    (["--domain", "0,1", "--basis-size", "99"], "at most 60"),
])
def test_bad_sparse_input_exits_2_with_one_line(extra, message, tmp_path, capsys):
    out = tmp_path / "bad"
    args = ["release", "mean", "--preview", "--kernel", "matern52", "--rho", "0.2", "--epsilon", "1", "--value-range=-1,2",
            "--data", str(SPARSE_EXAMPLE), "--sparse", *extra, "--out", str(out)]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1]
    assert not out.exists()


def test_missing_value_range_is_refused(tmp_path, capsys):
    args = ["release", "mean", "--preview", "--kernel", "matern52", "--rho", "0.2", "--epsilon", "1", "--tau", "1",
            "--data", str(SPARSE_EXAMPLE), "--sparse", "--domain", "0,1", "--out", str(tmp_path / "x")]
    assert main(args) == 2
    assert "--value-range" in capsys.readouterr().err


def test_gridded_long_file_keeps_the_gridded_route(tmp_path):
    out = tmp_path / "grid"
    result = subprocess.run([sys.executable, "-m", "fdp_core", *BASE, "--data", str(ROOT / "data" / "example_long.csv"),
                             "--out", str(out), "--seed", "1"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "route" not in json.loads((out / "release.json").read_text())


def _publishable(out: Path) -> tuple[dict, pd.DataFrame]:
    record = json.loads((out / "release.json").read_text())
    record.pop("values")
    return record, pd.read_csv(out / "release.csv")


def test_neighbour_replacing_one_person_with_another_number_of_visits(tmp_path):
    """D and D' differ in one person (3 visits vs 9 at other times): every publishable field but the
    noised values is identical, and the values differ."""
    frame = pd.read_csv(SPARSE_EXAMPLE)
    first = frame["id"].iloc[0]
    rest = frame[frame["id"] != first]
    rng = np.random.default_rng(0)
    a = pd.DataFrame({"id": first, "t": [0.1, 0.5, 0.9], "value": [1.9, -0.9, 1.5]})
    b = pd.DataFrame({"id": first, "t": np.sort(rng.uniform(0, 1, 9)), "value": rng.uniform(-3, 4, 9)})
    outs = []
    for k, person in enumerate((a, b)):
        path = tmp_path / f"d{k}.csv"
        pd.concat([person, rest]).to_csv(path, index=False)
        outs.append(tmp_path / f"out{k}")
        assert main([*BASE, "--data", str(path), "--sparse", "--domain", "0,1", "--seed", "5", "--out", str(outs[-1])]) == 0
    (r0, t0), (r1, t1) = _publishable(outs[0]), _publishable(outs[1])
    for r in (r0, r1):
        r.pop("created_utc", None)
        r.pop("library_versions", None)
    assert r0 == r1
    np.testing.assert_array_equal(t0["t"], t1["t"])
    assert not np.array_equal(t0["value"], t1["value"])


def test_streamed_statistics_equal_the_in_memory_ones(tmp_path):
    from fdp_core.engines.sparse_stream import stream_sparse_statistics

    frame = pd.read_csv(SPARSE_EXAMPLE)
    frame.loc[3, "t"] = 1.5  # one visit outside the domain
    frame = pd.concat([frame, pd.DataFrame({"id": ["far"], "t": [7.0], "value": [0.0]})])  # a person with none inside
    path = tmp_path / "s.csv"
    frame.to_csv(path, index=False)
    s = _settings()
    whole = sparse_statistics(read_long(path), s)
    streamed = stream_sparse_statistics(path, s, chunk_rows=300)
    assert streamed.n == whole.n == 501 and streamed.n_outside_domain == whole.n_outside_domain == 2
    np.testing.assert_allclose(streamed.A, whole.A, atol=1e-13)
    np.testing.assert_allclose(streamed.b, whole.b, atol=1e-13)
    assert streamed.n_values_clipped == whole.n_values_clipped


def test_cli_streams_a_sparse_file(tmp_path):
    out = tmp_path / "stream"
    assert main([*BASE, "--data", str(SPARSE_EXAMPLE), "--sparse", "--domain", "0,1", "--engine", "stream",
                 "--chunk-rows", "500", "--seed", "1", "--out", str(out)]) == 0
    local = tmp_path / "local"
    assert main([*BASE, "--data", str(SPARSE_EXAMPLE), "--sparse", "--domain", "0,1", "--seed", "1",
                 "--out", str(local)]) == 0
    a, b = _publishable(out), _publishable(local)
    np.testing.assert_allclose(pd.read_csv(out / "release.csv")["value"], pd.read_csv(local / "release.csv")["value"],
                               atol=1e-9)
    analyst = json.loads((out / "analyst_view.json").read_text())
    assert analyst["pooled_smoother"].startswith("not computed")


def test_cli_charges_the_stored_budget_and_refuses_beyond_it(tmp_path, capsys):
    from fdp_core.budget.datasets import open_budget
    from fdp_core.data.sparse_data import SPARSE_UNIT, ledger_view

    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    args = ["release", "mean", "--kernel", "matern52", "--rho", "0.2", "--epsilon", "0.6", "--value-range=-1,2",
            "--data", str(SPARSE_EXAMPLE), "--sparse", "--domain", "0,1", "--ledger", url]
    assert main([*args, "--out", str(tmp_path / "none")]) == 2
    assert "ledger init --sparse" in capsys.readouterr().err
    assert main(["ledger", "init", "--sparse", "--data", str(SPARSE_EXAMPLE), "--ledger", url, "--epsilon", "1",
                 "--delta", "1e-4"]) == 0
    assert main([*args, "--out", str(tmp_path / "first")]) == 0
    record = json.loads((tmp_path / "first" / "release.json").read_text())
    assert len(record["ledger_entry_ids"]) == 2
    ledger = open_budget(url, ledger_view(read_long(SPARSE_EXAMPLE)), unit=SPARSE_UNIT).ledger()
    # The exact discrete commit: each entry charges its sampler's own privacy map (never less than the share).
    spent = ledger.spent().epsilon
    assert 0.6 - 1e-9 <= spent < 1.0 and len(ledger.entries) == 2
    assert [e.id for e in ledger.entries] == record["ledger_entry_ids"] == record["part_entry_ids"]
    assert record["charged_total"]["epsilon"] == pytest.approx(spent)
    assert record["seed"] is None and all(e.noise.get("sampler") for e in ledger.entries)
    # The bundle of a committed release (as replay writes it), the analyst view beside it.
    for name in ("release.csv", "coefficients.csv", "release.json", "config.yaml", "ledger.json", "report.html",
                 "analyst_view.json"):
        assert (tmp_path / "first" / name).is_file(), name
    assert main([*args, "--out", str(tmp_path / "second")]) == 2  # 0.6 + 0.6 > 1
    assert not (tmp_path / "second").exists()
    ledger = open_budget(url, ledger_view(read_long(SPARSE_EXAMPLE)), unit=SPARSE_UNIT).ledger()
    assert ledger.spent().epsilon == pytest.approx(spent) and len(ledger.entries) == 2  # the refusal recorded nothing
    assert not [p for p in tmp_path.iterdir() if "fdp-staging" in p.name]


# --------------------------------------------------------------------------- commit with exact discrete noise

@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_commit_checks_both_parts_charges_two_entries_and_writes_a_bundle(noise, tmp_path):
    from fdp_core.budget.accounting import Ledger
    from fdp_core.publish.bundle import export_folder
    from fdp_core.errors import FdpError
    from fdp_core.publish.sparse_commit import commit_sparse_mean

    data = sparse_design(80, seed=3)
    s = _settings(noise=noise, epsilon=0.6, delta=1e-6)
    ledger = Ledger(1.0, 1e-5)
    release = commit_sparse_mean(ledger, data, s, label="sparse test", data_label="design")
    # Each entry charges the exact discrete sampler's own guarantee (never less than the plan's share).
    assert len(ledger.entries) == 2 and 0.6 - 1e-9 <= ledger.spent().epsilon <= 1.0
    assert release.config["kind"] == "sparse" and release.record["part_entry_ids"] == [e.id for e in ledger.entries]
    assert list(release.table.columns) == ["t", "value"] and np.isfinite(release.table["value"]).all()
    assert set(release.coefficients["part"]) == {"A", "b", "beta"}
    out = export_folder(release, tmp_path / "bundle", ledger)
    for name in ("release.csv", "coefficients.csv", "release.json", "config.yaml", "ledger.json", "report.html"):
        assert (out / name).is_file(), name
    # A second commit would exceed the budget: refused before either part is drawn or charged.
    with pytest.raises(FdpError):
        commit_sparse_mean(ledger, data, s)
    assert len(ledger.entries) == 2


def test_replay_commits_the_same_settings_with_fresh_noise_charged_to_the_stored_budget(tmp_path, capsys):
    import yaml

    from fdp_core.budget.accounting import Ledger
    from fdp_core.publish.bundle import export_folder
    from fdp_core.budget.datasets import open_budget
    from fdp_core.publish.sparse_commit import commit_sparse_mean
    from fdp_core.data.sparse_data import SPARSE_UNIT, ledger_view

    data = read_long(SPARSE_EXAMPLE)
    release = commit_sparse_mean(Ledger(1.0, 1e-4), data, _settings(epsilon=0.4), data_label="example")
    bundle = export_folder(release, tmp_path / "bundle", Ledger(1.0, 1e-4))
    config = yaml.safe_load((bundle / "config.yaml").read_text())
    assert config["kind"] == "sparse" and config["settings"]["domain"] == [0.0, 1.0]
    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    args = ["replay", str(bundle / "config.yaml"), "--data", str(SPARSE_EXAMPLE), "--ledger", url]
    assert main([*args, "--out", str(tmp_path / "r1")]) == 0
    again = json.loads((tmp_path / "r1" / "release.json").read_text())
    assert again["settings"] == release.record["settings"]
    assert again["values"] != release.record["values"].tolist()  # fresh noise
    ledger = open_budget(url, ledger_view(data), unit=SPARSE_UNIT).ledger()
    assert len(ledger.entries) == 2 and ledger.spent().epsilon >= 0.4
    assert main([*args, "--out", str(tmp_path / "r2")]) == 0
    assert main([*args, "--out", str(tmp_path / "r3")]) == 2  # a third would exceed epsilon 1
    assert not (tmp_path / "r3").exists()
    assert len(open_budget(url, ledger_view(data), unit=SPARSE_UNIT).ledger().entries) == 4


import re  # noqa: E402

# Fields that differ between any two commits whatever the data: fresh noise, ids and clocks.
_VOLATILE = {"values", "value", "unit_value", "id", "ids", "timestamp", "created_utc", "replays", "part_entry_ids",
             "entries", "ledger_entry", "a_entry", "ledger_at_commit", "library_versions"}


def _differences(x, y, path="") -> list[str]:
    """Paths where two parsed files differ, outside the volatile fields."""
    if isinstance(x, dict) and isinstance(y, dict):
        out = [f"{path}.{k}" for k in set(x) ^ set(y)]
        for k in set(x) & set(y):
            if k not in _VOLATILE:
                out += _differences(x[k], y[k], f"{path}.{k}")
        return out
    if isinstance(x, list) and isinstance(y, list):
        if len(x) != len(y):
            return [path]
        return [d for i, (a, b) in enumerate(zip(x, y)) for d in _differences(a, b, f"{path}[{i}]")]
    if isinstance(x, str) and isinstance(y, str):  # labels name entry ids ("replay of <id>")
        x, y = re.sub(r"[0-9a-f]{12}", "#", x), re.sub(r"[0-9a-f]{12}", "#", y)
    return [] if x == y else [path]


def _masked(text: str) -> str:
    """A text file with its numbers and hex ids masked: what must match between neighbours."""
    return re.sub(r"[0-9a-f]{12}|[-+]?\d[\d.eE+-]*", "#", text)


def _bundle_fields(out: Path) -> dict:
    import yaml

    csvs = {}
    for name in ("release.csv", "coefficients.csv"):
        frame = pd.read_csv(out / name)
        csvs[name] = {"columns": list(frame.columns), "rows": len(frame),
                      **{c: frame[c].tolist() for c in frame.columns if c not in _VOLATILE}}
    texts = {name: _masked((out / name).read_text()) for name in ("report.html", "release.py", "release.ipynb")
             if (out / name).exists()}
    return {"release.json": json.loads((out / "release.json").read_text()),
            "ledger.json": json.loads((out / "ledger.json").read_text()),
            "config.yaml": yaml.safe_load((out / "config.yaml").read_text()), **csvs, "texts": texts}


def test_neighbour_bundle_and_replay_match_field_by_field_with_a_planted_leak_control(tmp_path):
    """D and D' differ in one person (3 visits vs 9): every publishable file of the committed bundle and
    of its replay agrees field by field outside fresh noise, ids and clocks; a planted count is caught."""
    from fdp_core.budget.accounting import Ledger
    from fdp_core.publish.bundle import export_folder
    from fdp_core.publish.sparse_commit import commit_sparse_mean

    frame = pd.read_csv(SPARSE_EXAMPLE)
    first = frame["id"].iloc[0]
    rest = frame[frame["id"] != first]
    rng = np.random.default_rng(0)
    people = (pd.DataFrame({"id": first, "t": [0.1, 0.5, 0.9], "value": [1.9, -0.9, 1.5]}),
              pd.DataFrame({"id": first, "t": np.sort(rng.uniform(0, 1, 9)), "value": rng.uniform(-3, 4, 9)}))
    fields, leaky = [], []
    for k, person in enumerate(people):
        (tmp_path / f"d{k}").mkdir()
        path = tmp_path / f"d{k}" / "d.csv"  # same name: the data label is the file's name
        pd.concat([person, rest]).to_csv(path, index=False)
        data = read_long(path)
        release = commit_sparse_mean(Ledger(4.0, 1e-4), data, _settings(), data_label="d.csv")
        bundle = export_folder(release, tmp_path / f"bundle{k}", Ledger(4.0, 1e-4))
        assert main(["replay", str(bundle / "config.yaml"), "--data", str(path), "--no-ledger",
                     "--out", str(tmp_path / f"replay{k}")]) == 0
        fields.append({"bundle": _bundle_fields(bundle), "replay": _bundle_fields(tmp_path / f"replay{k}")})
        # Planted leak: the number of observations (differs: 3 vs 9 visits) written into the record.
        planted = _bundle_fields(bundle)
        planted["release.json"]["n_observations"] = release.analyst["n_observations"]
        leaky.append(planted)
    assert _differences(fields[0], fields[1]) == []
    assert _differences(leaky[0], leaky[1]) == [".release.json.n_observations"]


# --------------------------------------------------------------------------- settings metadata (settings_fields)

SPARSE_VARIED = SparseSettings(domain=(-2.0, 3.5), value_range=(-1.0, 2.0), kernel="matern", rho=0.3, nu=2.5, eta=2.0,
                               phi=0.01, n_basis=6, epsilon=2.0, delta=1e-6, noise="laplace", calibration="classical",
                               gamma=0.3, kappa=0.2, output_points=51)


@pytest.mark.parametrize("settings", [_settings(epsilon=1.0), SPARSE_VARIED], ids=["defaults", "varied"])
def test_the_command_line_the_pages_show_parses_back_to_the_same_settings(settings):
    """command_line (the Mean page's box) -> release mean's real parser -> settings_from_args: the same settings."""
    import shlex

    from fdp_core.cli import build_parser
    from fdp_core.settings_fields import command_line, settings_from_args

    text = command_line("release mean --sparse", settings, inputs=(("--data", "obs.csv"),))
    args = build_parser().parse_args(shlex.split(text)[3:])
    assert args.sparse and settings_from_args(SparseSettings, args) == settings


def test_sparse_options_keep_their_flags_and_defaults_come_from_the_dataclass():
    from dataclasses import fields

    from fdp_core.cli import build_parser
    from fdp_core.settings_fields import options_of

    parser = build_parser().parse_args(["release", "mean", "--preview", "--data", "x.csv", "--kernel", "matern52", "--rho", "0.2",
                                        "--epsilon", "1", "--out", "o"])
    flags = {name: opt.flag_of(name) for name, opt in options_of(SparseSettings)}
    assert {flags[n] for n in ("domain", "noise", "n_basis", "gamma", "kappa", "output_points")} == {
        "--domain", "--sparse-noise", "--basis-size", "--sparse-gamma", "--sparse-kappa", "--output-points"}
    defaults = {f.name: f.default for f in fields(SparseSettings)}
    for name in ("noise", "n_basis", "gamma", "kappa", "output_points", "eta", "phi", "delta", "calibration", "nu"):
        assert getattr(parser, name) == defaults[name], name  # release mean's parser gives the dataclass default
    assert parser.domain is None and parser.value_range is None  # declared, never defaulted


def test_page_controls_and_replay_config_come_from_the_metadata():
    from fdp_core.settings_fields import config_of, page_defaults, page_keys, page_settings, settings_from_config

    assert page_keys(SparseSettings, "mean") == {"n_basis": "sparse_J", "noise": "sparse_noise",
                                                 "gamma": "sparse_gamma", "kappa": "sparse_kappa"}
    state = {**page_defaults(SparseSettings, "mean"), "sparse_J": 6.0, "sparse_noise": "laplace", "sparse_gamma": 0.3,
             "sparse_kappa": 0.2}
    given = {k: getattr(SPARSE_VARIED, k) for k in ("domain", "value_range", "kernel", "rho", "nu", "eta", "phi",
                                                    "epsilon", "delta", "calibration", "output_points")}
    read = page_settings(SparseSettings, "mean", state, **given)
    assert read == SPARSE_VARIED and isinstance(read.n_basis, int)
    assert settings_from_config(SparseSettings, json.loads(json.dumps(config_of(SPARSE_VARIED)))) == SPARSE_VARIED


# --------------------------------------------------------------------------- the combined charge of A and b

@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_record_and_report_show_both_parts_charge(noise):
    from fdp_core.budget.accounting import Ledger
    from fdp_core.publish.report import entry_power, privacy_statement, release_guarantee, release_power, report_html
    from fdp_core.publish.sparse_commit import commit_sparse_mean

    ledger = Ledger(4.0, 1e-4)
    release = commit_sparse_mean(ledger, sparse_design(80, seed=3), _settings(noise=noise, epsilon=1.0),
                                 data_label="design")
    a, b = ledger.entries
    assert [e.id for e in release.part_entries] == [a.id, b.id] and release.entry.id == b.id
    total = release.record["charged_total"]
    assert total["epsilon"] == pytest.approx(a.epsilon + b.epsilon) == pytest.approx(ledger.spent().epsilon)
    assert total["delta"] == pytest.approx(a.delta + b.delta) and total["entry_ids"] == [a.id, b.id]
    assert release.record["charged"]["epsilon"] == b.epsilon  # unchanged: the b entry's own
    assert total["composed"]["epsilon"] <= total["epsilon"] * (1 + 1e-12)
    epsilon, delta = release_guarantee(release)
    assert epsilon == pytest.approx(total["composed"]["epsilon"]) and delta == pytest.approx(total["delta"])
    # The headline charges both parts; the adversary's power is that of both parts together.
    headline = privacy_statement(release)[0]
    assert f"epsilon = {total['epsilon']:.4g}" in headline and "2 parts" in headline
    alpha = np.linspace(0.0, 1.0, 51)
    assert np.all(release_power(release, alpha) >= entry_power(b, alpha) - 1e-12)
    assert np.any(release_power(release, alpha) > entry_power(b, alpha) + 1e-6)
    assert "all parts together" in report_html(release, ledger)


def test_a_sparse_bundle_verifies_against_its_data_and_a_tampered_one_does_not(tmp_path):
    """The bundle's release.py check (fdp_core.publish.verify): both parts re-derived from the observations."""
    import copy

    from fdp_core.budget.accounting import Ledger
    from fdp_core.publish.sparse_commit import commit_sparse_mean
    from fdp_core.publish.verify import verify_release

    data = read_long(SPARSE_EXAMPLE)
    release = commit_sparse_mean(Ledger(4.0, 1e-4), data, _settings(epsilon=1.0), data_label="example_sparse.csv")
    result = verify_release(release.config, SPARSE_EXAMPLE, release.record)
    assert result.verified, result.report()
    names = [c.name for c in result.checks]
    assert "charged epsilon, all parts" in names and "a part's charged epsilon" in names
    for key in ("charged_total", "a_entry"):
        tampered = copy.deepcopy(release.record)
        tampered[key]["epsilon"] *= 0.5  # a release claiming to have cost less than its settings imply
        assert not verify_release(release.config, data, tampered).verified, key


# --------------------------------------------------------------------------- bounded long-file reader

def _long_csv(n_persons=12, header="id,t,value"):
    rows = [header] + [f"p{i},{j / 4:.2f},{i + j}" for i in range(n_persons) for j in range(3)]
    return ("\n".join(rows) + "\n").encode()


def test_read_long_names_columns_and_reads_only_them():
    from fdp_core.data.sparse_data import read_long

    raw = b"site;extra;day;temp\n" + b"".join(f"p{i};x;{j};{i}\n".encode() for i in range(12) for j in range(3))
    data = read_long(raw, id_column="site", t_column="day", value_column="temp")
    assert data.n == 12 and data.n_observations == 36 and float(data.t.max()) == 2.0


@pytest.mark.parametrize("case", ["wide", "long-header", "no-columns"])
def test_read_long_refuses_from_the_header(case):
    """Too wide, a header line longer than the capped head, or missing columns: refused before the
    body is parsed (the body here would take minutes for pandas' python engine)."""
    import time

    from fdp_core.data.sparse_data import read_long
    from fdp_core.errors import DataError
    from fdp_core.limits import MAX_DIAGNOSE_BYTES, MAX_LONG_COLUMNS

    if case == "wide":
        cols = MAX_LONG_COLUMNS * 80
        raw = (",".join(str(j) for j in range(cols)) + "\n" + ",".join("1" for _ in range(cols)) + "\n").encode()
        expected = "columns"
    elif case == "long-header":
        raw = b"a" * (MAX_DIAGNOSE_BYTES + 10) + b"\n1\n"
        expected = "header line is longer"
    else:
        raw = b"x,y,z\n" + b"1,2,3\n" * 1000
        expected = "no column 'id'"
    start = time.perf_counter()
    with pytest.raises(DataError, match=expected) as info:
        read_long(raw, name="f.csv")
    assert time.perf_counter() - start < 5.0 and "\n" not in str(info.value)


def test_read_long_refuses_special_files_and_too_many_rows(tmp_path, monkeypatch):
    import os

    from fdp_core.data import sparse_data
    from fdp_core.errors import DataError

    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    with pytest.raises(DataError, match="named pipe"):
        sparse_data.read_long(fifo)
    monkeypatch.setattr(sparse_data, "MAX_LONG_ROWS", 30)
    with pytest.raises(DataError, match="more than 30 observations"):
        sparse_data.read_long(_long_csv(n_persons=12))
    assert sparse_data.read_long(_long_csv(n_persons=10)).n_observations == 30
