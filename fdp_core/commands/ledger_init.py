"""``python -m fdp_core ledger init``: create a named privacy budget for a data set, once.

The budget is keyed by the data's fingerprint (content of the parsed curves and the unit of
privacy), so any file holding the same curves spends it. It can never be raised or reset:
a new budget needs a new ``--name``.
"""

from __future__ import annotations

from ..accounting import FILTERS, KINDS
from ..errors import ParameterError
from ..ledger_store import BudgetSpec
from ._common import load_data
from .ledger import add_budget_options, budget_of

PATH = ("ledger", "init")
HELP = "create a data set's privacy budget in the persistent ledger (once; never raised or reset)"


def configure(parser) -> None:
    add_budget_options(parser)
    parser.add_argument("--epsilon", type=float, required=True, help="total epsilon of the budget (> 0)")
    parser.add_argument("--delta", type=float, required=True, help="total delta of the budget, in [0, 1)")
    parser.add_argument("--filter", choices=FILTERS, default="basic",
                        help="privacy filter: basic (sums of epsilon and delta, default) or zcdp (sum of rho)")
    parser.add_argument("--split", default=None, metavar="KIND=W,...",
                        help="optional split of the budget across kinds, e.g. mean=2,kde=1,pca=1 (weights)")


def parse_split(text: str | None) -> dict | None:
    if text is None:
        return None
    split = {}
    for part in text.split(","):
        kind, sep, weight = part.partition("=")
        if not sep or kind.strip() not in KINDS:
            raise ParameterError(f"--split takes KIND=WEIGHT pairs with KIND in {', '.join(KINDS)}, got {part!r}")
        if kind.strip() in split:
            raise ParameterError(f"--split names {kind.strip()!r} twice; give each kind one weight")
        try:
            split[kind.strip()] = float(weight)
        except ValueError:
            raise ParameterError(f"--split weight of {kind.strip()!r} must be a number, got {weight!r}") from None
    return split


def run(args) -> int:
    spec = BudgetSpec(args.epsilon, args.delta, args.filter, parse_split(args.split))
    spec.ledger()  # validate before touching the data or the database
    budget = budget_of(args, load_data(args))
    ledger, _ = budget.store.create_budget(budget.fingerprint, spec, name=budget.name, content=budget.content,
                                           unit=budget.unit, data_label=budget.data_label, created_by="cli")
    print(f"created budget '{budget.name}' (epsilon {ledger.epsilon_total:g}, delta {ledger.delta_total:g}, "
          f"{ledger.filter} filter) for data set {budget.fingerprint[:16]} in {budget.store.location}")
    return 0
