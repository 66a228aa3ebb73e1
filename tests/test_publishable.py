"""Publishable means private: the neighbour test (issue 12, METHODS.md 11-12).

For every release kind and every export path (CLI ``release``, commit + export, ``replay``)
the same settings run on a data set D and on a neighbour D' (one curve replaced: by a curve
that gets clipped, or by one with a missing value that gets dropped). Every publishable file
must then be identical field for field, except the noised output itself (values,
coefficients, components, densities) and the per-release id and timestamps. The comparison
walks the JSON/YAML/CSV/HTML generically, so a newly added field computed from the data
makes this test fail. The analyst view (not publishable) is checked to *see* the
difference, so the test cannot pass by comparing two identical data sets.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from fdp_core.publish import export
from fdp_core.budget.accounting import Ledger
from fdp_core.cli import main
from fdp_core.data.loading import load_curves
from fdp_core.releases.kde import KdeSettings
from fdp_core.releases.mean import MEAN_MECHANISMS, MeanSettings
from fdp_core.releases.pca import PcaSettings

GRID = np.linspace(0.0, 1.0, 15)
N_CURVES = 36
TIME_KEYS = {"created_utc", "timestamp"}
# Columns of the publishable CSVs that hold the noised output.
OUTPUT_COLUMNS = {"value", "unit_value", "density", "pc1", "pc2", "component_1", "component_2", "V_1", "V_2"}
# The private selection's output: the grid point it drew (with fresh randomness: no seed).
OUTPUT_KEYS = {"chosen_penalty", "chosen_rho"}
# Every mechanism gets every mechanism-specific option (each reads only its own).
MEAN_OPTIONS = ["--psi", "0.02", "--M", "5", "--K", "6"]


def _curves(seed=0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = GRID
    values = 0.5 + 0.15 * np.sin(2 * np.pi * t)[None, :] * rng.normal(1, 0.3, (N_CURVES, 1)) \
        + rng.normal(0, 0.03, (N_CURVES, t.size))
    subjects = [f"s{i // 3 if i < 30 else i}" for i in range(N_CURVES)]  # 10 persons x 3 curves, 6 singles
    meta = pd.DataFrame({"subject": subjects, "age": np.round(rng.uniform(20, 60, N_CURVES), 1)})
    return meta, values


def _write(path: Path, meta: pd.DataFrame, values: np.ndarray) -> Path:
    frame = pd.DataFrame(values, columns=[repr(float(t)) for t in GRID])
    pd.concat([meta, frame], axis=1).to_csv(path, index=False, na_rep="")
    return path


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """D and its neighbours: the last curve (a person of its own) replaced."""
    folder = tmp_path_factory.mktemp("neighbours")
    meta, values = _curves()
    clipped = values.copy()
    clipped[-1] = 5.0  # far outside the public range [0, 1] and the box: clipped
    dropped = values.copy()
    dropped[-1, 3] = np.nan  # a missing value: the curve is dropped on load
    # The last person (one curve) replaced by a person with three visits, in the same place of the file.
    visits_meta = pd.concat([meta, meta.iloc[[-1, -1]]], ignore_index=True)
    visits = np.vstack([values[:-1], np.full((3, GRID.size), 0.9) - np.array([[0.0], [0.2], [0.4]])])
    return {"D": _write(folder / "D.csv", meta, values),
            "clipped": _write(folder / "D_clipped.csv", meta, clipped),
            "dropped": _write(folder / "D_dropped.csv", meta, dropped),
            "visits": _write(folder / "D_visits.csv", visits_meta, visits),
            "n_persons": meta["subject"].nunique()}


# --------------------------------------------------------------------------- generic comparison

def _normalise(text: str, ids) -> str:
    for i in ids:
        text = text.replace(i, "<ID>")
    return text


def _assert_same(a, b, path="$"):
    """Walk two JSON-like trees: identical everywhere except timestamps (and the selection's draw)."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert set(a) == set(b), f"{path}: keys differ {set(a) ^ set(b)}"
        for key in a:
            if key in TIME_KEYS or key in OUTPUT_KEYS:
                continue
            _assert_same(a[key], b[key], f"{path}.{key}")
        return
    if isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), f"{path}: lengths differ {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, f"{path}[{i}]")
        return
    assert a == b, f"{path}: {a!r} != {b!r} (a data-dependent value in a publishable file)"


def _compare_csv(text_a: str, text_b: str, name: str):
    a, b = pd.read_csv(pd.io.common.StringIO(text_a)), pd.read_csv(pd.io.common.StringIO(text_b))
    assert list(a.columns) == list(b.columns) and a.shape == b.shape, name
    for column in a.columns:
        if column in OUTPUT_COLUMNS or column.startswith(("beta_", "eigenfunction_", "covariance")):
            continue  # the noised output: allowed to differ
        pd.testing.assert_series_equal(a[column], b[column], check_exact=True, obj=f"{name}:{column}")


