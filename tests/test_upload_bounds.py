"""Issue 26, first item: one upload must not hold the server, whatever its shape.

A refused upload goes through the loader and then the Data page's diagnosis
(fdp_ui.intake.diagnose), whose cost used to grow faster than the number of columns (a
40 KB file of 20,001 columns held the server 44 s). Both are now bounded before any
per-column work (fdp_core/limits.py: MAX_FILE_COLUMNS, MAX_DIAGNOSE_BYTES,
MAX_DIAGNOSE_COLUMNS). The bounds below are CPU seconds of this process (robust to a busy
machine); measured cost is under 0.3 s for every shape here.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fdp_core import limits
from fdp_core.data.loading import load_curves
from fdp_core.errors import FdpError
from fdp_ui import intake

APP = str(Path(__file__).resolve().parents[1] / "app.py")
UPLOAD_CPU_S = 2.0  # the bound for one upload, accepted or refused


def _shape(kind: str, n: int) -> bytes:
    numbers = ",".join(map(str, range(n)))
    names = ",".join(f"c{i}" for i in range(n))
    ones = ",".join("1" * n)
    return {
        "spectrum": f"{numbers}\n{ones}\n{ones}\n",  # a 20,000-point spectrum is not even hostile
        "named": f"{names}\n{ones}\n{ones}\n",
        "blank": "," * (n - 1) + "\n" + "," * (n - 1) + "\n",
        "id_then_grid": f"id,{numbers}\na,{ones}\nb,{ones}\n",
        "transposed": f"t,{names}\n" + "".join(f"{k},{ones}\n" for k in range(3)),
        "one_letter": ",".join("x" * n) + "\n",  # the 4 MB file of 2,000,001 columns
    }[kind].encode()


def _upload_cpu(raw: bytes) -> tuple[float, str]:
    """CPU seconds of what the Data page does with an upload: load, and diagnose if refused."""
    start = time.process_time()
    try:
        load_curves(raw, name="wide.csv")
        outcome = "loaded"
    except FdpError:
        outcome = intake.diagnose(raw).kind
    return time.process_time() - start, outcome


@pytest.mark.parametrize("n", [20_001, 80_001])
@pytest.mark.parametrize("kind", ["spectrum", "named", "blank", "id_then_grid", "transposed", "one_letter"])
def test_a_wide_upload_is_refused_or_diagnosed_in_bounded_time(kind, n):
    cpu, outcome = _upload_cpu(_shape(kind, n))
    assert cpu < UPLOAD_CPU_S, f"{kind} x {n}: {cpu:.2f} s CPU ({outcome})"
    if kind == "transposed":
        assert outcome == "transposed"  # a real transposed file still gets its one-click offer


@pytest.mark.parametrize("kind", ["spectrum", "one_letter"])
def test_two_million_columns_are_refused_from_the_header(kind):
    raw = _shape(kind, 2_000_001)
    with pytest.raises(FdpError, match="2,000,001 columns; the limit is 25,000"):
        load_curves(raw, name="wide.csv")
    cpu, _ = _upload_cpu(raw)
    assert cpu < UPLOAD_CPU_S


def test_the_diagnosis_reads_a_bounded_preview():
    # A long file far beyond the preview: the suggestion comes from its first rows only.
    body = "".join(f"s{i % 50},{i // 50},{i % 7}.5\n" for i in range(400_000))
    raw = ("station,day,temp\n" + body).encode()
    assert len(raw) > 4 * limits.MAX_DIAGNOSE_BYTES
    start = time.process_time()
    diagnosis = intake.diagnose(raw)
    assert time.process_time() - start < UPLOAD_CPU_S
    assert diagnosis.kind == "long" and diagnosis.suggestion == {"id": "station", "t": "day", "value": "temp"}


def test_a_header_longer_than_the_preview_gets_no_suggestion():
    raw = ("id," + ",".join(f"name{i}" for i in range(200_000)) + "\n1,2\n").encode()
    diagnosis = intake.diagnose(raw)
    assert diagnosis.kind == "unknown" and "longer than" in diagnosis.message


def test_too_many_columns_to_type_get_no_suggestion():
    n = limits.MAX_DIAGNOSE_COLUMNS + 1
    raw = _shape("named", n)
    diagnosis = intake.diagnose(raw)
    assert diagnosis.kind == "unknown" and f"{n:,} columns" in diagnosis.message


def test_an_upload_of_80001_columns_leaves_the_app_responsive():
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.radio(key="data_source").set_value("upload a file").run()
    start = time.process_time()
    at.file_uploader(key="data_upload").set_value(("spectrum.csv", _shape("spectrum", 80_001), "text/csv")).run()
    cpu = time.process_time() - start
    assert not at.exception, at.exception
    assert "80,001 columns; the limit is 25,000" in at.error[0].value
    assert cpu < 10.0, f"{cpu:.1f} s CPU for one upload and one page run"  # page run included; was > 100 s


def test_a_repeated_header_upload_is_refused_in_the_app():
    text = (Path(__file__).resolve().parent / "fixtures" / "wide.csv").read_text()
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.radio(key="data_source").set_value("upload a file").run()
    at.file_uploader(key="data_upload").set_value(("joined.csv", (text + text).encode(), "text/csv")).run()
    assert not at.exception, at.exception
    assert "repeats the header line" in at.error[0].value
