"""Shared pieces of the ``ledger`` commands and of ``replay``: which ledger, which budget.

Not a command itself (no PATH): ``ledger_init``, ``ledger_show``, ``replay`` and ``select`` use it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import uuid
from dataclasses import replace
from pathlib import Path

from ..data.fingerprint import unit_of_privacy
from ..errors import LedgerError, ParameterError
from ..budget.datasets import open_budget
from ..budget.ledger_store import DEFAULT_BUDGET, ENV_VAR, StoredBudget, default_path
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


def budget_of(args, fd, *, name: str | None = None, settings=None, **registration) -> StoredBudget:
    """The stored budget of the registered data set ``fd`` belongs to, named by the options (or
    ``name``), for a CLI run; ``registration``: see fdp_core.budget.datasets.resolve."""
    unit = unit_of_privacy(settings) if settings is not None else unit_of_privacy(vars(args))
    label = Path(str(getattr(args, "data", "") or "")).name
    return open_budget(args.ledger, fd, unit=unit, name=_first_given(name, getattr(args, "name", None), DEFAULT_BUDGET),
                       source="cli", data_label=label, **registration)


def add_new_dataset_options(parser: argparse.ArgumentParser) -> None:
    """--new-dataset --reason: the only way a run creates a budget for data matching no registration
    on a ledger that holds some (METHODS.md 24: a fresh budget is never silent)."""
    parser.add_argument("--new-dataset", action="store_true",
                        help="register the file as a new data set although the ledger's registrations do not match "
                             "it, or it only nearly matches one (needs --reason; recorded and shown in ledger show "
                             "and every later report)")
    parser.add_argument("--reason", default=None, metavar="TEXT", help="why these are new data (with --new-dataset)")


def new_dataset_of(args) -> dict:
    """resolve's keyword arguments from --new-dataset --reason (a reason alone is refused)."""
    new, reason = bool(getattr(args, "new_dataset", False)), getattr(args, "reason", None)
    if reason is not None and not new:
        raise ParameterError("--reason goes with --new-dataset (the reason these data are registered as new)")
    return {"new_dataset": new, "reason": reason}


def match_line(budget: StoredBudget) -> str | None:
    """What the user is told about the data set a file was matched to (None for a new one)."""
    match = budget.match
    if match is None:
        return None
    if match.get("registered_as_new"):
        return (f"registered as new data set '{match['registered_as_new']}' although it {match['message']} "
                f"(reason: {match['reason']})")
    return f"charged to data set '{match['dataset']}': the file {match['message']}"


# --------------------------------------------------------------------------- one transaction from the user's view

# Pseudo file systems: nothing published belongs there (a staging folder inside /dev as root, a /proc entry).
_SYSTEM_ROOTS = (Path("/proc"), Path("/dev"), Path("/sys"))


def check_out(out) -> Path:
    """Refuse an ``--out`` that cannot become a folder of files, BEFORE anything is charged (METHODS.md 23).

    ``out`` must be an existing writable directory or a path whose nearest existing ancestor is
    a writable directory; a regular file, a FIFO, a device, /dev/null or anything under /proc,
    /dev or /sys is refused (ParameterError: exit 2, one line, nothing charged).
    """
    out = Path(out)
    resolved = Path(os.path.realpath(out))
    if any(resolved == root or root in resolved.parents for root in _SYSTEM_ROOTS):
        raise ParameterError(f"--out {out} is a system path ({resolved}): give a folder to write the release into")
    if resolved.exists() and not resolved.is_dir():
        raise ParameterError(f"--out {out} exists and is not a folder (a file, a FIFO or a device): give a folder "
                             "to write the release into")
    ancestor = resolved
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ParameterError(f"--out {out} cannot be created: {ancestor} is not a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ParameterError(f"--out {out} cannot be written: {ancestor} is not writable")
    return out


def staging_dir(out: Path) -> Path:
    """A fresh folder next to ``out`` (same file system, so publishing it is a rename)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    return out.parent / f".{out.name}.fdp-staging-{uuid.uuid4().hex[:8]}"


def publish(staged: Path, out: Path) -> None:
    """Move the finished files of ``staged`` into ``out`` (renames), then remove ``staged``."""
    out = Path(out)
    if not out.exists():
        os.replace(staged, out)
        return
    for item in staged.iterdir():
        os.replace(item, out / item.name)
    shutil.rmtree(staged, ignore_errors=True)


def complete_then_publish(budget, entry_ids, staged: Path, out: Path, *, ledger_url: str | None,
                          release_id: str | None = None) -> None:
    """Mark every entry complete (one transaction), then publish the staged files; a database failure
    in between is said in one line: the charge stands, nothing is published, and how to finish or void it."""
    ids = list(dict.fromkeys(entry_ids))
    release_id = release_id or ids[0]
    try:
        budget.complete_all(ids)
    except LedgerError as exc:
        where = f" --ledger {ledger_url}" if ledger_url else ""
        raise LedgerError(
            f"the ledger database failed after the noise was drawn ({' '.join(str(exc).split())[:160]}): the charge "
            f"stands (release {release_id}: entr{'y' if len(ids) == 1 else 'ies'} {', '.join(ids)} recorded as "
            f"reserved, counted as spent) and NOTHING was published to {out}; the drawn release waits unpublished in "
            f"{staged}: to finish, once the database is back run 'python -m fdp_core ledger complete --release "
            f"{release_id}{where} --staged {staged} --out {out}'; to void it, delete {staged} (the charge stays "
            "spent)") from None
    publish(staged, out)


def _first_given(*names):
    """The first name given (not None): an empty --name is refused by check_name, not
    silently replaced by the default budget."""
    return next(n for n in names if n is not None)
