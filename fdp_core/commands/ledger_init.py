"""``python -m fdp_core ledger init``: register a data set and create a named privacy budget for it, once.

A budget belongs to a registered data set (METHODS.md 22): ``--dataset NAME`` registers the
file's curves under that name (default: the file's name) with their person column, domain,
value range and n policy. A file that matches a registered data set (the same curves, or a
subset or superset of its people in another export) belongs to it: its budgets are created
there, unless ``--new-dataset --reason TEXT`` registers it as new data, deliberately and on
the record. A budget can never be raised or reset: a new budget needs a new ``--name``.
"""

from __future__ import annotations

from ..budget.accounting import FILTERS, KINDS
from ..errors import ParameterError
from ..budget.ledger_store import BudgetSpec, check_dataset_name, check_name
from ..data.preprocess import parse_value_range
from ._common import load_data
from .ledger import add_budget_options, budget_of, match_line
from ..budget.datasets import check_reason, open_budget
from ..data.sparse_data import SPARSE_UNIT, ledger_sketch, ledger_view, read_long

PATH = ("ledger", "init")
HELP = "register a data set and create its privacy budget in the persistent ledger (once; never raised or reset)"


def configure(parser) -> None:
    add_budget_options(parser)
    parser.add_argument("--epsilon", type=float, required=True, help="total epsilon of the budget (> 0)")
    parser.add_argument("--delta", type=float, required=True, help="total delta of the budget, in [0, 1)")
    parser.add_argument("--filter", choices=FILTERS, default="basic",
                        help="privacy filter: basic (sums of epsilon and delta, default) or zcdp (sum of rho)")
    parser.add_argument("--split", default=None, metavar="KIND=W,...",
                        help="optional split of the budget across kinds, e.g. mean=2,kde=1,pca=1 (weights)")
    parser.add_argument("--sparse", action="store_true",
                        help="the data are sparse observations (a long file id,t,value; persons by id) for "
                             "release mean --sparse")
    parser.add_argument("--dataset", default=None, metavar="NAME",
                        help="name of the registered data set the budget belongs to (default: the file's name, or "
                             "the registered data set the file matches)")
    parser.add_argument("--value-range", dest="value_range", default=None, metavar="LO,HI",
                        help="public range of the values, recorded with a new registration (write "
                             "--value-range=-5,40 when LO is negative)")
    parser.add_argument("--n-policy", dest="n_policy", default=None, metavar="TEXT",
                        help="how n is declared for this data set, recorded with a new registration (e.g. "
                             "'declared public: 142 persons')")
    parser.add_argument("--new-dataset", action="store_true",
                        help="register the file as a new data set: needed when the ledger holds registrations that "
                             "the file does not match (no budget is created silently) or when it nearly matches one "
                             "(needs --reason; recorded and shown in ledger show and later reports)")
    parser.add_argument("--reason", default=None, metavar="TEXT", help="why (with --new-dataset)")


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
    check_name(args.name)  # the budget's name too: a refusal creates no file
    if args.dataset is not None:
        check_dataset_name(args.dataset)  # so are the data set's name and the recorded texts
    check_reason(args.reason)
    check_reason(args.n_policy, "--n-policy")
    value_range = None if args.value_range is None else parse_value_range(args.value_range)
    if args.reason is not None and not args.new_dataset:
        raise ParameterError("--reason goes with --new-dataset (the reason a near-match is registered as new data)")
    if args.sparse:  # persons by id, observations as rows: the key release mean --sparse --ledger charges
        data = read_long(args.data, id_column=args.id_column, t_column=args.t_column, value_column=args.value_column)
        budget = open_budget(args.ledger, ledger_view(data), unit=SPARSE_UNIT, name=args.name, source="cli",
                             vectors=ledger_sketch(data),
                             data_label=data.name, dataset=args.dataset, new_dataset=args.new_dataset,
                             reason=args.reason, value_range=value_range, n_policy=args.n_policy)
    else:
        budget = budget_of(args, load_data(args), dataset=args.dataset, new_dataset=args.new_dataset,
                           reason=args.reason, value_range=value_range, n_policy=args.n_policy)
    ledger, _ = budget.store.create_budget(budget.fingerprint, spec, name=budget.name, content=budget.content,
                                           unit=budget.unit, data_label=budget.data_label, created_by="cli",
                                           registration=budget.registration)
    print(f"created budget '{budget.name}' (epsilon {ledger.epsilon_total:g}, delta {ledger.delta_total:g}, "
          f"{ledger.filter} filter) for data set {budget.fingerprint[:16]} in {budget.store.location}")
    match = budget.match
    if match is None:
        reason = f": {args.reason}" if args.reason else ""
        print(f"data set: '{budget.dataset_name}' (registered{reason})")
    elif match.get("registered_as_new"):
        print(f"data set: {match_line(budget)}")
    else:
        print(f"data set: '{budget.dataset_name}': the file {match['message']}")
    return 0
