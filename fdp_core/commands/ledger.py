"""Shared pieces of the ``ledger`` commands and of ``replay``: which ledger, which budget.

Not a command itself (no PATH): ``ledger_init``, ``ledger_show``, ``replay`` and ``select`` use it.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from ..fingerprint import unit_of_privacy
from ..ledger_store import DEFAULT_BUDGET, ENV_VAR, StoredBudget, default_path, open_budget
from ..settings_fields import PERSON_COLUMN, add_option
from ._common import add_data_options

LEDGER_HELP = (f"ledger database URL: sqlite:///relative.sqlite3, sqlite:////absolute.sqlite3, a file path, or "
               f"postgresql://USER@HOST:PORT/DB (default: ${ENV_VAR}, else {default_path()})")


def add_ledger_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ledger", default=None, metavar="URL", help=LEDGER_HELP)


def add_budget_options(parser: argparse.ArgumentParser) -> None:
    """Which budget: the ledger, the data set (its curves and unit of privacy) and the budget's name."""
    add_ledger_option(parser)
    add_data_options(parser)
    # The settings' --person-column: the same curves under another unit of privacy are another data set.
    add_option(parser, "person_column", replace(
        PERSON_COLUMN, help="metadata column identifying the person behind each curve (part of the data set's "
                            "identity: the same curves under another unit of privacy have another budget)"))
    parser.add_argument("--name", default=DEFAULT_BUDGET, help="budget name (default: %(default)s)")


def budget_of(args, fd, *, name: str | None = None, settings=None) -> StoredBudget:
    """The stored budget of the data ``fd`` named by the options (or ``name``), for a CLI run."""
    unit = unit_of_privacy(settings) if settings is not None else unit_of_privacy(vars(args))
    label = Path(str(getattr(args, "data", "") or "")).name
    return open_budget(args.ledger, fd, unit=unit, name=_first_given(name, getattr(args, "name", None), DEFAULT_BUDGET),
                       source="cli", data_label=label)


def _first_given(*names):
    """The first name given (not None): an empty --name is refused by check_name, not
    silently replaced by the default budget."""
    return next(n for n in names if n is not None)
