"""``python -m fdp_core ledger show``: a data set's budget, what is spent, every entry (JSON)."""

from __future__ import annotations

import json

from ._common import load_data
from .ledger import add_budget_options, budget_of

PATH = ("ledger", "show")
HELP = ('print a data set\'s budget as JSON: {"budget": ..., "spent": ..., "entries": [...], "dataset": ..., '
        '"versions": [...], "match": ...}')


def configure(parser) -> None:
    add_budget_options(parser)


def run(args) -> int:
    # reads only: never migrates an older ledger, never refused as a fresh budget
    budget = budget_of(args, load_data(args), read_only=True, lookup=True)
    print(json.dumps(budget.store.show(budget.fingerprint, budget.name, match=budget.match), indent=2))
    return 0
