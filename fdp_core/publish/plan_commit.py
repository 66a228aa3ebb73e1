"""One commit for a release plan (issue 29, METHODS.md section 21): one check, one bundle, one report.

A plan is committed as one act (METHODS.md 23). Every part is quoted on the very file that is
released (nothing drawn); on a stored budget every part's entries are then reserved in ONE
locked transaction (one row per entry, sharing the plan's release id) or none is: a plan
that does not fit charges nothing and writes nothing. Then each part is drawn through the
commit protocol by its kind's registry entry (:mod:`fdp_core.publish.kinds`; exact discrete
noise) and the plan is written as ONE bundle:

    plan.json            the plan (budgets, radii, totals; public)
    plan.yaml            the plan as given (replay it: ``fdp plan plan.yaml --data F --commit``)
    plan_release.json    every part's release id, charge and accuracy; the totals; what was looked at
    report.html          one report covering every part, the plan's totals and the ledger
    ledger.json          the ledger after the plan
    README.txt           what each file is
    part-<i>-<kind>/     each part's own bundle (release.csv, release.json, config.yaml, report.html, ...)

A crash after the reservation leaves every part reserved (counted as spent); the caller
completes every entry in one transaction once the bundle is written.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import yaml

from ..budget.accounting import Ledger, LedgerEntry
from ..data.loading import FunctionalData
from ..data.preprocess import file_persons
from ..errors import BudgetError, ParameterError
from ..explore.plan import ReleasePlan, charged_entries, describe, part_name, part_settings
from .bundle import analyst_view_json, bundle_files
from .commit import CommittedRelease, ledger_state, looked_at_field
from .kinds import release_kind
from .plan_report import plan_readme, plan_report_html
from .protocol import CommitRequest, Reservation, commit_release
from .release import ANALYST_VIEW_FILE, to_json

PLAN_RELEASE_SCHEMA = "fdp.plan_release/1"
INDEX_FILE = "plan_release.json"
# The plan-level files of the one bundle (each part's own files are in its subfolder).
PLAN_FILES = ("plan.json", "plan.yaml", INDEX_FILE, "report.html", "ledger.json", "README.txt")


@dataclass(frozen=True)
class CommittedPlan:
    """Every part of a plan, committed: (subfolder name, release) in the plan's order."""

    plan: ReleasePlan
    parts: tuple[tuple[str, CommittedRelease], ...]
    ledger: Ledger  # after the last part
    data_label: str
    looked_at: tuple[str, ...]  # the record's 'looked_at_before_commit', the same for every part
    mapping: Mapping | None = None  # the plan as given (plan.yaml)
    release_id: str | None = None  # the id every part's stored entries share (``ledger complete --release``)

    @property
    def entry_ids(self) -> list[str]:
        """Every ledger entry the plan reserved (a part may have more than one), to complete."""
        ids: list[str] = []
        for _, release in self.parts:
            ids += [*release.record.get("part_entry_ids", ()), release.id]
        return list(dict.fromkeys(ids))

    @property
    def charged(self) -> tuple[float, float]:
        """(epsilon, delta) charged by the plan under basic composition (sum over its entries)."""
        entries = [e for _, r in self.parts for e in _release_entries(r)]
        return float(sum(e.epsilon for e in entries)), float(sum(e.delta for e in entries))

    def index(self) -> dict:
        """plan_release.json: public facts only (settings, charges, the noised outputs' accuracy)."""
        parts = []
        for (folder, release), planned in zip(self.parts, self.plan.parts):
            s = planned.statistic
            parts.append({"name": s.name, "kind": s.kind, "folder": folder, "release_id": release.id,
                          "entry_ids": [e.id for e in _release_entries(release)], "mechanism": release.entry.mechanism,
                          "rule": s.rule, "target_radius_95": s.target, "weight": s.weight,
                          "planned_radius_95": planned.radius, "charged_epsilon": sum(
                              e.epsilon for e in _release_entries(release)),
                          "charged_delta": sum(e.delta for e in _release_entries(release)),
                          "accuracy": release.accuracy})
        eps, delta = self.charged
        return {"schema": PLAN_RELEASE_SCHEMA, "data": {"label": self.data_label, "n": self.plan.design.n},
                "parts": parts, "charged_basic": {"epsilon": eps, "delta": delta},
                "whole_plan": None if self.plan.gdp is None else {"epsilon": self.plan.gdp[0],
                                                                   "delta": self.plan.gdp[1],
                                                                   "method": self.plan.gdp[2]},
                "looked_at_before_commit": list(self.looked_at), "ledger_at_export": ledger_state(self.ledger),
                "files": list(PLAN_FILES) + [folder + "/" for folder, _ in self.parts]}


