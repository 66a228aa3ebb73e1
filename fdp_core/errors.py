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


def shown(value, limit: int = 60) -> str:
    """User-supplied text quoted for a message: repr (control characters escaped), cut to
    ``limit`` characters with its length, so a 100,000-character argument is not echoed."""
    text = repr(value) if isinstance(value, str) else repr(str(value))
    if len(text) <= limit:
        return text
    return f"{text[:limit - 4]}...' ({len(str(value)):,} characters)"
