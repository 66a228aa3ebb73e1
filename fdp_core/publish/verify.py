"""Check a published release against its config and the data, drawing nothing (the bundle's default).

A stakeholder holding the bundle (release.json, config.yaml) and the data can re-derive what
the release claims: the sensitivity, the noise scale the exact sampler used and the privacy
charge. :func:`verify_release` plans the same commit as :func:`fdp_core.publish.replay.replay` would
(``prepare_*_commit``: budget check and noise draw excluded), compares every re-derived number
with the one in release.json and returns the comparisons. It spends no budget and publishes
nothing; a *new* release is the replay's job (``python -m fdp_core replay ... --ledger URL``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from ..data.loading import FunctionalData, load_curves
from .replay import parse_config, settings_of
from . import commit, commit_summaries

REL_TOL = 1e-9


@dataclass(frozen=True)
class Check:
    name: str
    published: object
    derived: object
    ok: bool

    def line(self) -> str:
        mark = "ok" if self.ok else "MISMATCH"
        return f"{mark:8s} {self.name}: published {self.published!r}, re-derived {self.derived!r}"


@dataclass(frozen=True)
class Verification:
    kind: str
    checks: tuple
    note: str = ""

    @property
    def verified(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    def report(self) -> str:
        lines = [c.line() for c in self.checks]
        if self.note:
            lines.append(f"note: {self.note}")
        lines.append("verified" if self.verified else "NOT verified: the release does not match its config and data")
        return "\n".join(lines)


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    a, b = float(a), float(b)
    return (math.isinf(a) and a == b) or math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-300)


def _check(name: str, published, derived) -> Check:
    return Check(name, published, derived, _same(published, derived))


def _pendings(kind: str, fd: FunctionalData, config: Mapping, settings) -> list:
    k = config["export"].get("granularity_exp")
    if kind == "mean" and getattr(settings, "confidence_band", None) is not None:
        from .band_commit import quote_band  # lazy: only for band bundles
        from .protocol import CommitRequest  # lazy: as above

        # The mean's part first, then the second moment's: the quote the commit charged.
        return list(quote_band(CommitRequest(fd, settings, granularity_exp=k)).pendings)
    if kind == "mean":
        return [commit.prepare_mean_commit(fd, settings, granularity_exp=k)]
    if kind == "kde":
        return [commit.prepare_kde_commit(fd, config["data"]["feature"], settings, granularity_exp=k)]
    if kind == "covariance":
        return commit_summaries.prepare_covariance_commit(fd, settings, granularity_exp=k)
    if kind == "regression":
        return commit_summaries.prepare_regression_commit(fd, settings, granularity_exp=k)
    if kind == "sparse":  # A and b of a sparse mean (fd: the observations, a SparseData)
        from .sparse_commit import prepare_sparse_commit  # lazy: only for sparse bundles

        return prepare_sparse_commit(fd, settings, granularity_exp=k)
    return []


def verify_release(config, data, record: Mapping) -> Verification:
    """Re-derive sensitivity, noise scale and charge of ``record`` (release.json) from ``config``
    (config.yaml: path, text or mapping) and ``data`` (path, bytes or FunctionalData)."""
    config = parse_config(config)
    kind = config["kind"]
    settings = settings_of(config)
    if kind == "sparse":  # a long file of observations (METHODS.md 20), never interpolated onto a grid
        from ..data.sparse_data import SparseData, read_long  # lazy: only for sparse bundles

        fd = data if isinstance(data, SparseData) else read_long(data)
    elif isinstance(data, FunctionalData):
        fd = data
    else:
        fd = load_curves(data if not isinstance(data, str) else Path(data), missing=config["data"].get("missing", "drop"),
                         grid=config["data"].get("grid"))
    checks = [_check("kind", record.get("kind"), kind)] if kind != "sparse" else [
        # A sparse mean is a mean (release.json's kind) released by the sparse route (config.yaml's kind).
        _check("kind", record.get("kind"), "mean"), _check("route", record.get("route"), "sparse")]
    pendings = _pendings(kind, fd, config, settings)
    if not pendings:  # PCA: the exponential mechanism has no draw-free discrete plan to re-derive
        checks.append(_check("charged epsilon", record.get("charged", {}).get("epsilon"), float(settings.epsilon)))
        return Verification(kind, tuple(checks), "principal components: the charge is checked against the "
                                                 "settings; the sampler draws with no discrete noise plan")
    # The record describes one part's sampler: the covariance's (its released mean is 'mean_entry'),
    # for a regression the T2 part (T1 is 't1_entry'), for a sparse mean the b part (A is 'a_entry').
    # A band's record is its mean's; the second moment is 'second_moment_entry'.
    parts = {"mean_entry": 1, "t1_entry": 0, "a_entry": 0, "second_moment_entry": 1}
    extra = {key: pendings[i] for key, i in parts.items() if key in record and i < len(pendings)}
    first = pendings[1] if ("t1_entry" in extra or "a_entry" in extra) and len(pendings) > 1 else pendings[0]
    entry, plan, noise = first.entry, first.plan, first.noise_plan
    published_entry = record.get("ledger_entry", {})
    sampler = record.get("noise_sampler", {})
    charged = record.get("charged", {})
    n = getattr(plan, "n", None)
    if n is not None and record.get("data", {}).get("n") is not None:
        checks.append(_check("n (persons)", record["data"]["n"], int(n)))
    checks += [
        _check("sensitivity", published_entry.get("sensitivity"), entry.sensitivity),
        _check("scaled sensitivity (noise calibration)", sampler.get("scaled_sensitivity"), noise.scaled_sensitivity),
        _check("unit noise scale of the exact sampler", sampler.get("unit_noise_scale"), noise.unit_noise_scale),
        _check("grid exponent k", sampler.get("granularity_exp"), noise.granularity_exp),
        _check("charged epsilon", charged.get("epsilon"), entry.epsilon),
        _check("charged delta", charged.get("delta"), entry.delta),
    ]
    if charged.get("rho") is not None or entry.rho is not None:
        checks.append(_check("charged rho", charged.get("rho"), entry.rho))
    if "sigma" in record and getattr(plan, "sigma", None) is not None:
        checks.append(_check("sigma", record["sigma"], plan.sigma))
    if record.get("charged_total") is not None:  # every part's charge together
        checks.append(_check("charged epsilon, all parts", record["charged_total"].get("epsilon"),
                             math.fsum(p.entry.epsilon for p in pendings)))
    for key, part in extra.items():
        checks.append(_check(f"{key.replace('_entry', '')} part's charged epsilon", record[key].get("epsilon"),
                             part.entry.epsilon))
        checks.append(_check(f"{key.replace('_entry', '')} part's sensitivity", record[key].get("sensitivity"),
                             part.entry.sensitivity))
    return Verification(kind, tuple(checks))
