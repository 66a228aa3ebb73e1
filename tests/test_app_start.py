"""A new server's first Data page (issue 42): it imports neither pandas nor the release machinery,
and the pandas-free readings it uses instead of the DataFrame give the DataFrame's answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fdp_core.data.fingerprint import fingerprint
from fdp_core.data.loading import FunctionalData, load_curves
from fdp_core.data.meta_columns import MetaColumns, raw_metadata
from fdp_core.data.preprocess import _distinct_labels, likely_person_column, repeated_id_columns

ROOT = Path(__file__).resolve().parents[1]
# Modules the Data page needs only once the user does more than look (another page, an upload,
# sparse data, a commit); importing them would put their cost on every server's first page.
NOT_ON_THE_FIRST_PAGE = ("pandas", "scipy", "plotly", "fdp_core.registry", "fdp_core.releases.mean",
                         "fdp_core.engines.stream", "fdp_ui.sparse_view", "fdp_ui.drafts")
FIRST_PAGE = r"""
import json, os, sys
from streamlit.testing.v1 import AppTest
from streamlit.components.v2.component_manager import BidiComponentManager
# Streamlit's own scan of the installed packages for components (a server does it when it starts,
# before any page): done first, shared. What Streamlit itself has imported by then (its Plotly
# theme imports Plotly) is not the page's doing.
components = BidiComponentManager()
components.discover_and_register_components(start_file_watching=False)
before = set(sys.modules)
sessions = [AppTest.from_file(os.path.join(os.getcwd(), "app.py"), default_timeout=300) for _ in range(2)]
for at in sessions:  # the second session gets the cached preview and example
    at._bidi_component_manager = components
    at.run()
at, at2 = sessions
print(json.dumps({"exception": [str(e.value) for e in [*at.exception, *at2.exception]],
                  "images": [len(at.get("image")), len(at2.get("image"))],
                  "loaded": sorted(m for m in json.loads(sys.argv[1]) if m in set(sys.modules) - before)}))
"""


def test_first_data_page_imports_neither_pandas_nor_the_release_machinery(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), FDP_LEDGER_URL=f"sqlite:///{tmp_path / 'ledger.sqlite3'}")
    run = subprocess.run([sys.executable, "-c", FIRST_PAGE, json.dumps(NOT_ON_THE_FIRST_PAGE)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got["exception"] == []
    assert got["images"] == [2, 2]  # the curves preview and the norms histogram, in both sessions
    assert got["loaded"] == []


FRAMES = {
    "text with blanks and missing cells": pd.DataFrame({"id": ["a", " a", None, "b", "b ", "c", "c", "d"],
                                                        "site": ["x", "y", "x", "y", "x", "y", "x", "y"]}),
    "numbers with NaN": pd.DataFrame({"dose": [1.0, np.nan, 2.5, 1e-5, 2.5, 1.0, 3.0, 3.0],
                                      "visit": [1, 2, 1, 2, 1, 2, 1, 2]}),
    "object column": pd.DataFrame({"who": pd.Series(["p", None, "q", "q", "r", "r", "s", "s"], dtype=object)}),
}


@pytest.mark.parametrize("name", sorted(FRAMES))
def test_distinct_labels_are_pandas_nunique_of_the_text(name):
    frame = FRAMES[name]
    for column in frame.columns:
        text = frame[column].astype(str)
        assert _distinct_labels(frame, column, strip=True) == text.str.strip().nunique()
        assert _distinct_labels(frame, column, strip=False) == text.nunique()


def _loaded(path: Path) -> FunctionalData:
    return load_curves(path.read_bytes(), name=path.name)


@pytest.mark.parametrize("file", ["example_curves.csv", "dti_cca.csv", "berkeley_growth.csv"])
def test_the_loaders_columns_answer_as_the_dataframe(file, request):
    path = ROOT / "data" / file if file == "example_curves.csv" else request.getfixturevalue("shared_data") / file
    fd = _loaded(path)
    columns = raw_metadata(fd)
    assert isinstance(columns, MetaColumns)  # what the pyarrow reader stores: no DataFrame built yet
    with_frame = _loaded(path)
    frame = with_frame.metadata  # built here: fingerprint then reads the DataFrame
    assert isinstance(raw_metadata(with_frame), pd.DataFrame)
    assert repeated_id_columns(columns) == repeated_id_columns(frame)
    assert likely_person_column(columns) == likely_person_column(frame)
    for person in [None, *frame.columns]:
        unit = {"person_column": person}
        assert fingerprint(fd, unit) == fingerprint(with_frame, unit)
    assert raw_metadata(fd) is columns  # still not converted


def test_fingerprint_of_person_labels_does_not_depend_on_their_order():
    grid = np.linspace(0, 1, 5)
    values = np.arange(30, dtype=float).reshape(6, 5)
    people = ["b", "a", "b", "c", "a", "c"]
    fd = FunctionalData(grid_points=grid, data_matrix=values, metadata=pd.DataFrame({"p": people}))
    order = [5, 0, 3, 1, 4, 2]
    shuffled = FunctionalData(grid_points=grid, data_matrix=values[order],
                              metadata=pd.DataFrame({"p": [people[i] for i in order]}))
    relabelled = FunctionalData(grid_points=grid, data_matrix=values,
                                metadata=pd.DataFrame({"p": ["b", "a", "b", "c", "c", "a"]}))
    unit = {"person_column": "p"}
    assert fingerprint(fd, unit) == fingerprint(shuffled, unit)
    assert fingerprint(fd, unit) != fingerprint(relabelled, unit)


def test_preview_is_cached_by_content_not_by_name():
    from fdp_ui import data_summary, state

    grid = np.linspace(0, 1, 7)
    a = FunctionalData(grid_points=grid, data_matrix=np.outer(np.arange(1, 4), grid))
    same = FunctionalData(grid_points=grid.copy(), data_matrix=np.outer(np.arange(1, 4), grid))
    other = FunctionalData(grid_points=grid, data_matrix=np.outer(np.arange(1, 4), grid) + 1e-9)
    assert state.curves_digest(a) == state.curves_digest(same)
    assert state.curves_digest(a) != state.curves_digest(other)
    labels = {"title": "All curves", "x_title": "t", "y_title": "value"}
    for fd in (a, other):
        assert data_summary._cached_preview(state.curves_digest(fd), tuple(sorted(labels.items())),
                                            fd.grid_points, fd.data_matrix) == \
            data_summary.preview_charts.curves_preview_svg(fd.grid_points, fd.data_matrix, **labels)
