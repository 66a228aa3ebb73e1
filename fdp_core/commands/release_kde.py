"""``python -m fdp_core release kde``: one sanitized density of a per-curve feature."""

from __future__ import annotations

from ..data.features import features_label, person_features
from ..releases.kde import KdeSettings, analyst_view, plan_kde_release, release_record, release_table
from ..releases.postprocess import finish_density
from ..publish.release import write_release
from ..settings_fields import add_options, settings_from_args
from ._common import (add_data_options, add_engine_options, add_output_options, engine_of, load_data, rng_from,
                      stream_options)
from .publishing import add_publish_options, charge_and_publish, in_memory, no_budget_to_find, preview_note, previewing

PATH = ("release", "kde")
HELP = "release a differentially private density (KDE) of a per-curve feature or a numeric column"


def configure(parser) -> None:
    add_data_options(parser)
    parser.add_argument("--feature", required=True,
                        help="per-curve feature: value:T0, mean:U:V, l2norm, max or column:NAME; two joined by ',' "
                             "for a 2-d density (T0, U, V in the units of the file's grid)")
    add_options(parser, KdeSettings)
    add_engine_options(parser)
    add_output_options(parser)
    add_publish_options(parser)


def run(args) -> int:
    settings = settings_from_args(KdeSettings, args)
    preview = previewing(args)
    engine = engine_of(args)
    if not preview and not no_budget_to_find(args):  # charged first, exact discrete noise
        in_memory(args, engine)
        charged = charge_and_publish(args, "density", load_data(args), settings, inputs={"feature": args.feature})
        if charged is not None:
            return charged  # else no budget: this plain run is a preview (said on screen and in its files)
    if engine == "local":
        fd = load_data(args)
        obs = person_features(fd, args.feature, settings.box, person_column=settings.person_column,
                              value_range=settings.value_range, n_public=settings.n_public)
        points, features, n_dropped = obs.points, obs.features, fd.report.n_dropped
    else:
        if engine == "stream":
            from ..engines.stream import stream_kde_sums  # lazy: light `--help`

            obs = stream_kde_sums(args.data, settings, args.feature, **stream_options(args))
        else:
            from ..engines.dask_engine import dask_kde_sums  # lazy: light `--help`

            obs = dask_kde_sums(args.data, settings, args.feature, scheduler=args.scheduler, **stream_options(args))
        points, features, n_dropped = obs.sums, obs.features, obs.n_dropped
    plan = plan_kde_release(points, settings, per_person=True)  # person_features / the engines averaged per person
    finished = finish_density(plan.sample(rng_from(args), 1)[0], plan.weights, settings)  # free post-processing
    record = release_record(plan, feature=features_label(features), seed=args.seed,
                            person_column=settings.person_column, value_range=settings.value_range,
                            n_public=settings.n_public, raw_release=settings.raw_release)
    view = {**analyst_view(plan, n_dropped=n_dropped, n_curves=obs.n_curves, n_outside_box=obs.n_outside_box,
                           n_unusable=obs.n_unusable),
            **finished.analyst_fields(plan.weights)}
    write_release(args.out, record, release_table(plan, finished.values), view)
    print(f"wrote {args.out}/release.json and {args.out}/release.csv ({settings.mechanism} KDE, n={plan.n}, "
          f"expected squared L2 error {plan.expected_sq_l2_error:.4g}); {args.out}/analyst_view.json (with the "
          "clipping counts) is NOT for publication")
    preview_note(args.out)
    return 0
