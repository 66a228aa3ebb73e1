"""``python -m fdp_core ledger complete``: finish a release whose ledger entry could not be completed.

When the ledger database fails (or the process dies) after the noise was drawn, the charge
stands (every part stays ``reserved`` and counts as spent), nothing is published and the drawn
release waits in a staging folder next to ``--out``. Once the database is back, this command
marks every part of the release complete in one transaction (``--release ID``: the id the parts
share, or ``--entry ID`` repeated) and moves the staged files into ``--out``. Deleting the staging folder
instead voids the release; the charge stays spent either way.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import LedgerError, ParameterError
from ..budget.ledger_store import LedgerStore
from .ledger import add_ledger_option, publish

PATH = ("ledger", "complete")
HELP = "mark a reserved ledger entry complete and publish its staged release (after a database failure)"


def configure(parser) -> None:
    add_ledger_option(parser)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--release", default=None, metavar="ID",
                       help="the release id the failed command named: every reserved part of it is completed")
    which.add_argument("--entry", action="append", default=None, metavar="ID",
                       help="a reserved entry's id (repeat for a release of several parts)")
    parser.add_argument("--staged", default=None, metavar="DIR", help="the staging folder the failed command named")
    parser.add_argument("--out", default=None, metavar="DIR", help="where to publish the staged files")


def run(args) -> int:
    if (args.staged is None) != (args.out is None):
        raise ParameterError("--staged and --out go together (the staged release and where to publish it)")
    staged = None if args.staged is None else Path(args.staged)
    # A single release's staging folder holds release.json, a plan's plan_release.json.
    if staged is not None and not any((staged / name).is_file() for name in ("release.json", "plan_release.json")):
        raise ParameterError(f"{staged} holds no staged release (release.json or plan_release.json)")
    store = LedgerStore(args.ledger)
    ids = list(args.entry or ())
    if args.release is not None:
        parts = store.release_entries(args.release)
        ids = [entry_id for entry_id, status in parts if status == "reserved"]
        if not ids:
            raise LedgerError(f"release {args.release!r} has no reserved entry in {store.location}"
                              + (" (every part is complete already)" if parts else ""))
    store.complete_all(ids)
    if staged is not None:
        publish(staged, Path(args.out))
    print(f"completed {len(ids)} entr{'y' if len(ids) == 1 else 'ies'} in {store.location}"
          + (f"; published {args.out}/" if staged is not None else ""))
    return 0
