"""The sparse route of ``release mean`` (METHODS.md 20): ``--sparse --domain A,B --value-range LO,HI``.

Not a command itself (no PATH): ``release_mean`` adds these options and hands sparse long
files here when the user declares the route (``--sparse``); the route is never chosen from
the data (METHODS.md 24).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import BudgetError, ParameterError
from ..publish.release import write_release
# Only the settings at import: ``release mean`` imports this module for its options, and the dense
# route never needs the sparse one's reader, smoother and streaming engine (issue 42).
from ..releases.sparse_settings import SparseSettings
from ..settings_fields import add_options, settings_from_args
from ._common import engine_of, rng_from

if TYPE_CHECKING:
    from ..data.sparse_data import SparseData

# The options only the sparse route has, in the order --help lists them.
SPARSE_ONLY = ("domain", "noise", "n_basis", "gamma", "kappa", "output_points")


def add_sparse_options(parser) -> None:
    group = parser.add_argument_group("sparse curves (a long file with a few visits per person at their own times)")
    group.add_argument("--sparse", action="store_true",
                       help="release the mean of sparse, irregular curves by private normal equations (METHODS.md "
                            "20); needs a long file, --domain and --value-range. Declared, never chosen from the data: "
                            "without it a long file with person-specific times needs --grid A,B,M")
    # Generated from SparseSettings (fdp_core/settings_fields.py); the shared settings (--epsilon, --kernel,
    # --value-range, ...) are release mean's own options, read into SparseSettings by the same dests.
    add_options(group, SparseSettings, fields=SPARSE_ONLY, required=())
    group.add_argument("--ledger", default=None, metavar="URL",
                       help="the ledger a release is charged to before any noise is drawn (every route; default: "
                            "$FDP_LEDGER_URL, else the default file); the sparse route charges the stored budget of "
                            "these observations (created by ledger init --sparse), both parts (A and b) in one "
                            "transaction. Writes the bundle (release.csv, coefficients.csv, release.json, "
                            "config.yaml, ledger.json, report.html) as replay does")
    group.add_argument("--budget-name", default=None, metavar="NAME", help="the budget to charge (default: 'default')")


def _open_budget(args, data: SparseData):
    """The stored budget of these observations (keyed like ``ledger init --sparse``); refused when none exists."""
    from ..budget.datasets import open_budget  # lazy: SQLite, only with --ledger
    from ..budget.ledger_store import DEFAULT_BUDGET  # lazy: as above
    from ..data.sparse_data import SPARSE_UNIT, ledger_sketch, ledger_view  # lazy: keeps `--help` light

    budget = open_budget(args.ledger, ledger_view(data), unit=SPARSE_UNIT, vectors=ledger_sketch(data),
                         name=args.budget_name or DEFAULT_BUDGET, source="cli", data_label=Path(args.data).name,
                         lookup=True)  # never creates one
    if budget.ledger() is None:
        raise ParameterError("no stored budget for these observations: create one first (python -m fdp_core ledger "
                             "init --sparse --data FILE --epsilon E --delta D)")
    return budget


def _run_committed(args, settings: SparseSettings, data: SparseData) -> int:
    """--ledger: the exact discrete commit (fdp_core/publish/sparse_commit.py), as a replay commits it.

    Both parts (A and b) are checked against the stored budget together, then each is charged and
    drawn with the exact discrete sampler (OS entropy); the bundle is staged next to --out and
    published only once both ledger entries are complete.
    """
    from ..publish.bundle import export_folder  # lazy: keeps `--help` light
    from ..publish.sparse_commit import commit_sparse_mean  # lazy: keeps `--help` light
    from .ledger import check_out, complete_then_publish, staging_dir  # lazy: keeps `--help` light
    from .publishing import quote_line  # lazy: as above

    check_out(args.out)  # before anything is charged
    name = Path(args.data).name
    budget = _open_budget(args, data)
    try:
        release = commit_sparse_mean(budget, data, settings, label=f"release mean --sparse ({name})",
                                     data_label=name)
    except BudgetError as exc:  # the refusal names one part: say the release is both
        raise BudgetError(f"{' '.join(str(exc).split())} (a sparse mean charges two ledger entries, A and b, "
                          "checked together: neither was recorded)") from None
    release.record["ledger_entry_ids"] = list(release.record["part_entry_ids"])
    ledger = budget.last_snapshot or budget.ledger()
    out = Path(args.out)
    staged = staging_dir(out)
    export_folder(release, staged, ledger, include_analyst_view=True)
    complete_then_publish(budget, release.record["part_entry_ids"], staged, out, ledger_url=args.ledger,
                          release_id=release.record["part_entry_ids"][0])
    total = release.record.get("charged_total") or release.record["charged"]
    print(f"wrote {out}/ (release.csv, coefficients.csv, release.json, config.yaml, ledger.json, report.html; "
          f"analyst_view.json is NOT for publication): sparse route, exact discrete {settings.noise} noise, "
          f"n={release.record['n']} persons, charged epsilon {total['epsilon']:.4g}, delta {total['delta']:.3g} "
          "(A and b)")
    print(quote_line([e for e in ledger.entries if e.id in release.record["part_entry_ids"]]))
    spent = ledger.spent()
    print(f"ledger: {budget.store.location}, budget '{budget.name}': spent epsilon {spent.epsilon:.4g} of "
          f"{ledger.epsilon_total:g}, delta {spent.delta:.3g} of {ledger.delta_total:g} "
          f"({len(ledger.entries)} release(s))")
    return 0


def _read(args) -> SparseData:
    from ..data.sparse_data import read_long  # lazy: the sparse route only (--sparse)

    return read_long(args.data, id_column=args.id_column, t_column=args.t_column, value_column=args.value_column)


class Streamed:
    """The sparse route over a file read in chunks (--engine stream, or auto for a big file)."""

    name = "streamed file"


def sparse_data_for(args) -> SparseData | Streamed | None:
    """The observations when this run takes the sparse route. The route is declared (--sparse), never
    chosen from the data (METHODS.md 24: a median number of visits moves when one person changes)."""
    if args.sparse:
        if getattr(args, "transpose", False):
            raise ParameterError("--sparse reads a long file (id, t, value); --transpose applies to wide files")
        if getattr(args, "grid", None) is not None:
            raise ParameterError("--grid applies to the gridded route; the sparse route releases on --domain with "
                                 "--output-points")
        if engine_of(args) == "dask":
            raise ParameterError("the sparse route runs locally or streamed (--engine local or stream)")
        return Streamed() if engine_of(args) == "stream" else _read(args)
    if args.domain is not None:
        raise ParameterError("--domain applies to the sparse route (a long file of sparse curves): add --sparse")
    return None


def run_sparse(args, mean_settings, data: SparseData) -> int:
    if args.domain is None:
        raise ParameterError("the sparse route needs the public domain of t: --domain A,B (declared, not read off "
                             "the data)")
    if mean_settings.value_range is None:
        raise ParameterError("the sparse route needs the public value range: --value-range LO,HI")
    from ..engines.sparse_stream import DEFAULT_CHUNK_ROWS, stream_sparse_statistics  # lazy: the sparse route only
    from ..releases.sparse import plan_sparse_release, sparse_analyst_view, sparse_release_record  # lazy: as above

    settings = settings_from_args(SparseSettings, args)
    if not args.preview:  # charged first (METHODS.md 23)
        if isinstance(data, Streamed):
            raise ParameterError("a charged sparse release reads the file in memory: use --engine local (or --preview)")
        return _run_committed(args, settings, data)
    if isinstance(data, Streamed):
        statistics = stream_sparse_statistics(args.data, settings, id_column=args.id_column, t_column=args.t_column,
                                              value_column=args.value_column,
                                              chunk_rows=args.chunk_rows or DEFAULT_CHUNK_ROWS)
        plan, data = plan_sparse_release(None, settings, statistics=statistics), None
    else:
        plan = plan_sparse_release(data, settings)
    values = plan.sample(rng_from(args), 1)[0]
    record = sparse_release_record(plan, values, seed=args.seed)
    write_release(args.out, record, {"t": plan.output_grid, "value": values},
                  sparse_analyst_view(plan, values, data))
    print(f"wrote {args.out}/release.json and {args.out}/release.csv (sparse route, {settings.noise} noise, "
          f"n={plan.n} persons, J={plan.basis.n_basis}); {args.out}/analyst_view.json is NOT for publication")
    print(f"note: PREVIEW (--preview): nothing was charged; {args.out}/release.json says \"publishable\": false")
    return 0
