"""Registered data sets: which budget a file's curves are charged to (METHODS.md 22).

A budget belongs to a *registered data set* (name, person column, domain, value range, n
policy), not to one file's bytes. :func:`resolve` matches a file to the registrations in the
ledger: first its exact fingerprint (:mod:`fdp_core.data.fingerprint`), else its content sketch
(:mod:`fdp_core.data.sketch`): a file whose curves largely belong to a registration, as a subset
or a superset of them, *is* that data set. The charge goes there and the user is told which
one and how closely ("matches DTI-2026: 141 of 142 curves"); the file is recorded as a new
version of the data set with its first charge. Only an explicit, recorded act registers a
near-match as new data (``new_dataset`` with a ``reason``). Data that match nothing are
registered as a new data set with their first budget or charge.

The match figures and the sketch are computed from the data without noise: they are shown
to the custodian and kept in the ledger database, never written into a publishable file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np

from ..data import sketch as sketches
from ..data.loading import FunctionalData
from ..data.meta_columns import metadata_view
from ..errors import ParameterError, shown
from ..data.fingerprint import canonical_unit, fingerprint
from ..data.preprocess import person_codes
from .ledger_store import (DEFAULT_BUDGET, Dataset, LedgerStore, NewDataset, NewVersion, Registration, StoredBudget,
                           check_dataset_name, check_name, printable_name)

_REASON_MAX = 500


@dataclass(frozen=True)
class Match:
    """How a file matched a registered data set."""

    dataset: Dataset
    how: str  # "fingerprint" (the same parsed curves) or "sketch" (the same people, another file)
    k: int
    n: int
    containment: float
    has_sketch: bool = True

    @property
    def exact(self) -> bool:
        return self.how == "fingerprint"

    @property
    def score(self) -> float:
        return self.k / self.n if self.n else 1.0

    def message(self) -> str:
        what = "the same curves" if self.exact else "content sketch"
        return f"matches {self.dataset.name}: {self.k} of {self.n} curves ({what})"

    def to_dict(self) -> dict:
        return {"dataset": self.dataset.name, "how": self.how, "k": self.k, "n": self.n,
                "score": round(self.score, 4), "containment": round(self.containment, 4), "message": self.message()}


def _n_persons(fd: FunctionalData, person_column: str | None) -> int:
    """Persons in ``fd`` (every curve one person without a person column); a blank person id is
    refused here as by every release (preprocess.person_codes)."""
    return person_codes(metadata_view(fd), person_column, fd.data_matrix.shape[0])[1]  # no DataFrame built


def find_match(store: LedgerStore, fd: FunctionalData, key: str, vectors: np.ndarray) -> Match | None:
    """The registration ``fd`` belongs to: exact fingerprint first, else the best sketch overlap."""
    exact = store.dataset_of_fingerprint(key)
    n_curves = int(fd.data_matrix.shape[0])
    if exact is not None:
        return Match(exact[0], "fingerprint", n_curves, n_curves, 1.0, has_sketch=exact[1])
    best = None
    for dataset, texts in store.sketches():
        for text in texts:
            registered = sketches.decode(text)
            if registered is None:
                continue
            o = sketches.overlap(vectors, registered)
            if o.matches and (best is None or (o.containment, o.score) > (best.containment, best.score)):
                best = Match(dataset, "sketch", o.k, o.n, o.containment)
    return best


def _default_name(store: LedgerStore, data_label: str, key: str) -> str:
    stem = printable_name(Path(str(data_label or "")).stem)
    name = check_dataset_name(stem[:90])
    return name if store.dataset_named(name) is None else check_dataset_name(f"{stem[:60]} {key[:8]}")


def check_reason(reason: str | None, flag: str = "--reason") -> str | None:
    """Free text recorded with a registration (--reason, --n-policy): one line of at most _REASON_MAX
    printable characters (surrogates from bytes that are not UTF-8 could not even be stored)."""
    if reason is None:
        return None
    text = " ".join(str(reason).split())
    if not text or len(text) > _REASON_MAX or printable_name(text, "") != text:
        raise ParameterError(f"{flag} is 1 to {_REASON_MAX} characters of printable text, got {shown(reason)}")
    return text


def resolve(store: LedgerStore, fd: FunctionalData, *, unit: Mapping | None = None, name: str = DEFAULT_BUDGET,
            source: str = "library", data_label: str = "", dataset: str | None = None, new_dataset: bool = False,
            reason: str | None = None, value_range=None, n_policy: str | None = None,
            vectors: np.ndarray | None = None, fingerprints: tuple[str, str] | None = None,
            lookup: bool = False) -> StoredBudget:
    """The budget ``name`` of the registered data set ``fd`` belongs to (registered on first use).

    ``dataset``: the registration's name (checked against the match; the name of a new one);
    ``new_dataset`` with ``reason``: register a near-match as new data (recorded);
    ``value_range`` / ``n_policy``: what a new registration records; ``vectors``: the file's
    sketch when already computed (e.g. chunk by chunk by the stream engine); ``fingerprints``:
    (fingerprint with the unit, curves only) when already computed (the app caches them). Nothing is
    written here: the registration is recorded with the budget or charge that needs it.

    No silent fresh budget (METHODS.md 24): on a ledger holding registrations, data matching none of
    them are refused unless ``new_dataset`` with a ``reason`` registers them, on the record. Every path
    that can create a budget (release, replay, plan --commit, ledger init, the app's commit) comes
    here; ``lookup=True`` (ledger show, the Data page's display) only reads and is never refused.
    """
    name = check_name(name)
    reason = check_reason(reason)
    n_policy = check_reason(n_policy, "--n-policy")
    person = unit.get("person_column") if isinstance(unit, Mapping) else None
    n, m = _n_persons(fd, person), int(fd.data_matrix.shape[1])
    if new_dataset and reason is None:
        raise ParameterError("--new-dataset needs --reason TEXT: why these data are not the registered data set they "
                             "match (recorded in the ledger and shown in later reports)")
    if dataset is not None:
        dataset = check_dataset_name(dataset)
    unit_json = canonical_unit(unit)
    key, content = fingerprints or (fingerprint(fd, unit), fingerprint(fd, None))
    vectors = sketches.sketch_of(fd) if vectors is None else vectors
    sketch_text = sketches.encode(vectors) if vectors.shape[0] else None
    found = find_match(store, fd, key, vectors)
    label = str(data_label or "")
    if found is None and not new_dataset and not lookup:
        refuse_fresh_budget(store)
    if found is not None and not new_dataset:
        if dataset is not None and dataset != found.dataset.name:
            raise ParameterError(f"the file {found.message()}: its budget belongs to '{found.dataset.name}'; to "
                                 "register them as another data set pass --new-dataset --reason TEXT")
        version = None
        if not found.exact:
            version = NewVersion(key, unit_json, n, m, found.score,
                                 f"matched {found.dataset.name} by content: {found.k} of {found.n} curves",
                                 sketch_text, label)
        elif not found.has_sketch:  # a version migrated from schema 1: its sketch is filled now
            version = NewVersion(key, unit_json, n, m, 1.0, "", sketch_text, label)
        return StoredBudget(store, found.dataset.budget_key, name, source, label, content=content, unit=unit_json,
                            registration=Registration(dataset=found.dataset, version=version), match=found.to_dict())
    if found is not None and found.exact:
        raise ParameterError(f"these exact curves are registered as '{found.dataset.name}': --new-dataset applies to a "
                             "near-match, not to the same data")
    if dataset is not None and store.dataset_named(dataset) is not None:
        raise ParameterError(f"a data set named '{dataset}' is already registered with other data (these do not match "
                             "it): choose another --dataset name")
    new_name = dataset or _default_name(store, label, key)
    if found is not None:
        why = f"registered as new data although it {found.message()}: {reason}"
    else:
        why = "registered" + (f": {reason}" if reason else "")
    grid = np.asarray(fd.grid_points, dtype=float)
    new = NewDataset(new_name, person, [float(grid[0]), float(grid[-1])],
                     None if value_range is None else [float(v) for v in value_range], n_policy, reason)
    match = None if found is None else {**found.to_dict(), "registered_as_new": new_name, "reason": reason}
    return StoredBudget(store, key, name, source, label, content=content, unit=unit_json,
                        registration=Registration(new=new, version=NewVersion(key, unit_json, n, m, 1.0, why,
                                                                              sketch_text, label)),
                        match=match)


class UnregisteredData(ParameterError):
    """Data matching none of a ledger's registrations where a run would create a budget for them
    (METHODS.md 24). ``registered``: the names of the ledger's data sets, so that each front (the
    command line, the app's commit button) can say what to do in its own words."""

    def __init__(self, message: str, registered: tuple[str, ...] = ()):
        super().__init__(message)
        self.registered = registered


def refuse_fresh_budget(store: LedgerStore) -> None:
    """One line when a run would create a budget for data matching no registration of a ledger that has some."""
    registered = store.datasets()
    if registered:
        names = ", ".join(f"'{d.name}'" for d in registered[:3]) + (", ..." if len(registered) > 3 else "")
        raise UnregisteredData(f"these data match none of the {len(registered)} data set(s) registered in this "
                               f"ledger ({names}) and a new budget is never created silently: if they are other "
                               "people, pass --new-dataset --reason TEXT (recorded and shown in every later report)",
                               tuple(d.name for d in registered))


def open_budget(url: str | None, fd, *, unit: Mapping | None = None, name: str = DEFAULT_BUDGET,
                source: str = "library", data_label: str = "", read_only: bool = False,
                **registration) -> StoredBudget:
    """The budget ``name`` of the registered data set ``fd`` belongs to, in the ledger at ``url``.

    The file is matched to the registrations (:func:`resolve`: exact
    fingerprint, else the content sketch); ``registration`` takes resolve's keyword arguments
    (``dataset``, ``new_dataset``, ``reason``, ``value_range``, ``n_policy``). ``read_only``: a
    reading command's store, which never migrates an older ledger (LedgerStore).
    """
    return resolve(LedgerStore(url, read_only=read_only), fd, unit=unit, name=name, source=source, data_label=data_label, **registration)
