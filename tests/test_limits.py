"""Size and magnitude limits (fdp_core/limits.py): every one gives exit 2, one line, nothing written.

Each case below crashed or ran for minutes before the limits existed (issue 12, point 5):
OverflowError for --tau 1e308, MemoryError for --gibbs-sweeps/--mc-draws 1e9, 59 s for
Bernstein --K 100000, 81 s for a 6,000-point grid, and values near 1e154 silently clipped to
the zero curve because their squared norm overflowed.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from fdp_core import limits
from fdp_core.data.loading import from_arrays, load_curves
from fdp_core.errors import DataError, ParameterError
from fdp_core.kernels import eigenbasis
from fdp_core.releases.mean import MeanSettings
from fdp_core.releases.pca import PcaSettings

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = str(ROOT / "data" / "example_curves.csv")
MEAN = ["release", "mean", "--preview", "--data", EXAMPLE, "--kernel", "matern52", "--rho", "0.1", "--epsilon", "1"]


def _wide_csv(path: Path, grid, values) -> Path:
    lines = [",".join(f"{t:.8g}" for t in grid)] + [",".join(f"{v:.8g}" for v in row) for row in values]
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(args, out: Path):
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "fdp_core", *args, "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    return proc, time.perf_counter() - start


@pytest.fixture(scope="module")
def big_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("limits")
    rng = np.random.default_rng(0)
    wide = _wide_csv(folder / "grid20001.csv", np.linspace(0, 1, 20001), rng.random((4, 20001)))
    values = rng.random((5, 20))
    values[2, 3] = 3e154
    huge = _wide_csv(folder / "huge_values.csv", np.linspace(0, 1, 20), values)
    return {"wide": str(wide), "huge": str(huge)}


CASES = {
    "tau 1e308": (MEAN + ["--tau", "1e308"], "tau = 1e+308 is above the limit"),
    "bernstein K": (MEAN + ["--tau", "1", "--mechanism", "bernstein", "--lo", "0", "--hi", "1", "--K", "100000"],
                    "K (Bernstein lattice size) = 100000 is above the limit of 1000"),
    "bernstein hi": (MEAN + ["--tau", "1", "--mechanism", "bernstein", "--lo", "0", "--hi", "1e200"],
                     "hi = 1e+200 is beyond"),
    "gibbs sweeps": (["release", "pca", "--preview", "--data", EXAMPLE, "--kernel", "matern52", "--rho", "0.1", "--epsilon", "1",
                      "--tau", "1", "--k", "2", "--sampler", "gibbs", "--gibbs-sweeps", "1000000000"],
                     "gibbs_sweeps = 1e+09 is above the limit of 200000"),
    "mc draws": (["tradeoff", "--data", EXAMPLE, "--kernel", "matern52", "--rho", "0.1", "--epsilon", "1",
                  "--tau", "1", "--param", "epsilon", "--values", "0.1,1", "--mc-draws", "1000000000"],
                 "--mc-draws = 1e+09 is above the limit of 20000"),
    "grid 20001": ("wide", "the grid has 20001 points; the limit is 20000"),
    "values 3e154": ("huge", "has the value 3e+154"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_cli_refuses_past_each_limit_quickly_and_writes_nothing(case, big_files, tmp_path):
    args, expected = CASES[case]
    if isinstance(args, str):  # a data file past a limit
        args = ["release", "mean", "--preview", "--data", big_files[args], "--kernel", "matern52", "--rho", "0.1",
                "--epsilon", "1", "--tau", "1"]
    out = tmp_path / "out"
    proc, seconds = _run(args, out)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists() or not any(out.iterdir())
    assert seconds < 30


def test_limits_are_boundaries_not_approximations():
    """Exactly at a limit is accepted; one step past it is refused (library level)."""
    MeanSettings(mechanism="bernstein", lo=0, hi=1, K=limits.MAX_BERNSTEIN_K).validated()
    with pytest.raises(ParameterError, match="above the limit"):
        MeanSettings(mechanism="bernstein", lo=0, hi=1, K=limits.MAX_BERNSTEIN_K + 1).validated()
    MeanSettings(tau=limits.MAX_TAU).validated()
    with pytest.raises(ParameterError, match="above the limit"):
        MeanSettings(tau=np.nextafter(limits.MAX_TAU, np.inf)).validated()
    PcaSettings(k=2, sampler="gibbs", gibbs_sweeps=limits.MAX_GIBBS_SWEEPS).validated()
    with pytest.raises(ParameterError, match="above the limit"):
        PcaSettings(k=2, sampler="gibbs", gibbs_sweeps=limits.MAX_GIBBS_SWEEPS + 1).validated()
    grid = np.linspace(0, 1, limits.MAX_GRID_POINTS + 1)
    with pytest.raises(ParameterError, match="limit is 20000"):
        eigenbasis("matern52", 0.1, grid)
    with pytest.raises(DataError, match="limit is 20000"):
        from_arrays(grid, np.random.default_rng(1).random((3, grid.size)))


def test_large_but_allowed_values_keep_finite_norms():
    """1e100 is allowed: squared norms (1e200) stay finite and clipping is not silent zeroing."""
    grid = np.linspace(0, 1, 11)
    values = np.vstack([np.full(11, 1e100), np.linspace(0, 1e99, 11)])
    fd = from_arrays(grid, values)
    assert np.all(np.isfinite(fd.norms())) and fd.norms()[0] == pytest.approx(1e100)
    with pytest.raises(DataError, match="overflow squared norms"):
        from_arrays(grid, values * 1e55)
    with pytest.raises(DataError, match="overflow squared norms"):
        load_curves(b"0,1\n1,2\n1e300,3\n", name="huge.csv")