_FIGURE = re.compile(r"<h2>Sanitized output</h2>.*?<h2>Accuracy</h2>", re.S)


def _compare_files(files_a: dict[str, str], files_b: dict[str, str], ids=()):
    assert set(files_a) == set(files_b)
    for name in files_a:
        a, b = _normalise(files_a[name], ids), _normalise(files_b[name], ids)
        if name.endswith((".json", ".ipynb")):
            _assert_same(json.loads(a), json.loads(b), name)
        elif name.endswith((".py", ".txt")):  # the check script and README.txt: public facts only
            assert a == b, f"{name} differs"
        elif name.endswith(".yaml"):
            _assert_same(yaml.safe_load(a), yaml.safe_load(b), name)
        elif name.endswith(".csv"):
            _compare_csv(a, b, name)
        elif name.endswith(".html"):
            # The sanitized-output figure holds the noised values; everything else must match.
            a, b = _FIGURE.sub("", a), _FIGURE.sub("", b)
            a, b = (re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[^<\s]*", "<T>", x) for x in (a, b))
            assert a == b, f"{name} differs outside the sanitized output"
        else:
            raise AssertionError(f"unexpected publishable file {name}")


def _read_folder(folder: Path, exclude=("analyst_view.json",)) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.iterdir()) if p.is_file() and p.name not in exclude
            and not p.name.startswith(".")}


def _analyst(folder: Path) -> dict:
    view = json.loads((folder / "analyst_view.json").read_text())
    assert view.get("publishable") is False or "not publish" in json.dumps(view).lower()
    return view


def _run(args, out: Path):
    assert main([*args, "--out", str(out)]) == 0
    return out


def _check_pair(tmp_path, args_for, neighbour, analyst_key="n_clipped"):
    """Run the CLI on D and the neighbour with identical arguments and seed; compare."""
    out_a = _run(args_for("D"), tmp_path / "a")
    out_b = _run(args_for(neighbour), tmp_path / "b")
    assert set(_read_folder(out_a)) >= {"release.json", "release.csv"}
    _compare_files(_read_folder(out_a), _read_folder(out_b))
    view_a, view_b = _analyst(out_a), _analyst(out_b)
    assert view_a[analyst_key] != view_b[analyst_key]  # the analyst sees the neighbour; the publishable files do not
    return view_a, view_b


# --------------------------------------------------------------------------- CLI release

@pytest.mark.parametrize("mechanism", MEAN_MECHANISMS)  # every registry entry, new ones included
@pytest.mark.parametrize("neighbour", ["clipped", "dropped"])
def test_cli_mean_publishable_files_do_not_depend_on_one_person(mechanism, neighbour, pair, tmp_path):
    def args_for(which):
        return ["release", "mean", "--preview", "--data", str(pair[which]), "--mechanism", mechanism, *MEAN_OPTIONS, *(["--eta", "1"] if mechanism == "iclp-ar" else []),
                "--kernel", "matern52", "--rho", "0.2", "--epsilon", "1", "--value-range", "0,1",
                "--person-column", "subject", "--n-public", str(pair["n_persons"]), "--seed", "7",
                *([] if mechanism == "bernstein" else ["--tau", "0.3"])]
    key = "n_dropped" if neighbour == "dropped" else ("n_range_clipped" if mechanism == "bernstein" else "n_clipped")
    _check_pair(tmp_path, args_for, neighbour, key)


@pytest.mark.parametrize("mechanism", ["gaussian", "iclp"])
@pytest.mark.parametrize("feature,box", [("value:0.5", "0,1"), ("value:0.25,value:0.75", "0,1,0,1")])
def test_cli_kde_publishable_files_do_not_depend_on_one_person(mechanism, feature, box, pair, tmp_path):
    def args_for(which):
        return ["release", "kde", "--preview", "--data", str(pair[which]), "--feature", feature, "--box", box,
                "--mechanism", mechanism, "--epsilon", "1", "--grid-size", "16", "--person-column", "subject",
                "--seed", "7"]
    _check_pair(tmp_path, args_for, "clipped")


@pytest.mark.parametrize("sampler,k", [("exact", 1), ("deflation", 2), ("gibbs", 2)])
@pytest.mark.parametrize("neighbour", ["clipped", "dropped"])
def test_cli_pca_publishable_files_do_not_depend_on_one_person(sampler, k, neighbour, pair, tmp_path):
    def args_for(which):
        return ["release", "pca", "--preview", "--data", str(pair[which]), "--k", str(k), "--sampler", sampler,
                "--basis", "fourier", "--p", "5", "--gibbs-sweeps", "40", "--epsilon", "2", "--value-range", "0,1",
                "--tau", "0.2", "--person-column", "subject", "--n-public", str(pair["n_persons"]), "--seed", "7"]
    view_a, _ = _check_pair(tmp_path, args_for, neighbour, "n_dropped" if neighbour == "dropped" else "n_clipped")
    assert "variance_ratio" in view_a and "acceptance_rate" in view_a


