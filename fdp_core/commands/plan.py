"""``python -m fdp_core plan PLAN.yaml [--out DIR] [--data PATH --commit]``: a release plan by accuracy.

PLAN.yaml declares the public design (n persons, grid, value range, person column) and the
statistics, each with a target 95% radius, a weight (split of a total budget) or an epsilon
(METHODS.md section 21; ``fdp_core.explore.plan``). Without ``--commit`` nothing is read but the
plan: the command prints every statistic's budget and accuracy, the totals (basic and, for
all-Gaussian plans, Gaussian DP) and writes ``DIR/plan.json`` plus one replay config per
part (``part-<i>-<kind>.yaml``). With ``--data PATH --commit`` the private file is read once
and every part is committed to that data set's budget, as one act: the plan's total is
checked against what is left first and the plan is refused whole if it does not fit; each
part gets its own ledger entry and its bundle in ``DIR/part-<i>-<kind>/``.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from ..budget.accounting import Ledger
from ..budget.ledger_store import BudgetSpec
from ..errors import BudgetError, ParameterError
from .ledger import add_ledger_option, budget_of
from ..data.loading import load_curves
from ..data.preprocess import file_persons

PATH = ("plan",)
HELP = "plan a release by accuracy across statistics (budgets from targets or weights; optionally commit it)"


def configure(parser) -> None:
    parser.add_argument("plan", metavar="PLAN", help="plan YAML (schema fdp.plan/1: public, statistics, budget)")
    parser.add_argument("--out", default=None, help="output folder (default: <PLAN name>_plan next to PLAN)")
    parser.add_argument("--data", default=None, help="the private data file (read only with --commit)")
    parser.add_argument("--commit", action="store_true",
                        help="commit every part of the plan to the data set's budget (needs --data)")
    parser.add_argument("--budget-name", default=None, metavar="NAME", help="budget to charge (default 'default')")
    add_ledger_option(parser)


def _read_plan(path: Path) -> dict:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ParameterError(f"cannot read the plan {path.name}: {' '.join(str(exc).split())}") from None
    try:
        return yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError) as exc:
        raise ParameterError(f"plan is not valid YAML: {' '.join(str(exc).split())[:200]}") from None


def run(args) -> int:
    from ..explore.plan import describe, make_plan, part_configs  # lazy: scipy and the planner, not for `plan --help`

    if args.commit and not args.data:
        raise ParameterError("--commit needs --data (the private file the plan releases)")
    if args.data and not args.commit:
        raise ParameterError("--data is read only to commit: add --commit, or drop --data to see the plan")
    plan_path = Path(args.plan)
    plan = make_plan(_read_plan(plan_path))
    for line in describe(plan):
        print(line)
    if not plan.fits():
        raise BudgetError(f"the plan costs epsilon {plan.basic[0]:.4g}, delta {plan.basic[1]:.3g}, more than its "
                          f"budget (epsilon {plan.budget[0]:g}, delta {plan.budget[1]:g})")
    out = Path(args.out) if args.out else plan_path.with_name(f"{plan_path.stem}_plan")
    configs = part_configs(plan, budget_name=args.budget_name)
    if args.commit:
        return _commit(args, plan, configs, out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "plan.json").write_text(json.dumps(plan.to_dict(), indent=2) + "\n")
    for name, config in configs:
        (out / name).write_text(yaml.safe_dump(config, sort_keys=False))
    print(f"wrote {out}/plan.json and {len(configs)} replay config(s): "
          + ", ".join(name for name, _ in configs))
    return 0


def _commit(args, plan, configs, out: Path) -> int:
    """Read the data once, check the whole plan against the budget left, commit every part."""
    from ..publish.bundle import export_folder  # lazy: plotly, Jinja2 (the bundle), only with --commit
    from ..publish.replay import replay  # lazy: every commit path, only with --commit

    fd = load_curves(args.data)
    person = plan.design.person_column
    if person is not None and person not in fd.metadata.columns:
        raise ParameterError(f"the plan's person column '{person}' is not a column of {Path(args.data).name}")
    persons = file_persons(fd, person).n_persons  # every person of the file, usable or not (METHODS 11)
    if persons != plan.design.n:
        raise ParameterError(f"the plan was made for n = {plan.design.n} persons; {Path(args.data).name} holds "
                             f"{persons}: make the plan again with the declared n")
    first_settings = plan.parts[0].statistic.settings
    budget = budget_of(args, fd, name=args.budget_name, settings=first_settings)
    stored, _ = budget.ensure(_spec(configs[0][1]["budget"]))
    left = budget.ledger().remaining()
    if plan.basic[0] > left.epsilon * (1 + 1e-12) or plan.basic[1] > left.delta * (1 + 1e-12):
        raise BudgetError(f"the plan costs epsilon {plan.basic[0]:.4g}, delta {plan.basic[1]:.3g}; budget "
                          f"'{budget.name}' has epsilon {left.epsilon:.4g}, delta {left.delta:.3g} left: nothing "
                          "was committed")
    out.mkdir(parents=True, exist_ok=True)
    (out / "plan.json").write_text(json.dumps(plan.to_dict(), indent=2) + "\n")
    for name, config in configs:
        release, ledger = replay(config, fd, data_label=Path(args.data).name, ledger=budget)
        folder = out / name.removesuffix(".yaml")
        export_folder(release, folder, ledger, include_analyst_view=True)
        for entry_id in dict.fromkeys([*release.record.get("part_entry_ids", ()), release.id]):
            budget.complete(entry_id)
        print(f"committed {name.removesuffix('.yaml')}: {release.kind} {release.entry.mechanism}, epsilon "
              f"{release.entry.epsilon:.4g} -> {folder}/")
    spent = budget.ledger().spent()
    print(f"ledger: budget '{budget.name}': spent epsilon {spent.epsilon:.4g}, delta {spent.delta:.3g}")
    return 0


def _spec(budget_section: dict):
    return BudgetSpec.of(Ledger(budget_section["epsilon_total"], budget_section["delta_total"], None,
                                budget_section.get("filter", "basic")))
