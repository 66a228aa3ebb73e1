"""One BLAS thread for the app's whole server process (issue 40).

The app serves every session from threads of one process, so its parallelism is the sessions
themselves. A multi-threaded OpenBLAS only adds cost there: each call hands its small matrices
(L x L, m x L, q x q) to a second thread, and that thread spin-waits for the next call for tens
of milliseconds of CPU afterwards. Measured on this 2-core machine at load 7-15: a 100 x 100 product
cost ~9 ms of process CPU on two threads against 0.13 ms on one, and a 300 x 300 product 30-48 ms
(spinning included) against 1.5 ms. Ten sessions moving at once pay that on every rerun.

Imported once with the fdp_ui package (its ``__init__``): the BLAS libraries already loaded
(numpy's) are limited to one thread now, those loaded later (scipy's) start with one through
OPENBLAS_NUM_THREADS. The library and the CLI (fdp_core, which never imports fdp_ui) keep their
threads for big data passes (fdp_core/threads.py).
"""

from __future__ import annotations

import os

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # read by an OpenBLAS when it is loaded

from fdp_core.threads import single_blas_thread  # noqa: E402  (after the variable: it may load numpy's BLAS)

# Entered for the process's lifetime (never exited); a no-op without threadpoolctl.
SERVER_BLAS_LIMIT = single_blas_thread()