@pytest.mark.parametrize("kind,extra,key", [
    ("covariance", ["--mechanism", "gaussian"], "n_clipped"),
    ("covariance", ["--mechanism", "iclp"], "n_clipped"),
    ("regression", ["--covariates", "age", "--B", "2"], "n_clipped_curves"),
])
def test_cli_summaries_publishable_files_do_not_depend_on_one_curve(kind, extra, key, pair, tmp_path):
    """The covariance and regression releases (issue 17) follow the same split."""
    def args_for(which):
        return ["release", kind, "--preview", "--data", str(pair[which]), *extra, "--kernel", "matern52", "--rho", "0.2",
                "--epsilon", "1", "--value-range", "0,1", "--tau", "0.3", "--seed", "7"]
    _check_pair(tmp_path, args_for, "clipped", key)


# --------------------------------------------------------------------------- commit, export and replay

def _commit(kind, which, pair, settings, feature=None):
    fd = load_curves(pair[which])
    ledger = Ledger(50.0, 1e-3)
    if kind == "mean":
        release = export.commit_mean(ledger, fd, settings, data_label="data.csv")
    elif kind == "kde":
        release = export.commit_kde(ledger, fd, feature, settings, data_label="data.csv")
    else:
        release = export.commit_pca(ledger, fd, settings, data_label="data.csv")
    files = {name: content.decode() for name, content in export.bundle_files(release, ledger).items()}
    ids = [release.id] + [e.id for e in ledger.entries]
    return release, files, ids


def _compare_commits(kind, pair, settings, neighbour, feature=None, key="n_clipped"):
    ra, fa, ids_a = _commit(kind, "D", pair, settings, feature)
    rb, fb, ids_b = _commit(kind, neighbour, pair, settings, feature)
    assert set(fa) == set(export.BUNDLE_FILES) and "analyst_view.json" not in fa
    ids = ids_a + ids_b
    _compare_files(fa, fb, ids)
    assert ra.analyst[key] != rb.analyst[key]
    zipped = export.export_zip(ra, None)
    assert b"analyst_view" not in zipped and b"n_clipped" not in zipped
    return ra, rb


BOUNDS = dict(value_range=(0.0, 1.0), person_column="subject")


@pytest.mark.parametrize("mechanism", MEAN_MECHANISMS)  # every registry entry, new ones included
@pytest.mark.parametrize("neighbour", ["clipped", "dropped"])
def test_committed_mean_bundle_does_not_depend_on_one_person(mechanism, neighbour, pair):
    settings = MeanSettings(mechanism=mechanism, kernel="matern52", rho=0.2, epsilon=1.0, psi=0.02, M=5, K=6,
                            eta=1.0 if mechanism == "iclp-ar" else 1.5, tau=None if mechanism == "bernstein" else 0.3,
                            n_public=pair["n_persons"], **BOUNDS)
    key = "n_dropped" if neighbour == "dropped" else ("n_range_clipped" if mechanism == "bernstein" else "n_clipped")
    ra, _ = _compare_commits("mean", pair, settings, neighbour, key=key)
    assert ra.record["n"] == pair["n_persons"] and ra.record["unit_of_privacy"].startswith("person")


@pytest.mark.parametrize("mechanism", ["gaussian", "iclp"])
@pytest.mark.parametrize("feature,box", [("value:0.5", ((0.0, 1.0),)), ("value:0.25,value:0.75", ((0, 1), (0, 1)))])
def test_committed_density_bundle_does_not_depend_on_one_person(mechanism, feature, box, pair):
    settings = KdeSettings(mechanism=mechanism, box=box, epsilon=1.0, grid_size=16, person_column="subject")
    _compare_commits("kde", pair, settings, "clipped", feature)


@pytest.mark.parametrize("sampler,k", [("exact", 1), ("deflation", 2), ("gibbs", 2)])
def test_committed_pca_bundle_does_not_depend_on_one_person(sampler, k, pair):
    settings = PcaSettings(k=k, sampler=sampler, basis="fourier", p=5, gibbs_sweeps=40, epsilon=2.0, tau=0.2,
                           centring="public", n_public=pair["n_persons"], **BOUNDS)
    _compare_commits("pca", pair, settings, "clipped")


