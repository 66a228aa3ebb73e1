"""The registry of kinds of release: what the Release page, the CLI and replay need to commit each one.

:mod:`fdp_core.registry` has one entry per *mechanism*; this module has one entry per *kind of
release* (mean, density, components, covariance, regression, selection, sparse mean, synthetic
curves, density from counts). An entry says how the kind is named, which settings class it
reads (its fields' metadata builds the page controls, CLI options and replay configs: see
:mod:`fdp_core.settings_fields`), what data it takes, which ledger entries it charges, which
config kind replays it, which bundle files it writes, and its two hooks into the commit protocol
(:mod:`fdp_core.publish.protocol`):

- ``quote(request) -> Quote``: the plan and its ledger entries, nothing drawn (the page shows it);
- ``commit(account, request, quote) -> CommittedRelease``: reserve every part, draw, build the record.

Callers commit any kind the same way::

    kind = release_kind("density")
    request = CommitRequest(fd, settings, label="...", inputs={"feature": "l2norm"})
    release = commit_release(kind, budget, request)   # reserve -> draw -> write -> complete

Kinds without a commit of their own (``commit`` None) say where they are published instead.
This module lives in ``publish`` (not ``registry``) because its hooks call the commit modules,
which the mechanism registry must never import.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..errors import ParameterError
from ..releases.covariance import CovarianceSettings
from ..releases.kde import KdeSettings
from ..releases.mean import MeanSettings
from ..releases.pca import PcaSettings
from ..releases.regression import RegressionSettings
from ..releases.sparse import SparseSettings
from .band_commit import BAND_STEPS
from .commit import BUNDLE_FILES, KDE_STEPS, MEAN_STEPS, PCA_STEPS, refuse_data_dependent
from .commit_summaries import COVARIANCE_STEPS, REGRESSION_STEPS
from .protocol import CommitRequest, Quote, Steps, commit_release, run_steps
from .sparse_commit import SPARSE_STEPS


@dataclass(frozen=True)
class ReleaseKind:
    """Everything the plumbing needs to know about one kind of release.

    ``ledger_kind``: the kind its ledger entries carry (the budget split's key); ``config_kind``:
    the ``kind`` of its replayable config.yaml (None: not replayable); ``data``: "curves"
    (FunctionalData), "sparse" (SparseData) or "counts" (a value,count table); ``inputs``: what a
    commit needs beyond the settings (CommitRequest.inputs keys); ``needs_value_range``: refused
    without a declared public value range (the app says so before the commit);
    ``committed_where``: where the app and the CLI publish it.
    """

    name: str
    label: str
    ledger_kind: str
    settings_class: type
    data: str = "curves"
    config_kind: str | None = None
    cli_command: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    needs_value_range: bool = False
    bundle_files: tuple[str, ...] = ()
    committed_where: str = ""
    quote: Callable[[CommitRequest], Quote] | None = field(default=None, repr=False)
    commit: Callable | None = field(default=None, repr=False)  # (account, request, quote | None) -> CommittedRelease

    @property
    def commits(self) -> bool:
        return self.commit is not None


# --------------------------------------------------------------------------- hooks: built from protocol steps

def steps_hook(steps: Steps):
    """A kind's commit hook from its protocol steps (the quote shown is the quote charged).

    The hook carries its steps (``hook.steps``): tests/test_architecture.py checks that every
    committing kind is built this way, so every commit goes through the protocol's run_steps.
    """
    def commit(account, request: CommitRequest, quote: Quote | None):
        return run_steps(steps, account, request, quote)
    commit.steps = steps
    return commit


def _mean_steps(request: CommitRequest) -> Steps:
    """A mean with a confidence band is committed in two parts (the mean, the second moment)."""
    return MEAN_STEPS if request.settings.confidence_band is None else BAND_STEPS


# The mean's kind: the plain mean's steps, or the band's when the settings ask for a confidence band.
MEAN_KIND_STEPS = Steps(quote=lambda request: _mean_steps(request).quote(request),
                        build=lambda request, *drawn: _mean_steps(request).build(request, *drawn),
                        check=lambda request: _mean_steps(request).check(request))


# --------------------------------------------------------------------------- the registry

RELEASE_KINDS: dict[str, ReleaseKind] = {k.name: k for k in (
    ReleaseKind("mean", "mean curve", "mean", MeanSettings, config_kind="mean", cli_command=("release", "mean"),
                needs_value_range=True, bundle_files=BUNDLE_FILES, committed_where="Release & audit page; replay",
                quote=MEAN_KIND_STEPS.quote, commit=steps_hook(MEAN_KIND_STEPS)),
    ReleaseKind("density", "density", "kde", KdeSettings, config_kind="kde", cli_command=("release", "kde"),
                inputs=("feature",), bundle_files=BUNDLE_FILES, committed_where="Release & audit page; replay",
                quote=KDE_STEPS.quote, commit=steps_hook(KDE_STEPS)),
    ReleaseKind("components", "principal components", "pca", PcaSettings, config_kind="pca",
                cli_command=("release", "pca"), inputs=("released_mean", "released_mean_id"),
                needs_value_range=True, bundle_files=BUNDLE_FILES, committed_where="Release & audit page; replay",
                quote=PCA_STEPS.quote, commit=steps_hook(PCA_STEPS)),
    ReleaseKind("covariance", "covariance", "covariance", CovarianceSettings, config_kind="covariance",
                cli_command=("release", "covariance"), bundle_files=BUNDLE_FILES,
                committed_where="Covariance & regression page; replay",
                quote=COVARIANCE_STEPS.quote, commit=steps_hook(COVARIANCE_STEPS)),
    ReleaseKind("regression", "regression", "regression", RegressionSettings, config_kind="regression",
                cli_command=("release", "regression"), bundle_files=BUNDLE_FILES,
                committed_where="Covariance & regression page; replay",
                quote=REGRESSION_STEPS.quote, commit=steps_hook(REGRESSION_STEPS)),
    ReleaseKind("sparse", "sparse mean", "mean", SparseSettings, data="sparse", config_kind="sparse",
                cli_command=("release", "mean"), inputs=("statistics",), bundle_files=BUNDLE_FILES,
                committed_where="Release & audit page (sparse data loaded); release mean --sparse; replay",
                quote=SPARSE_STEPS.quote, commit=steps_hook(SPARSE_STEPS)),
    # Charged through the protocol's reserve and settle (fdp_core/explore/private_selection.py
    # commit_selection); its output is a choice of parameters, not a bundle.
    ReleaseKind("selection", "parameter selection", "tuning", MeanSettings, cli_command=("select",),
                inputs=("penalties", "rhos", "epsilon", "folds", "bound"),
                committed_where="Trade-offs page (private selection); python -m fdp_core select"),
    # Previews drawn with numpy: to publish synthetic curves, commit a covariance with a released
    # mean and draw from it (METHODS.md 19).
    ReleaseKind("synthetic", "synthetic curves", "covariance", CovarianceSettings,
                cli_command=("release", "synthetic"),
                committed_where="not committed: commit a covariance with a released mean (Covariance & regression "
                                "page) and draw synthetic curves from it"),
    ReleaseKind("counts", "density from counts", "kde", KdeSettings, data="counts",
                cli_command=("release", "kde-counts"),
                committed_where="not committed: python -m fdp_core release kde-counts (a preview with numpy noise)"),
)}

# The replayable kinds by their config.yaml ``kind`` (replay reads them).
BY_CONFIG_KIND: dict[str, ReleaseKind] = {k.config_kind: k for k in RELEASE_KINDS.values() if k.config_kind}


def release_kind(name: str) -> ReleaseKind:
    """The registry entry of a kind of release, by name ("mean", "density", ...) or by config kind ("kde", "pca").

    Parameters
    ----------
    name : str
        ``"mean"``, ``"density"``, ``"components"``, ``"covariance"``, ``"regression"``, ``"sparse"``,
        ``"selection"``, ``"synthetic"``, ``"counts"``, or a config kind (``"kde"``, ``"pca"``).

    Returns
    -------
    ReleaseKind
        Its label, settings class, ledger kind, CLI command, quote and commit hooks.

    Examples
    --------
    >>> release_kind("kde").name, release_kind("mean").settings_class.__name__
    ('density', 'MeanSettings')
    """
    found = RELEASE_KINDS.get(name) or BY_CONFIG_KIND.get(name)
    if found is None:
        raise ParameterError(f"unknown kind of release {name!r}; one of {', '.join(RELEASE_KINDS)}")
    return found


def quote(kind: ReleaseKind | str, request: CommitRequest) -> Quote:
    """What committing ``request`` would charge, planned without drawing noise (its flags name any
    data-dependent setting; :func:`commit` refuses those)."""
    kind = release_kind(kind) if isinstance(kind, str) else kind
    if kind.quote is None:
        raise ParameterError(f"{kind.label} is not committed here: {kind.committed_where}")
    return kind.quote(request)


def commit(kind: ReleaseKind | str, account, request: CommitRequest, **options):
    """:func:`fdp_core.publish.protocol.commit_release` for a kind named by its registry name.

    Data-dependent settings are refused before anything is charged or drawn.
    """
    kind = release_kind(kind) if isinstance(kind, str) else kind
    refuse_data_dependent(request.settings)
    return commit_release(kind, account, request, **options)


__all__ = ["BY_CONFIG_KIND", "RELEASE_KINDS", "ReleaseKind", "commit", "quote", "release_kind", "steps_hook"]
