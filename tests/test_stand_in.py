import numpy as np
import pytest

from fdp_core.publish.commit import NOTHING_DECLARED, looked_at_field
from fdp_core.data.stand_in import SEALED, stand_in_curves, stand_in_view


def test_stand_in_follows_the_declared_design():
    fd = stand_in_curves(40, 25, (2.0, 5.0), (-1.0, 3.0), seed=1)
    assert fd.data_matrix.shape == (40, 25)
    assert np.allclose(fd.grid_points, np.linspace(2.0, 5.0, 25))
    assert fd.data_matrix.min() >= -1.0 and fd.data_matrix.max() <= 3.0
    assert np.ptp(fd.data_matrix, axis=0).min() > 0  # the curves differ: a usable stand-in
    again = stand_in_curves(40, 25, (2.0, 5.0), (-1.0, 3.0), seed=1)
    assert np.array_equal(fd.data_matrix, again.data_matrix)


def test_stand_in_refuses_an_empty_design():
    with pytest.raises(ValueError):
        stand_in_curves(10, 20, (0.0, 1.0), (1.0, 1.0))


def test_sealed_statement_only_when_every_view_was_on_the_stand_in():
    assert looked_at_field([stand_in_view("the raw curves")], sealed=True) == [SEALED]
    assert looked_at_field([], sealed=True) == [SEALED]
    mixed = [stand_in_view("the raw curves"), "the non-private mean estimate"]
    assert looked_at_field(mixed, sealed=True) == mixed
    assert looked_at_field([stand_in_view("x")]) == [stand_in_view("x")]
    assert looked_at_field(None) == [NOTHING_DECLARED]


def test_the_simulated_stand_in_takes_the_declared_person_column():
    from fdp_core.data.preprocess import file_persons
    from fdp_core.data.stand_in import matched_stand_in, with_person_ids

    fd = with_person_ids(stand_in_curves(30, 11, (0.0, 1.0), (0.0, 1.0)), "subject")
    assert list(fd.metadata.columns) == ["subject"] and file_persons(fd, "subject").n_persons == 30
    assert matched_stand_in(fd, n=30, points=11, domain=(0, 1), person_column="subject", label="x") is fd
    with pytest.raises(ValueError, match="not the declared 12 on"):
        matched_stand_in(fd, n=30, points=12, domain=(0, 1), person_column="subject", label="x")
    with pytest.raises(ValueError, match="no column 'id'"):
        matched_stand_in(fd, n=30, points=11, domain=(0, 1), person_column="id", label="x")
