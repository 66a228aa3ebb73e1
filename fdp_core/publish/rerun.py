"""The bundle's check files: ``release.py`` (a script) and ``release.ipynb`` (a notebook).

By default both VERIFY the release and draw nothing: they load the data file, re-derive the
sensitivity, the exact sampler's noise scale and the privacy charge from config.yaml
(:func:`fdp_core.publish.verify.verify_release`), compare them with release.json and print "verified"
or the mismatches. A stakeholder checking a release spends no budget and publishes nothing.

A NEW release (fresh noise, a new charge) happens only on request, ``--new-release`` (script) or
``NEW_RELEASE = True`` (notebook), and always through a persistent ledger: they run
``python -m fdp_core replay config.yaml --data PATH [--ledger URL]``, which charges the
ledger at ``URL`` (default: ``$FDP_LEDGER_URL``, else the user's ledger file).

Both need ``fdp_core`` importable (``pip install -e .`` in the project folder, or
``PYTHONPATH=/path/to/fdp``) and say so when it is not. The notebook is written as nbformat-4
JSON by hand: exporting needs no Jupyter package.
"""

from __future__ import annotations

import json
import re

SCRIPT_NAME = "release.py"
NOTEBOOK_NAME = "release.ipynb"
IMPORT_HELP = ("fdp_core is not importable. From the fdp project folder run `pip install -e .` (then any "
               "folder works), or run this with PYTHONPATH=/path/to/the/fdp/project.")


def _default_data_path(data_label: str | None) -> str:
    """The file the release was made from, when its label names one (e.g. 'upload: x.csv')."""
    label = (data_label or "").split(":", 1)[-1].strip()
    label = re.sub(r"\s*\(.*\)\s*$", "", label)  # "x.csv (columns ... mapped)" -> "x.csv"
    if re.fullmatch(r"[\w.\- ]+\.(csv|txt|tsv|parquet|pq)", label, flags=re.I):
        return label
    return "YOUR_DATA.csv"


_SCRIPT = '''"""Verify fdp release {release_id} (RELEASE_LABEL below) against its config and a data file; draws nothing.

fdp_core must be importable: from the fdp project folder run `pip install -e .`, or run
this script with PYTHONPATH=/path/to/the/fdp/project.

    python release.py DATA_PATH
        re-derives the sensitivity, the noise scale and the privacy charge from config.yaml and
        the data, compares them with release.json and prints "verified" (exit 0) or the
        mismatches (exit 1). Spends no budget, draws no noise, writes nothing.

    python release.py DATA_PATH --new-release [--ledger URL] [--out DIR]
        makes a NEW release with fresh noise (python -m fdp_core replay), charged to the
        persistent ledger at URL (default: $FDP_LEDGER_URL, else your ledger file).
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RELEASE_LABEL = {label!r}
DEFAULT_DATA = {data_path!r}
IMPORT_HELP = {import_help!r}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", default=DEFAULT_DATA, help="the data file (wide, long or Parquet)")
    parser.add_argument("--config", default=str(HERE / "config.yaml"), help="the release's config.yaml")
    parser.add_argument("--release", default=str(HERE / "release.json"), help="the release's release.json")
    parser.add_argument("--new-release", action="store_true",
                        help="make a NEW release (fresh noise) charged to a persistent ledger instead of verifying")
    parser.add_argument("--ledger", default=None, help="with --new-release: the persistent ledger URL to charge")
    parser.add_argument("--out", default=str(HERE / "release_rerun"), help="with --new-release: output folder")
    args = parser.parse_args(argv)
    try:
        from fdp_core.errors import FdpError
        from fdp_core.publish.verify import verify_release
    except ImportError:
        print(f"error: {{IMPORT_HELP}}", file=sys.stderr)
        return 2
    if args.new_release:
        command = [sys.executable, "-m", "fdp_core", "replay", args.config, "--data", args.data, "--out", args.out]
        if args.ledger:
            command += ["--ledger", args.ledger]
        return subprocess.run(command, check=False).returncode
    if args.ledger:
        print("error: --ledger applies to --new-release only (verifying spends no budget)", file=sys.stderr)
        return 2
    try:
        record = json.loads(Path(args.release).read_text())
        result = verify_release(Path(args.config), args.data, record)
    except FdpError as exc:
        print(f"error: {{exc}}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(f"error: {{' '.join(str(exc).split())}}", file=sys.stderr)
        return 2
    print(result.report())
    return 0 if result.verified else 1


if __name__ == "__main__":
    sys.exit(main())
'''


