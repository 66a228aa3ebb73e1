"""``python -m fdp_core ledger complete``: finish a release whose ledger entry could not be completed.

When the ledger database fails after the noise was drawn, ``replay`` keeps the charge
(the entry stays ``reserved`` and counts as spent), publishes nothing and leaves the drawn
release in a staging folder next to ``--out``. Once the database is back, this command marks
the entry complete and moves the staged files into ``--out``. Deleting the staging folder
instead voids the release; the charge stays spent either way.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ParameterError
from ..budget.ledger_store import LedgerStore
from .ledger import add_ledger_option, publish

PATH = ("ledger", "complete")
HELP = "mark a reserved ledger entry complete and publish its staged release (after a database failure)"


def configure(parser) -> None:
    add_ledger_option(parser)
    parser.add_argument("--entry", action="append", required=True, metavar="ID",
                        help="the reserved entry's id (repeat for a two-part release)")
    parser.add_argument("--staged", default=None, metavar="DIR", help="the staging folder the failed command named")
    parser.add_argument("--out", default=None, metavar="DIR", help="where to publish the staged files")


def run(args) -> int:
    if (args.staged is None) != (args.out is None):
        raise ParameterError("--staged and --out go together (the staged release and where to publish it)")
    staged = None if args.staged is None else Path(args.staged)
    if staged is not None and not (staged / "release.json").is_file():
        raise ParameterError(f"{staged} holds no staged release (release.json)")
    store = LedgerStore(args.ledger)
    for entry_id in args.entry:
        store.complete(entry_id)
    if staged is not None:
        publish(staged, Path(args.out))
    print(f"completed {len(args.entry)} entr{'y' if len(args.entry) == 1 else 'ies'} in {store.location}"
          + (f"; published {args.out}/" if staged is not None else ""))
    return 0
