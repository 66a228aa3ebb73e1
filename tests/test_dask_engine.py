"""--engine dask on a LocalCluster of 2 workers: the same release as the local engine (1e-9)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")

from fdp_core.engines import dask_engine  # noqa: E402
from fdp_core.data.loading import load_curves  # noqa: E402
from fdp_core.errors import DataError  # noqa: E402
from fdp_core.data.features import extract_features  # noqa: E402
from fdp_core.releases.kde import KdeSettings, plan_kde_release  # noqa: E402
from fdp_core.releases.mean import MeanSettings, plan_mean_release  # noqa: E402
from fdp_core.releases.pca import PcaSettings, private_pca  # noqa: E402


@pytest.fixture(scope="module")
def client():
    client, cluster = dask_engine.client_for(None, n_workers=2, processes=False)
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("dask")
    rng = np.random.default_rng(3)
    n, m = 2000, 20
    t = np.linspace(0.0, 1.0, m)
    X = 0.5 + 0.3 * np.sin(np.outer(rng.normal(size=n), t * 3)) + 0.1 * rng.normal(size=(n, m))
    X[10, 4] = np.nan
    frame = pd.DataFrame(X, columns=[repr(float(x)) for x in t])
    frame.insert(0, "person", rng.integers(0, 700, n))
    frame.to_csv(root / "d.csv", index=False)
    frame.to_parquet(root / "d.parquet", row_group_size=256)
    return root


def _close(a, b, rtol=1e-9):
    a, b = np.asarray(a), np.asarray(b)
    assert np.max(np.abs(a - b)) <= rtol * max(float(np.max(np.abs(a))), 1e-300)


def test_partitions_cover_the_file_once(files):
    from fdp_core.engines import stream

    reader = stream.open_source(files / "d.csv")
    parts = dask_engine.partitions(reader, target_bytes=20_000)
    assert len(parts) > 5
    assert all(a.end == b.start for a, b in zip(parts, parts[1:]))
    assert parts[-1].end == (files / "d.csv").stat().st_size
    assert len(dask_engine.partitions(stream.open_source(files / "d.parquet"))) == 8


@pytest.mark.parametrize("name", ["d.csv", "d.parquet"])
def test_dask_equals_local(client, files, name):
    fd = load_curves(files / name)
    opts = dict(client=client, partition_bytes=15_000, chunk_rows=100)
    for settings in (MeanSettings(tau=0.7, rho=0.2), MeanSettings(mechanism="bernstein", lo=0, hi=1, tau=None)):
        expected = plan_mean_release(fd, settings).sample(np.random.default_rng(1), 2)
        got = plan_mean_release(dask_engine.dask_mean_sums(files / name, settings, **opts), settings)
        _close(expected, got.sample(np.random.default_rng(1), 2))
        assert got.n == fd.n + 1 and got.n_dropped == 1  # n counts the dropped curve too
    pca = PcaSettings(k=2, tau=1.0)
    _close(private_pca(fd, pca, 4).components,
           private_pca(dask_engine.dask_pca_sums(files / name, pca, **opts), pca, 4).components)
    kde = KdeSettings(mechanism="iclp", box=(0.0, 1.2))
    points, _ = extract_features(fd, "mean:0:1")
    points = np.append(points, 0.6)  # the dropped curve's person is observed at the box centre
    sums = dask_engine.dask_kde_sums(files / name, kde, "mean:0:1", **opts).sums
    _close(plan_kde_release(points, kde).sample(np.random.default_rng(2))[0],
           plan_kde_release(sums, kde).sample(np.random.default_rng(2))[0])


def test_dask_persons_equal_stream(client, files):
    from fdp_core.engines import stream

    settings = MeanSettings(tau=0.7, rho=0.2, person_column="person", value_range=(0.0, 1.0))
    local = stream.stream_mean_sums(files / "d.parquet", settings)
    remote = dask_engine.dask_mean_sums(files / "d.parquet", settings, client=client, partition_bytes=10_000)
    assert remote.n == local.n < 2000
    _close(local.total, remote.total)
    in_memory = plan_mean_release(load_curves(files / "d.parquet"), settings)
    _close(in_memory.sample(np.random.default_rng(5), 2),
           plan_mean_release(remote, settings).sample(np.random.default_rng(5), 2))


def test_dask_bad_cell_is_named(client, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_bytes(b"id,0,0.5,1\na,1,2,3\nb,4,x,y\nc,1,1,2\n")
    with pytest.raises(DataError, match=r"row 3 has 2 non-numeric cell\(s\)"):
        dask_engine.dask_mean_sums(path, MeanSettings(tau=1.0), client=client)


def test_dask_refuses_long_files(client, tmp_path):
    path = tmp_path / "long.csv"
    path.write_bytes(b"id,t,value\na,0,1\na,1,2\nb,0,2\nb,1,1\n")
    from fdp_core.errors import ParameterError

    with pytest.raises(ParameterError, match="--engine stream"):
        dask_engine.dask_mean_sums(path, MeanSettings(tau=1.0), client=client)


@pytest.mark.parametrize("address", ["x", "0,1", "", "tcp://host", "tcp://127.0.0.1:1"])
def test_bad_or_unreachable_scheduler_is_a_parameter_error(files, address):
    from fdp_core.errors import ParameterError

    with pytest.raises(ParameterError, match="--scheduler must be an address|cannot reach the Dask scheduler"):
        dask_engine.dask_mean_sums(files / "d.csv", MeanSettings(tau=1.0), scheduler=address or "x")


@pytest.mark.parametrize("name", ["d.csv", "d.parquet"])
def test_dask_sums_equal_the_default_engine_to_1e_12(client, files, name):
    """The statistic itself (before any noise): the partitions' sums against the local engine's
    (the default for a file this size), in any order of summation, to relative 1e-12."""
    from fdp_core.engines import stream

    for settings in (MeanSettings(tau=0.7, rho=0.2), MeanSettings(tau=0.7, rho=0.2, person_column="person",
                                                                  value_range=(0.0, 1.0))):
        local = stream.stream_mean_sums(files / name, settings)
        remote = dask_engine.dask_mean_sums(files / name, settings, client=client, partition_bytes=15_000)
        assert (remote.n, remote.n_dropped, remote.n_clipped) == (local.n, local.n_dropped, local.n_clipped)
        _close(local.total, remote.total, rtol=1e-12)
        in_memory = plan_mean_release(load_curves(files / name), settings)
        _close(in_memory.sample(np.random.default_rng(5), 2),
               plan_mean_release(remote, settings).sample(np.random.default_rng(5), 2), rtol=1e-12)
