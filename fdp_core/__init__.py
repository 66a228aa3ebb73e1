"""fdp_core: differentially private release of functional data (no Streamlit inside).

The public API, one entry per concept (imported lazily, so ``import fdp_core`` stays cheap
and scripts can still set BLAS threads before numpy loads):

>>> import numpy as np
>>> import fdp_core as fdp
>>> grid = np.linspace(0, 1, 50)
>>> curves = np.vstack([np.sin(np.pi * grid) * (1 + 0.1 * i) for i in range(20)])
>>> data = fdp.from_arrays(grid, curves)
>>> plan = fdp.plan_mean_release(data, fdp.MeanSettings(epsilon=1.0, delta=1e-5, tau=1.0))
>>> plan.n, plan.privacy
(20, '(epsilon, delta)-DP')
>>> release = plan.sample(np.random.default_rng(), 1)[0]   # one sanitized mean on the grid
>>> release.shape
(50,)
"""

from importlib import import_module

__version__ = "0.1.0"

# public name -> module that defines it
_PUBLIC = {
    # data in
    "FunctionalData": "data", "load_curves": "data", "from_arrays": "data", "clip_to_ball": "data",
    "simulate": "simulate",
    # kernels
    "eigenbasis": "kernels",
    # releases: plan (deterministic, inspectable) then draw
    "MeanSettings": "mean", "MeanRelease": "mean", "plan_mean_release": "mean",
    "KdeSettings": "kde", "KdeRelease": "kde", "plan_kde_release": "kde",
    "PcaSettings": "pca", "PrivatePCAResult": "pca", "private_pca": "pca",
    # choosing parameters
    "pcv_grid": "tuning", "pss_defaults": "tuning",
    # accounting, committed releases and their export
    "Ledger": "accounting", "LedgerEntry": "accounting", "compose": "accounting",
    "commit_mean": "export", "commit_kde": "export", "commit_pca": "export", "replay": "export",
    "export_folder": "export", "export_zip": "export",
    # errors
    "FdpError": "errors", "DataError": "errors", "ParameterError": "errors", "BudgetError": "errors",
}

__all__ = sorted(_PUBLIC) + ["__version__"]


def __getattr__(name: str):
    try:
        module = _PUBLIC[name]
    except KeyError:
        raise AttributeError(f"module 'fdp_core' has no attribute {name!r}") from None
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
