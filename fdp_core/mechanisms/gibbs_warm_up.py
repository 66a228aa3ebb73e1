"""Build numba's disk cache of the compiled Gibbs chain (gibbs_compiled.py) ahead of need.

Kept apart from gibbs_compiled so that starting the build does not import numba (~1 s) in the
caller: the app's Principal components page calls it once per server.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

COMPILE_COMMAND = ("import os; os.nice(19); from fdp_core.mechanisms import gibbs_compiled; "
                   "gibbs_compiled.compile_now()")
_warm_up: subprocess.Popen | None = None
_warm_up_lock = threading.Lock()


def warm_up_in_background() -> subprocess.Popen | None:
    """Fill numba's disk cache with the compiled chain in a child process at the lowest CPU
    priority, once per process; the child, or None when it was started before. A child rather
    than a thread: numba's compiler holds the GIL for most of its ~30 s, which would stall every
    session of the app's server meanwhile. The child exits at once when the cache is there."""
    global _warm_up
    with _warm_up_lock:
        if _warm_up is not None:
            return None
        root = Path(__file__).resolve().parents[2]
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        _warm_up = subprocess.Popen([sys.executable, "-c", COMPILE_COMMAND], cwd=root, env=env,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return _warm_up
