"""Exceptions with messages meant for the person who supplied the input.

Every failure a user can cause (a bad file, a bad parameter) raises a subclass of
:class:`FdpError`; the app shows its message, the CLI prints it on one line and
exits non-zero. Anything else escaping is a bug.
"""


class FdpError(ValueError):
    """Base class: a problem with the user's input, explained in the message.

    Catch it to handle every refusal of fdp at once; its message is one line meant for the person
    who supplied the input (the command line prints it after ``error:`` and exits with status 2).

    Examples
    --------
    >>> import fdp_core as fdp
    >>> try:
    ...     fdp.MeanSettings(epsilon=-1).validated()
    ... except fdp.FdpError as exc:
    ...     print(exc)
    epsilon must be > 0, got -1
    """


class DataError(FdpError):
    """The data file or data set cannot be used as given.

    Examples
    --------
    >>> import fdp_core as fdp
    >>> try:
    ...     fdp.from_arrays([1.0, 0.0], [[1.0, 2.0], [2.0, 3.0]])   # a grid must increase
    ... except fdp.DataError as exc:
    ...     print(type(exc).__name__)
    DataError
    """


class ParameterError(FdpError):
    """A privacy or smoothing parameter is outside its valid range.

    Examples
    --------
    >>> import fdp_core as fdp
    >>> try:
    ...     fdp.MeanSettings(rho=0).validated()
    ... except fdp.ParameterError as exc:
    ...     print(exc)
    rho must be > 0, got 0
    """


class BudgetError(FdpError):
    """A release would exceed the remaining privacy budget (nothing is charged or drawn).

    Examples
    --------
    >>> import numpy as np, fdp_core as fdp
    >>> t = np.linspace(0, 1, 20)
    >>> curves = fdp.from_arrays(t, np.outer(np.linspace(0.2, 0.8, 30), 1 + t) / 2)
    >>> try:
    ...     fdp.PrivateMean(epsilon=1.0, bounds=(0, 1), accountant=fdp.Ledger(0.5, 1e-5)).fit(curves)
    ... except fdp.BudgetError:
    ...     print("refused")
    refused
    """


class LedgerError(FdpError):
    """The privacy-budget ledger database cannot be opened or used as asked."""


class MissingExtraError(FdpError):
    """A feature needs an optional package that is not installed (pip install 'fdp[EXTRA]').

    Examples
    --------
    >>> print(missing_extra(ModuleNotFoundError("No module named 'opendp'", name="opendp"), "committing"))
    committing needs the optional package 'opendp', which is not installed: pip install 'fdp[commit]' (or 'fdp[all]')
    """


# The optional packages of the light install and the pyproject extra that brings each.
EXTRA_OF_PACKAGE = {
    "pyarrow": "io", "opendp": "commit", "yaml": "commit", "jinja2": "report", "plotly": "report",
    "streamlit": "app", "dask": "dask", "distributed": "dask", "skfda": "skfda", "psycopg": "postgres",
    "numba": "fast", "dp_accounting": "pld",
}


def missing_extra(exc: ImportError, purpose: str = "this feature") -> MissingExtraError | None:
    """The one-line error naming the extra for a missing optional package; None for anything else
    (a missing module of fdp itself, or a package fdp does not know, stays a bug)."""
    package = (getattr(exc, "name", None) or "").split(".")[0]
    extra = EXTRA_OF_PACKAGE.get(package)
    if extra is None:
        return None
    return MissingExtraError(f"{purpose} needs the optional package {package!r}, which is not installed: "
                             f"pip install 'fdp[{extra}]' (or 'fdp[all]')")


def shown(value, limit: int = 60) -> str:
    """User-supplied text quoted for a message: repr (control characters escaped), cut to
    ``limit`` characters with its length, so a 100,000-character argument is not echoed."""
    text = repr(value) if isinstance(value, str) else repr(str(value))
    if len(text) <= limit:
        return text
    return f"{text[:limit - 4]}...' ({len(str(value)):,} characters)"
