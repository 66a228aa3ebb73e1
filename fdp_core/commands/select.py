"""``python -m fdp_core select``: choose (penalty, rho) from a public grid privately (METHODS.md 16).

The exponential mechanism on the closed-form PCV score, charged to the persistent ledger of the
data set before anything is computed from the data (``--no-ledger`` skips the charge: then nothing
records the spent epsilon). The chosen point is public; the scores are not (analyst_view.json).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import ParameterError
from ..releases.mean import MeanSettings
from ..explore.private_selection import (SELECTION_BOUNDS, SELECTION_MECHANISMS, commit_selection, select_parameters,
                                 selection_counts, selection_entry)
from ..publish.release import analyst_record, to_json
from ..settings_fields import add_options, settings_from_args
from ._common import add_data_options, load_data
from .ledger import add_ledger_option, budget_of

PATH = ("select",)
HELP = "choose the penalty and rho from a public grid with the exponential mechanism (spends budget)"


def _numbers(text: str, flag: str) -> np.ndarray:
    try:
        values = np.array([float(v) for v in str(text).split(",") if v.strip()])
    except ValueError:
        raise ParameterError(f"{flag} must be numbers joined by ',', got {text!r}") from None
    if values.size == 0:
        raise ParameterError(f"{flag} needs at least one value")
    return values


# The mean settings the selection reads (rho, phi and psi come from the grids).
FIELDS = ("mechanism", "kernel", "rho", "nu", "eta", "epsilon", "delta", "tau", "value_range", "reference",
          "person_column", "n_public")


def configure(parser) -> None:
    add_data_options(parser)
    add_options(parser, MeanSettings, fields=FIELDS, required=("epsilon",), overrides={
        "mechanism": {"choices": SELECTION_MECHANISMS,
                      "help": "the mean release the parameters are chosen for (its noise variance enters the score)"},
        "epsilon": {"help": "epsilon of the mean release to be tuned"},
        "delta": {"help": "delta of the mean release (gaussian)"},
        "tau": {"help": "public L2 bound (default: from --value-range)"},
        "value_range": {"help": "public range of the curve values: clip and centre as the mean release does"}})
    parser.add_argument("--penalties", required=True, help="public grid of phi (gaussian) or psi (iclp-qr), e.g. "
                                                           "1e-6,1e-4,1e-2,1")
    parser.add_argument("--rhos", required=True, help="public grid of rho, e.g. 0.05,0.1,0.2")
    parser.add_argument("--folds", type=int, default=5,
                        help="K folds by the persons' order in the file (i mod K; every person of the file counts)")
    parser.add_argument("--select-epsilon", type=float, required=True, help="epsilon spent on the selection")
    parser.add_argument("--bound", choices=SELECTION_BOUNDS, default="range",
                        help="score sensitivity: range (default, tightest), linear, general")
    add_ledger_option(parser)
    parser.add_argument("--budget-name", default=None, metavar="NAME", help="stored budget to charge")
    parser.add_argument("--no-ledger", action="store_true",
                        help="do not charge the persistent ledger (nothing then records the spent epsilon)")
    parser.add_argument("--out", required=True, help="output folder (created if missing)")


def run(args) -> int:
    penalties, rhos = _numbers(args.penalties, "--penalties"), _numbers(args.rhos, "--rhos")
    settings = settings_from_args(MeanSettings, args, fields=FIELDS, rho=float(rhos[0]), phi=float(penalties[0]),
                                  psi=float(penalties[0]))
    fd = load_data(args)
    common = dict(epsilon=args.select_epsilon, folds=args.folds, bound=args.bound)
    if args.no_ledger:
        selection = select_parameters(fd, settings, penalties, rhos, rng=np.random.default_rng(), **common)
        charged = {"charged": False, "note": "--no-ledger: the selection's epsilon is not recorded anywhere"}
    else:
        budget = budget_of(args, fd, name=args.budget_name, lookup=True)  # charges a stored budget only (below)
        if budget.ledger() is None:
            raise ParameterError("no stored budget for these data: create one first (python -m fdp_core ledger init "
                                 "--data FILE --epsilon E --delta D) or pass --no-ledger")
        entry = selection_entry(fd, settings, penalties, rhos, **common)
        selection, entry = commit_selection(budget, fd, settings, penalties, rhos, entry=entry, **common)
        budget.complete(entry.id)
        charged = {"charged": True, "ledger": budget.store.location, "budget": budget.name,
                   "entry": entry.to_dict()}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "selection.json").write_text(to_json({**selection.record(), **charged}))
    (out / "analyst_view.json").write_text(to_json(analyst_record({
        "contents": "NOT FOR PUBLICATION: PCV scores computed from the data without noise",
        "scores": selection.scores, "rhos": selection.rhos, "penalties": selection.penalties,
        **selection_counts(fd, settings)})))
    print(f"selected penalty {selection.chosen_penalty:g}, rho {selection.chosen_rho:g} (epsilon "
          f"{selection.epsilon:g} spent, {'charged to the ledger' if charged['charged'] else 'NOT charged'}); wrote "
          f"{out}/selection.json and analyst_view.json (NOT for publication)")
    return 0
