"""BLAS threads for the small dense problems of fdp_core.

The eigendecompositions behind a release are small (a kernel Gram matrix on the grid,
m ~ 100-500; p x p PCA matrices; the Bingham samplers' q x q steps). A multi-threaded
OpenBLAS spends more on thread hand-offs, and on a busy machine on spin-waits, than on the
arithmetic: measured 1.2-45x slower under load (issue 15). ``import fdp_core`` as a library
therefore must not leave those calls to whatever thread count the host process set up:
they run inside :func:`single_blas_thread`. Big matrix products (the data pass) keep
every thread.
"""

from __future__ import annotations

import contextlib
import os
import sys

SMALL = 600  # matrices up to this order count as small (single thread is as fast or faster)
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

# Set by start_single_blas when every BLAS thread variable was 1 before numpy was loaded: BLAS then
# runs on one thread throughout, and threadpoolctl (~8 ms of import and ~0.5-2 ms per call, walking
# the loaded libraries) would change nothing (issue 42). (A BLAS these variables do not govern,
# Apple's Accelerate, is not one threadpoolctl controls either.)
BLAS_STARTED_SINGLE = False


def start_single_blas() -> None:
    """One BLAS thread for a whole process: the command line's entry and the app call this before
    numpy is first imported (the variables are read once, when BLAS loads). A variable the host set
    is kept; if numpy is already loaded, or a variable is not 1, single_blas_thread keeps limiting
    each call through threadpoolctl."""
    global BLAS_STARTED_SINGLE
    for var in BLAS_THREAD_VARIABLES:
        os.environ.setdefault(var, "1")
    if "numpy" not in sys.modules and all(os.environ[var] == "1" for var in BLAS_THREAD_VARIABLES):
        BLAS_STARTED_SINGLE = True


def single_blas_thread():
    """Context manager: BLAS/LAPACK on one thread (threadpoolctl), or a no-op without it."""
    if BLAS_STARTED_SINGLE:
        return contextlib.nullcontext()
    try:
        from threadpoolctl import threadpool_limits  # lazy: ~8 ms of import, not needed when BLAS started single
    except ImportError:  # pragma: no cover - pinned in requirements.txt; without it BLAS keeps its threads
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def small_problem(order: int):
    """single_blas_thread() for a matrix of this order if it is small, else a no-op."""
    return single_blas_thread() if order <= SMALL else contextlib.nullcontext()
