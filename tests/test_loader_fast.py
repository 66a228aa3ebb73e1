"""The fast (pyarrow) loader, CSV dialect messages, long-file column mapping and transposed files.

The fast path must accept exactly what the cell-by-cell parser accepts, with the same
numbers: the differential tests load the same bytes both ways.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fdp_core.data import arrow_io, loading as data

from fdp_core import cli
from fdp_core.data.loading import MAX_FILE_BYTES, load_curves, looks_transposed
from fdp_core.errors import DataError, ParameterError


def _slow(raw: bytes, **kwargs):
    """The cell-by-cell parser alone (what the loader did before the fast path)."""
    mapping = data.long_columns(kwargs.pop("id_column", None), kwargs.pop("t_column", None),
                                kwargs.pop("value_column", None))
    return data._from_rows(data._csv_rows(data._decode(raw, "x"), "x", mapping), "x", kwargs.get("missing", "drop"),
                           mapping)


def _refusal(raw: bytes, **kwargs) -> str:
    with pytest.raises(DataError) as info:
        load_curves(raw, name="upload.csv", **kwargs)
    message = str(info.value)
    assert "\n" not in message
    return message


# --------------------------------------------------------------------------- dialect messages

def test_european_csv_says_so():
    raw = b"id;0;0,5;1\na;1,2;3,4;5,6\nb;0,1;0,2;0,3\n"
    assert "looks like a European CSV (';' separators and decimal commas such as '0,5')" in _refusal(raw)


def test_european_csv_with_integer_header_names_a_value():
    raw = b"id;0;1;2\na;1,2;3,4;5,6\nb;0,1;0,2;0,3\n"
    assert "European CSV" in _refusal(raw) and "'1,2'" in _refusal(raw)


def test_trailing_comma_on_every_line_names_the_empty_column():
    raw = b"id,0,0.5,1,\na,1,2,3,\nb,2,3,5,\n"
    assert "every line ends with a trailing ',' (an empty column after '1')" in _refusal(raw)


def test_trailing_comma_on_the_header_only():
    raw = b"id,0,0.5,1,\na,1,2,3\nb,2,3,5\n"
    assert "the header ends with a trailing ',' (an empty column name after '1')" in _refusal(raw)


def test_trailing_comma_on_data_rows_only():
    raw = b"id,0,0.5,1\na,1,2,3,\nb,2,3,5\n"
    assert "row 2 has 5 fields but the header has 4 (ragged rows; it ends with a trailing separator)" in _refusal(raw)


def test_digit_separator_underscore_is_refused():
    raw = b"id,0,0.5,1\na,1_000,2,3\nb,2,3,5\nc,1,1,2\n"
    message = _refusal(raw)
    assert "row 2 has 1 non-numeric cell(s) (column(s) 0)" in message
    assert "'1_000'; '_' digit separators are not read as numbers" in message


def test_underscore_in_a_long_value_is_refused():
    raw = b"id,t,value\na,0,1_0\na,1,2\nb,0,1\nb,1,3\n"
    assert "row 2 has a non-numeric value ('1_0'; '_' digit separators" in _refusal(raw)


# --------------------------------------------------------------------------- long-file column mapping

STATION = b"station,day,temp,note\nA,1,3.5,x\nA,2,4.0,y\nA,3,5.5,z\nB,1,1.0,\nB,2,0.5,\nB,3,2.5,w\n"


def test_long_file_with_named_columns():
    fd = load_curves(STATION, id_column="station", t_column="day", value_column="temp")
    np.testing.assert_array_equal(fd.grid_points, [1, 2, 3])
    np.testing.assert_array_equal(fd.data_matrix, [[3.5, 4.0, 5.5], [1.0, 0.5, 2.5]])
    assert list(fd.metadata["id"]) == ["A", "B"]
    slow = _slow(STATION, id_column="station", t_column="day", value_column="temp")
    np.testing.assert_array_equal(fd.data_matrix, slow.data_matrix)


def test_long_file_mapping_errors():
    assert "no column 'stn' for the id (columns: station, day, temp, note)" in _refusal(
        STATION, id_column="stn", t_column="day", value_column="temp")
    with pytest.raises(ParameterError, match="needs all three"):
        load_curves(STATION, id_column="station")
    with pytest.raises(ParameterError, match="three different columns"):
        load_curves(STATION, id_column="station", t_column="day", value_column="day")


def test_long_file_without_mapping_hints_at_the_flags():
    assert "--id-column, --t-column, --value-column" in _refusal(STATION)


def test_cli_long_file_with_column_flags(tmp_path):
    path = tmp_path / "stations.csv"
    path.write_bytes(STATION)
    out = tmp_path / "out"
    code = cli.main(["release", "mean", "--preview", "--data", str(path), "--id-column", "station", "--t-column", "day",
                     "--value-column", "temp", "--kernel", "matern52", "--rho", "0.3", "--epsilon", "1",
                     "--tau", "5", "--seed", "1", "--out", str(out)])
    assert code == 0
    assert json.loads((out / "release.json").read_text())["n"] == 2


# --------------------------------------------------------------------------- transposed files

TRANSPOSED = b"day,A,B,C\n1,3.5,1.0,2\n2,4.0,0.5,2.5\n3,5.5,2.5,1\n"


def test_transposed_file_is_detected_and_transposed():
    assert looks_transposed(TRANSPOSED)
    assert not looks_transposed(b"id,0,1,2\na,1,2,3\nb,2,3,1\n")
    message = _refusal(TRANSPOSED)
    assert "looks transposed" in message and "--transpose" in message
    fd = load_curves(TRANSPOSED, transpose=True)
    np.testing.assert_array_equal(fd.grid_points, [1, 2, 3])
    np.testing.assert_array_equal(fd.data_matrix, [[3.5, 4.0, 5.5], [1.0, 0.5, 2.5], [2, 2.5, 1]])
    assert list(fd.metadata["id"]) == ["A", "B", "C"]


def test_transpose_refuses_ragged_rows():
    assert "can only be transposed" in _refusal(b"day,A,B\n1,3,1\n2,4\n3,5,2\n", transpose=True)


# --------------------------------------------------------------------------- fast path == cell-by-cell path

cell = st.one_of(st.floats(-1e6, 1e6, allow_nan=False).map(repr), st.integers(-1000, 1000).map(str),
                 st.sampled_from(["", "NA", "nan", "NaN", "null", "-", "n/a", " 1.5 ", "+2", ".5", "5.", "1e3",
                                  "-nan", "nan(1)", '"3"', "inf"]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 6), m=st.integers(2, 5), cells=st.data(), delimiter=st.sampled_from([",", ";", "\t"]),
       meta=st.booleans())
def test_fast_path_equals_cell_by_cell(n, m, cells, delimiter, meta):
    header = (["id"] if meta else []) + [repr(float(j)) for j in range(m)]
    rows = [delimiter.join(header)]
    for i in range(n):
        row = [cells.draw(cell) for _ in range(m)]
        rows.append(delimiter.join(([f"r{i}"] if meta else []) + row))
    raw = ("\n".join(rows) + "\n").encode()
    try:
        slow = _slow(raw)
    except DataError as exc:
        slow = str(exc).replace("x:", "").replace("x ", "")
    try:
        fast = load_curves(raw, name="x")
    except DataError as exc:
        fast = str(exc).replace("x:", "").replace("x ", "")
    if isinstance(slow, str) or isinstance(fast, str):
        assert isinstance(slow, str) and isinstance(fast, str), (slow, fast)
        assert slow == fast
        return
    np.testing.assert_array_equal(fast.data_matrix, slow.data_matrix)
    np.testing.assert_array_equal(fast.grid_points, slow.grid_points)
    assert fast.report == slow.report.__class__(**{**slow.report.__dict__, "source": fast.report.source})
    pd.testing.assert_frame_equal(fast.metadata, slow.metadata)


def test_fast_path_is_used_for_plain_files(monkeypatch):
    """A clean file never reaches the cell-by-cell parser."""
    def boom(*args, **kwargs):
        raise AssertionError("cell-by-cell parser used")

    monkeypatch.setattr(data, "_csv_rows", boom)
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(50, 7)), columns=[str(t) for t in np.linspace(0, 1, 7)])
    frame.insert(0, "id", [f"c{i}" for i in range(50)])
    fd = load_curves(frame.to_csv(index=False).encode())
    np.testing.assert_allclose(fd.data_matrix, frame.iloc[:, 1:].to_numpy(), rtol=0, atol=0)
    long = frame.melt(id_vars="id", var_name="t", value_name="value")
    fd_long = load_curves(long.to_csv(index=False).encode())
    assert fd_long.n == 50 and fd_long.m == 7


def test_parquet_grid_columns_read_as_floats(tmp_path):
    rng = np.random.default_rng(1)
    values = rng.normal(size=(20, 5))
    values[3, 2] = np.nan
    frame = pd.DataFrame(values, columns=["0", "0.25", "0.5", "0.75", "1"])
    frame.insert(0, "subject", np.arange(20) % 7)
    path = tmp_path / "curves.parquet"
    frame.to_parquet(path)
    fd = load_curves(path)
    assert fd.n == 19 and fd.report.n_dropped == 1
    np.testing.assert_array_equal(fd.data_matrix, np.delete(values, 3, axis=0))
    assert fd.metadata["subject"].dtype.kind == "i"
    csv_fd = load_curves(frame.to_csv(index=False).encode())
    np.testing.assert_array_equal(fd.data_matrix, csv_fd.data_matrix)


def test_path_above_the_upload_limit_is_read(tmp_path, monkeypatch):
    """Paths are not bound by the in-memory upload limit."""
    path = tmp_path / "big.csv"
    path.write_bytes(b"id,0,1\n" + b"".join(f"c{i},{i % 7},{i % 5}\n".encode() for i in range(2000)))
    monkeypatch.setattr(data, "MAX_FILE_BYTES", 1000)
    assert load_curves(path).n == 2000
    with pytest.raises(DataError, match="exceeds the 0 MB limit"):
        load_curves(path.read_bytes())


def test_upload_limit_is_configurable(monkeypatch):
    monkeypatch.setenv("FDP_MAX_UPLOAD_MB", "512")
    assert data._env_megabytes("FDP_MAX_UPLOAD_MB", 200) == 512 * 2**20
    monkeypatch.setenv("FDP_MAX_UPLOAD_MB", "nonsense")
    assert data._env_megabytes("FDP_MAX_UPLOAD_MB", 200) == 200 * 2**20
    assert MAX_FILE_BYTES == 200 * 2**20  # default


def test_big_file_refusal_names_the_row_without_the_slow_parser(tmp_path, monkeypatch):
    """Above MAX_SLOW_BYTES the error is located by streaming the rows, one at a time."""
    monkeypatch.setattr(data, "MAX_SLOW_BYTES", 1000)
    lines = [b"id,0,0.5,1"] + [f"c{i},{i},1,2".encode() for i in range(200)]
    lines[150] = b"c149,1,zz,2"
    path = tmp_path / "big.csv"
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(DataError, match=r"row 151 has 1 non-numeric cell\(s\) \(column\(s\) 0.5\), e.g. 'zz'"):
        load_curves(path)


def test_null_tokens_cover_every_case():
    assert {"NA", "na", "Na", "nA", "N/A", "NULL", "None", "NONE", "-", "", "NaN"} <= set(arrow_io.NULL_VALUES)


def test_stream_of_bytes_object():
    fd = load_curves(io.BytesIO(b"0,1,2\n1,2,3\n2,3,5\n"))
    assert fd.n == 2


def test_curve_with_every_value_missing_stays_on_the_fast_path(tmp_path, monkeypatch):
    """A named row of missing values is a dropped curve, also in files too big for the slow parser."""
    monkeypatch.setattr(data, "MAX_SLOW_BYTES", 100)
    path = tmp_path / "gaps.csv"
    path.write_bytes(b"id,0,0.5,1\na,1,2,3\nb,NA,,nan\nc,4,5,7\n")
    fd = load_curves(path)
    assert fd.n == 2 and fd.report.n_dropped == 1
    blank = tmp_path / "blank.csv"
    blank.write_bytes(b"id,0,0.5,1\na,1,2,3\n,,,\nc,4,5,7\n")  # a blank line: skipped by the csv reader
    monkeypatch.setattr(data, "MAX_SLOW_BYTES", 10**9)
    fd = load_curves(blank)
    assert fd.n == 2 and fd.report.n_dropped == 0


def test_the_delimiter_shortcut_answers_as_the_sniffer_does():
    """Without ';' or a tab in the sample the sniffer can only say ',' (or fail, read as ','): the
    shortcut that skips it gives the same delimiter on every sample, tricky quoting included."""
    import csv

    from fdp_core.data import loading, sparse_data

    def sniffed(sample):
        try:
            return csv.Sniffer().sniff(sample, delimiters=",;\t").delimiter
        except csv.Error:
            return ","

    samples = ["t,1,2\n1,2,3\n", '"a, b",1\n"c",2\n', "x\n1\n2\n", "a b c\n1 2 3\n", '"q"|"r"\n1|2\n',
               "", "1,2\n3\n4,5,6\n", "'a','b'\n'1','2'\n", "id,0.5,1.0\ns1,1e-3,-2\n", "a:b:c\n1:2:3\n",
               "a;b\n1;2\n", "a\tb\n1\t2\n", "a,b;c\n1,2;3\n"]
    for sample in samples:
        for module in (loading, sparse_data):
            assert module._sniff_delimiter(sample) == sniffed(sample), (sample, module.__name__)