def _release_entries(release: CommittedRelease) -> list[LedgerEntry]:
    """The ledger entries of one committed part (a covariance's released mean is a second one)."""
    extra = release.record.get("mean_entry")
    return [release.entry] + ([LedgerEntry.from_dict(extra)] if extra else [])


def check_data(plan: ReleasePlan, fd: FunctionalData, data_label: str) -> None:
    """The file must hold the declared persons (every person of the file, usable or not: METHODS 11)
    on the declared grid (its number of points: every budget and radius of the plan was computed on it)."""
    declared, found = int(plan.design.grid.size), int(fd.grid_points.size)
    if declared != found:
        raise ParameterError(f"the plan was made for a grid of {declared} points; {data_label} has {found}: make the "
                             "plan again with the file's grid")
    person = plan.design.person_column
    if person is not None and person not in fd.metadata.columns:
        raise ParameterError(f"the plan's person column '{person}' is not a column of {data_label}")
    persons = file_persons(fd, person).n_persons
    if persons != plan.design.n:
        raise ParameterError(f"the plan was made for n = {plan.design.n} persons; {data_label} holds {persons}: make "
                             "the plan again with the declared n")


def entries_on(plan: ReleasePlan, fd: FunctionalData) -> list[list[LedgerEntry]]:
    """Each part's ledger entries on the file to release (nothing drawn, nothing charged)."""
    return [charged_entries(p.statistic.kind, part_settings(p), plan.design, p.statistic.feature, fd=fd)
            for p in plan.parts]


def check_fits(plan: ReleasePlan, fd: FunctionalData, account) -> None:
    """Refuse the whole plan (BudgetError, nothing charged) unless every part fits together.

    ``account``: an in-memory Ledger or a StoredBudget (its current snapshot; no stored budget
    yet means the first charge creates it from the caller's spec, so the check is the spec's).
    """
    snapshot = account if isinstance(account, Ledger) else account.ledger()
    if snapshot is None and not isinstance(account, Ledger) and account.spec is not None:
        snapshot = account.spec.ledger()
    if snapshot is None:
        return  # no budget at all: the first part's charge refuses (LedgerError), nothing drawn
    trial = Ledger(snapshot.epsilon_total, snapshot.delta_total, snapshot.split, snapshot.filter,
                   entries=list(snapshot.entries))
    entries = [e for part in entries_on(plan, fd) for e in part]
    try:
        for entry in entries:
            trial.commit(entry)
    except BudgetError:
        left = snapshot.remaining()
        eps, delta = sum(e.epsilon for e in entries), sum(e.delta for e in entries)
        name = getattr(account, "name", None)
        raise BudgetError(f"the plan costs epsilon {eps:.4g}, delta {delta:.3g} (its {len(plan.parts)} parts "
                          f"together); budget{f' {name!r}' if name else ''} has epsilon {left.epsilon:.4g}, delta "
                          f"{left.delta:.3g} left ({snapshot.filter} filter): nothing was committed") from None


