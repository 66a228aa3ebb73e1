"""Streamed and Dask releases equal the in-memory release (METHODS.md 17).

The streamed sums go through the same planning code (mean.py, kde.py, pca.py), so with the
same seed the released values agree up to the order of floating-point summation.
"""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pandas as pd
import pytest

from fdp_core import cli

from fdp_core.engines import choice, stream  # choice: the --engine auto threshold (re-exported by stream)
from fdp_core.data.loading import load_curves
from fdp_core.errors import DataError, ParameterError
from fdp_core.data.features import extract_features, person_features
from fdp_core.releases.kde import KdeSettings, plan_kde_release
from fdp_core.releases.mean import MEAN_MECHANISMS, MeanSettings, plan_mean_release
from fdp_core.releases.pca import PcaSettings, private_pca

RTOL = 1e-10


def _curves(n=1200, m=25, seed=0, missing=True):
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 2.0, m)
    X = 0.5 + 0.3 * np.sin(np.outer(rng.normal(size=n), t)) + 0.1 * rng.normal(size=(n, m))
    if missing:
        X[5, 3] = np.nan  # interior gap
        X[7, 0] = np.nan  # end point: always dropped
    frame = pd.DataFrame(X, columns=[repr(float(x)) for x in t])
    frame.insert(0, "subject", rng.integers(0, n // 3, n))  # persons spread over the file
    return frame


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("stream")
    frame = _curves()
    frame.to_csv(root / "c.csv", index=False)
    frame.to_parquet(root / "c.parquet", row_group_size=300)  # 4 row groups: 4 Dask partitions
    return root, frame


def _close(a, b):
    a, b = np.asarray(a), np.asarray(b)
    scale = max(float(np.max(np.abs(a))), 1e-300)
    assert np.max(np.abs(a - b)) <= RTOL * scale, np.max(np.abs(a - b)) / scale


def _sources(root, fd):
    # The chunks are the file's rows, missing values included: n counts every curve of the file.
    raw = pd.read_csv(root / "c.csv").iloc[:, 1:].to_numpy(dtype=float)
    return {"csv": root / "c.csv", "parquet": root / "c.parquet", "fd": fd,
            "chunks": [raw[i:i + 97] for i in range(0, raw.shape[0], 97)]}


MEAN_SETTINGS = [MeanSettings(mechanism=m, tau=0.6, lo=0.0, hi=1.0, rho=0.2) for m in MEAN_MECHANISMS]
MEAN_SETTINGS += [MeanSettings(tau_from_data=True, tau=None),
                  MeanSettings(tau=None, value_range=(0.2, 0.9), rho=0.2),  # range clip, centring, default tau
                  MeanSettings(tau_from_data=True, tau=None, value_range=(0.2, 0.9)),
                  MeanSettings(mechanism="bernstein", tau=None, lo=0.0, hi=1.0, value_range=(0.2, 0.9)),
                  MeanSettings(tau=0.3, person_column="subject", n_public=900),
                  MeanSettings(mechanism="bernstein", tau=None, lo=0.0, hi=1.0, person_column="subject",
                               n_public=900)]
MEAN_IDS = list(MEAN_MECHANISMS) + ["tau-from-data", "value-range", "range-tau-from-data", "bernstein-range",
                                    "persons-n-public", "bernstein-persons-n-public"]


@pytest.mark.parametrize("settings", MEAN_SETTINGS, ids=MEAN_IDS)
@pytest.mark.parametrize("missing", ["drop", "interpolate"])
def test_streamed_mean_equals_in_memory(files, settings, missing):
    root, _ = files
    fd = load_curves(root / "c.csv", missing=missing)
    expected = plan_mean_release(fd, settings)
    for label, source in _sources(root, fd).items():
        if label == "chunks" and (missing == "interpolate" or settings.person_column):
            continue  # arrays carry no missing values and no person column here
        sums = stream.stream_mean_sums(source, settings, chunk_rows=211, missing=missing, grid=fd.grid_points)
        plan = plan_mean_release(sums, settings)
        assert plan.n == expected.n and plan.n_clipped == expected.n_clipped and plan.n_curves == expected.n_curves
        np.testing.assert_allclose(plan.raw_mean, expected.raw_mean, rtol=1e-12)
        assert plan.n_dropped == expected.n_dropped  # the chunks are the file's rows too
        _close(expected.sample(np.random.default_rng(7), 3), plan.sample(np.random.default_rng(7), 3))


KDE_SETTINGS = [KdeSettings(box=(0.0, 1.5)), KdeSettings(box=(0.0, 1.5), bandwidth=0.1),
                KdeSettings(box=(0.0, 1.5), data_dependent_bandwidth=True),
                KdeSettings(mechanism="iclp", box=(0.0, 1.5)),
                KdeSettings(box=(0.0, 1.5, 0.0, 1.5), bandwidth=0.2, grid_size=24),
                KdeSettings(mechanism="iclp", box=(0.0, 1.5, 0.0, 1.5), grid_size=24),
                KdeSettings(box=(0.0, 1.2), bandwidth=0.1, value_range=(0.0, 1.0), person_column="subject"),
                KdeSettings(mechanism="iclp", box=(0.0, 1.2), person_column="subject")]


@pytest.mark.parametrize("settings", KDE_SETTINGS, ids=["hall-default-h", "hall-fixed-h", "hall-silverman",
                                                        "iclp", "hall-2d", "iclp-2d", "hall-persons-range",
                                                        "iclp-persons"])
def test_streamed_kde_equals_in_memory(files, settings):
    root, _ = files
    fd = load_curves(root / "c.csv")
    feature = "max" if len(settings.box) == 2 else "max,mean:0.5:1.5"
    obs = person_features(fd, feature, settings.box, person_column=settings.person_column,
                          value_range=settings.value_range)
    expected = plan_kde_release(obs, settings)  # one observation per person
    for label in ("csv", "parquet"):
        streamed = stream.stream_kde_sums(_sources(root, fd)[label], settings, feature, chunk_rows=211)
        assert streamed.n_dropped == fd.report.n_dropped
        assert (streamed.n_curves, streamed.n_outside_box) == (obs.n_curves, obs.n_outside_box)
        plan = plan_kde_release(streamed.sums, settings)
        assert plan.n == expected.n and plan.n_clipped_box == expected.n_clipped_box
        _close(expected.sample(np.random.default_rng(3), 2), plan.sample(np.random.default_rng(3), 2))


@pytest.mark.parametrize("settings", [PcaSettings(tau=1.0), PcaSettings(k=2, tau=1.0),
                                      PcaSettings(tau_from_data=True, tau=None),
                                      PcaSettings(basis="fourier", p=8, tau=0.5),
                                      PcaSettings(tau=None, value_range=(0.0, 1.0), centring="public"),
                                      PcaSettings(tau_from_data=True, tau=None, value_range=(0.0, 1.0),
                                                  centring="public"),
                                      PcaSettings(tau=0.5, person_column="subject", n_public=1000)],
                         ids=["exact", "deflation", "tau-from-data", "fourier", "public-centre",
                              "public-centre-tau-from-data", "persons"])
def test_streamed_pca_equals_in_memory(files, settings):
    root, _ = files
    fd = load_curves(root / "c.parquet")
    expected = private_pca(fd, settings, 11)
    for label, source in _sources(root, fd).items():
        if label == "chunks" and settings.person_column:
            continue
        sums = stream.stream_pca_sums(source, settings, chunk_rows=211, grid=fd.grid_points)
        result = private_pca(sums, settings, 11)
        assert result.n == expected.n and result.n_clipped == expected.n_clipped
        _close(expected.components, result.components)
        _close(expected.scree, result.scree)


def test_streamed_pca_with_released_mean(files):
    root, _ = files
    fd = load_curves(root / "c.csv")
    settings = PcaSettings(tau=0.5, centring="released-mean")
    centre = np.full(fd.m, 0.5)
    expected = private_pca(fd, settings, 2, released_mean=centre)
    result = private_pca(stream.stream_pca_sums(root / "c.csv", settings, released_mean=centre, chunk_rows=100),
                         settings, 2)
    _close(expected.components, result.components)
    with pytest.raises(ParameterError, match="raw sample mean needs the curves in memory"):
        stream.stream_pca_sums(root / "c.csv", PcaSettings(tau=1.0, centring="sample-mean"))


# --------------------------------------------------------------------------- persons

def _person_reference(fd, person, stat):
    """Sum over persons of the average of their rows' statistic (independent of stream.py)."""
    frame = pd.DataFrame(stat)
    return frame.groupby(np.asarray(person)).mean().to_numpy().sum(axis=0), len(set(person))


def test_person_averaged_mean_matches_a_direct_groupby(files):
    root, frame = files
    fd = load_curves(root / "c.csv")
    tau = 0.6
    clipped = fd.data_matrix * np.minimum(1.0, tau / fd.norms())[:, None]
    expected, n_persons = _person_reference(fd, fd.metadata["subject"].astype(str), clipped)
    settings = MeanSettings(tau=tau, rho=0.2, person_column="subject")
    n_file = frame["subject"].nunique()  # persons of the file: one whose curves were all dropped counts too
    assert n_file > n_persons
    for source in (root / "c.csv", root / "c.parquet", fd):
        sums = stream.stream_mean_sums(source, settings, chunk_rows=50)
        assert sums.n == n_file < fd.n
        np.testing.assert_allclose(sums.total, expected, rtol=1e-12)


def test_person_averaged_pca_and_kde(files):
    root, frame = files
    fd = load_curves(root / "c.parquet")
    settings = PcaSettings(tau=1.0, person_column="subject")
    sums = stream.stream_pca_sums(root / "c.parquet", settings, chunk_rows=64)
    from fdp_core.releases.pca import coefficient_matrix, pca_basis

    X, _ = coefficient_matrix(fd.data_matrix, pca_basis(settings, fd.unit_grid, fd.weights).functions, fd.weights,
                              1.0)
    outer = np.einsum("ij,ik->ijk", X, X).reshape(fd.n, -1)
    expected, n_persons = _person_reference(fd, fd.metadata["subject"].astype(str), outer)
    assert sums.n == frame["subject"].nunique() == n_persons + 1  # one person has no usable curve
    np.testing.assert_allclose(sums.gram.ravel(), expected, rtol=1e-12, atol=1e-15)
    kde_settings = KdeSettings(box=(0.0, 1.5), bandwidth=0.1, person_column="subject")
    ksums = stream.stream_kde_sums(root / "c.csv", kde_settings, "max", chunk_rows=64).sums
    points, _ = extract_features(fd, "max")
    averaged = pd.Series(np.clip(points, 0.0, 1.5)).groupby(fd.metadata["subject"].astype(str).to_numpy()).mean()
    # The person without a usable curve is observed at the box centre (a data-free point).
    direct = plan_kde_release(np.append(averaged.to_numpy(), 0.75), KdeSettings(box=(0.0, 1.5), bandwidth=0.1))
    assert ksums.n == averaged.size + 1
    _close(direct.density, plan_kde_release(ksums, kde_settings).density)


def test_person_column_must_exist(files):
    root, _ = files
    with pytest.raises(DataError, match="no column 'who' to group curves by person"):
        stream.stream_mean_sums(root / "c.csv", MeanSettings(tau=1.0, person_column="who"))


def test_one_shot_iterator_cannot_serve_two_passes():
    values = np.random.default_rng(0).normal(size=(5, 4))
    chunks = iter([(values, pd.DataFrame({"x": list("aabbc")}))])
    with pytest.raises(ParameterError, match="already consumed"):
        stream.stream_mean_sums(chunks, MeanSettings(tau=1.0, person_column="x"), grid=np.linspace(0, 1, 4))
    again = stream.stream_mean_sums(lambda: iter([(values, pd.DataFrame({"x": list("aabbc")}))]),
                                    MeanSettings(tau=1.0, person_column="x"), grid=np.linspace(0, 1, 4))
    assert again.n == 3


# --------------------------------------------------------------------------- bad input: the loader's messages

@pytest.mark.parametrize("raw, fragment", [
    (b"id,0,0.5,1\na,1,2,3\nb,4,x,y\n", "row 3 has 2 non-numeric cell(s) (column(s) 0.5, 1)"),
    (b"0,0.5,1\n1,2,3\n4,5\n", "row 3 has 2 fields but the header has 3"),
    (b"0,0.5,1\n1,inf,3\n4,5,6\n", "infinite value at t = 0.5"),
    (b"0,0.5,1\n1,2,3\n1,2,3\n", "all 2 curves are identical"),
    (b"0,0.5,1\n1,1,1\n2,2,2\n", "every curve is constant"),
    (b"0,0.5,1\n1,,3\n,5,6\n", "all 2 curves have missing values"),
    (b"0,0.5,1\n1,2,3\n", "only 1 complete curve"),
    (b"id;0;0,5;1\na;1,2;3,4;5,6\nb;0,1;0,2;0,3\n", "European CSV"),
])
def test_streamed_bad_files_give_the_loaders_messages(tmp_path, raw, fragment):
    path = tmp_path / "bad.csv"
    path.write_bytes(raw)
    with pytest.raises(DataError) as local:
        load_curves(path)
    with pytest.raises(DataError) as streamed:
        stream.stream_mean_sums(path, MeanSettings(tau=1.0), chunk_rows=1)
    assert fragment in str(local.value) and fragment in str(streamed.value)


@pytest.mark.parametrize("interpolate", [False, True])
def test_parquet_row_groups_decoded_whole_or_in_batches_give_the_same_sums(files, monkeypatch, interpolate):
    """Row groups up to ROW_GROUP_BYTES are decoded whole and sliced; bigger ones go through
    iter_batches. Both read the same rows, missing values (dropped or interpolated) included."""
    root, _ = files
    settings = MeanSettings(tau=1.0, person_column="subject")
    missing = "interpolate" if interpolate else "drop"
    whole = stream.stream_mean_sums(root / "c.parquet", settings, chunk_rows=128, missing=missing)
    monkeypatch.setattr(stream, "ROW_GROUP_BYTES", 0)
    batched = stream.stream_mean_sums(root / "c.parquet", settings, chunk_rows=128, missing=missing)
    assert (whole.n, whole.n_dropped, whole.n_clipped) == (batched.n, batched.n_dropped, batched.n_clipped)
    assert whole.n_dropped == (1 if interpolate else 2)
    _close(whole.total, batched.total)


COLUMN_SETTINGS = [MeanSettings(tau=0.3, rho=0.2), MeanSettings(tau=None, value_range=(0.2, 0.9), rho=0.2),
                   MeanSettings(tau_from_data=True, tau=None, value_range=(0.2, 0.9)),
                   MeanSettings(tau=0.3, person_column="subject", value_range=(0.2, 0.9), n_public=900)]


@pytest.mark.parametrize("settings", COLUMN_SETTINGS, ids=["plain", "range-centred", "tau-from-data", "persons"])
@pytest.mark.parametrize("missing", ["drop", "interpolate"])
def test_parquet_chunks_read_as_columns_give_the_block_sums(files, monkeypatch, settings, missing):
    """A Parquet chunk of finite values is consumed as its columns (no block is built); one with a
    missing value as a validated block. Both give update()'s counts, and its sums to rounding."""
    root, _ = files
    used = []
    columns_update = stream.MeanAccumulator.update_columns

    def counted(self, columns, weights=None):
        used.append(columns_update(self, columns, weights))
        return used[-1]

    monkeypatch.setattr(stream.MeanAccumulator, "update_columns", counted)
    fast = stream.stream_mean_sums(root / "c.parquet", settings, chunk_rows=211, missing=missing)
    assert used.count(True) == len(used) - 1  # rows 5 and 7 (missing values) share the first chunk
    monkeypatch.setattr(stream.MeanAccumulator, "update_columns", lambda self, columns, weights=None: False)
    block = stream.stream_mean_sums(root / "c.parquet", settings, chunk_rows=211, missing=missing)
    for name in ("n", "n_dropped", "n_unusable", "n_curves", "n_clipped", "n_range_clipped", "raw_count"):
        assert getattr(fast, name) == getattr(block, name), name
    assert fast.n_range_clipped > 0 if settings.value_range else fast.n_range_clipped == 0
    np.testing.assert_allclose(fast.tau, block.tau, rtol=1e-14)
    _close(fast.total, block.total)
    np.testing.assert_allclose(fast.raw_sum, block.raw_sum, rtol=1e-12)


def test_parquet_columns_of_other_types_and_nulls(tmp_path):
    """Integer and float32 grid columns are read as float64 and a null as a missing value, as in memory."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(4)
    n = 700
    columns = {"id": pa.array([f"p{i}" for i in range(n)]), "0": pa.array(rng.integers(-3, 4, n)),
               "0.5": pa.array(rng.normal(size=n).astype(np.float32)),
               "1": pa.array([None if i == 333 else float(v) for i, v in enumerate(rng.normal(size=n))])}
    path = tmp_path / "types.parquet"
    pq.write_table(pa.table(columns), path, row_group_size=250)
    settings = MeanSettings(tau=1.5, rho=0.2)
    expected = plan_mean_release(load_curves(path), settings)
    got = plan_mean_release(stream.stream_mean_sums(path, settings, chunk_rows=100), settings)
    assert (got.n, got.n_dropped, got.n_clipped) == (expected.n, expected.n_dropped, expected.n_clipped)
    assert (got.n, got.n_dropped) == (n, 1)
    np.testing.assert_allclose(got.raw_mean, expected.raw_mean, rtol=1e-12)
    _close(expected.sample(np.random.default_rng(3), 2), got.sample(np.random.default_rng(3), 2))


@pytest.mark.parametrize("kind, fragment", [("identical", "all 500 curves are identical"),
                                            ("constant", "every curve is constant")])
def test_parquet_columns_keep_the_whole_file_checks(tmp_path, kind, fragment):
    rng = np.random.default_rng(2)
    rows = np.tile(rng.normal(size=(1, 6)), (500, 1)) if kind == "identical" else np.repeat(
        rng.normal(size=(500, 1)), 6, axis=1)
    path = tmp_path / f"{kind}.parquet"
    pd.DataFrame(rows, columns=[str(j) for j in range(6)]).to_parquet(path, row_group_size=120)
    with pytest.raises(DataError, match=fragment):
        stream.stream_mean_sums(path, MeanSettings(tau=1.0), chunk_rows=50)
    varied = rows.copy()
    varied[437] += np.arange(6)  # one curve in a late chunk differs and varies: both checks pass
    pd.DataFrame(varied, columns=[str(j) for j in range(6)]).to_parquet(path, row_group_size=120)
    assert stream.stream_mean_sums(path, MeanSettings(tau=1.0), chunk_rows=50).n == 500


def test_stream_memory_is_bounded_by_the_chunk(tmp_path):
    """A small scale check: numpy memory of a streamed pass stays near one chunk, not the file."""
    n, m = 40_000, 40
    frame = pd.DataFrame(np.random.default_rng(1).normal(size=(n, m)), columns=[str(j) for j in range(m)])
    path = tmp_path / "big.parquet"
    frame.to_parquet(path, row_group_size=5000)
    del frame
    tracemalloc.start()
    try:
        sums = stream.stream_mean_sums(path, MeanSettings(tau=1.0), chunk_rows=1000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert sums.n == n
    block = n * m * 8
    assert peak < 0.25 * block, f"peak {peak / 2**20:.1f} MB for a {block / 2**20:.1f} MB block"


# --------------------------------------------------------------------------- CLI

def _cli(args):
    return cli.main([str(a) for a in args])


@pytest.mark.parametrize("engine", ["stream", "dask"])
def test_cli_engines_agree_with_local(files, tmp_path, engine):
    root, _ = files
    common = ["--data", root / "c.csv", "--epsilon", "1", "--seed", "5"]
    runs = {
        "mean": ["release", "mean", "--preview", "--kernel", "matern52", "--rho", "0.2", "--tau", "0.6"],
        "kde": ["release", "kde", "--preview", "--feature", "max", "--box", "0,1.5"],
        "pca": ["release", "pca", "--preview", "--tau", "1", "--k", "2"],
    }
    for kind, argv in runs.items():
        outs = {}
        for eng in ("local", engine):
            out = tmp_path / f"{kind}_{eng}"
            assert _cli(argv + common + ["--engine", eng, "--chunk-rows", "300", "--out", out]) == 0
            outs[eng] = pd.read_csv(out / "release.csv").to_numpy()
            record = json.loads((out / "release.json").read_text())
            assert record["n"] == 1200  # every curve of the file, the 2 dropped ones too
        np.testing.assert_allclose(outs[engine], outs["local"], rtol=1e-9, atol=1e-12)


def test_cli_scheduler_needs_dask(files, tmp_path):
    root, _ = files
    code = _cli(["release", "mean", "--preview", "--data", root / "c.csv", "--kernel", "matern52", "--rho", "0.2", "--tau", "1",
                 "--epsilon", "1", "--engine", "stream", "--scheduler", "tcp://127.0.0.1:1", "--out", tmp_path / "o"])
    assert code == 2


def test_auto_engine_streams_only_big_files(files, monkeypatch):
    root, _ = files
    assert stream.choose_engine("auto", root / "c.csv") == "local"
    monkeypatch.setattr(choice, "AUTO_STREAM_BYTES", 10)
    assert stream.choose_engine("auto", root / "c.csv") == "stream"
    assert stream.choose_engine("dask", root / "c.csv") == "dask"


def test_auto_engine_bounds_the_values_in_memory_not_the_file_size(files, tmp_path, monkeypatch):
    """A Parquet file of constant curves compresses to almost nothing yet expands to its full
    rows x columns in memory: auto reads that from the footer. A CSV holds at most 4x its size."""
    root, frame = files
    assert stream.value_bytes_bound(root / "c.parquet") == frame.shape[0] * frame.shape[1] * 8
    assert stream.value_bytes_bound(root / "c.csv") == 4 * (root / "c.csv").stat().st_size
    monkeypatch.setattr(choice, "AUTO_STREAM_BYTES", 2**20)  # a small file stands for a big one
    n_rows = choice.AUTO_STREAM_BYTES // (8 * 64) + 1
    constant = pd.DataFrame(np.zeros((n_rows, 64)), columns=[repr(float(x)) for x in np.linspace(0, 1, 64)])
    constant.to_parquet(tmp_path / "zeros.parquet")
    assert (tmp_path / "zeros.parquet").stat().st_size < choice.AUTO_STREAM_BYTES / 20
    assert stream.choose_engine("auto", tmp_path / "zeros.parquet") == "stream"
    (tmp_path / "not.parquet").write_bytes(b"PAR1 but not really")
    assert stream.choose_engine("auto", tmp_path / "not.parquet") == "local"  # the loader says what is wrong
    assert stream.choose_engine("auto", tmp_path / "missing.csv") == "local"


def test_auto_engine_above_the_threshold_streams_the_same_release(files, tmp_path, monkeypatch):
    """With the threshold lowered below this file, --engine auto takes the streaming engine
    (bounded memory) and writes the release the local engine writes."""
    root, _ = files
    argv = ["release", "mean", "--preview", "--data", root / "c.parquet", "--kernel", "matern52", "--rho", "0.2", "--tau", "0.6",
            "--epsilon", "1", "--seed", "5", "--chunk-rows", "300"]
    assert _cli(argv + ["--engine", "local", "--out", tmp_path / "local"]) == 0
    monkeypatch.setattr(choice, "AUTO_STREAM_BYTES", 1024)
    streamed = []
    real = stream.stream_mean_sums
    monkeypatch.setattr(stream, "stream_mean_sums", lambda *a, **k: streamed.append(1) or real(*a, **k))
    assert _cli(argv + ["--out", tmp_path / "auto"]) == 0
    assert streamed == [1]
    np.testing.assert_allclose(pd.read_csv(tmp_path / "auto" / "release.csv").to_numpy(),
                               pd.read_csv(tmp_path / "local" / "release.csv").to_numpy(), rtol=1e-9, atol=1e-12)
