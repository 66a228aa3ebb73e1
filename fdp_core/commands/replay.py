"""``python -m fdp_core replay CONFIG --data PATH [--ledger URL] [--out DIR]``: a committed release again, fresh noise.

CONFIG is the config.yaml of an exported release (app download or CLI folder). The replay
uses the same settings, the same exact discrete sampler and grid, and fresh OS entropy. It
is a new release and spends privacy budget of its own: it is charged to the data set's
budget in the persistent ledger (``--ledger``, else ``$FDP_LEDGER_URL``, else the app's
default file), the same budget the app spends. When that data set has no budget yet, it is
created from the config's ``budget`` section; a stored budget is never changed. Over budget:
exit 2, one line, nothing written. ``--no-ledger`` checks against a fresh in-memory ledger
with the config's budget instead (earlier releases are then not counted, and the record
says so).
"""

from __future__ import annotations

from pathlib import Path

from ..data.loading import MISSING_POLICIES, load_curves
from ..publish.bundle import export_folder
from ..publish.kinds import release_kind
from ..publish.protocol import entry_ids
from ..publish.replay import budget_ledger, data_mismatch, parse_config, replay
from ..budget.datasets import open_budget
from ..budget.ledger_store import DEFAULT_BUDGET, BudgetSpec
from ..data.sparse_data import SPARSE_UNIT, ledger_sketch, ledger_view, read_long
from .ledger import (add_ledger_option, add_new_dataset_options, budget_of, check_out, complete_then_publish,
                     match_line, new_dataset_of, staging_dir)

PATH = ("replay",)
HELP = "replay an exported release's config.yaml on a data file: same settings, fresh exact discrete noise"


def configure(parser) -> None:
    parser.add_argument("config", metavar="CONFIG", help="config.yaml written by an export")
    parser.add_argument("--data", required=True, help="wide CSV, long CSV (id,t,value) or Parquet file")
    parser.add_argument("--missing", choices=MISSING_POLICIES, default=None,
                        help="override the config's missing-value policy (drop or interpolate)")
    parser.add_argument("--out", default=None, help="output folder (default: <config name>_replay next to CONFIG)")
    add_ledger_option(parser)
    add_new_dataset_options(parser)
    parser.add_argument("--budget-name", default=None, metavar="NAME",
                        help="budget to charge (default: the config's budget.name, else 'default')")
    parser.add_argument("--no-ledger", action="store_true",
                        help="do not use the persistent ledger: check against a fresh in-memory ledger holding the "
                             "config's budget (earlier releases of these data are not counted)")


def run(args) -> int:
    config = parse_config(Path(args.config))
    out = check_out(Path(args.out) if args.out else Path(args.config).with_name(f"{Path(args.config).stem}_replay"))
    if args.missing is not None:
        config["data"]["missing"] = args.missing
    label = Path(args.data).name
    # A sparse mean reads a long file of observations (METHODS.md 20), with its own budget key.
    sparse = release_kind(config["kind"]).data == "sparse"
    fd = read_long(args.data) if sparse else load_curves(args.data, missing=config["data"].get("missing", "drop"),
                                                         grid=config["data"].get("grid"))
    notes = []
    budget = None
    registration = new_dataset_of(args)
    spec = BudgetSpec.of(budget_ledger(config["budget"]))
    if args.no_ledger:
        notes.append("no persistent ledger was used (--no-ledger): earlier releases of these data are not counted")
    elif sparse:
        budget = open_budget(args.ledger, ledger_view(fd), unit=SPARSE_UNIT, vectors=ledger_sketch(fd),
                             name=args.budget_name or config["budget"].get("name") or DEFAULT_BUDGET,
                             source="cli", data_label=label, **registration)
    else:
        budget = budget_of(args, fd, name=(args.budget_name if args.budget_name is not None
                                       else config["budget"].get("name")),
                           settings=config["settings"], **registration)
    if budget is not None:
        stored = budget.ledger()
        if stored is None:
            # Created with the release's own charge (one transaction): a refused release leaves no budget.
            budget.spec = spec
            notes.append(f"created budget '{budget.name}' for these data from the config (epsilon "
                         f"{spec.epsilon_total:g}, delta {spec.delta_total:g}, {spec.filter} filter)")
        elif BudgetSpec.of(stored) != spec:
            notes.append(f"charged the stored budget '{budget.name}' (epsilon {stored.epsilon_total:g}, delta "
                         f"{stored.delta_total:g}, {stored.filter} filter), not the config's budget section")
        if budget.match is not None:
            notes.append(match_line(budget))
        elif budget.registration is not None and budget.registration.new is not None:
            notes.append(f"registered these data as the new data set '{budget.dataset_name}'")
    release, ledger = replay(config, fd, data_label=label, ledger=budget)
    if budget is None:
        export_folder(release, out, ledger, include_analyst_view=True)
    else:
        # The files reach --out only once the ledger entry is complete: written next to it first.
        staged = staging_dir(out)
        export_folder(release, staged, ledger, include_analyst_view=True)
        # Two-part releases (covariance with its mean, regression's T1 and T2) charged every part.
        complete_then_publish(budget, entry_ids(release), staged, out, ledger_url=args.ledger)
    e = release.entry
    total = release.record.get("charged_total")  # a release of several parts (sparse: A and b) charges them all
    charged = (f"charged epsilon {total['epsilon']:.4g}, delta {total['delta']:.3g} ({len(total['entry_ids'])} "
               "parts)" if total else f"charged epsilon {e.epsilon:.4g}, delta {e.delta:.3g}")
    print(f"wrote {out}/ (release.csv, coefficients.csv, release.json, config.yaml, ledger.json, report.html; "
          "analyst_view.json is NOT for publication): "
          f"{release.kind} {e.mechanism}, n={release.record.get('n')}, {charged}")
    if budget is not None:
        spent = ledger.spent()
        print(f"ledger: {budget.store.location}, budget '{budget.name}': spent epsilon {spent.epsilon:.4g} of "
              f"{ledger.epsilon_total:g}, delta {spent.delta:.3g} of {ledger.delta_total:g} "
              f"({len(ledger.entries)} release(s))")
    note = data_mismatch(config, release)
    for line in [n for n in notes if n] + ([note] if note else []):
        print(f"note: {line}")
    return 0
