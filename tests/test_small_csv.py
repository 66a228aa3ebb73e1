"""The pyarrow-free reader of small wide CSV files (fdp_core/data/small_csv.py, issue 42).

Its contract: it accepts only what the pyarrow reader accepts, with bit-for-bit the same values
and metadata cells; everything else goes the usual way, so every message stays what it was.
Tested three ways: the block readers side by side, the whole loader with and without the small
reader (same curves, reports and messages), and Python's float() against pyarrow's parser.
"""

from __future__ import annotations

import io
import random

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fdp_core.data import arrow_io, loading, small_csv
from fdp_core.data.loading import load_curves
from fdp_core.errors import DataError, ParameterError

ROOT_DATA = loading.Path(loading.__file__).parents[2] / "data"
FIXTURES = loading.Path(__file__).parent / "fixtures"


def _layout(raw: bytes):
    src = loading.data_source(raw)
    head = loading.csv_head(src, "x.csv")
    if head is None:
        return None
    sample, delimiter, rows = head
    layout = loading.read_layout(rows[0], "x.csv", None, rows[1:51] if len(raw) <= 4 * loading._SNIFF_CHARS else ())
    return src, layout, delimiter


def _same_block(small, arrow) -> None:
    grid, values, meta, extra = small
    a_grid, a_values, a_meta, a_extra = arrow
    assert np.array_equal(grid, a_grid) and extra == a_extra == ()
    assert values.shape == a_values.shape and values.flags.f_contiguous == a_values.flags.f_contiguous
    assert values.tobytes(order="A") == a_values.tobytes(order="A")  # bit for bit, NaN payloads too
    assert meta.names == a_meta.names and meta.n_rows == a_meta.n_rows
    for name in meta.names:
        assert meta.cells[name].tolist() == a_meta.cells[name].tolist()


def _compare_blocks(raw: bytes, must_accept: bool = False) -> None:
    found = _layout(raw)
    if found is None:
        assert not must_accept
        return
    src, layout, delimiter = found
    small = small_csv.read_wide(raw, layout, delimiter)
    if small is None:
        assert not must_accept
        return
    arrow = arrow_io.read_csv_block(src, layout, delimiter)
    assert arrow is not None, "the small reader accepted a file the pyarrow reader refuses"
    _same_block(small, arrow)


def _load_outcome(raw: bytes, **kwargs):
    try:
        fd = load_curves(raw, name="upload.csv", **kwargs)
    except (DataError, ParameterError) as exc:
        return type(exc).__name__, str(exc)
    report = fd.report
    return (fd.grid_points.tobytes(), fd.data_matrix.tobytes(order="A"), fd.data_matrix.flags.f_contiguous,
            fd.metadata.to_dict("list"), report.n_read, report.n_dropped, report.n_interpolated,
            report.n_missing_cells, report.dropped_rows, report.messages,
            None if report.dropped_metadata is None else report.dropped_metadata.to_dict("list"))


def _compare_loads(raw: bytes, monkeypatch, **kwargs) -> None:
    """The whole loader with the small reader and without it (pyarrow, then the cell-by-cell parser)."""
    with_small = _load_outcome(raw, **kwargs)
    with monkeypatch.context() as patch:
        patch.setattr(loading, "SMALL_CSV_BYTES", -1)
        without = _load_outcome(raw, **kwargs)
    assert with_small == without


def test_tokens_and_limits_are_those_of_the_pyarrow_reader():
    assert small_csv.NULL_VALUES == frozenset(arrow_io.NULL_VALUES)
    assert small_csv.FIELD_LIMIT == arrow_io.FIELD_LIMIT


def _decimal(rng: random.Random) -> str:
    kind = rng.random()
    sign = rng.choice(["", "-", "+"])
    if kind < 0.25:
        text = f"{rng.uniform(0, 1e3):.{rng.randint(0, 20)}f}"
    elif kind < 0.45:
        text = repr(rng.random() * 10.0 ** rng.randint(-320, 308))
    elif kind < 0.65:
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 30)))
        cut = rng.randint(0, len(digits))
        text = digits[:cut] + "." + digits[cut:]
    elif kind < 0.85:
        text = ("".join(rng.choice("0123456789") for _ in range(rng.randint(1, 25))) + rng.choice("eE")
                + rng.choice(["", "+", "-"]) + str(rng.randint(0, 330)))
    else:  # 25+ significant digits: near halfway between two doubles
        text = f"{rng.random() * 10.0 ** rng.randint(-30, 30):.25e}"
    return sign + text


