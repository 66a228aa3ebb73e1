"""Validation of the public parameters, once, at the boundary."""

from __future__ import annotations

import functools
import math
import sys
import weakref

from .errors import ParameterError
from .limits import MAX_ABS_VALUE, MAX_EPSILON, MAX_ETA, MAX_TAU, check_at_most


# The settings objects whose ``validated()`` has passed, by identity (weak references: an
# entry goes when its object does). Not an attribute: the objects' fields, ``vars()``,
# equality and the provenance never see it; ``dataclasses.replace`` or a copy builds a new
# object that is not in the table, so changed settings are validated again.
_VALIDATED: dict[int, weakref.ref] = {}


def _forget(key: int):
    def forget(ref: weakref.ref) -> None:
        if _VALIDATED.get(key) is ref:
            del _VALIDATED[key]
    return forget


def validate_once(method):
    """Decorate a frozen settings class's ``validated()``: check once, then carry that fact.

    The boundary (CLI parse, replay config, a page's or a library entry point's first call
    with raw settings) calls ``validated()``; the object it returns is marked, and every later
    ``validated()`` on it (the release plan, the engines, the commit) returns it without
    re-checking. Frozen settings cannot change after the check, so the mark cannot go stale.
    """
    @functools.wraps(method)
    def validated(self):
        if is_validated(self):
            return self
        out = method(self)
        key = id(out)
        _VALIDATED[key] = weakref.ref(out, _forget(key))
        return out
    return validated


def is_validated(settings) -> bool:
    """Whether this very object passed its ``validated()`` (see :func:`validate_once`)."""
    ref = _VALIDATED.get(id(settings))
    return ref is not None and ref() is settings


def check_finite(name: str, value) -> float:
    """Return ``value`` as a float, or raise if it is not a finite number."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(x):
        raise ParameterError(f"{name} must be finite, got {value!r}")
    return x


def check_nonnegative(label: str, value) -> float:
    """Return ``value`` as a float, or raise if it is not a finite number >= 0.

    ``label`` names the quantity in the message (e.g. "split weight of 'mean'")."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{label} must be a number, got {value!r}") from None
    if not math.isfinite(x) or x < 0:
        raise ParameterError(f"{label} must be a finite number >= 0, got {value!r}")
    return x


def check_count(name: str, value, minimum: int = 1) -> int:
    """A whole number >= minimum (M, K, k, p), given as int or integral float."""
    x = check_finite(name, value)
    if x != int(x) or x < minimum:
        raise ParameterError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(x)


def check_integer(name: str, value, minimum: int) -> int:
    """A whole number >= minimum, with messages that say "integer" (PCA's k, p, Gibbs sweeps)."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be an integer, got {value!r}") from None
    if not math.isfinite(x) or x != int(x):
        raise ParameterError(f"{name} must be an integer, got {value!r}")
    if x < minimum:
        raise ParameterError(f"{name} must be >= {minimum}, got {value!r}")
    return int(x)


def check_positive(name: str, value) -> float:
    """Return ``value`` as a float, or raise if it is not a finite number > 0."""
    x = check_finite(name, value)
    if x <= 0:
        raise ParameterError(f"{name} must be > 0, got {value!r}")
    if x < sys.float_info.min:
        raise ParameterError(f"{name} = {value!r} is too small to compute with (below {sys.float_info.min:.3g})")
    return x


def check_open_unit(name: str, value) -> float:
    """Return ``value`` as a float, or raise unless it is a number strictly between 0 and 1 (a share, a level)."""
    if not 0.0 < check_finite(name, value) < 1.0:
        raise ParameterError(f"{name} must be in (0, 1), got {value!r}")
    return float(value)


def short_repr(name: str, **fields) -> str:
    """A one-line repr of a release object: its public headline figures, never its arrays.

    >>> short_repr("MeanRelease", mechanism="gaussian", n=142, sigma=0.137971495, note=None)
    'MeanRelease(mechanism=gaussian, n=142, sigma=0.138)'
    """
    shown = ", ".join(f"{key}={value:.3g}" if isinstance(value, float) else f"{key}={value}"
                      for key, value in fields.items() if value is not None)
    return f"{name}({shown})"


def check_tau(value) -> float:
    """The public L2 norm bound: > 0 and at most limits.MAX_TAU (its square must stay finite)."""
    x = check_positive("tau", value)
    if x > MAX_TAU:
        raise ParameterError(f"tau = {value!r} is above the limit of {MAX_TAU:g}: squared norms and the "
                             "sensitivity would overflow; rescale the data (e.g. change units)")
    return x


# tau when neither tau nor a value range is declared, in Python only: the unit ball. The command
# line keeps tau undeclared there (settings_fields.settings_from_args) and validation refuses it.
UNIT_BALL_TAU = 1.0


def default_l2_clip(tau, value_range, tau_from_data: bool):
    """The one rule for an undeclared tau, shared by Python, the command line and the app.

    An explicit tau wins; with a declared value range tau stays None, so the release clips at the
    bound the range implies ((hi - lo)/2, PublicBounds.default_tau), exactly as the command line
    does; with neither (and tau not read off the data) it is the unit ball, ``UNIT_BALL_TAU``.

    >>> default_l2_clip(None, (0, 1), False) is None   # the range decides: (1 - 0)/2 at plan time
    True
    >>> default_l2_clip(None, None, False)
    1.0
    >>> default_l2_clip(0.3, (0, 1), False)
    0.3
    """
    if tau is not None or value_range is not None or tau_from_data:
        return tau
    return UNIT_BALL_TAU


def check_l2_clip(tau, value_range, tau_from_data: bool) -> None:
    """The L2 clip's bound: a public tau, else one from the declared value range, else the data's (flagged)."""
    if tau_from_data:
        return
    if tau is None and value_range is None:
        raise ParameterError("tau (the public L2 norm bound) is required unless a public value range "
                             "(--value-range) or tau_from_data is set")
    if tau is not None:
        check_tau(tau)


def check_bound_value(name: str, value) -> float:
    """A public bound in data units (lo, hi of a value range): finite and at most limits.MAX_ABS_VALUE."""
    x = check_finite(name, value)
    if abs(x) > MAX_ABS_VALUE:
        raise ParameterError(f"{name} = {value!r} is beyond +-{MAX_ABS_VALUE:g}: squared values would overflow; "
                             "rescale the data (e.g. change units)")
    return x


def check_epsilon(value) -> float:
    """epsilon > 0 and at most limits.MAX_EPSILON (beyond it the release is the non-private one)."""
    x = check_positive("epsilon", value)
    check_at_most("epsilon", x, MAX_EPSILON, "the guarantee is void and the noise falls below the rounding of the "
                  "statistic: the release would be the non-private one")
    return x


def check_delta(value) -> float:
    """delta of an (epsilon, delta) guarantee: strictly inside (0, 1)."""
    x = check_finite("delta", value)
    if not 0 < x < 1:
        raise ParameterError(f"delta must be in (0, 1) for an (epsilon, delta) mechanism, got {value!r}")
    return x




def check_eta(value, *, minimum: float = 1.0, strict: bool = False) -> float:
    x = check_finite("eta", value)
    if x < minimum or (strict and x == minimum):
        relation = ">" if strict else ">="
        raise ParameterError(f"eta must be {relation} {minimum:g}, got {value!r}")
    if x > MAX_ETA:
        raise ParameterError(f"eta must be <= {MAX_ETA:g}, got {value!r}")
    return x


def check_choice(name: str, value, choices) -> str:
    if value not in choices:
        raise ParameterError(f"{name} must be one of {', '.join(map(str, choices))}; got {value!r}")
    return value
