"""Replayable configs: parse ``config.yaml`` and commit the same settings on new data with fresh noise.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import replace
from pathlib import Path
from typing import Mapping

from ..budget.accounting import Ledger
from ..releases.box import check_box
from ..data.sparse_data import SparseData, read_long
from ..data.loading import MISSING_POLICIES, FunctionalData, load_curves
from ..data.public_grid import parse_grid
from ..data.yaml_files import parse_yaml, read_yaml_text
from ..errors import ParameterError
from ..mechanisms.discrete import DEFAULT_GRANULARITY_EXP
from ..settings_fields import settings_from_config
from .commit import CONFIG_SCHEMA, CommittedRelease, refuse_data_dependent
from .kinds import BY_CONFIG_KIND
from .protocol import CommitRequest, commit_release

# --------------------------------------------------------------------------- replay

# Kinds a commit (and so a replay) supports, and the settings class of each (module, name): read
# from the registry of kinds of release (fdp_core/publish/kinds.py).
COMMIT_KINDS = tuple(BY_CONFIG_KIND)  # mean, kde, pca, covariance, regression, sparse (METHODS.md 20)
SETTINGS_CLASSES = {name: (kind.settings_class.__module__.rsplit(".", 1)[-1], kind.settings_class.__name__)
                    for name, kind in BY_CONFIG_KIND.items()}
_CONFIG_KEYS = {"schema", "kind", "settings", "data", "export", "budget", "replays"}


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _mapping(config: Mapping, key: str, required: bool = True) -> dict:
    value = config.get(key)
    if value is None and not required:
        return {}
    if not isinstance(value, Mapping):
        raise ParameterError(f"config: '{key}' must be a mapping (key: value lines), got {type(value).__name__}")
    return dict(value)


def parse_config(source) -> dict:
    """Read and validate a replay config (a path, YAML text or a mapping); returns the mapping.

    Raises ParameterError with a one-line message on anything malformed.
    """
    if isinstance(source, Mapping):
        config = dict(source)
    else:
        is_path = isinstance(source, Path) or (isinstance(source, str) and "\n" not in source
                                               and "\x00" not in source and Path(source).exists())
        # A regular file of at most MAX_YAML_BYTES (a pipe or device would hang the read), numbers
        # such as 1e-5 read as numbers (data/yaml_files.py).
        text = read_yaml_text(Path(source), "config") if is_path else str(source)
        config = parse_yaml(text, "config")
    if not isinstance(config, Mapping):
        raise ParameterError("config must be a YAML mapping written by fdp's export (config.yaml)")
    if config.get("schema") != CONFIG_SCHEMA:
        raise ParameterError(f"config schema must be '{CONFIG_SCHEMA}', got {config.get('schema')!r}")
    unknown = sorted(set(config) - _CONFIG_KEYS)
    if unknown:
        raise ParameterError(f"config: unknown key(s) {', '.join(map(str, unknown))}")
    if config.get("kind") not in COMMIT_KINDS:
        raise ParameterError(f"config: kind must be one of {', '.join(COMMIT_KINDS)}, got {config.get('kind')!r}")
    settings = _mapping(config, "settings")
    data = _mapping(config, "data", required=False)
    if data.get("missing", "drop") not in MISSING_POLICIES:
        raise ParameterError(f"config: data.missing must be one of {', '.join(MISSING_POLICIES)}, "
                             f"got {data.get('missing')!r}")
    if data.get("grid") is not None:
        data = {**data, "grid": list(parse_grid(data["grid"]))}  # the declared public grid (METHODS.md 24)
    if "feature" in BY_CONFIG_KIND[config["kind"]].inputs and not isinstance(data.get("feature"), str):
        raise ParameterError("config: a kde config needs data.feature (e.g. 'l2norm' or 'value:0.5')")
    export = _mapping(config, "export", required=False)
    k = export.get("granularity_exp", DEFAULT_GRANULARITY_EXP)
    if isinstance(k, bool) or not isinstance(k, int):
        raise ParameterError(f"config: export.granularity_exp must be an integer, got {k!r}")
    budget = _mapping(config, "budget")
    _settings_object(config["kind"], settings)
    budget_ledger(budget)
    return {**config, "settings": settings, "data": data, "export": export, "budget": budget}


def _strict_type(cls, name: str, value) -> None:
    """A hand-edited config is read strictly: YAML booleans are booleans, numbers are numbers.

    (``tau_from_data: 'no'`` is a non-empty string, which Python would read as true.)
    """
    if value is None:
        return
    hint = typing.get_type_hints(cls)[name]
    types = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    want = types[0]
    ok = {bool: lambda v: isinstance(v, bool),
          int: lambda v: isinstance(v, int) and not isinstance(v, bool),
          float: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
          str: lambda v: isinstance(v, str)}.get(want)
    if ok is not None and not ok(value):
        words = {bool: "a YAML boolean (true or false, unquoted)", int: "an integer", float: "a number",
                 str: "text"}[want]
        raise ParameterError(f"config: settings.{name} must be {words}, got {value!r}")


def _settings_object(kind: str, settings: dict):
    cls = BY_CONFIG_KIND[kind].settings_class
    names = {f.name for f in dataclasses.fields(cls)}
    for key, value in settings.items():
        if key in names:
            _strict_type(cls, key, value)
    refuse_data_dependent(settings, "replay")
    try:
        obj = settings_from_config(cls, settings)
    except ParameterError as exc:
        raise ParameterError(f"config: bad settings for a {kind} release ({_one_line(exc)})") from None
    if kind == "kde":
        return replace(obj, box=check_box(obj.box))
    if "released_mean" in BY_CONFIG_KIND[kind].inputs and obj.centring == "released-mean":
        raise ParameterError("config: a PCA centred by a released mean cannot be replayed from a file (the "
                             "released mean is not part of the data); replay the mean and commit the PCA in "
                             "the app")
    return obj.validated()


def settings_of(config: Mapping):
    """The validated settings object of a parsed config (MeanSettings, KdeSettings, ...)."""
    return _settings_object(config["kind"], config["settings"])


def budget_ledger(budget: dict) -> Ledger:
    """The in-memory Ledger a config's ``budget`` block describes (its keys checked; ParameterError otherwise)."""
    unknown = sorted(set(budget) - {"epsilon_total", "delta_total", "filter", "split", "name"})
    if unknown:
        raise ParameterError(f"config: unknown budget key(s) {', '.join(unknown)}")
    if "epsilon_total" not in budget or "delta_total" not in budget:
        raise ParameterError("config: budget needs epsilon_total and delta_total")
    for key in ("epsilon_total", "delta_total"):
        if isinstance(budget[key], bool) or not isinstance(budget[key], (int, float)):
            raise ParameterError(f"config: budget.{key} must be a number, got {budget[key]!r}")
    if "name" in budget and not isinstance(budget["name"], str):
        raise ParameterError(f"config: budget.name must be text, got {budget['name']!r}")
    return Ledger(budget["epsilon_total"], budget["delta_total"], budget.get("split"), budget.get("filter", "basic"))