def test_python_float_and_pyarrow_read_decimals_alike():
    """Both are correctly rounded: the same double for every string of the accepted grammar."""
    rng = random.Random(20260)
    cells = [_decimal(rng) for _ in range(100_000)] + ["-0", "+0", "5.", ".5", "1.e5", "4.9e-324", "1e-400"]
    pattern = small_csv.re.compile(small_csv._NUMBER)
    assert all(pattern.fullmatch(cell) for cell in cells)
    table = pacsv.read_csv(io.BytesIO(("x\n" + "\n".join(cells) + "\n").encode()),
                           convert_options=pacsv.ConvertOptions(column_types={"x": pa.float64()}))
    ours = np.array([float(cell) for cell in cells])
    theirs = table.column(0).to_numpy()
    assert ours.view(np.int64).tolist() == theirs.view(np.int64).tolist()


def _real_files():
    files = [ROOT_DATA / "example_curves.csv", ROOT_DATA / "example_missing.csv", FIXTURES / "wide.csv",
             FIXTURES / "missing.csv"]
    shared = loading.Path(__file__).resolve().parents[2] / "shared" / "data"
    files += [shared / name for name in ("dti_cca.csv", "dti_rcst.csv", "berkeley_growth.csv")]
    return files


@pytest.mark.parametrize("path", _real_files(), ids=lambda p: p.name)
def test_real_files_read_alike(path, monkeypatch):
    if not path.exists():
        pytest.skip(f"{path} is not available")
    raw = path.read_bytes()
    _compare_blocks(raw, must_accept=True)
    _compare_loads(raw, monkeypatch)
    _compare_loads(raw, monkeypatch, missing="interpolate")


HEADER = b"id,sex,0,0.5,1\n"
HOSTILE = {
    "plain": HEADER + b"a,f,1,2,3\nb,m,2,3,5\n",
    "crlf": HEADER.replace(b"\n", b"\r\n") + b"a,f,1,2,3\r\nb,m,2,3,5\r\n",
    "lone cr": HEADER + b"a,f,1,2,3\rb,m,2,3,5\n",
    "no final newline": HEADER + b"a,f,1,2,3\nb,m,2,3,5",
    "blank lines": HEADER + b"\na,f,1,2,3\n\n\nb,m,2,3,5\n\n",
    "whitespace line": HEADER + b"a,f,1,2,3\n  \nb,m,2,3,5\n",
    "separators only": HEADER + b"a,f,1,2,3\n,,,,\nb,m,2,3,5\n",
    "missing cells": HEADER + b"a,f,1,,3\nb,m,NA,3,5\nc,f,1,2,3\nd,m,-,n/a,4\ne,f,NULL,1,2\n",
    "missing case variants": HEADER + b"a,f,1,nA,3\nb,m,Nan,3,5\nc,f,1,2,None\nd,m,4,5,6\n",
    "row without values, named": HEADER + b"a,f,1,2,3\nb,m,,,\nc,f,2,3,4\n",
    "non-numeric": HEADER + b"a,f,1,x,3\nb,m,2,3,5\n",
    "digit separator": HEADER + b"a,f,1_000,2,3\nb,m,2,3,5\n",
    "spaces around numbers": HEADER + b"a,f, 1,2 ,3\nb,m,2,3,5\n",
    "spaces around a token": HEADER + b"a,f,1, NA,3\nb,m,2,3,5\nc,f,0,1,1\n",
    "signs and exponents": HEADER + b"a,f,+1,.5,1E-3\nb,m,-2.,3e+2,5\n",
    "infinite": HEADER + b"a,f,1,inf,3\nb,m,2,3,5\n",
    "overflow": HEADER + b"a,f,1,1e400,3\nb,m,2,3,5\n",
    "nan text": HEADER + b"a,f,1,nan(1),3\nb,m,2,3,5\n",
    "bad exponent": HEADER + b"a,f,1,1e,3\nb,m,2,3,5\n",
    "lone sign": HEADER + b"a,f,1,+,3\nb,m,2,3,5\n",
    "signed nan": HEADER + b"a,f,1,-nan,3\nb,m,2,3,5\nc,f,0,1,1\n",
    "infinity": HEADER + b"a,f,1,-Infinity,3\nb,m,2,3,5\n",
    "hex": HEADER + b"a,f,1,0x10,3\nb,m,2,3,5\n",
    "unicode digits": HEADER + "a,f,1,\u0661,3\nb,m,2,3,5\n".encode(),
    "ragged": HEADER + b"a,f,1,2\nb,m,2,3,5\n",
    "trailing separator": HEADER + b"a,f,1,2,3,\nb,m,2,3,5\n",
    "repeated header": HEADER + b"a,f,1,2,3\nid,sex,0,0.5,1\nb,m,2,3,5\n",
    "row equal to the grid": HEADER + b"a,f,0,0.5,1\nb,m,2,3,5\n",
    "quoted cells": HEADER + b'"a",f,1,2,3\nb,"m,x",2,3,5\n',
    "quoted number": HEADER + b'a,f,"1",2,3\nb,m,2,3,5\n',
    "quoted header": b'"id","sex","0","0.5","1"\na,f,1,2,3\nb,m,2,3,5\n',
    "bom": b"\xef\xbb\xbf" + HEADER + b"a,f,1,2,3\nb,m,2,3,5\n",
    "latin-1 metadata": HEADER + b"a\xe9,f,1,2,3\nb,m,2,3,5\n",
    "utf-8 metadata": HEADER + "\u00e9l\u00e8ve,f,1,2,3\nb,m,2,3,5\n".encode(),
    "metadata tokens stay text": HEADER + b"NA,,1,2,3\n-,null,2,3,5\n",
    "numeric metadata": b"id,age,0,0.5,1\n01,3.5,1,2,3\n2,,2,3,5\n3,1e2,0,1,4\n",
    "no metadata": b"0,0.5,1\n1,2,3\n2,3,5\n",
    "descending grid": b"id,1,0.5,0\na,3,2,1\nb,5,3,2\n",
    "semicolons": b"id;sex;0;0.5;1\na;f;1;2;3\nb;m;2;3;5\n",
    "tabs": b"id\tsex\t0\t0.5\t1\na\tf\t1\t2\t3\nb\tm\t2\t3\t5\n",
    "identical curves": HEADER + b"a,f,1,2,3\nb,m,1,2,3\n",
    "one curve": HEADER + b"a,f,1,2,3\n",
    "header only": HEADER,
    "huge value": HEADER + b"a,f,1,1e300,3\nb,m,2,3,5\n",
    "long metadata cell": HEADER + b"a" * 131073 + b",f,1,2,3\nb,m,2,3,5\nc,f,0,1,1\n",
    "negative zero": HEADER + b"a,f,-0,2,3\nb,m,2,-0.0,5\n",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_inputs_read_or_refused_alike(name, monkeypatch):
    raw = HOSTILE[name]
    _compare_blocks(raw)
    for kwargs in ({}, {"missing": "interpolate"}):
        _compare_loads(raw, monkeypatch, **kwargs)


def test_the_small_reader_takes_the_plain_files():
    """Not a reader that refuses everything: the ordinary spellings are its to read."""
    for name in ("plain", "crlf", "no final newline", "blank lines", "missing cells", "missing case variants",
                 "signs and exponents", "bom", "utf-8 metadata", "metadata tokens stay text", "no metadata",
                 "descending grid", "semicolons", "tabs", "negative zero", "numeric metadata"):
        _compare_blocks(HOSTILE[name], must_accept=True)


CELL = st.one_of(st.sampled_from(["", "NA", "nan", "-nan", "+", "1e", "E5", "-", "1", "0", "-0", "2.5", "1e3", ".5", "+7", " 3", "x", "inf",
                                  "1_0", '"4"', "1e400", "0.5"]),
                 st.floats(allow_nan=False, allow_infinity=False).map(repr))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(st.sampled_from(["a", "b", "", "NA", "7"]), st.lists(CELL, min_size=3, max_size=3)),
                     min_size=1, max_size=6),
       newline=st.sampled_from(["\n", "\r\n"]))
