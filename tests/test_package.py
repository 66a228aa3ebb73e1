"""The library installs with pip and its console script ``fdp`` is ``python -m fdp_core``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """``pip install --no-deps --target`` of this checkout (the dependencies are those of the test venv)."""
    target = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                           str(ROOT)], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 and "Could not find a version that satisfies the requirement setuptools" in proc.stderr:
        pytest.skip("no package index to fetch setuptools for the build: " + proc.stderr.strip().splitlines()[-1])
    assert proc.returncode == 0, proc.stderr
    return target


def _run(installed: Path, *args):
    env = {**os.environ, "PYTHONPATH": str(installed)}
    return subprocess.run([str(installed / "bin" / "fdp"), *args], capture_output=True, text=True, env=env,
                          cwd=installed.parent, timeout=300)


def test_console_script_help_lists_every_command(installed):
    proc = _run(installed, "--help")
    assert proc.returncode == 0, proc.stderr
    for command in ("release", "replay", "tradeoff", "ledger"):
        assert command in proc.stdout


def test_installed_package_releases_and_writes_its_report_template(installed, tmp_path):
    assert (installed / "fdp_core" / "templates" / "report.html.j2").exists()
    out = tmp_path / "out"
    proc = _run(installed, "release", "mean", "--data", str(ROOT / "data" / "example_curves.csv"), "--kernel",
                "matern52", "--rho", "0.1", "--epsilon", "1", "--tau", "1", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert (out / "release.json").exists() and (out / "release.csv").exists()
    bad = _run(installed, "release", "mean", "--data", str(ROOT / "data" / "example_curves.csv"), "--kernel",
               "matern52", "--rho", "0.1", "--epsilon", "-1", "--tau", "1", "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and bad.stderr.count("\n") == 1
