"""``python -m fdp_core release mean``: one sanitized mean curve."""

from __future__ import annotations

from ..errors import ParameterError
from ..releases.mean import MeanSettings, analyst_view, plan_mean_release, release_record
from ..releases.postprocess import finish_mean
from ..publish.release import write_release
from ..settings_fields import add_options, settings_from_args
from ._common import (add_data_options, add_engine_options, add_output_options, engine_of, load_data, rng_from,
                      stream_options)
from .publishing import add_preview_option, charge_and_publish, in_memory, no_budget_to_find, preview_note, previewing
from .sparse_mean import add_sparse_options, run_sparse, sparse_data_for

PATH = ("release", "mean")
HELP = "release a differentially private mean function"


def configure(parser) -> None:
    add_data_options(parser)
    add_options(parser, MeanSettings)
    add_engine_options(parser)
    add_output_options(parser)
    add_preview_option(parser)
    add_sparse_options(parser)


def run(args) -> int:
    settings = settings_from_args(MeanSettings, args)
    preview = previewing(args)
    sparse = sparse_data_for(args)  # a long file with a few visits per person at their own times
    if sparse is not None:
        return run_sparse(args, settings, sparse)
    engine = engine_of(args)
    if not preview and not no_budget_to_find(args):  # charged first, exact noise (a band: one transaction)
        in_memory(args, engine)
        charged = charge_and_publish(args, "mean", load_data(args), settings)
        if charged is not None:
            return charged  # else no budget: this plain run is a preview (said on screen and in its files)
    if settings.confidence_band is not None:
        return _run_with_band(args, settings, engine)
    if engine == "local":
        data = load_data(args)
    elif engine == "stream":
        from ..engines.stream import stream_mean_sums  # lazy: light `--help`

        data = stream_mean_sums(args.data, settings, **stream_options(args))
    else:
        from ..engines.dask_engine import dask_mean_sums  # lazy: light `--help`

        data = dask_mean_sums(args.data, settings, scheduler=args.scheduler, **stream_options(args))
    plan = plan_mean_release(data, settings)
    finished = finish_mean(plan.sample(rng_from(args), 1)[0], plan.settings)  # free post-processing
    values = finished.values
    record = release_record(plan, values, seed=args.seed)
    write_release(args.out, record, {"t": plan.grid_points, "value": values},
                  {**analyst_view(plan), **finished.analyst_fields(plan.weights)})
    unit = "persons" if settings.person_column else "curves"
    print(f"wrote {args.out}/release.json and {args.out}/release.csv ({settings.mechanism}, n={plan.n} {unit}, "
          f"expected squared L2 error {plan.expected_sq_l2_error:.4g}); {args.out}/analyst_view.json is NOT for "
          "publication")
    preview_note(args.out)
    return 0


def _run_with_band(args, settings: MeanSettings, engine: str) -> int:
    """--confidence-band: the mean at (1 - share) of the budget, a second moment at the share, both bands."""
    from ..budget.privacy_events import composed_total_words  # lazy: keeps `--help` light
    from ..releases.bands import band_summary, preview_band_release  # lazy: keeps `--help` light

    if engine != "local":
        raise ParameterError("--confidence-band needs the curves in memory (the second moment is not streamed): "
                             "use --engine local")
    record, table, view = preview_band_release(load_data(args), settings, rng_from(args), seed=args.seed)
    write_release(args.out, record, table, view)
    band = record["band"]
    print(f"wrote {args.out}/release.json and {args.out}/release.csv with the {band_summary(band)} "
          f"({settings.mechanism}, epsilon {band['epsilon_mean']:.4g} mean + "
          f"{band['epsilon_second_moment']:.4g} second moment; composed total: {composed_total_words(band['composed_total'])}); "
          f"{args.out}/analyst_view.json is NOT for publication")
    preview_note(args.out)
    return 0