@pytest.mark.parametrize("kind", ["mean", "kde", "pca"])
def test_replayed_bundle_does_not_depend_on_one_person(kind, pair, tmp_path):
    if kind == "mean":
        settings = MeanSettings(kernel="matern52", rho=0.2, epsilon=1.0, tau=0.3, n_public=pair["n_persons"],
                                **BOUNDS)
        release, _, _ = _commit("mean", "D", pair, settings)
    elif kind == "kde":
        release, _, _ = _commit("kde", "D", pair, KdeSettings(box=((0.0, 1.0),), epsilon=1.0, grid_size=16,
                                                              person_column="subject"), "value:0.5")
    else:
        release, _, _ = _commit("pca", "D", pair, PcaSettings(k=1, basis="fourier", p=5, epsilon=2.0, tau=0.2,
                                                              centring="public", **BOUNDS))
    config = tmp_path / "config.yaml"
    config.write_text(export.config_yaml(release.config))
    outs = []
    for which in ("D", "clipped"):
        out = tmp_path / f"replay_{which}"
        data = tmp_path / which / "data.csv"  # the file name is a public label: the same for both
        data.parent.mkdir()
        data.write_bytes(pair[which].read_bytes())
        # Each neighbouring world has its own ledger: D and D' are the same people (a near copy), so
        # one shared ledger would rightly charge both replays to one data set's budget.
        assert main(["replay", str(config), "--data", str(data), "--out", str(out),
                     "--ledger", str(tmp_path / f"ledger_{which}.sqlite3")]) == 0
        outs.append(out)
    ids = [json.loads((o / "release.json").read_text())["id"] for o in outs]
    _compare_files(_read_folder(outs[0]), _read_folder(outs[1]), ids)
    views = [_analyst(o) for o in outs]
    assert views[0]["n_clipped"] != views[1]["n_clipped"]
    record = json.loads((outs[0] / "release.json").read_text())
    assert record["looked_at_before_commit"] == [export.PRE_REGISTERED]


def test_the_neighbour_test_catches_a_data_dependent_field(pair, tmp_path, monkeypatch):
    """Power: put the clipped-curve count back into release.json and the comparison must fail."""
    from fdp_core.releases import mean

    real = mean.release_record

    def leaky(plan, values, **kwargs):
        return {**real(plan, values, **kwargs), "n_clipped": plan.n_clipped}

    monkeypatch.setattr("fdp_core.commands.release_mean.release_record", leaky)

    def args_for(which):
        return ["release", "mean", "--preview", "--data", str(pair[which]), "--kernel", "matern52", "--rho", "0.2",
                "--epsilon", "1", "--value-range", "0,1", "--tau", "0.3", "--seed", "7"]
    with pytest.raises(AssertionError, match="n_clipped"):
        _check_pair(tmp_path, args_for, "clipped")


# --------------------------------------------------------------------------- every kind x path x neighbour, defaults
# Issue 22: with DEFAULT settings (no --n-public), n is the number of persons in the file, so a
# curve dropped for a missing value, a clipped curve, or a person with another number of visits
# leaves every publishable file identical except the noised output. "visits" replaces a person,
# so it needs the person column; "dropped" and "clipped" run with and without it.

def _mean_args(mechanism):
    return ["release", "mean", "--preview", "--mechanism", mechanism, *MEAN_OPTIONS, "--kernel", "matern52", "--rho", "0.2",
            *(["--eta", "1"] if mechanism == "iclp-ar" else [])]


CLI_KINDS = {
    **{f"mean-{m}": _mean_args(m) for m in MEAN_MECHANISMS},
    "kde-gaussian-1d": ["release", "kde", "--preview", "--feature", "value:0.5", "--box", "0,1", "--grid-size", "16"],
    "kde-iclp-1d": ["release", "kde", "--preview", "--mechanism", "iclp", "--feature", "value:0.5", "--box", "0,1",
                    "--grid-size", "16"],
    "kde-gaussian-2d": ["release", "kde", "--preview", "--feature", "value:0.25,value:0.75", "--box", "0,1,0,1",
                        "--grid-size", "16"],
    "kde-iclp-2d": ["release", "kde", "--preview", "--mechanism", "iclp", "--feature", "value:0.25,value:0.75", "--box",
                    "0,1,0,1", "--grid-size", "16"],
    **{f"pca-{sampler}": ["release", "pca", "--preview", "--k", str(k), "--sampler", sampler, "--basis", "fourier", "--p", "5",
                          "--gibbs-sweeps", "40"] for sampler, k in (("exact", 1), ("deflation", 2), ("gibbs", 2))},
    "covariance-gaussian": ["release", "covariance", "--preview", "--mechanism", "gaussian", "--kernel", "matern52",
                            "--rho", "0.2"],
    "covariance-iclp": ["release", "covariance", "--preview", "--mechanism", "iclp", "--kernel", "matern52", "--rho", "0.2"],
    "regression": ["release", "regression", "--preview", "--covariates", "age", "--B", "2", "--kernel", "matern52",
                   "--rho", "0.2"],
    # The streamed engine counts the same persons (dropped ones included) as the in-memory one.
    "mean-gaussian-stream": [*_mean_args("gaussian"), "--engine", "stream"],
    "kde-iclp-1d-stream": ["release", "kde", "--preview", "--mechanism", "iclp", "--feature", "value:0.5", "--box", "0,1",
                           "--grid-size", "16", "--engine", "stream"],
    "pca-exact-stream": ["release", "pca", "--preview", "--k", "1", "--basis", "fourier", "--p", "5", "--engine", "stream"],
    "select": ["select", "--kernel", "matern52", "--penalties", "1e-4,1e-2,1", "--rhos", "0.1,0.3",
               "--select-epsilon", "1", "--no-ledger"],
}
SEEDLESS = {"select"}  # the selection draws with fresh randomness (its draw is OUTPUT_KEYS)
CASES = [(kind, unit, neighbour) for kind in CLI_KINDS for unit in ("curve", "person")
         for neighbour in ("clipped", "dropped", "visits") if not (unit == "curve" and neighbour == "visits")]


