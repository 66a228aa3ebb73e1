"""The ``fdp`` console script and ``python -m fdp_core``: one entry, one behaviour."""

import os
import sys


def main() -> int:
    # One BLAS thread for scripted runs, as in app.py: the matrices are small and the
    # samplers do many tiny operations. Must be set before numpy is first imported.
    variables = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    for var in variables:
        os.environ.setdefault(var, "1")
    if "numpy" not in sys.modules and all(os.environ[var] == "1" for var in variables):
        from . import threads  # lazy: numpy-free, read before numpy loads

        threads.BLAS_STARTED_SINGLE = True  # BLAS will start on one thread: no threadpoolctl per call
    from .cli import main as cli_main  # lazy: BLAS thread variables must be set before numpy loads

    return cli_main()
