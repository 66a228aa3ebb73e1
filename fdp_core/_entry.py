"""The ``fdp`` console script and ``python -m fdp_core``: one entry, one behaviour."""

import os


def main() -> int:
    # One BLAS thread for scripted runs, as in app.py: the matrices are small and the
    # samplers do many tiny operations. Must be set before numpy is first imported.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    from .cli import main as cli_main  # lazy: BLAS thread variables must be set before numpy loads

    return cli_main()
