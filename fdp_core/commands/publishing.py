"""Shared by the ``release`` commands: nothing publishable without a charge (METHODS.md 23).

Not a command itself (no PATH). A ``release <kind>`` run either

* **charges a ledger first** (the default): ``--ledger URL``, else ``$FDP_LEDGER_URL``, else the
  embedded default SQLite file, through the very machinery ``replay`` uses (the data set's
  find-or-create of :func:`fdp_core.commands.ledger.budget_of`, the commit protocol's
  reserve -> draw -> write -> complete with exact discrete noise, the files staged beside
  ``--out`` and published once every part is complete); or
* is a **preview** (``--preview``): today's numpy draw, nothing charged, every file marked
  ``"publishable": false, "preview": true``; ``--seed`` is accepted only there.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ParameterError

PREVIEW_HELP = ("draw a preview with numpy noise and charge nothing: the files say \"publishable\": false, "
                "\"preview\": true (--seed is accepted only here). Without it the release is charged to a ledger "
                "first (--ledger, else $FDP_LEDGER_URL, else the default file) with exact discrete noise")


def add_preview_option(parser) -> None:
    parser.add_argument("--preview", action="store_true", help=PREVIEW_HELP)


def add_publish_options(parser) -> None:
    """--preview, --ledger and --budget-name (release mean has the last two in its sparse group)."""
    from .ledger import add_ledger_option  # lazy: keeps `--help` light

    add_preview_option(parser)
    add_ledger_option(parser)
    parser.add_argument("--budget-name", default=None, metavar="NAME",
                        help="the budget to charge (default: 'default')")


def previewing(args) -> bool:
    """True for --preview; a charged run refuses --seed (one line, before anything is read)."""
    if args.preview:
        return True
    if args.seed is not None:
        raise ParameterError("--seed applies to --preview only: a charged release draws exact discrete noise from OS "
                             "entropy (add --preview for a reproducible draw that is not for publication)")
    return False


def in_memory(args, engine: str) -> None:
    """A charged release reads the file into memory (the commit protocol plans on the curves)."""
    if getattr(args, "engine", "auto") in ("stream", "dask") or engine in ("dask",):
        raise ParameterError(f"a charged release reads the file in memory: use --engine local (or --preview to "
                             f"draw a {engine} preview that is not for publication)")


def no_budget_to_find(args) -> bool:
    """A plain run (no ``--ledger``) on a ledger that holds no budget at all: it can only be a preview,
    so it is said at once and the file is never read into memory to look a budget up (a streamed
    or Dask preview of a big file keeps its flat memory). Read-only: a missing ledger stays missing."""
    from ..budget.ledger_store import LedgerStore  # lazy: keeps `--help` light

    if args.ledger is not None:
        return False  # a ledger named on purpose: charge_and_publish refuses in one line without a budget
    store = LedgerStore(None, read_only=True)
    if store.holds_budgets():
        return False
    print(f"note: no budget for these data in the ledger {store.location} (it holds none): this run is a PREVIEW "
          "(nothing charged, not for publication); create a budget with `python -m fdp_core ledger init` to commit")
    args.preview = True
    return True


def charge_and_publish(args, kind_name: str, data, settings, *, inputs=None, registered_settings=None) -> int | None:
    """Commit ``data`` as ``kind_name`` through the commit protocol, charged before any draw, as replay does.

    ``--out`` is checked first; then the stored budget of the data set (a release never registers
    data nor creates a budget: ``ledger init`` does). No budget for these data: with ``--ledger``
    given, one line and nothing charged; a plain run (``$FDP_LEDGER_URL`` or the default file) is
    a preview instead, said on screen and in its files ("publishable": false, "preview": true):
    returns None and the command draws its preview. Prints the one quote the ledger records.
    """
    from ..publish.bundle import export_folder  # lazy: keeps `--help` light
    from ..publish.kinds import commit, release_kind  # lazy: as above
    from ..publish.protocol import CommitRequest, entry_ids  # lazy: as above
    from .ledger import budget_of, check_out, complete_then_publish, match_line, staging_dir  # lazy: as above

    out = check_out(args.out)
    label = Path(args.data).name
    # lookup: a release finds the budget of registered data; it never registers data itself
    budget = budget_of(args, data, name=args.budget_name, settings=registered_settings or settings, lookup=True)
    if budget.ledger() is None:
        if args.ledger is not None:  # a ledger named on purpose is never ignored
            raise ParameterError(f"no budget for these data in the ledger {budget.store.location}: create one "
                                 f"(python -m fdp_core ledger init --data {args.data} --epsilon E --delta D; with "
                                 "--new-dataset --reason TEXT on a ledger holding other data sets), or add --preview "
                                 "(nothing charged, not for publication)")
        print(f"note: no budget for these data in the ledger {budget.store.location}: this run is a PREVIEW "
              "(nothing charged, not for publication); create a budget with `python -m fdp_core ledger init` to "
              "commit")
        args.preview = True
        return None
    kind = release_kind(kind_name)
    request = CommitRequest(data, settings, label=f"release {kind_name} ({label})", data_label=label,
                            pre_registered=True, inputs=dict(inputs or {}))
    release = commit(kind, budget, request, finish=False)
    ledger = budget.last_snapshot or budget.ledger()
    staged = staging_dir(out)
    export_folder(release, staged, ledger, include_analyst_view=True)
    ids = entry_ids(release)
    complete_then_publish(budget, ids, staged, out, ledger_url=args.ledger, release_id=ids[0])
    bands = ""
    if isinstance(release.record.get("band"), dict):  # a mean with its bands: which columns cover what
        from ..releases.bands import band_summary  # lazy: keeps `--help` light

        bands = f"; with the {band_summary(release.record['band'])}"
    print(f"wrote {out}/ (release.csv, coefficients.csv, release.json, config.yaml, ledger.json, report.html; "
          f"analyst_view.json is NOT for publication): {release.kind} {release.entry.mechanism}, "
          f"n={release.record.get('n')}, exact discrete noise{bands}")
    print(quote_line([e for e in ledger.entries if e.id in ids]))
    spent = ledger.spent()
    print(f"ledger: {budget.store.location}, budget '{budget.name}': spent epsilon {spent.epsilon:.4g} of "
          f"{ledger.epsilon_total:g}, delta {spent.delta:.3g} of {ledger.delta_total:g} ({len(ledger.entries)} "
          "release(s))")
    note = match_line(budget)
    if note:
        print(f"note: {note}")
    return 0


def quote_line(entries) -> str:
    """The one quote, as the ledger records it: every part's charged (epsilon, delta) and their total."""
    parts = ", ".join(f"{e.mechanism} epsilon {e.epsilon:.6g}, delta {e.delta:.3g}" for e in entries)
    eps, delta = sum(e.epsilon for e in entries), sum(e.delta for e in entries)
    return (f"charged: epsilon {eps:.6g}, delta {delta:.3g} in total ({len(entries)} part"
            f"{'' if len(entries) == 1 else 's'}: {parts})")


def preview_note(out) -> None:
    print(f"note: PREVIEW (--preview): nothing was charged; {out}/release.json says \"publishable\": false")