def _default_args(kind, unit, which, pair):
    """The kind's command with only the public inputs every release needs: epsilon and the range."""
    return [*CLI_KINDS[kind], "--data", str(pair[which]), "--epsilon", "2", "--value-range", "0,1",
            *(["--person-column", "subject"] if unit == "person" else []),
            *([] if kind in SEEDLESS else ["--seed", "7"])]


def _check_defaults(tmp_path, args_for, neighbour):
    out_a = _run(args_for("D"), tmp_path / "a")
    out_b = _run(args_for(neighbour), tmp_path / "b")
    files_a, files_b = _read_folder(out_a), _read_folder(out_b)
    assert files_a and ("release.json" in files_a or "selection.json" in files_a)
    _compare_files(files_a, files_b)
    view_a, view_b = _analyst(out_a), _analyst(out_b)
    if neighbour != "clipped":  # a clipped curve may leave every count unchanged (e.g. inside the box)
        assert view_a != view_b  # the analyst sees the neighbour; the publishable files do not
    return files_a, view_a, view_b


@pytest.mark.parametrize("kind,unit,neighbour", CASES, ids=["-".join(c) for c in CASES])
def test_cli_default_settings_publish_nothing_about_one_person(kind, unit, neighbour, pair, tmp_path):
    files, view_a, view_b = _check_defaults(tmp_path, lambda w: _default_args(kind, unit, w, pair), neighbour)
    record = json.loads(files.get("release.json") or files["selection.json"])
    # n is the persons of the file (rows without a person column), usable or not: a public input.
    n_file = pair["n_persons"] if unit == "person" else N_CURVES
    assert record["n"] == n_file
    if neighbour == "dropped" and "n_persons_without_usable_curve" in view_b:
        assert view_b["n_persons_without_usable_curve"] == view_a["n_persons_without_usable_curve"] + 1


@pytest.mark.parametrize("mechanism", ["gaussian", "iclp"])
def test_cli_counts_density_does_not_depend_on_one_individual(mechanism, tmp_path):
    """Densities from counts: one count unit moved far outside the box (clipped); n = total count."""
    d, d_prime = tmp_path / "D.csv", tmp_path / "D2.csv"
    d.write_text("value,count\n0.2,5\n0.5,7\n0.8,4\n5.0,0\n")
    d_prime.write_text("value,count\n0.2,5\n0.5,6\n0.8,4\n5.0,1\n")
    files = {}
    for label, path in (("a", d), ("b", d_prime)):
        out = _run(["release", "kde-counts", "--counts", str(path), "--mechanism", mechanism, "--box", "0,1",
                    "--epsilon", "1", "--grid-size", "32", "--seed", "7"], tmp_path / label)
        files[label] = _read_folder(out)
    _compare_files(files["a"], files["b"])
    assert json.loads(files["a"]["release.json"])["n"] == 16


def _commit_default(kind, which, pair, unit):
    from fdp_core.publish.commit_summaries import commit_covariance, commit_regression
    from fdp_core.releases.covariance import CovarianceSettings
    from fdp_core.releases.regression import RegressionSettings

    person = {"person_column": "subject"} if unit == "person" else {}
    fd = load_curves(pair[which])
    ledger = Ledger(50.0, 1e-3)
    if kind == "mean":
        release = export.commit_mean(ledger, fd, MeanSettings(epsilon=2.0, value_range=(0.0, 1.0), tau=None,
                                                              **person), data_label="data.csv")
    elif kind == "kde":
        release = export.commit_kde(ledger, fd, "value:0.5", KdeSettings(box=((0.0, 1.0),), epsilon=2.0,
                                                                         grid_size=16, **person),
                                    data_label="data.csv")
    elif kind == "pca":
        release = export.commit_pca(ledger, fd, PcaSettings(k=1, basis="fourier", p=5, epsilon=2.0,
                                                            value_range=(0.0, 1.0), **person), data_label="data.csv")
    elif kind == "covariance":
        release = commit_covariance(ledger, fd, CovarianceSettings(epsilon=2.0, lo=0.0, hi=1.0, **person),
                                    data_label="data.csv")
    else:
        release = commit_regression(ledger, fd, RegressionSettings(covariates=("age",), epsilon=2.0, lo=0.0,
                                                                   hi=1.0, **person), data_label="data.csv")
    files = {name: content.decode() for name, content in export.bundle_files(release, ledger).items()}
    return release, files, [release.id] + [e.id for e in ledger.entries]


