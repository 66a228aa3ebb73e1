"""Issue 39: hostile input round 3 (plan, ledger init --dataset, --sparse, trade-off sweeps, YAML).

Each case: one line on stderr, exit status 2, nothing written, within CLI_LIMIT_S (in-process
CLI under the SIGALRM limit of tests/test_hostile_cases.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fdp_core.limits import MAX_PLAN_STATISTICS, MAX_YAML_BYTES

from test_hostile_cases import WIDE, refused, run_cli  # noqa: E402

EXAMPLE_SPARSE = Path(__file__).resolve().parents[1] / "data" / "example_sparse.csv"
SPARSE = ["release", "mean", "--preview", "--sparse", "--domain", "0,1", "--value-range", "-5,5", "--epsilon", "1",
          "--delta", "1e-6", "--kernel", "matern52", "--rho", "0.1"]
PUBLIC = "schema: fdp.plan/1\npublic: {n: 142, grid: 93, value_range: [0, 1]}\n"
MEAN_STAT = "  - {name: m%d, kind: mean, settings: {kernel: matern52, rho: 0.1}, epsilon: 0.01}\n"


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_sparse_release_refuses_special_files(tmp_path, special):
    if special == "fifo":
        special = tmp_path / "pipe.csv"
        os.mkfifo(special)
    out = tmp_path / "out"
    refused([*SPARSE, "--data", special, "--out", out], "not a data file", out_dir=out)


def test_sparse_output_points_are_capped(tmp_path):
    out = tmp_path / "out"
    refused([*SPARSE, "--data", EXAMPLE_SPARSE, "--output-points", "1000000000", "--out", out],
            "--output-points", "above the limit", out_dir=out)


def _plan(tmp_path, text: str) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    return path


def test_a_plan_with_too_many_statistics(tmp_path):
    plan = _plan(tmp_path, PUBLIC + "statistics:\n" + "".join(MEAN_STAT % i for i in range(MAX_PLAN_STATISTICS + 1)))
    refused(["plan", plan, "--out", tmp_path / "out"], f"the limit is {MAX_PLAN_STATISTICS}", out_dir=tmp_path / "out")


def test_a_plan_or_config_over_the_yaml_size_limit(tmp_path, ):
    plan = _plan(tmp_path, PUBLIC + "statistics:\n" + MEAN_STAT % 0 + "#" + "x" * MAX_YAML_BYTES + "\n")
    refused(["plan", plan, "--out", tmp_path / "out"], "the limit for a plan is 256 KB", out_dir=tmp_path / "out")
    refused(["replay", plan, "--data", WIDE, "--no-ledger", "--out", tmp_path / "out"], "the limit for a config",
            out_dir=tmp_path / "out")


@pytest.mark.parametrize("n", ["1e21", "1000000000000000000000", "2.5", "1e7"])
def test_a_plan_with_an_absurd_n(tmp_path, n):
    plan = _plan(tmp_path, PUBLIC.replace("n: 142", f"n: {n}") + "statistics:\n" + MEAN_STAT % 0)
    refused(["plan", plan, "--out", tmp_path / "out"], "public.n", out_dir=tmp_path / "out")


def test_yaml_exponent_numbers_are_numbers_in_a_plan(tmp_path):
    """The README's `delta: 1e-5` (a string in YAML 1.1) is read as a number; n: 1.42e2 is 142."""
    text = (PUBLIC.replace("n: 142", "n: 1.42e2") + "statistics:\n"
            "  - {name: m, kind: mean, settings: {kernel: matern52, rho: 0.1}, target: 0.05}\n"
            "budget: {epsilon: 1e1, delta: 1e-5}\n")
    code, stdout, stderr = run_cli(["plan", _plan(tmp_path, text), "--out", tmp_path / "out"])
    assert code == 0, stderr
    assert (tmp_path / "out" / "plan.json").exists()


def test_the_yaml_reader_keeps_strings_and_integers():
    from fdp_core.data.yaml_files import parse_yaml

    doc = parse_yaml("a: 1e-5\nb: '1e-5'\nc: 42\nd: 1.5\ne: -2E+3\nf: .5e1\ng: 1_000\nh: e5\ni: 1e\n", "plan")
    assert doc == {"a": 1e-5, "b": "1e-5", "c": 42, "d": 1.5, "e": -2000.0, "f": 5.0, "g": 1000, "h": "e5", "i": "1e"}
    assert isinstance(doc["c"], int) and isinstance(doc["a"], float)


@pytest.mark.parametrize("name, fragment", [("bad\udcff", "data set name"), ("bad\u202eevil", "data set name"),
                                            ("a\u2066b", "data set name"), ("zero\u200bwidth", "data set name")])
def test_data_set_names_refuse_invalid_and_bidirectional_characters(tmp_path, name, fragment):
    ledger = tmp_path / "l.sqlite3"
    message = refused(["ledger", "init", "--ledger", f"sqlite:///{ledger}", "--dataset", name, "--epsilon", "1",
                       "--delta", "1e-6", "--data", WIDE], fragment)
    assert "budget name" not in message and not ledger.exists()


def test_budget_names_refuse_bidirectional_characters(tmp_path):
    ledger = tmp_path / "l.sqlite3"
    refused(["ledger", "init", "--ledger", f"sqlite:///{ledger}", "--name", "x\u202ey", "--epsilon", "1",
             "--delta", "1e-6", "--data", WIDE], "budget name")
    assert not ledger.exists()


def test_n_policy_is_capped(tmp_path):
    ledger = tmp_path / "l.sqlite3"
    refused(["ledger", "init", "--ledger", f"sqlite:///{ledger}", "--n-policy", "x" * 100_000, "--epsilon", "1",
             "--delta", "1e-6", "--data", WIDE], "--n-policy", "100,000 characters")
    assert not ledger.exists()


def test_tradeoff_values_are_capped(tmp_path):
    out = tmp_path / "out"
    refused(["tradeoff", "--data", WIDE, "--param", "epsilon", "--values", *map(str, range(1, 100_001)),
             "--kernel", "matern52", "--rho", "0.1", "--out", out], "--values", "the limit is", out_dir=out)


def test_a_long_file_routed_sparse_without_domain_is_one_line(tmp_path):
    out = tmp_path / "out"
    base = ["release", "mean", "--data", EXAMPLE_SPARSE, "--epsilon", "1", "--delta", "1e-6", "--kernel", "matern52",
            "--rho", "0.1", "--out", out]
    # The route is declared (issue 37): without --sparse or --grid the file is refused, in one line.
    refused([*base, "--value-range", "-5,5"], "person-specific times", "--grid A,B,M", "--sparse --domain A,B",
            out_dir=out)
    refused([*base, "--domain", "0,1"], "--domain applies to the sparse route", "add --sparse", out_dir=out)
    refused([*base, "--sparse", "--domain", "0,1"], "--value-range", out_dir=out)
