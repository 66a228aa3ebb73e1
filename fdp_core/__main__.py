import os

# One BLAS thread for scripted runs, as in app.py: the matrices are small and the
# samplers do many tiny operations. Must be set before numpy is imported.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import sys  # noqa: E402

from .cli import main  # noqa: E402

sys.exit(main())