COMMIT_CASES = [(kind, unit, neighbour) for kind in ("mean", "kde", "pca", "covariance", "regression")
                for unit, neighbour in (("curve", "dropped"), ("person", "dropped"), ("person", "visits"),
                                        ("person", "clipped"))]


@pytest.mark.parametrize("kind,unit,neighbour", COMMIT_CASES, ids=["-".join(c) for c in COMMIT_CASES])
def test_commit_bundle_and_replay_default_settings(kind, unit, neighbour, pair, tmp_path):
    """Commit + bundle (every file, and the zip's members), then replay of the first commit's config."""
    import io
    import zipfile

    ra, fa, ids_a = _commit_default(kind, "D", pair, unit)
    rb, fb, ids_b = _commit_default(kind, neighbour, pair, unit)
    _compare_files(fa, fb, ids_a + ids_b)
    assert ra.analyst != rb.analyst
    members = []
    for release in (ra, rb):
        with zipfile.ZipFile(io.BytesIO(export.export_zip(release, None))) as archive:
            members.append({name.split("/", 1)[1]: archive.read(name).decode() for name in archive.namelist()})
    _compare_files(*members, ids_a + ids_b)
    config = tmp_path / "config.yaml"
    config.write_text(export.config_yaml(ra.config))
    outs = []
    for which in ("D", neighbour):
        data = tmp_path / which / "data.csv"  # the file name is a public label: the same for both
        data.parent.mkdir()
        data.write_bytes(pair[which].read_bytes())
        outs.append(tmp_path / f"replay_{which}")
        # One ledger per neighbouring world (see test_replayed_bundle_does_not_depend_on_one_person).
        assert main(["replay", str(config), "--data", str(data), "--out", str(outs[-1]),
                     "--ledger", str(tmp_path / f"ledger_{which}.sqlite3")]) == 0
    ids = [json.loads((o / "release.json").read_text())["id"] for o in outs]
    ids += [e["id"] for o in outs for e in json.loads((o / "ledger.json").read_text())["entries"]]
    _compare_files(_read_folder(outs[0]), _read_folder(outs[1]), ids)


def test_every_analyst_view_carries_the_marker_and_the_warning(pair, tmp_path):
    """Issue 31: whatever the kind, analyst_view.json says it is not for publication, in the same words."""
    from fdp_core.publish.release import ANALYST_WARNING

    for kind in CLI_KINDS:
        out = _run(_default_args(kind, "person", "D", pair), tmp_path / kind)
        view = json.loads((out / "analyst_view.json").read_text())
        assert view["publishable"] is False and view["warning"] == ANALYST_WARNING, kind
    for kind in ("mean", "kde", "pca", "covariance", "regression"):
        release, _, _ = _commit_default(kind, "D", pair, "person")
        view = json.loads(export.analyst_view_json(release))
        assert view["publishable"] is False and view["warning"] == ANALYST_WARNING, kind


def test_the_default_neighbour_test_catches_a_planted_leak(pair, tmp_path, monkeypatch):
    """Power of the default-settings test: the number of persons with a usable curve (data, not a public
    input) planted in selection.json must make the comparison fail on the dropped neighbour."""
    from dataclasses import replace

    from fdp_core.explore import private_selection

    real_select = private_selection.select_parameters

    def leaky(fd, settings, *args, **kwargs):
        selection = real_select(fd, settings, *args, **kwargs)
        counts = private_selection.selection_counts(fd, settings)
        usable = counts["n_persons"] - counts["n_persons_without_usable_curve"]
        return replace(selection, public_inputs={**selection.public_inputs, "n_usable": usable})

    monkeypatch.setattr("fdp_core.commands.select.select_parameters", leaky)
    with pytest.raises(AssertionError, match="n_usable"):
        _check_defaults(tmp_path, lambda w: _default_args("select", "person", w, pair), "dropped")


# --------------------------------------------------------------------------- sparse curves through the ledger
# Issue 24: ``release mean --sparse --ledger`` commits A and b with the exact discrete sampler and writes the
# bundle. Default settings (the public domain, value range and epsilon only); the last person is replaced by
# one whose values get clipped, whose observations fall outside the domain (dropped), or who has another
# number of visits at other times. Each neighbouring world has its own ledger (see
# test_replayed_bundle_does_not_depend_on_one_person).