def script_text(release_id: str, label: str, data_label: str | None) -> str:
    # Every user-supplied text goes in as a Python literal (repr): a label such as C:\new\x
    # inside the docstring was an invalid escape and the script did not parse.
    return _SCRIPT.format(release_id=release_id, label=str(label), data_path=_default_data_path(data_label),
                          import_help=IMPORT_HELP)


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~>])")


def markdown_text(text: str) -> str:
    """User text shown literally in a markdown cell: one line, markdown characters escaped,
    HTML characters as entities (a label must not become a link, a heading or a tag)."""
    flat = " ".join(str(text).split())
    flat = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN_SPECIAL.sub(r"\\\1", flat)


def _cell(kind: str, source: str) -> dict:
    cell = {"cell_type": kind, "metadata": {}, "source": source.strip("\n").splitlines(keepends=True)}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def notebook_text(release_id: str, label: str, data_label: str | None) -> str:
    data_path = _default_data_path(data_label)
    cells = [
        _cell("markdown", f"""
# Verify fdp release `{release_id}`: {markdown_text(label)}

This notebook **verifies** the release: it re-derives the sensitivity, the exact sampler's noise scale
and the privacy charge from `config.yaml` and the data file, and compares them with `release.json`.
It draws no noise, spends no budget and writes nothing. Set the data path below, then run all cells.

`fdp_core` must be importable: from the fdp project folder run `pip install -e .`, or start Jupyter
with `PYTHONPATH=/path/to/the/fdp/project`.

A **new release** (fresh noise, a new charge) is made only when you set `NEW_RELEASE = True`: it is
charged to a persistent ledger (`LEDGER_URL`, default `$FDP_LEDGER_URL`, else your ledger file).
"""),
        _cell("code", f"""
DATA_PATH = {data_path!r}  # the data file: wide, long (id,t,value) or Parquet
CONFIG_PATH = "config.yaml"
RELEASE_PATH = "release.json"
NEW_RELEASE = False  # True: a NEW release with fresh noise, charged to the persistent ledger below
LEDGER_URL = None  # with NEW_RELEASE: the persistent ledger to charge (None: $FDP_LEDGER_URL, else your file)
OUT_DIR = "release_rerun"
"""),
        _cell("code", f"""
import json
import subprocess
import sys
from pathlib import Path

try:
    from fdp_core.publish.verify import verify_release
except ImportError:
    raise ImportError({IMPORT_HELP!r}) from None

missing = [p for p in (CONFIG_PATH, RELEASE_PATH) if not Path(p).is_file()]
if missing:  # run outside the bundle's folder: say so in one line, not with a traceback
    raise SystemExit(f"{{', '.join(missing)}} not found in {{Path.cwd()}}: open this notebook from the release "
                     "bundle's folder (next to config.yaml and release.json), or set CONFIG_PATH and RELEASE_PATH.")
result = verify_release(Path(CONFIG_PATH), DATA_PATH, json.loads(Path(RELEASE_PATH).read_text()))
print(result.report())
"""),
        _cell("markdown", "## A new release (only with `NEW_RELEASE = True`)"),
        _cell("code", """
if NEW_RELEASE:
    command = [sys.executable, "-m", "fdp_core", "replay", CONFIG_PATH, "--data", DATA_PATH, "--out", OUT_DIR]
    if LEDGER_URL:
        command += ["--ledger", LEDGER_URL]
    subprocess.run(command, check=True)
else:
    print("no new release made (NEW_RELEASE = False)")
"""),
    ]
    notebook = {"cells": cells, "nbformat": 4, "nbformat_minor": 5,
                "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                             "language_info": {"name": "python"}}}
    for i, cell in enumerate(notebook["cells"]):
        cell["id"] = f"fdp-{i}"
    return json.dumps(notebook, indent=1) + "\n"
