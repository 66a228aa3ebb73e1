"""numba's cache of the compiled Gibbs chain on a read-only install (fdp_core/mechanisms/numba_cache.py).

We may run as root, which ignores permission bits: the read-only install is simulated by what
defeats root too, a *file* where the package's __pycache__ folder would be (no folder, no write)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from fdp_core.mechanisms import numba_cache

ROOT = Path(__file__).resolve().parents[1]


def test_decision_user_folder_when_the_package_takes_no_write(tmp_path):
    blocked = tmp_path / "pkg" / "__pycache__"
    blocked.parent.mkdir()
    blocked.write_text("not a folder")
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    assert not numba_cache.takes_a_write(blocked)
    assert numba_cache.cache_dir(env, blocked) == str(tmp_path / "xdg" / "fdp" / "numba")
    assert numba_cache.cache_dir({**env, "NUMBA_CACHE_DIR": "/somewhere"}, blocked) is None  # the user's choice wins
    assert numba_cache.cache_dir({}, blocked) == str(Path.home() / ".cache" / "fdp" / "numba")
    assert numba_cache.cache_dir({"XDG_CACHE_HOME": "relative"}, blocked) == str(Path.home() / ".cache" / "fdp" / "numba")
    writable = tmp_path / "ok" / "__pycache__"
    assert numba_cache.cache_dir(env, writable) is None  # numba's default: beside the source


def test_read_only_install_caches_in_the_user_folder(tmp_path):
    """A copy of the package, made read-only (and its mechanisms' __pycache__ a file), run as is:
    numba is pointed at $XDG_CACHE_HOME/fdp/numba, and a compiled function caches there."""
    pytest.importorskip("numba")
    install = tmp_path / "site"
    shutil.copytree(ROOT / "fdp_core", install / "fdp_core", ignore=shutil.ignore_patterns("__pycache__"))
    (install / "fdp_core" / "mechanisms" / "__pycache__").write_text("read-only install")
    for path in [install, *install.rglob("*")]:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    xdg = tmp_path / "xdg"
    probe = ("import numba\n"
             "from fdp_core.mechanisms import gibbs_compiled, numba_cache\n"
             "print(numba.config.CACHE_DIR)\n"
             "@numba.njit(cache=True)\n"
             "def twice(x):\n    return 2 * x\n"
             "twice(1)\n")
    script = install / "fdp_core" / "mechanisms" / "probe_cache.py"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(XDG_CACHE_HOME=str(xdg), PYTHONPATH=str(install), PYTHONDONTWRITEBYTECODE="1")
    try:
        script.parent.chmod(0o755)
        script.write_text(probe)
    finally:
        script.parent.chmod(0o555)
    done = subprocess.run([sys.executable, str(script)], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(xdg / "fdp" / "numba")
    assert any((xdg / "fdp" / "numba").rglob("*.nbi")), "numba wrote no cache index in the user folder"