SPARSE_PERSONS = 30
# --kernel and --rho are required by release mean (the values are SparseSettings' defaults).
SPARSE_DEFAULTS = ["--sparse", "--domain", "0,1", "--value-range", "-1,2", "--epsilon", "2", "--kernel", "matern52",
                   "--rho", "0.2"]


@pytest.fixture(scope="module")
def sparse_pair(tmp_path_factory):
    rng = np.random.default_rng(5)
    rows = []
    for i in range(SPARSE_PERSONS):
        t = np.sort(rng.uniform(0.0, 1.0, rng.integers(2, 11)))
        rows += [(f"p{i:02d}", x, 0.5 + np.sin(2 * np.pi * x) + rng.normal(0, 0.2)) for x in t]
    frame = pd.DataFrame(rows, columns=["id", "t", "value"])
    last = frame["id"] == f"p{SPARSE_PERSONS - 1:02d}"
    worlds = {"D": frame}
    worlds["clipped"] = frame.assign(value=np.where(last, 40.0, frame["value"]))  # far outside [-1, 2]
    worlds["dropped"] = frame.assign(t=np.where(last, frame["t"] + 5.0, frame["t"]))  # outside the domain [0, 1]
    other = pd.DataFrame({"id": f"p{SPARSE_PERSONS - 1:02d}", "t": [0.05, 0.3, 0.31, 0.6, 0.7, 0.95, 0.99],
                          "value": [1.9, -0.8, 0.2, 1.4, -1.0, 0.3, 0.7]})
    worlds["visits"] = pd.concat([frame[~last], other], ignore_index=True)
    out = {}
    for which, data in worlds.items():
        folder = tmp_path_factory.mktemp(f"sparse_{which}")
        data.to_csv(folder / "data.csv", index=False)  # the file name is a public label: the same for all
        out[which] = folder / "data.csv"
    return out


def _sparse_committed(data: Path, out: Path, ledger: Path, extra=()) -> Path:
    assert main(["ledger", "init", "--sparse", "--data", str(data), "--ledger", str(ledger), "--epsilon", "20",
                 "--delta", "1e-4"]) == 0
    return _run(["release", "mean", "--data", str(data), *SPARSE_DEFAULTS, *extra, "--ledger", str(ledger)], out)


def _sparse_files(folder: Path) -> tuple[dict[str, str], list[str]]:
    """The publishable files and every id in them; release.json's ``values`` (the noised mean on the public
    output grid, also in release.csv) is the output: only its length must match."""
    files = _read_folder(folder)
    record = json.loads(files["release.json"])
    values = record.pop("values")
    assert len(values) == len(record["grid"])
    files["release.json"] = json.dumps(record)
    ids = [record["id"]] + [e["id"] for e in json.loads(files["ledger.json"])["entries"]]
    return files, ids


def _check_sparse_pair(tmp_path, sparse_pair, neighbour, extra=()):
    outs, views = {}, {}
    for which in ("D", neighbour):
        outs[which] = _sparse_committed(sparse_pair[which], tmp_path / f"out_{which}", tmp_path / f"{which}.sqlite3",
                                        extra)
        views[which] = _analyst(outs[which])
    (fa, ids_a), (fb, ids_b) = _sparse_files(outs["D"]), _sparse_files(outs[neighbour])
    assert {"release.json", "release.csv", "coefficients.csv", "config.yaml", "ledger.json", "report.html"} <= set(fa)
    _compare_files(fa, fb, ids_a + ids_b)
    assert views["D"] != views[neighbour]  # the analyst sees the neighbour; the publishable files do not
    return outs, views


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
@pytest.mark.parametrize("neighbour", ["clipped", "dropped", "visits"])
def test_sparse_ledger_commit_and_replay_publish_nothing_about_one_person(noise, neighbour, sparse_pair, tmp_path):
    extra = [] if noise == "gaussian" else ["--sparse-noise", "laplace"]
    outs, views = _check_sparse_pair(tmp_path, sparse_pair, neighbour, extra)
    key = {"clipped": "n_values_clipped", "dropped": "n_outside_domain", "visits": "n_observations"}[neighbour]
    assert views["D"][key] != views[neighbour][key]
    record = json.loads((outs["D"] / "release.json").read_text())
    assert record["n"] == SPARSE_PERSONS and len(record["part_entry_ids"]) == 2
    # The first commit's config replayed on D and on the neighbour: the same comparison.
    replays = []
    for which in ("D", neighbour):
        replays.append(tmp_path / f"replay_{which}")
        assert main(["replay", str(outs["D"] / "config.yaml"), "--data", str(sparse_pair[which]), "--out",
                     str(replays[-1]), "--ledger", str(tmp_path / f"{which}.sqlite3")]) == 0
    (fa, ids_a), (fb, ids_b) = (_sparse_files(r) for r in replays)
    _compare_files(fa, fb, ids_a + ids_b)


