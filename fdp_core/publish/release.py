"""Writing releases: only sanitized values and provenance ever leave through here."""

from __future__ import annotations

import datetime as _dt
import importlib.util
import json
import math
import platform
import re
import sys
from pathlib import Path

import numpy as np

from .. import __version__


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else str(value)
    return value


def _version_of(package: str, version_file: str, pattern: str) -> str:
    """``package.__version__`` without importing the package when the release did not (a mean release on
    the command line imports neither scipy nor pandas, and importing them only for their versions would
    cost more CPU than the release's own work): read from the file ``__version__`` comes from, with
    ``pattern``'s group 1 as the version; imported as a fallback for an unusual install."""
    if package in sys.modules:
        return sys.modules[package].__version__
    try:
        spec = importlib.util.find_spec(package)
        text = Path(next(iter(spec.submodule_search_locations)), version_file).read_text()
        return re.search(pattern, text, re.M).group(1)
    except Exception:  # an unusual install: ask the package itself
        return importlib.import_module(package).__version__  # lazy: only when its version file cannot be read


def _scipy_version() -> str:
    return _version_of("scipy", "version.py", r'^version = "([^"\n]+)"$')


def _pandas_version() -> str:
    return _version_of("pandas", "_version_meson.py", r'^__version__ ?= ?"([^"\n]+)"$')


def library_versions() -> dict:
    return {"fdp_core": __version__, "python": platform.python_version(), "numpy": np.__version__,
            "scipy": _scipy_version(), "pandas": _pandas_version()}


def _cell(value: float) -> str:
    return "" if value != value else repr(value)  # pandas' to_csv: NaN as an empty cell, else repr


def csv_text(table) -> str:
    """A release table's CSV (header, one row per line, no index), the bytes pandas' ``to_csv(index=False)``
    writes. A mapping of float columns with plain names is written here without pandas (the command
    line's mean); anything else (a DataFrame, other dtypes, names needing quotes) by pandas."""
    if isinstance(table, dict):
        columns = {str(k): np.asarray(v) for k, v in table.items()}
        plain = all(re.fullmatch(r"[A-Za-z0-9_.]+", k) for k in columns)
        if plain and columns and all(v.dtype == np.float64 and v.ndim == 1 for v in columns.values()) \
                and len({v.size for v in columns.values()}) == 1:
            rows = zip(*(v.tolist() for v in columns.values()))
            return ",".join(columns) + "\n" + "".join(",".join(map(_cell, row)) + "\n" for row in rows)
        import pandas as pd  # lazy: tables this writer does not vouch for

        table = pd.DataFrame(table)
    return numeric_csv(table) or table.to_csv(index=False)


