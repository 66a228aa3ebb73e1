"""The mechanism registry: one entry per mechanism, per kind of release.

Each kind has its own module holding its entries (``registry.mean``, ``registry.kde``,
``registry.pca``, ``registry.covariance``). An entry is everything the plumbing needs to
know about a mechanism — label, privacy type and noise family, the settings fields it
reads and their validation, its sensitivity and noise plan, the record fields it adds,
how the app shows it — so that no module outside this package branches on a mechanism's
name. Entry modules import only downwards (``fdp_core.mechanisms``, ``sensitivity``,
``params``, ``estimators``, ``kernels``, and for the mean's bases ``fdp_core.data``'s per-record
transform), never the release modules that read them.

>>> mechanism("mean", "frl").label
'FRL (first M eigenfunctions, epsilon)'
"""

from __future__ import annotations

from importlib import import_module

from ..errors import ParameterError
from ..params import check_choice
from ..mechanisms.families import noise_family
from .mean import (MEAN_REGISTRY, MeanMechanism, NoisePlan, mean_mechanism, quadratic_penalty_mechanisms,
                   truncating_mechanisms)

KINDS = ("mean", "kde", "pca", "covariance")


def entries(kind: str) -> dict:
    """Every entry of one kind of release, by name (the kind's module holds ``REGISTRY``)."""
    if kind not in KINDS:
        raise ParameterError(f"release kind must be one of {', '.join(KINDS)}; got {kind!r}")
    return import_module(f"{__name__}.{kind}").REGISTRY


def mechanism(kind: str, name: str):
    """The entry called ``name`` among the mechanisms of ``kind`` (ParameterError naming the choices)."""
    table = entries(kind)
    return table[check_choice(f"{kind} mechanism", name, tuple(table))]


def pure_mechanism_names() -> tuple:
    """Short names of the pure epsilon-DP mechanisms of every kind: what still fits a budget without delta.

    >>> pure_mechanism_names()[:2]
    ('mean: ICLP-QR', 'mean: ICLP-AR')
    """
    out = []
    for kind in ("mean", "kde", "covariance"):
        out += [f"{kind}: {entry.label.split(' (')[0]}" for entry in entries(kind).values()
                if not noise_family(entry.noise).uses_delta]
    out += [f"pca: {name}" for name, entry in entries("pca").items() if not entry.approximate]
    return tuple(out)


__all__ = ["KINDS", "MEAN_REGISTRY", "MeanMechanism", "NoisePlan", "entries", "mean_mechanism", "mechanism",
           "pure_mechanism_names", "quadratic_penalty_mechanisms", "truncating_mechanisms"]
