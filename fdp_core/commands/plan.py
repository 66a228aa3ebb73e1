"""``python -m fdp_core plan PLAN.yaml [--out DIR] [--data PATH --commit]``: a release plan by accuracy.

PLAN.yaml declares the public design (n persons, grid, value range, person column) and the
statistics, each with a target 95% radius, a weight (split of a total budget) or an epsilon
(METHODS.md section 21; ``fdp_core.explore.plan``). Without ``--commit`` nothing is read but the
plan: the command prints every statistic's budget and accuracy, the totals (basic and, for
all-Gaussian plans, Gaussian DP) and writes ``DIR/plan.json`` plus one replay config per
part (``part-<i>-<kind>.yaml``). With ``--data PATH --commit`` the private file is read once
and every part is committed to that data set's budget, as one act: every part's charge is
checked against what is left, together, and the plan is refused whole (nothing charged,
nothing written) if it does not fit; each part gets its own ledger entry. The plan is written
as ONE bundle in DIR: one report.html for every part, plan.json, plan.yaml,
plan_release.json, ledger.json, README.txt, and each part's own bundle in
``DIR/part-<i>-<kind>/`` (``fdp_core.publish.plan_commit``).

Sealed mode: ``--stand-in FILE`` (a public file with the declared n, grid and person column)
or ``--stand-in simulated`` (curves simulated from the declared design), or the plan's
``data: {stand_in: ...}``: every number is computed on the stand-in, the private ``--data``
is read only at ``--commit``, and the record says "settings fixed on a stand-in; the private
data were read only to release". Without a stand-in the record says the settings were
pre-registered (fixed in the plan file before the data were read).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import yaml

from ..budget.accounting import Ledger
from ..budget.ledger_store import BudgetSpec
from ..errors import BudgetError, ParameterError
from .ledger import add_ledger_option, add_new_dataset_options, budget_of, new_dataset_of
from ..data.loading import load_curves
from ..data.preprocess import file_persons
from ..data.yaml_files import parse_yaml, read_yaml_text

PATH = ("plan",)
HELP = "plan a release by accuracy across statistics (budgets from targets or weights; optionally commit it)"


def configure(parser) -> None:
    parser.add_argument("plan", metavar="PLAN", help="plan YAML (schema fdp.plan/1: public, statistics, budget)")
    parser.add_argument("--out", default=None, help="output folder (default: <PLAN name>_plan next to PLAN)")
    parser.add_argument("--data", default=None, help="the private data file (read only with --commit)")
    parser.add_argument("--commit", action="store_true",
                        help="commit every part of the plan to the data set's budget (needs --data)")
    parser.add_argument("--budget-name", default=None, metavar="NAME", help="budget to charge (default 'default')")
    parser.add_argument("--stand-in", default=None, metavar="SOURCE",
                        help="sealed mode: compute everything on a public stand-in with the declared design: a public "
                             "file, or 'simulated' (curves simulated from public n, grid and value_range); the "
                             "private --data is read only at --commit (default: the plan's data.stand_in, if any)")
    parser.add_argument("--grid", default=None, metavar="A,B,M",
                        help="with --commit: the declared public grid the curves are interpolated onto (a long file "
                             "whose persons are seen at their own times needs it; METHODS.md 24)")
    add_ledger_option(parser)
    add_new_dataset_options(parser)


def _read_plan(path: Path) -> dict:
    """The plan's mapping: a regular file of at most MAX_YAML_BYTES, 1e-5 read as a number (data/yaml_files.py)."""
    return parse_yaml(read_yaml_text(path, "plan"), "plan")


def run(args) -> int:
    from ..explore.plan import describe, make_plan, part_configs  # lazy: scipy and the planner, not for `plan --help`

    if args.commit and not args.data:
        raise ParameterError("--commit needs --data (the private file the plan releases)")
    if args.grid is not None and not args.commit:
        raise ParameterError("--grid applies to the data read at --commit")
    if args.data and not args.commit:
        raise ParameterError("--data is read only to commit: add --commit, or drop --data to see the plan")
    plan_path = Path(args.plan)
    mapping = _read_plan(plan_path)
    stand_in, stand_in_label = _stand_in(args, mapping, plan_path) or (None, "")
    plan = make_plan(mapping, stand_in, stand_in_label=stand_in_label)
    for line in describe(plan):
        print(line)
    if not plan.fits():
        raise BudgetError(f"the plan costs epsilon {plan.basic[0]:.4g}, delta {plan.basic[1]:.3g}, more than its "
                          f"budget (epsilon {plan.budget[0]:g}, delta {plan.budget[1]:g})")
    out = Path(args.out) if args.out else plan_path.with_name(f"{plan_path.stem}_plan")
    configs = part_configs(plan, budget_name=args.budget_name)
    if args.commit:
        return _commit(args, plan, configs, out, mapping, sealed=stand_in is not None)
    out.mkdir(parents=True, exist_ok=True)
    (out / "plan.json").write_text(json.dumps(plan.to_dict(), indent=2) + "\n")
    for name, config in configs:
        (out / name).write_text(yaml.safe_dump(config, sort_keys=False))
    print(f"wrote {out}/plan.json and {len(configs)} replay config(s): "
          + ", ".join(name for name, _ in configs))
    return 0


