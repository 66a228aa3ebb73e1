"""Person unit and public value range (METHODS.md 11-12; fdp_core.data.preprocess)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from fdp_core.cli import main
from fdp_core.data.loading import from_arrays, load_curves
from fdp_core.errors import DataError, ParameterError
from fdp_core.data.features import person_features
from fdp_core.releases.mean import MEAN_MECHANISMS, MeanSettings, analyst_view, plan_mean_release, resolve_tau
from fdp_core.releases.pca import PcaSettings, private_pca
from fdp_core.data.preprocess import (PublicBounds, curves_per_person, data_tau, likely_person_column, parse_value_range,
                                 person_average, person_codes, person_row_weights, prepare_curves,
                                 repeated_id_columns)

GRID = np.linspace(0, 1, 21)


def _fd(values, subjects=None):
    meta = None if subjects is None else pd.DataFrame({"subject": subjects})
    return from_arrays(GRID, values, metadata=meta)


def _independent_person_mean(values, subjects, lo, hi, tau, weights):
    """Straight loops: clip, centre, L2-clip, average per person, average persons."""
    c = (lo + hi) / 2
    per_person = {}
    for x, s in zip(values, subjects):
        y = np.minimum(np.maximum(x, lo), hi) - c
        norm = math.sqrt(float(np.sum(weights * y * y)))
        if norm > tau:
            y = y * (tau / norm)
        per_person.setdefault(s, []).append(y)
    rows = [np.mean(v, axis=0) for v in per_person.values()]
    return np.mean(rows, axis=0), len(rows)


def test_prepare_curves_matches_an_independent_computation():
    rng = np.random.default_rng(0)
    values = rng.normal(0.5, 0.6, (30, GRID.size))
    subjects = [f"p{i % 11}" for i in range(30)]
    fd = _fd(values, subjects)
    bounds = PublicBounds((0.0, 1.0), None, "subject")
    prepared = prepare_curves(fd, bounds, 0.3)
    expected, n = _independent_person_mean(values, subjects, 0.0, 1.0, 0.3, fd.weights)
    assert prepared.n == n == 11 and prepared.n_curves == 30
    np.testing.assert_allclose(prepared.mean(), expected, atol=1e-13)
    norms = np.sqrt(prepared.values**2 @ fd.weights)
    assert np.all(norms <= 0.3)  # a person's average stays in the ball (and is re-clipped in floating point)
    assert prepared.n_range_clipped > 0 and prepared.n_norm_clipped > 0


def test_person_helpers_and_codes():
    meta = pd.DataFrame({"subject": ["a", "b", "a", " c", "b", "a"]})
    codes, P = person_codes(meta, "subject", 6)
    assert P == 3 and list(codes) == [0, 1, 0, 2, 1, 0]
    np.testing.assert_allclose(person_row_weights(codes, P), [1 / 3, 1 / 2, 1 / 3, 1, 1 / 2, 1 / 3])
    block = np.arange(12.0).reshape(6, 2)
    np.testing.assert_allclose(person_average(block, codes, P), [[(0 + 4 + 10) / 3, (1 + 5 + 11) / 3], [5, 6], [6, 7]])
    with pytest.raises(DataError, match="no column 'person'"):
        person_codes(meta, "person", 6)
    with pytest.raises(DataError, match="empty in 1 row"):
        person_codes(pd.DataFrame({"subject": ["a", ""]}), "subject", 2)
    counts = curves_per_person(meta, "subject")
    assert counts.to_dict() == {1: 1, 2: 1, 3: 1}


def test_value_range_parsing_and_defaults():
    assert parse_value_range("60,200") == (60.0, 200.0)
    for bad in ("1", "a,b", "2,1", "nan,1", "1,inf"):
        with pytest.raises(ParameterError):
            parse_value_range(bad)
    b = PublicBounds((60.0, 200.0))
    assert b.default_tau(GRID) == 70.0 and np.all(b.centre(GRID) == 130.0)
    ref = ((0.0, 80.0), (1.0, 180.0))
    rb = PublicBounds((60.0, 200.0), ref)
    r = 80 + 100 * GRID
    np.testing.assert_allclose(rb.centre(GRID), r)
    assert rb.default_tau(GRID) == pytest.approx(np.max(np.maximum(200 - r, r - 60)))
    with pytest.raises(ParameterError, match="needs a public value range"):
        PublicBounds(None, ref).validated()
    with pytest.raises(ParameterError, match="cover the whole domain"):
        PublicBounds((0.0, 1.0), ((0.2, 0.5), (1.0, 0.5))).centre(GRID)


@pytest.mark.parametrize("mechanism", MEAN_MECHANISMS)
def test_one_person_moves_the_mean_by_at_most_the_sensitivity(mechanism):
    """Replace one *person* (all 5 of their curves) adversarially: the estimate's change stays
    within the replace-one sensitivity computed with n = number of persons."""
    rng = np.random.default_rng(3)
    base = rng.uniform(0.2, 0.8, (25, GRID.size))
    subjects = [f"p{i // 5}" for i in range(25)]  # 5 persons x 5 curves
    s = MeanSettings(mechanism=mechanism, kernel="matern52", rho=0.2, epsilon=1.0, psi=1e-3, M=4, K=5,
                     eta=1.0 if mechanism == "iclp-ar" else 1.5, value_range=(0.0, 1.0), person_column="subject")
    plan = plan_mean_release(_fd(base, subjects), s)
    assert plan.n == 5
    for trial in range(5):
        other = base.copy()
        other[:5] = rng.choice([-5.0, 5.0], size=(5, GRID.size)) * rng.uniform(0, 1, (5, GRID.size))
        other_plan = plan_mean_release(_fd(other, subjects), s)
        diff = plan.estimate_coefficients - other_plan.estimate_coefficients
        if mechanism == "gaussian":
            lam = plan.noise_scales**2 / plan.sigma**2  # sd_l = sigma sqrt(lambda_l)
            change = math.sqrt(float(np.sum(diff**2 / lam)))
        else:
            active = plan.noise_scales > 0
            change = float(np.sum(np.abs(diff[active]) / plan.noise_scales[active])) * s.epsilon
        assert change <= plan.sensitivity * (1 + 1e-9)
    # Without the person column, the same data count as 25 individuals: n = 25.
    assert plan_mean_release(_fd(base, subjects), MeanSettings(**{**s.__dict__, "person_column": None})).n == 25


def test_pca_person_matrix_keeps_trace_at_most_one_and_counts_persons():
    rng = np.random.default_rng(4)
    values = rng.normal(0.5, 0.3, (24, GRID.size))
    subjects = [f"p{i // 4}" for i in range(24)]
    fd = _fd(values, subjects)
    res = private_pca(fd, PcaSettings(k=1, basis="fourier", p=5, epsilon=1.0, tau=0.2, value_range=(0.0, 1.0),
                                      centring="public", person_column="subject"), rng=1)
    assert res.n == 6
    codes, P = person_codes(fd.metadata, "subject", 24)
    w = person_row_weights(codes, P)
    assert np.all(np.bincount(codes, weights=w) == pytest.approx(1.0))  # each person's weights sum to 1: trace <= 1


def test_kde_person_observation_is_the_average_of_clipped_features():
    values = np.vstack([np.full(GRID.size, v) + 0.01 * GRID for v in (0.2, 0.4, 3.0, 0.6)])
    fd = _fd(values, ["a", "a", "a", "b"])
    obs = person_features(fd, "value:0", ((0.0, 1.0),), person_column="subject")
    np.testing.assert_allclose(obs.points, [(0.2 + 0.4 + 1.0) / 3, 0.6])  # 3.0 clipped to the box first
    assert obs.n_persons == 2 and obs.n_curves == 4 and obs.n_outside_box == 1


def test_tau_from_data_measures_the_centred_curves():
    values = np.full((3, GRID.size), 150.0) + np.arange(3)[:, None] + 1e-9 * GRID
    fd = _fd(values)
    s = MeanSettings(tau=None, tau_from_data=True, value_range=(60.0, 200.0))
    tau, flags = resolve_tau(fd, s)
    assert tau == pytest.approx(22.0) and flags  # max |X - 130|, not max |X| = 152
    assert data_tau(fd, PublicBounds()) == pytest.approx(152.0)
    pca = private_pca(fd, PcaSettings(k=1, basis="fourier", p=3, tau=None, tau_from_data=True,
                                      value_range=(60.0, 200.0), centring="public"), rng=0)
    assert pca.tau == pytest.approx(22.0, rel=1e-6)


def test_bias_and_total_error_in_the_analyst_view():
    rng = np.random.default_rng(5)
    values = rng.normal(0.55, 0.05, (40, GRID.size))
    fd = _fd(values)
    plan = plan_mean_release(fd, MeanSettings(kernel="matern52", rho=0.2, epsilon=1.0, value_range=(0.0, 1.0)))
    view = analyst_view(plan)
    diff = plan.estimate - values.mean(axis=0)
    assert view["bias_l2"] == pytest.approx(math.sqrt(float(diff**2 @ fd.weights)))
    assert view["total_rms_error_l2"] == pytest.approx(math.sqrt(view["bias_l2"] ** 2 + plan.expected_sq_l2_error))
    # Centring at c = 0.5 removes the shrink-to-0 bias: far smaller than with centre 0 at the same tau.
    uncentred = plan_mean_release(fd, MeanSettings(kernel="matern52", rho=0.2, epsilon=1.0, tau=0.5))
    assert view["bias_l2"] < 0.2 * uncentred.bias()
    assert "away from that average" in view["accuracy"]


def test_repeated_id_columns():
    meta = pd.DataFrame({"subject": [f"s{i // 3}" for i in range(60)], "sex": ["m", "f"] * 30,
                         "visit": [i % 2 for i in range(60)], "child": [f"c{i}" for i in range(60)]})
    assert repeated_id_columns(meta) == ["subject"]
    assert likely_person_column(meta) == "subject"
    assert likely_person_column(meta[["sex", "child"]]) is None


# --------------------------------------------------------------------------- real data

def test_dti_release_counts_subjects(shared_data, tmp_path):
    data = shared_data / "dti_cca.csv"
    fd = load_curves(data)
    subjects = fd.metadata["subject"].nunique()
    out = tmp_path / "dti"
    assert main(["release", "mean", "--preview", "--data", str(data), "--person-column", "subject", "--value-range", "0,1",
                 "--kernel", "matern52", "--rho", "0.1", "--epsilon", "1", "--seed", "1", "--out", str(out)]) == 0
    record = json.loads((out / "release.json").read_text())
    view = json.loads((out / "analyst_view.json").read_text())
    assert record["n"] == subjects == 142  # no subject lost all their visits to missing values
    assert record["unit_of_privacy"] == "person (column 'subject')" and record["n_policy"] == "declared public"
    assert record["tau"] == 0.5 and record["value_range"] == [0.0, 1.0]
    assert view["n_curves"] == fd.n == 376 and view["n_dropped"] == 6
    assert "n_dropped" not in record and "n_clipped" not in record


def test_berkeley_mean_in_centimetres(shared_data, tmp_path):
    out = tmp_path / "growth"
    assert main(["release", "mean", "--preview", "--data", str(shared_data / "berkeley_growth.csv"), "--value-range", "60,200",
                 "--kernel", "matern52", "--rho", "0.1", "--epsilon", "1", "--seed", "2", "--out", str(out)]) == 0
    table = pd.read_csv(out / "release.csv")
    record = json.loads((out / "release.json").read_text())
    assert table["value"].median() > 90 and record["tau"] == 70.0 and record["centre_value"] == 130.0
    # The non-private target is close to the raw mean in cm (centring at 130 removes the shrink to 0).
    view = json.loads((out / "analyst_view.json").read_text())
    assert view["bias_l2"] < 5.0


def test_cli_reference_curve_and_bad_ranges(tmp_path, capsys):
    rng = np.random.default_rng(8)
    values = 100 + 50 * GRID[None, :] + rng.normal(0, 3, (20, GRID.size))
    frame = pd.DataFrame(values, columns=[repr(float(t)) for t in GRID])
    data = tmp_path / "heights.csv"
    frame.to_csv(data, index=False)
    ref = tmp_path / "reference.csv"
    pd.DataFrame({"t": [0.0, 1.0], "value": [100.0, 150.0]}).to_csv(ref, index=False)
    out = tmp_path / "out"
    assert main(["release", "mean", "--preview", "--data", str(data), "--kernel", "matern52", "--rho", "0.2", "--epsilon", "1",
                 "--value-range", "60,200", "--reference", str(ref), "--seed", "1", "--out", str(out)]) == 0
    record = json.loads((out / "release.json").read_text())
    r = 100 + 50 * GRID
    assert record["centre"] == "public reference curve" and record["reference_curve"] == [[0.0, 100.0], [1.0, 150.0]]
    assert record["tau"] == pytest.approx(float(np.max(np.maximum(200 - r, r - 60))))
    view = json.loads((out / "analyst_view.json").read_text())
    assert view["bias_l2"] < 2.0  # centred at the reference: no shrinkage towards 0
    for bad, message in ((["--value-range", "1,0"], "lo < hi"), (["--value-range", "nan,1"], "finite"),
                         (["--reference", str(ref)], "needs a public value range"),
                         (["--value-range", "0,1", "--person-column", "nobody"], "no column 'nobody'")):
        code = main(["release", "mean", "--preview", "--data", str(data), "--kernel", "matern52", "--rho", "0.2", "--epsilon",
                     "1", "--tau", "1", *bad, "--out", str(tmp_path / "bad")])
        err = capsys.readouterr().err
        assert code == 2 and message in err and err.count("\n") == 1, err
    assert not (tmp_path / "bad").exists()


# --------------------------------------------------------------------------- the file's persons (issue 22)

def test_n_counts_every_person_of_the_file_usable_or_not():
    """A person whose curves were all dropped (missing values) still counts in n, in file order."""
    from fdp_core.data.loading import load_curves
    from fdp_core.data.features import person_features
    from fdp_core.data.preprocess import file_persons, prepare_curves

    text = "subj,0,0.5,1\na,0.1,0.2,0.3\nb,0.1,,0.3\nc,0.2,0.2,0.2\na,0.0,0.1,0.1\nd,,0.1,0.1\n"
    fd = load_curves(text.encode())
    assert fd.n == 3 and fd.report.n_dropped == 2
    persons = file_persons(fd, "subj")
    assert persons.n_persons == 4 and persons.n_unusable == 2 and list(persons.index) == [0, 2, 0]
    curves = file_persons(fd, None)
    assert curves.n_persons == 5 and list(curves.index) == [0, 2, 3]
    prepared = prepare_curves(fd, PublicBounds((0.0, 1.0), None, "subj"), 0.5)
    assert prepared.n == 4 and list(prepared.person_index) == [0, 2] and prepared.n_unusable == 2
    # KDE: persons without a usable curve are observed at the box centre; n_public pads the same way.
    obs = person_features(fd, "mean:0:1", ((0.0, 4.0),), person_column="subj")
    assert obs.n_persons == 4 and obs.n_unusable == 2 and sorted(obs.points)[-2:] == [2.0, 2.0]
    assert person_features(fd, "mean:0:1", ((0.0, 4.0),), n_public=9).points.size == 9
    with pytest.raises(DataError, match="smaller than the 5 persons in the file"):
        person_features(fd, "mean:0:1", ((0.0, 4.0),), n_public=4)


def test_identifier_columns_are_ids_person_columns_and_unique_keys():
    from fdp_core.data.preprocess import identifier_columns

    meta = pd.DataFrame({"subject": [1, 1, 2, 2, 3, 3], "visit": [1, 2, 1, 2, 1, 2], "case": [0, 0, 1, 1, 0, 0],
                         "row": list("abcdef"), "child_id": [5, 5, 6, 6, 7, 7], "valid": [1, 0, 1, 0, 1, 0]})
    assert identifier_columns(meta) == {"subject", "row", "child_id"}
    assert identifier_columns(meta, person_column="case") == {"subject", "row", "child_id", "case"}