def test_the_sparse_neighbour_test_catches_a_planted_leak(sparse_pair, tmp_path, monkeypatch):
    """Power: the number of observations (data, not a public input) written into release.json must fail."""
    from fdp_core.publish import sparse_commit

    real = sparse_commit.sparse_release_record

    def leaky(plan, values, **kwargs):
        return {**real(plan, values, **kwargs), "n_observations": plan.statistics.n_observations}

    monkeypatch.setattr(sparse_commit, "sparse_release_record", leaky)
    with pytest.raises(AssertionError, match="n_observations"):
        _check_sparse_pair(tmp_path, sparse_pair, "visits")


# --------------------------------------------------------------------------- long files, person-specific times
# Issue 37 (METHODS.md 24): a long file whose persons are seen at their own times is released on a
# declared public grid, never on the union of the observed times, and the route never depends on a
# statistic of the visit counts. 41 persons with 19 to 21 visits at random times (median 20); the
# neighbours redraw one person's times, or give one person 19 visits (the median moves to 19).

LONG_PERSONS = 41
LONG_GRID = "0,1,50"
LONG_KINDS = [kind for kind in CLI_KINDS if kind != "regression" and "--engine" not in CLI_KINDS[kind]]


@pytest.fixture(scope="module")
def long_pair(tmp_path_factory):
    rng = np.random.default_rng(37)
    visits = [19] * 20 + [20] * 11 + [21] * 10
    times = [np.sort(rng.uniform(0.0, 1.0, k)) for k in visits]

    def frame(all_times):
        rows = []
        for i, t in enumerate(all_times):
            level = 0.5 + 0.1 * np.random.default_rng(i).normal()
            rows += [(f"p{i:02d}", x, level + 0.2 * np.sin(2 * np.pi * x) + 0.02 * np.random.default_rng(
                [i, j]).normal()) for j, x in enumerate(t)]
        return pd.DataFrame(rows, columns=["id", "t", "value"])

    redrawn = list(times)
    redrawn[3] = np.sort(rng.uniform(0.0, 1.0, visits[3]))
    fewer = list(times)
    fewer[25] = times[25][:19]  # 21 persons of 41 with 19 visits: the median moves from 20 to 19
    assert np.median([t.size for t in times]) == 20 and np.median([t.size for t in fewer]) == 19
    out = {}
    for which, data in (("D", times), ("redrawn", redrawn), ("fewer", fewer)):
        folder = tmp_path_factory.mktemp(f"long_{which}")
        frame(data).to_csv(folder / "data.csv", index=False)  # the file name is a public label: the same for all
        out[which] = folder / "data.csv"
    out["observed"] = {float(x) for path in list(out.values()) for x in pd.read_csv(path)["t"]}
    return out


@pytest.mark.parametrize("extra", [[], ["--domain", "0,1"]], ids=["defaults", "domain"])
def test_long_file_without_a_declared_grid_is_refused_alike_for_every_neighbour(extra, long_pair, tmp_path, capsys):
    """Without --grid (and without --sparse) the same refusal for D and both neighbours: no route is
    chosen from the visit counts, nothing is written."""
    errors = []
    for which in ("D", "redrawn", "fewer"):
        out = tmp_path / which
        assert main([*_mean_args("gaussian"), "--data", str(long_pair[which]), "--epsilon", "2", "--value-range",
                     "0,1", *extra, "--seed", "7", "--out", str(out)]) == 2
        assert not out.exists()
        errors.append(capsys.readouterr().err.strip().splitlines()[-1])
    assert len(set(errors)) == 1 and ("--grid A,B,M" in errors[0] or "add --sparse" in errors[0])


@pytest.mark.parametrize("kind", LONG_KINDS)
def test_long_file_on_a_declared_grid_publishes_nothing_about_one_persons_times(kind, long_pair, tmp_path):
    """Default settings and --grid 0,1,50: every publishable file of D and of both neighbours is identical
    but for the noised output; a published t is one of the 50 declared points, never an observed time."""
    def args_for(which):
        return [*CLI_KINDS[kind], "--data", str(long_pair[which]), "--epsilon", "2", "--value-range", "0,1",
                "--grid", LONG_GRID, *([] if kind in SEEDLESS else ["--seed", "7"])]
    out = _run(args_for("D"), tmp_path / "D")
    files = _read_folder(out)
    for which in ("redrawn", "fewer"):
        _compare_files(files, _read_folder(_run(args_for(which), tmp_path / which)))
    record = json.loads(files.get("release.json") or files["selection.json"])
    assert record["n"] == LONG_PERSONS
    if "release.csv" in files and "t" in (table := pd.read_csv(out / "release.csv")).columns:
        np.testing.assert_array_equal(np.unique(table["t"].to_numpy()), np.linspace(0.0, 1.0, 50))
        assert not set(map(float, table["t"])) & long_pair["observed"]