def commit_plan(plan: ReleasePlan, fd: FunctionalData, account, *, data_label: str, looked_at=None,
                pre_registered: bool = False, sealed: bool = False, mapping: Mapping | None = None) -> CommittedPlan:
    """Check the whole plan, then charge and draw every part (one ledger entry per part).

    ``account``: an in-memory Ledger or a StoredBudget; a stored budget's entries stay
    'reserved' until the caller completes ``entry_ids`` once the bundle is written.
    ``looked_at`` / ``pre_registered`` / ``sealed``: what the record states was looked at
    before the commit (:func:`fdp_core.publish.commit.looked_at_field`; the sealed statement
    only when every recorded view was on the stand-in).

    Parameters
    ----------
    plan : ReleasePlan
        From :func:`fdp_core.explore.plan.make_plan`.
    fd : FunctionalData
        The private curves, read once.
    account : Ledger or StoredBudget
    data_label : str
    looked_at, pre_registered, sealed, mapping
        What the report states about how the settings were fixed; the plan's own mapping.

    Returns
    -------
    CommittedPlan
        Every part's release, in order.

    Examples
    --------
    >>> import numpy as np
    >>> import fdp_core as fdp
    >>> t = np.linspace(0, 1, 50)
    >>> fd = fdp.from_arrays(t, np.outer(np.linspace(0.2, 0.8, 200), 1 + t) / 2)
    >>> mapping = {"schema": "fdp.plan/1", "public": {"n": 200, "grid": 50, "value_range": [0, 1]},
    ...            "statistics": [{"name": "mean", "kind": "mean", "settings": {"kernel": "matern52", "rho": 0.1},
    ...                            "epsilon": 1.0}]}
    >>> committed = commit_plan(fdp.make_plan(mapping), fd, fdp.Ledger(4.0, 1e-4), data_label="toy", mapping=mapping)
    >>> len(committed.parts)
    1
    """

    if not plan.fits():
        raise BudgetError(f"the plan costs epsilon {plan.basic[0]:.4g}, delta {plan.basic[1]:.3g}, more than its "
                          f"budget (epsilon {plan.budget[0]:g}, delta {plan.budget[1]:g}): nothing was committed")
    check_data(plan, fd, data_label)
    check_fits(plan, fd, account)
    seen = looked_at_field(looked_at, pre_registered=pre_registered, sealed=sealed)
    requests = []
    for i, p in enumerate(plan.parts, start=1):
        s = p.statistic
        # The part's kind from the registry (a plan's statistic kinds are config kinds: mean, kde, ...).
        kind = release_kind(s.kind)
        request = CommitRequest(fd, part_settings(p), label=f"plan part {i}: {s.name}", data_label=data_label,
                                looked_at=seen, inputs={"feature": s.feature})
        requests.append((kind, request, kind.quote(request)))
    charged, release_id = account, None
    if not isinstance(account, Ledger):
        # One transaction reserves every part's entries or none (METHODS.md 23).
        try:
            charged = Reservation(account, [e for _, _, q in requests for e in q.entries])
        except BudgetError as exc:
            raise BudgetError(f"{exc} (the plan's {len(plan.parts)} parts together; nothing was charged)") from None
        release_id = charged.release_id
    parts = []
    for i, ((kind, request, quote), p) in enumerate(zip(requests, plan.parts), start=1):
        # The caller completes every entry once the bundle is written.
        release = commit_release(kind, charged, request, quote=quote, finish=False)
        release.record["plan_part"] = {"index": i, "name": p.statistic.name, "of": len(plan.parts)}
        parts.append((part_name(i, p), release))
    ledger = account if isinstance(account, Ledger) else (account.last_snapshot or account.ledger())
    return CommittedPlan(plan, tuple(parts), ledger, data_label, tuple(seen), mapping, release_id)


# --------------------------------------------------------------------------- the one bundle

def plan_bundle_files(committed: CommittedPlan, *, include_analyst_view: bool = False) -> dict[str, bytes]:
    """Every file of the plan's bundle by relative path (a part's files under its subfolder)."""

    files: dict[str, bytes] = {}
    for folder, release in committed.parts:
        for name, content in bundle_files(release, committed.ledger).items():
            files[f"{folder}/{name}"] = content
        if include_analyst_view:  # the CLI writes it beside each part's files, never in the zip
            files[f"{folder}/{ANALYST_VIEW_FILE}"] = analyst_view_json(release)
    text = {"plan.json": json.dumps(committed.plan.to_dict(), indent=2) + "\n",
            INDEX_FILE: to_json(committed.index()),
            "report.html": plan_report_html(committed),
            "ledger.json": to_json(committed.ledger.to_dict()),
            "README.txt": plan_readme(committed)}
    if committed.mapping is not None:
        text["plan.yaml"] = yaml.safe_dump(json.loads(to_json(dict(committed.mapping))), sort_keys=False)
    files.update({name: content.encode("utf-8") for name, content in text.items()})
    return files


def export_plan_zip(committed: CommittedPlan) -> bytes:
    """The plan's bundle as a zip in memory (one folder fdp_plan_<first release id>/ inside)."""
    top = f"fdp_plan_{committed.parts[0][1].id}"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for name, content in plan_bundle_files(committed).items():
            archive.writestr(f"{top}/{name}", content)
    return buffer.getvalue()


def export_plan_folder(committed: CommittedPlan, out_dir, *, include_analyst_view: bool = False) -> Path:
    """Write the plan's bundle into ``out_dir`` (created)."""
    out = Path(out_dir)
    for name, content in plan_bundle_files(committed, include_analyst_view=include_analyst_view).items():
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return out


__all__ = ["CommittedPlan", "INDEX_FILE", "PLAN_FILES", "PLAN_RELEASE_SCHEMA", "check_data", "check_fits",
           "commit_plan", "describe", "entries_on", "export_plan_folder", "export_plan_zip", "plan_bundle_files"]
