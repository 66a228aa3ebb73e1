"""The library installs with pip and its console script ``fdp`` is ``python -m fdp_core``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from importlib.metadata import version
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
    proc = _run(installed, "release", "mean", "--preview", "--data", str(ROOT / "data" / "example_curves.csv"), "--kernel",
                "matern52", "--rho", "0.1", "--epsilon", "1", "--tau", "1", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert (out / "release.json").exists() and (out / "release.csv").exists()
    bad = _run(installed, "release", "mean", "--preview", "--data", str(ROOT / "data" / "example_curves.csv"), "--kernel",
               "matern52", "--rho", "0.1", "--epsilon", "-1", "--tau", "1", "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and bad.stderr.count("\n") == 1


def _setuptools_at_least(major: int) -> bool:
    try:
        return int(version("setuptools").split(".")[0]) >= major
    except Exception:  # not installed, or an unusual version string
        return False


def test_pip_install_into_a_fresh_venv_gives_a_working_fdp_outside_the_checkout(tmp_path):
    """``pip install .`` into a new virtual environment, then ``fdp --help`` from a folder with no
    fdp_core in it: the package alone (pyproject.toml, README.md, fdp_core/) builds, its console
    script runs the installed copy and every non-Python file it ships is installed (issue 27)."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "fdp_core", src / "fdp_core", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True,
                   timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    # The dependencies (and pip) of the environment running the tests, so nothing is downloaded for them.
    (Path(purelib) / "fdp_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # With a setuptools new enough for pyproject.toml at hand, build with it (nothing downloaded);
    # otherwise pip fetches the build backend from its configured index.
    isolation = ["--no-build-isolation"] if _setuptools_at_least(77) else []
    proc = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", *isolation, str(src)],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    if proc.returncode != 0 and "Could not find a version that satisfies the requirement setuptools" in proc.stderr:
        pytest.skip("no package index to fetch setuptools for the build: " + proc.stderr.strip().splitlines()[-1])
    assert proc.returncode == 0, proc.stderr
    away = tmp_path / "elsewhere"
    away.mkdir()
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    shown = subprocess.run([str(venv / "bin" / "fdp"), "--help"], capture_output=True, text=True, cwd=away, env=env,
                           timeout=120)
    assert shown.returncode == 0, shown.stderr
    for command in ("release", "replay", "tradeoff", "ledger", "plan", "select"):
        assert command in shown.stdout
    where = subprocess.run([str(python), "-c", "import fdp_core; print(fdp_core.__file__)"], capture_output=True,
                           text=True, cwd=away, env=env, check=True).stdout.strip()
    installed = Path(where).parent
    assert installed.is_relative_to(venv), where
    shipped = [path.relative_to(ROOT / "fdp_core") for path in (ROOT / "fdp_core").rglob("*")
               if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts]
    assert shipped, "the package ships its report template"
    missing = [str(path) for path in shipped if not (installed / path).exists()]
    assert not missing, "not installed (pyproject's package-data): " + ", ".join(missing)
