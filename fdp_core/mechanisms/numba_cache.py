"""Where numba keeps the compiled Gibbs chain (gibbs_compiled.py): next to the source, or per user.

numba's ``cache=True`` writes into ``__pycache__`` beside the module. An installed package's
folder is often read-only (a system install, a container image), and then the ~30 s compile
would be paid by every process. So when the package folder does not take a write, the cache
goes to the user's cache folder: ``$XDG_CACHE_HOME/fdp/numba`` (``~/.cache/fdp/numba`` without
it). An explicit ``NUMBA_CACHE_DIR`` always wins.

Writability is decided by a real write (a temporary file created and removed), not by the
permission bits: root ignores them, and a read-only mount has writable-looking bits.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

PACKAGE_CACHE = Path(__file__).resolve().parent / "__pycache__"


def takes_a_write(folder: Path) -> bool:
    """Whether a file can be created in ``folder`` (created first if missing)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
        return True
    except OSError:
        return False


def user_cache_dir(environ=os.environ) -> Path:
    base = environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(base) if base and os.path.isabs(base) else Path.home() / ".cache") / "fdp" / "numba"


def cache_dir(environ=os.environ, package_cache: Path = PACKAGE_CACHE) -> str | None:
    """The folder to give numba as its cache (numba.config.CACHE_DIR), or None to keep its
    default (``__pycache__`` beside the source, which takes a write)."""
    if environ.get("NUMBA_CACHE_DIR", "").strip():
        return None  # numba reads it itself
    if takes_a_write(package_cache):
        return None
    return str(user_cache_dir(environ))
