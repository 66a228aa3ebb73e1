"""The ``fdp`` console script and ``python -m fdp_core``: one entry, one behaviour."""

from . import threads  # numpy-free: it must run before numpy loads


def main() -> int:
    # One BLAS thread for scripted runs, as in app.py: the matrices are small and the
    # samplers do many tiny operations. Must be set before numpy is first imported.
    threads.start_single_blas()
    from .cli import main as cli_main  # lazy: BLAS thread variables must be set before numpy loads

    return cli_main()
