"""``python -m fdp_core ledger show``: a data set's budget, what is spent, every entry (JSON)."""

from __future__ import annotations

import json

from ..ledger_store import DEFAULT_BUDGET
from ._common import add_data_options, load_data
from .ledger import add_ledger_option, add_unit_option, budget_of

PATH = ("ledger", "show")
HELP = 'print a data set\'s budget as JSON: {"budget": ..., "spent": ..., "entries": [...]}'


def configure(parser) -> None:
    add_ledger_option(parser)
    add_data_options(parser)
    add_unit_option(parser)
    parser.add_argument("--name", default=DEFAULT_BUDGET, help="budget name (default: %(default)s)")


def run(args) -> int:
    budget = budget_of(args, load_data(args))
    print(json.dumps(budget.store.show(budget.fingerprint, budget.name), indent=2))
    return 0
