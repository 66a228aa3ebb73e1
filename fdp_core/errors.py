"""Exceptions with messages meant for the person who supplied the input.

Every failure a user can cause (a bad file, a bad parameter) raises a subclass of
:class:`FdpError`; the app shows its message, the CLI prints it on one line and
exits non-zero. Anything else escaping is a bug.
"""


class FdpError(ValueError):
    """Base class: a problem with the user's input, explained in the message."""


class DataError(FdpError):
    """The data file or data set cannot be used as given."""


class ParameterError(FdpError):
    """A privacy or smoothing parameter is outside its valid range."""


class BudgetError(FdpError):
    """A release would exceed the remaining privacy budget."""


class LedgerError(FdpError):
    """The privacy-budget ledger database cannot be opened or used as asked."""


class MissingExtraError(FdpError):
    """A feature needs an optional package that is not installed (pip install 'fdp[EXTRA]')."""


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
