"""The sparse route of ``release mean`` (METHODS.md 20): ``--sparse --domain A,B --value-range LO,HI``.

Not a command itself (no PATH): ``release_mean`` adds these options and hands sparse long
files here, whether the user asked (``--sparse``) or the file was recognised as sparse (persons
observed a few times each, at their own times), in which case a message says so.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from ..errors import DataError, ParameterError
from ..publish.release import write_release
from ..releases.sparse import (NOISES, SparseSettings, plan_sparse_release, sparse_analyst_view, sparse_ledger_entries,
                               sparse_release_record)
from ..data.sparse_data import SPARSE_UNIT, SparseData, ledger_view, parse_domain, read_long, sparse_reason
from ..engines.sparse_stream import DEFAULT_CHUNK_ROWS, stream_sparse_statistics
from ._common import engine_of, rng_from


def add_sparse_options(parser) -> None:
    group = parser.add_argument_group("sparse curves (a long file with a few visits per person at their own times)")
    group.add_argument("--sparse", action="store_true",
                       help="release the mean of sparse, irregular curves by private normal equations (METHODS.md "
                            "20); needs a long file, --domain and --value-range. Recognised automatically otherwise")
    group.add_argument("--domain", default=None, metavar="A,B",
                       help="public domain of t for --sparse (observations outside it are dropped)")
    group.add_argument("--sparse-noise", choices=NOISES, default="gaussian",
                       help="--sparse: Gaussian noise ((epsilon, delta)-DP, default) or Laplace (epsilon-DP)")
    group.add_argument("--basis-size", type=int, default=SparseSettings.n_basis, metavar="J",
                       help=f"--sparse: number of basis functions J (1..60, default {SparseSettings.n_basis})")
    group.add_argument("--sparse-gamma", type=float, default=SparseSettings.gamma,
                       help=f"--sparse: share of the budget for A (the rest: b; default {SparseSettings.gamma})")
    group.add_argument("--sparse-kappa", type=float, default=SparseSettings.kappa,
                       help=f"--sparse: public eigenvalue floor of A before solving (default {SparseSettings.kappa})")
    group.add_argument("--output-points", type=int, default=SparseSettings.output_points,
                       help="--sparse: points of the public output grid on the domain")
    group.add_argument("--ledger", default=None, metavar="URL",
                       help="--sparse: charge the stored budget of these observations in this ledger (created by "
                            "ledger init --sparse) before any noise is drawn; both parts (A and b) are checked "
                            "together, so a refusal records nothing")
    group.add_argument("--budget-name", default=None, metavar="NAME", help="--sparse --ledger: the budget's name")


def _reserve(args, data: SparseData, plan):
    """Check both ledger entries against the stored budget, then reserve them (completed after writing)."""
    from ..budget.accounting import Ledger  # lazy: the ledger's privacy events, only with --ledger
    from ..budget.datasets import open_budget  # lazy: SQLite, only with --ledger
    from ..budget.ledger_store import DEFAULT_BUDGET  # lazy: as above

    budget = open_budget(args.ledger, ledger_view(data), unit=SPARSE_UNIT, name=args.budget_name or DEFAULT_BUDGET,
                         source="cli", data_label=Path(args.data).name)
    snapshot = budget.ledger()
    if snapshot is None:
        raise ParameterError("no stored budget for these observations: create one first (python -m fdp_core ledger "
                             "init --sparse --data FILE --epsilon E --delta D)")
    entries = sparse_ledger_entries(plan, label=f"release mean --sparse ({Path(args.data).name})")
    trial = Ledger(snapshot.epsilon_total, snapshot.delta_total, snapshot.split, snapshot.filter,
                   entries=list(snapshot.entries))
    for entry in entries:
        trial.commit(entry)  # refuses (BudgetError) before anything is charged
    for entry in entries:
        budget.reserve(entry)
    return budget, entries


def _is_long_file(args) -> bool:
    if args.id_column or args.t_column or args.value_column:
        return True
    path = Path(args.data)
    if path.suffix.lower() in (".parquet", ".pq") or not path.is_file():
        return False
    with open(path, encoding="utf-8-sig", errors="replace") as handle:
        header = handle.readline()
    cells = [c.strip().lower() for c in header.replace(";", ",").replace("\t", ",").split(",")]
    return cells == ["id", "t", "value"]


def _read(args) -> SparseData:
    return read_long(args.data, id_column=args.id_column, t_column=args.t_column, value_column=args.value_column)


class Streamed:
    """The sparse route over a file read in chunks (--engine stream, or auto for a big file)."""

    name = "streamed file"


def sparse_data_for(args) -> SparseData | Streamed | None:
    """The observations when this run takes the sparse route (asked, or a long file recognised as sparse)."""
    if args.sparse:
        if getattr(args, "transpose", False):
            raise ParameterError("--sparse reads a long file (id, t, value); --transpose applies to wide files")
        if engine_of(args) == "dask":
            raise ParameterError("the sparse route runs locally or streamed (--engine local or stream)")
        return Streamed() if engine_of(args) == "stream" else _read(args)
    data = None
    if engine_of(args) == "local" and _is_long_file(args):
        try:
            data = _read(args)
        except DataError:
            data = None  # not readable as observations: the gridded loader names the problem
    verdict = sparse_reason(data) if data is not None else None
    if verdict is None or not verdict.sparse:
        if args.domain is not None:
            raise ParameterError("--domain applies to the sparse route (a long file of sparse curves): add --sparse")
        return None
    print(f"note: {data.name} is sparse ({verdict.reason}); releasing it through the sparse route (--sparse)",
          file=sys.stderr)
    return data


def run_sparse(args, mean_settings, data: SparseData) -> int:
    if args.domain is None:
        raise ParameterError("the sparse route needs the public domain of t: --domain A,B (declared, not read off "
                             "the data)")
    if mean_settings.value_range is None:
        raise ParameterError("the sparse route needs the public value range: --value-range LO,HI")
    settings = SparseSettings(
        domain=parse_domain(args.domain), value_range=tuple(mean_settings.value_range), kernel=mean_settings.kernel,
        rho=mean_settings.rho, nu=mean_settings.nu, eta=mean_settings.eta, phi=mean_settings.phi,
        n_basis=args.basis_size, epsilon=mean_settings.epsilon, delta=mean_settings.delta, noise=args.sparse_noise,
        calibration=mean_settings.calibration, gamma=args.sparse_gamma, kappa=args.sparse_kappa,
        output_points=args.output_points)
    if isinstance(data, Streamed):
        statistics = stream_sparse_statistics(args.data, settings, id_column=args.id_column, t_column=args.t_column,
                                              value_column=args.value_column,
                                              chunk_rows=args.chunk_rows or DEFAULT_CHUNK_ROWS)
        plan, data = plan_sparse_release(None, settings, statistics=statistics), None
    else:
        plan = plan_sparse_release(data, settings)
    if args.ledger is not None and data is None:
        raise ParameterError("--ledger with the sparse route reads the file in memory: use --engine local")
    charged = _reserve(args, data, plan) if args.ledger is not None else None
    values = plan.sample(rng_from(args), 1)[0]
    record = sparse_release_record(plan, values, seed=args.seed)
    if charged is not None:
        record["ledger_entry_ids"] = [entry.id for entry in charged[1]]
    write_release(args.out, record, pd.DataFrame({"t": plan.output_grid, "value": values}),
                  sparse_analyst_view(plan, values, data))
    if charged is not None:
        for entry in charged[1]:
            charged[0].complete(entry.id)
    print(f"wrote {args.out}/release.json and {args.out}/release.csv (sparse route, {settings.noise} noise, "
          f"n={plan.n} persons, J={plan.basis.n_basis}); {args.out}/analyst_view.json is NOT for publication")
    return 0
