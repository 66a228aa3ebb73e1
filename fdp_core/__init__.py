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

__version__ = "0.2.1"

# public name -> module that defines it
_PUBLIC = {
    # data in
    "FunctionalData": "data.loading", "load_curves": "data.loading", "from_arrays": "data.loading", "clip_to_ball": "data.loading",
    "simulate": "data.simulate",
    # kernels
    "eigenbasis": "kernels",
    # releases: plan (deterministic, inspectable) then draw
    "MeanSettings": "releases.mean", "MeanRelease": "releases.mean", "plan_mean_release": "releases.mean",
    "KdeSettings": "releases.kde", "KdeRelease": "releases.kde", "plan_kde_release": "releases.kde",
    "PcaSettings": "releases.pca", "PrivatePCAResult": "releases.pca", "private_pca": "releases.pca",
    "CovarianceSettings": "releases.covariance", "CovarianceRelease": "releases.covariance",
    "plan_covariance_release": "releases.covariance",
    "RegressionSettings": "releases.regression", "RegressionRelease": "releases.regression",
    "plan_regression_release": "releases.regression",
    "load_counts": "data.counts",  # a density from a (value, count) table: plan_kde_release on its values
    "SparseSettings": "releases.sparse", "SparseRelease": "releases.sparse", "plan_sparse_release": "releases.sparse",
    "read_long": "data.sparse_data",
    "synthetic_curves": "releases.synthetic",
    "BandPlan": "releases.bands", "plan_band_release": "releases.bands", "confidence_band": "releases.bands",
    # choosing parameters
    "pcv_grid": "explore.tuning", "pss_defaults": "explore.tuning",
    "PrivateSelection": "explore.private_selection", "select_parameters": "explore.private_selection",
    # accounting, committed releases and their export
    "Ledger": "budget.accounting", "LedgerEntry": "budget.accounting", "compose": "budget.accounting",
    "commit_mean": "publish.export", "commit_kde": "publish.export", "commit_pca": "publish.export", "replay": "publish.export",
    "export_folder": "publish.export", "export_zip": "publish.export",
    "commit_covariance": "publish.commit_summaries", "commit_regression": "publish.commit_summaries",
    "commit_sparse_mean": "publish.sparse_commit", "commit_mean_with_band": "publish.band_commit",
    "commit_selection": "explore.private_selection",
    # plans across statistics (one budget, one commit)
    "ReleasePlan": "explore.plan", "make_plan": "explore.plan", "commit_plan": "publish.plan_commit",
    # the commit protocol (reserve -> draw -> write -> complete) and the registry of kinds of release
    "CommitRequest": "publish.protocol", "commit_release": "publish.protocol",
    "release_kind": "publish.kinds", "RELEASE_KINDS": "publish.kinds",
    # scikit-fda in and out, scikit-learn-style estimators
    "from_skfda": "data.skfda_io", "to_skfda": "data.loading",
    "PrivateMean": "estimators", "PrivateFPCA": "estimators", "PrivateDensity": "estimators",
    # per-person observations for densities (METHODS.md 11)
    "person_features": "data.features", "person_average": "data.preprocess",
    # errors
    "FdpError": "errors", "DataError": "errors", "ParameterError": "errors", "BudgetError": "errors",
    "MissingExtraError": "errors",
}

__all__ = sorted([*_PUBLIC, "__version__"])


def __getattr__(name: str):
    try:
        module = _PUBLIC[name]
    except KeyError:
        raise AttributeError(f"module 'fdp_core' has no attribute {name!r}") from None
    try:
        value = getattr(import_module(f"{__name__}.{module}"), name)
    except ModuleNotFoundError as exc:  # the light install: name the extra that brings the package
        from .errors import missing_extra  # lazy: `import fdp_core` imports no module of its own

        error = missing_extra(exc, f"fdp_core.{name}")
        if error is None:
            raise
        raise error from None
    globals()[name] = value
    return value


def __dir__():
    return __all__