def replay(config, data, *, data_label: str | None = None, ledger=None) -> tuple[CommittedRelease, Ledger]:
    """Commit a new release with a config's settings on ``data`` (path, bytes or FunctionalData), fresh noise.

    ``ledger``: a :class:`fdp_core.budget.ledger_store.StoredBudget` (the persistent budget of these
    data: the CLI's default), an in-memory Ledger, or None for a fresh in-memory ledger with
    the config's budget (then nothing outside this call knows about the release). A replay is
    a new release and spends budget of its own. Returns the release and the ledger after it.

    Parameters
    ----------
    config : path, mapping or YAML text
        A bundle's config.yaml (its kind, settings and data options).
    data : path, bytes or FunctionalData
        The data to release (NON-PRIVATE).
    data_label : str, optional
        The data set's name in the report.
    ledger : StoredBudget, Ledger or None
        The budget charged.

    Returns
    -------
    (CommittedRelease, Ledger)

    Examples
    --------
    >>> import numpy as np
    >>> import fdp_core as fdp
    >>> t = np.linspace(0, 1, 20)
    >>> fd = fdp.from_arrays(t, np.outer(np.linspace(0.2, 0.8, 100), 1 + t) / 2)
    >>> first = fdp.commit_mean(fdp.Ledger(4.0, 1e-4), fd, fdp.MeanSettings(value_range=(0, 1)))
    >>> again, ledger = replay(first.config, fd)       # the same settings, fresh noise, its own charge
    >>> again.record["tau"] == first.record["tau"], again.id != first.id
    (True, True)
    """
    config = parse_config(config)
    settings = _settings_object(config["kind"], config["settings"])
    if BY_CONFIG_KIND[config["kind"]].data == "sparse":
        return _replay_sparse(config, settings, data, data_label=data_label, ledger=ledger)
    missing = config["data"].get("missing", "drop")
    if isinstance(data, FunctionalData):
        fd, label = data, data_label or "array"
    else:
        fd = load_curves(data, missing=missing, grid=config["data"].get("grid"))
        label = data_label or (Path(data).name if isinstance(data, (str, Path)) else "data")
    ledger = ledger if ledger is not None else budget_ledger(config["budget"])
    request = CommitRequest(fd, settings, label=f"replay of {config.get('replays', 'a release')}", data_label=label,
                            granularity_exp=config["export"].get("granularity_exp"), pre_registered=True,
                            inputs={"feature": config["data"].get("feature")})
    # The caller completes the entries once the files are safe (commands/replay.py).
    release = commit_release(BY_CONFIG_KIND[config["kind"]], ledger, request, finish=False)
    labels = config["data"].get("axis_labels")
    if labels:  # the original release's axis names (public words): the re-run's figures keep them
        release.record["axis_labels"] = dict(labels)
        release.config["data"]["axis_labels"] = dict(labels)
    # A stored budget: the snapshot its charge returned (no second read of the database between the
    # draw and the caller's 'complete').
    return release, (ledger if isinstance(ledger, Ledger) else (ledger.last_snapshot or ledger.ledger()))


def _replay_sparse(config: dict, settings, data, *, data_label: str | None, ledger):
    """A sparse mean again on a long file of observations (path, bytes or SparseData), fresh noise."""

    if isinstance(data, SparseData):
        sparse, label = data, data_label or data.name
    else:
        sparse = read_long(data)
        label = data_label or (Path(data).name if isinstance(data, (str, Path)) else "data")
    ledger = ledger if ledger is not None else budget_ledger(config["budget"])
    request = CommitRequest(sparse, settings, label=f"replay of {config.get('replays', 'a release')}",
                            data_label=label, granularity_exp=config["export"].get("granularity_exp"),
                            pre_registered=True)
    release = commit_release(BY_CONFIG_KIND[config["kind"]], ledger, request, finish=False)
    return release, (ledger if isinstance(ledger, Ledger) else ledger.ledger())


def data_mismatch(config: Mapping, release: CommittedRelease) -> str | None:
    """A note when the replayed data differ in size from the original (not an error: a config may be reused)."""
    want = config.get("data", {}) or {}
    got = release.record.get("data", {})
    diffs = [f"{key} = {got.get(key)} (original {want[key]})" for key in ("n", "m")
             if want.get(key) is not None and got.get(key) is not None and want[key] != got[key]]
    return ("data differ from the original release: " + ", ".join(diffs)) if diffs else None
