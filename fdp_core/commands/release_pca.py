"""``python -m fdp_core release pca``: private functional principal components."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import DataError, ParameterError
from ..pca import PCA_BASES, PCA_SAMPLERS, PcaSettings, analyst_view, private_pca, release_record
from ..release import write_release
from ._common import (add_bounds_options, add_data_options, add_engine_options, add_kernel_options,
                      add_output_options, bounds_from_args, engine_of, load_data, rng_from, stream_options)

PATH = ("release", "pca")
HELP = "release private functional principal components (exponential mechanism, epsilon-DP)"


def _float_list(text: str) -> tuple:
    try:
        return tuple(float(x) for x in text.split(","))
    except ValueError:
        raise ParameterError(f"--epsilon-split must be a comma list of numbers, got {text!r}") from None


def configure(parser) -> None:
    add_data_options(parser)
    parser.add_argument("--k", type=int, default=1, help="number of components, 1..5")
    parser.add_argument("--basis", choices=PCA_BASES, default="kernel",
                        help="kernel eigenfunctions (default) or a Fourier basis, both orthonormal in the "
                             "weighted L2 inner product of the grid")
    parser.add_argument("--p", type=int, default=None,
                        help="basis dimension p > k (default: 99%% of the kernel trace; Fourier min(40, (m-1)//2))")
    add_kernel_options(parser, required=False)
    parser.add_argument("--gamma", type=float, default=1.0,
                        help="strength gamma >= 0 of the public base measure exp(-(gamma/2) tr(V^T C^-1 V)); "
                             "0 = uniform")
    parser.add_argument("--sampler", choices=PCA_SAMPLERS, default=None,
                        help="exact (k = 1 only), deflation (exact per component, default for k > 1) or gibbs "
                             "(matrix Bingham, approximate: not a DP claim)")
    parser.add_argument("--epsilon", type=float, required=True)
    parser.add_argument("--epsilon-split", type=_float_list, default=None,
                        help="deflation: per-component epsilons, comma separated, adding up to --epsilon "
                             "(default: equal split)")
    add_bounds_options(parser)
    tau = parser.add_mutually_exclusive_group()
    tau.add_argument("--tau", type=float, help="public L2 norm bound; coefficient rows (after centring) are clipped "
                                               "to it. Required without --value-range, which implies (HI - LO)/2")
    tau.add_argument("--tau-from-data", action="store_true",
                     help="use the largest centred coefficient row norm (data-dependent: the release is then NOT "
                          "differentially private)")
    parser.add_argument("--centring", choices=("none", "public"), default=None,
                        help="public: centre at (LO + HI)/2 or the --reference curve (no privacy cost; the default "
                             "with --value-range); none: no centring (the default otherwise)")
    parser.add_argument("--released-mean", default=None,
                        help="centre the curves by a released mean: a release.csv written by 'release mean' "
                             "(its budget counts separately); default: no centring")
    parser.add_argument("--gibbs-sweeps", type=int, default=20_000)
    parser.add_argument("--gibbs-burn-in", type=int, default=None)
    parser.add_argument("--gibbs-thin", type=int, default=None)
    add_engine_options(parser)
    add_output_options(parser)


def _released_mean(path: str, grid: np.ndarray) -> np.ndarray:
    table = pd.read_csv(path)
    if list(table.columns[:2]) != ["t", "value"]:
        raise DataError(f"{path}: a released mean needs columns t, value (a release.csv of 'release mean'), "
                        f"got {', '.join(map(str, table.columns))}")
    if table.shape[0] != grid.size or not np.allclose(table["t"].to_numpy(float), grid, rtol=1e-9, atol=1e-12):
        raise DataError(f"{path}: the released mean's grid ({table.shape[0]} points) is not the data grid "
                        f"({grid.size} points)")
    return table["value"].to_numpy(float)


def settings_from_args(args) -> PcaSettings:
    return PcaSettings(k=args.k, basis=args.basis, p=args.p, kernel=args.kernel, rho=args.rho, nu=args.nu,
                       epsilon=args.epsilon, gamma=args.gamma, sampler=args.sampler, epsilon_split=args.epsilon_split,
                       tau=args.tau, tau_from_data=args.tau_from_data, centring=_centring(args),
                       gibbs_sweeps=args.gibbs_sweeps, gibbs_burn_in=args.gibbs_burn_in, gibbs_thin=args.gibbs_thin,
                       **bounds_from_args(args))


def _centring(args) -> str:
    if args.released_mean:
        if args.centring == "public":
            raise ParameterError("--centring public and --released-mean are two different centres: choose one")
        return "released-mean"
    if args.centring is not None:
        return args.centring
    return "public" if args.value_range is not None else "none"


def run(args) -> int:
    settings = settings_from_args(args).validated()
    engine = engine_of(args)
    if engine == "local":
        fd = load_data(args)
        mean = None if args.released_mean is None else _released_mean(args.released_mean, fd.grid_points)
        result = private_pca(fd, settings, rng_from(args), released_mean=mean)
        n_dropped = fd.report.n_dropped
    else:
        from ..stream import open_source

        grid = open_source(args.data, **stream_options(args)).grid
        mean = None if args.released_mean is None else _released_mean(args.released_mean, grid)
        if engine == "stream":
            from ..stream import stream_pca_sums

            sums, n_dropped = stream_pca_sums(args.data, settings, released_mean=mean, with_report=True,
                                              **stream_options(args))
        else:
            from ..dask_engine import dask_pca_sums

            sums, n_dropped = dask_pca_sums(args.data, settings, released_mean=mean, scheduler=args.scheduler,
                                            with_report=True, **stream_options(args))
        result = private_pca(sums, settings, rng_from(args))
    record = release_record(result, seed=args.seed)
    if mean is not None:
        record["released_mean_file"] = str(args.released_mean)
    table = pd.DataFrame({"t": result.grid_points,
                          **{f"pc{l + 1}": result.components[:, l] for l in range(result.k)}})
    write_release(args.out, record, table, analyst_view(result, n_dropped=n_dropped))
    print(f"wrote {args.out}/release.json and {args.out}/release.csv ({record['sampler']}, k={result.k}, "
          f"p={result.p}, n={result.n}); {args.out}/analyst_view.json (variance ratio {result.variance_ratio:.3f}, "
          "not private) is NOT for publication")
    return 0