def provenance_stamp() -> dict:
    return {"created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "library_versions": library_versions()}


SEEDED_WARNING = ("NOT FOR PUBLICATION: drawn from a demo seed, so anyone who learns the seed can regenerate the "
                  "noise and subtract it. Publish only releases drawn with fresh randomness (no --seed), or "
                  "committed exports (exact discrete noise, fresh OS entropy)")


def randomness_fields(seed: int | None) -> dict:
    """How a CLI/library release was randomised. The seed value itself is never written:
    with it and the public settings the noise could be regenerated and removed."""
    if seed is None:
        return {"seed": None, "demo_seed_used": False, "publishable": True,
                "randomness": "numpy Generator seeded from fresh OS entropy (idealised real-arithmetic DP)"}
    return {"seed": None, "demo_seed_used": True, "publishable": False, "warning": SEEDED_WARNING,
            "randomness": "numpy Generator with a demo seed (reproducible for teaching; seed withheld)"}


PREVIEW_WARNING = ("PREVIEW, NOT FOR PUBLICATION: drawn with numpy noise and charged to no privacy budget. "
                   "Publish a committed release instead (the release commands without --preview charge a ledger "
                   "first and draw exact discrete noise)")


def to_json(record: dict) -> str:
    return json.dumps(_jsonable(record), indent=2, allow_nan=False)


ANALYST_VIEW_FILE = "analyst_view.json"
ANALYST_WARNING = ("NOT FOR PUBLICATION: every number in this file is computed from the data without noise "
                   "(counts of clipped, dropped or grouped curves, errors against the raw mean, sampler "
                   "diagnostics, data-derived suggestions). Publishing any of it can reveal individuals; it is "
                   "for the analyst's own checks only. The publishable files are release.json and release.csv.")


def analyst_record(view: dict) -> dict:
    """The analyst view with its not-for-publication marking first: the same marker and warning
    for every kind (a kind's own warning text, if any, is kept as ``note``)."""
    view = dict(view)
    own = view.pop("warning", None)
    if own is not None and own != ANALYST_WARNING:
        view.setdefault("note", own)
    return {"publishable": False, "differentially_private": False, "warning": ANALYST_WARNING, **view}


_CSV_SPECIAL = (",", '"', "\n", "\r")


def _float_texts(values: np.ndarray, nan: str) -> list:
    """repr of each float64 (``nan`` for NaN); a column of few distinct values (a surface's s and t)
    formats each distinct bit pattern once (by bits: -0.0 keeps its sign)."""
    bits = np.ascontiguousarray(values).view(np.int64)
    distinct, where = np.unique(bits, return_inverse=True)
    if 4 * distinct.size > values.size:
        return [nan if v != v else repr(v) for v in values.tolist()]
    texts = np.array([nan if v != v else repr(v) for v in distinct.view(np.float64).tolist()], dtype=object)
    return texts[where.ravel()].tolist()


def numeric_csv(frame, *, nan: str = "") -> str | None:
    """What ``frame.to_csv(index=False)`` writes for plain numeric columns, built without pandas' writer.

    float64 values as their shortest round-trip repr (pandas' own default text for them), NaN as
    ``nan``, integers and booleans as str. About 5x faster: a long grid's covariance surface is 10^6
    rows (pandas took ~2 s of CPU for it). None for any other frame (text, float32, odd column
    names, no rows): the caller falls back to pandas.
    """
    names = list(frame.columns)
    if not len(frame) or not all(isinstance(c, str) and c and not any(x in c for x in _CSV_SPECIAL) for c in names):
        return None
    columns = []
    for name in names:
        values = frame[name].to_numpy()
        if values.dtype == np.float64:
            text = _float_texts(values, nan)
        elif values.dtype.kind in "iub":
            text = [str(v) for v in values.tolist()]
        else:
            return None
        columns.append(text)
    return ",".join(names) + "\n" + "\n".join(map(",".join, zip(*columns))) + "\n"


def write_release(out_dir, record: dict, table, analyst: dict | None = None) -> Path:
    """Write a PREVIEW: out_dir/release.json (marked "publishable": false, "preview": true) and
    out_dir/release.csv (``table``: a DataFrame or a mapping of columns; created if needed), and, when given, the analyst view to
    out_dir/analyst_view.json (marked not for publication).

    Every file is written to a temporary name first and renamed at the end, so a failure
    never leaves a half-written release behind.
    """
    # Written only by previews (numpy noise, nothing charged): never publishable (METHODS.md 23). A
    # publishable release is a committed bundle (fdp_core/publish/bundle.py), charged first.
    record = {**record, "publishable": False, "preview": True,
              "preview_note": PREVIEW_WARNING, **provenance_stamp()}
    texts = {"release.json": to_json(record), "release.csv": csv_text(table)}
    if analyst is not None:
        texts[ANALYST_VIEW_FILE] = to_json(analyst_record(analyst))
    return write_files(out_dir, texts)


def write_files(out_dir, files: dict) -> Path:
    """Write ``files`` (name -> bytes or text) into out_dir (created if needed) without ever leaving a
    half-written release: every file goes to a temporary name first, and all are renamed at the end,
    release.json last (it marks completion)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        temporary = out / f".{name}.tmp"
        if isinstance(content, bytes):
            temporary.write_bytes(content)
        else:
            temporary.write_text(content)
    for name in sorted(files, key=lambda n: n == "release.json"):
        (out / f".{name}.tmp").replace(out / name)
    return out