def test_random_files_read_or_refused_alike(rows, newline):
    raw = ("id,0,0.5,1" + newline + "".join(f"{i},{','.join(cells)}{newline}" for i, cells in rows)).encode()
    _compare_blocks(raw)
    with_small = _load_outcome(raw)
    saved = loading.SMALL_CSV_BYTES
    loading.SMALL_CSV_BYTES = -1  # hypothesis reruns the body: no function-scoped monkeypatch here
    try:
        without = _load_outcome(raw)
    finally:
        loading.SMALL_CSV_BYTES = saved
    assert with_small == without


def test_large_files_still_go_to_pyarrow(tmp_path, monkeypatch):
    path = tmp_path / "c.csv"
    path.write_bytes(HOSTILE["plain"])
    monkeypatch.setattr(loading, "SMALL_CSV_BYTES", 10)
    calls = []
    monkeypatch.setattr(small_csv, "read_wide", lambda *a: calls.append(a))
    assert load_curves(path).n == 2 and calls == []


def test_a_long_digit_run_is_refused_in_linear_time(tmp_path):
    """A grid cell of 100,000 digits and then a letter: the cell grammar matches each number one way
    only, so the refusal is immediate (an ambiguous '[0-9]+\\.?[0-9]*' took quadratic time: hours for a
    1 MB cell, the interpreter held for every session of the server)."""
    import time

    pattern = small_csv._cells_pattern(",")
    start = time.perf_counter()
    assert pattern.fullmatch("7" * 1_000_000 + "x,2") is None
    assert pattern.fullmatch("1," + "7" * 1_000_000 + ".5e3,") is not None
    path = tmp_path / "digits.csv"
    path.write_text("id,0,1\n" + "a," + "7" * 100_000 + "x,2\nb,1,2\nc,2,3\n")
    with pytest.raises(DataError, match="non-numeric"):
        load_curves(path)
    assert time.perf_counter() - start < 5.0