def _stand_in(args, mapping, plan_path: Path):
    """(stand-in, its label): the public stand-in (sealed mode) named by --stand-in or the plan's
    data.stand_in, matched to the declared design; None without one. A relative path in the plan is read next to the plan."""
    from ..data.loading import load_curves  # lazy: keeps `--help` light
    from ..data.stand_in import SIMULATED, matched_stand_in, stand_in_curves, with_person_ids  # lazy: keeps `--help` light
    from ..explore.plan import PublicDesign  # lazy: keeps `--help` light

    if not isinstance(mapping, dict) or not isinstance(mapping.get("public"), dict):
        return None  # make_plan refuses the plan with its own message
    data = mapping.get("data")
    if data is not None and (not isinstance(data, dict) or set(map(str, data)) - {"stand_in"}):
        raise ParameterError("plan: 'data' must be a mapping with one key, stand_in (a public file or 'simulated')")
    source = args.stand_in if args.stand_in is not None else (data or {}).get("stand_in")
    if source is None:
        return None
    if not isinstance(source, str) or not source.strip():
        raise ParameterError(f"plan: the stand-in must be a public file or '{SIMULATED}', got {source!r}")
    design = PublicDesign.of(mapping["public"])
    domain = (float(design.grid[0]), float(design.grid[-1]))
    if source == SIMULATED:
        if design.value_range is None:
            raise ParameterError("plan: a simulated stand-in needs public.value_range (the curves fill it)")
        if not np.allclose(design.grid, np.linspace(*domain, design.grid.size)):
            raise ParameterError("plan: a simulated stand-in needs an equally spaced public grid")
        fd = stand_in_curves(design.n, design.grid.size, domain, design.value_range)
        return with_person_ids(fd, design.person_column), "a public stand-in simulated from the declared design"
    path = Path(source) if args.stand_in is not None or Path(source).is_absolute() else plan_path.parent / source
    if args.data and path.resolve() == Path(args.data).resolve():
        raise ParameterError("the stand-in is the private --data file itself: a stand-in must be public data")
    try:
        fd = matched_stand_in(load_curves(path), n=design.n, points=design.grid.size, domain=domain,
                              person_column=design.person_column, label=path.name)
    except ValueError as exc:
        raise ParameterError(str(exc)) from None
    return fd, f"the public stand-in file {path.name}"


def _commit(args, plan, configs, out: Path, mapping: dict, *, sealed: bool) -> int:
    """Read the data once, check the whole plan against the budget left, commit every part as one bundle."""
    from ..data.loading import load_curves  # lazy: keeps `--help` light
    from ..data.stand_in import stand_in_view  # lazy: keeps `--help` light
    from ..publish.plan_commit import check_data, commit_plan, export_plan_folder  # lazy: keeps `--help` light
    from .ledger import budget_of, check_out, complete_then_publish, staging_dir  # lazy: keeps `--help` light

    check_out(out)  # before anything is read or charged
    fd = load_curves(args.data, grid=args.grid)
    label = Path(args.data).name
    check_data(plan, fd, label)
    budget = budget_of(args, fd, name=args.budget_name, settings=plan.parts[0].statistic.settings,
                       **new_dataset_of(args))
    budget.ensure(_spec(configs[0][1]["budget"]))
    # Settings fixed in the plan file before the data were read: pre-registered; computed on a
    # public stand-in (sealed mode): the sealed statement (every number of the plan was on it).
    seen = [stand_in_view(f"the plan's budgets and radii ({plan.computed_on})")] if sealed else None
    committed = commit_plan(plan, fd, budget, data_label=label, looked_at=seen, pre_registered=not sealed,
                            sealed=sealed, mapping=mapping)
    staged = staging_dir(out)
    export_plan_folder(committed, staged, include_analyst_view=True)
    complete_then_publish(budget, committed.entry_ids, staged, out, ledger_url=args.ledger,
                          release_id=committed.release_id)
    for (folder, release), part in zip(committed.parts, committed.index()["parts"]):
        print(f"committed {folder}: {release.kind} {release.entry.mechanism}, charged epsilon "
              f"{part['charged_epsilon']:.4g}, delta {part['charged_delta']:.3g} -> {out / folder}/")
    eps, delta = committed.charged
    print(f"one bundle: {out}/ (report.html covers every part; plan charged epsilon {eps:.4g}, delta {delta:.3g})")
    spent = budget.ledger().spent()
    print(f"ledger: budget '{budget.name}': spent epsilon {spent.epsilon:.4g}, delta {spent.delta:.3g}")
    return 0


def _spec(budget_section: dict):
    return BudgetSpec.of(Ledger(budget_section["epsilon_total"], budget_section["delta_total"], None,
                                budget_section.get("filter", "basic")))
