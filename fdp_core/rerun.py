"""The bundle's re-run files: ``release.py`` (a script) and ``release.ipynb`` (a notebook).

Both load a data file, re-run the exported release's settings (config.yaml, next to them)
with fdp_core's :func:`fdp_core.export.replay` -- the same mechanism, exact discrete
sampler and grid, fresh OS entropy, checked against a ledger before any noise is drawn --
and draw the release's figures. A re-run is a new release: it spends budget of its own.
With a ledger URL they run ``python -m fdp_core replay config.yaml --data PATH --ledger URL``
instead, so the charge lands in that persistent ledger.

The notebook is written as nbformat-4 JSON by hand: exporting needs no Jupyter package.
"""

from __future__ import annotations

import json
import re

SCRIPT_NAME = "release.py"
NOTEBOOK_NAME = "release.ipynb"


def _default_data_path(data_label: str | None) -> str:
    """The file the release was made from, when its label names one (e.g. 'upload: x.csv')."""
    label = (data_label or "").split(":", 1)[-1].strip()
    label = re.sub(r"\s*\(.*\)\s*$", "", label)  # "x.csv (columns ... mapped)" -> "x.csv"
    if re.fullmatch(r"[\w.\- ]+\.(csv|txt|tsv|parquet|pq)", label, flags=re.I):
        return label
    return "YOUR_DATA.csv"


_SCRIPT = '''"""Re-run fdp release {release_id} (RELEASE_LABEL below) on a data file: same settings, fresh noise.

Usage (from a checkout of fdp, or with fdp_core importable):

    python release.py DATA_PATH [--out DIR] [--ledger URL]

Reads config.yaml next to this script. The re-run is a NEW release with fresh OS entropy
and spends privacy budget of its own: it is checked against the config's budget (a fresh
ledger), or with --ledger against that persistent ledger (python -m fdp_core replay
... --ledger URL), before any noise is drawn. Writes the new bundle and the figures (HTML)
into DIR (default: release_rerun/ next to this script).
"""

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RELEASE_LABEL = {label!r}
DEFAULT_DATA = {data_path!r}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", default=DEFAULT_DATA, help="the data file (wide, long or Parquet)")
    parser.add_argument("--config", default=str(HERE / "config.yaml"), help="the release's config.yaml")
    parser.add_argument("--out", default=str(HERE / "release_rerun"), help="output folder")
    parser.add_argument("--ledger", default=None,
                        help="persistent ledger URL: charge the re-run there (python -m fdp_core replay --ledger)")
    args = parser.parse_args(argv)
    if args.ledger:
        command = [sys.executable, "-m", "fdp_core", "replay", args.config, "--data", args.data,
                   "--out", args.out, "--ledger", args.ledger]
        return subprocess.run(command, check=False).returncode

    from fdp_core import export
    from fdp_core.errors import FdpError

    try:
        config = export.parse_config(Path(args.config))
        release, ledger = export.replay(config, args.data)
    except FdpError as exc:
        print(f"error: {{exc}}", file=sys.stderr)
        return 2
    out = export.export_folder(release, args.out, ledger)
    figures = [("release_figure.html", export.release_figure(release)),
               ("power_figure.html", export.power_figure(release, ledger))]
    if release.tradeoff:
        figures.append(("tradeoff_figure.html", export.tradeoff_figure(release)))
    for name, figure in figures:
        figure.write_html(out / name, include_plotlyjs=True, full_html=True)
    entry = release.entry
    print(f"new release {{release.id}}: {{release.kind}} {{entry.mechanism}}, charged epsilon {{entry.epsilon:.4g}}, "
          f"delta {{entry.delta:.3g}}; wrote {{out}}")
    for paragraph in export.privacy_statement(release):
        print(paragraph)
    print(release.accuracy)
    note = export.data_mismatch(config, release)
    if note:
        print(f"note: {{note}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def script_text(release_id: str, label: str, data_label: str | None) -> str:
    # Every user-supplied text goes in as a Python literal (repr): a label such as C:\new\x
    # inside the docstring was an invalid escape and the script did not parse.
    return _SCRIPT.format(release_id=release_id, label=str(label), data_path=_default_data_path(data_label))


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
# Re-run fdp release `{release_id}`: {markdown_text(label)}

This notebook re-runs the exported release with the settings in `config.yaml` (next to it) on a data
file, with **fresh noise**: the same mechanism, exact discrete sampler and grid, fresh OS entropy.
A re-run is a **new release**: it is checked against a privacy budget before any noise is drawn and
spends budget of its own (the config's budget in a fresh ledger, or a persistent ledger if you give
its URL). Set the data path below, then run all cells.
"""),
        _cell("code", f"""
DATA_PATH = {data_path!r}  # the data file: wide, long (id,t,value) or Parquet
CONFIG_PATH = "config.yaml"
LEDGER_URL = None  # e.g. a persistent ledger: then `python -m fdp_core replay ... --ledger URL` is run
OUT_DIR = "release_rerun"
"""),
        _cell("code", """
import subprocess
import sys
from pathlib import Path

import plotly.io as pio

from fdp_core import export

pio.renderers.default = "plotly_mimetype+notebook"  # plotly.js inline: the figures work offline
config = export.parse_config(Path(CONFIG_PATH))
release = ledger = None
if LEDGER_URL:  # charged to the persistent ledger by the command line; its bundle has report.html
    subprocess.run([sys.executable, "-m", "fdp_core", "replay", CONFIG_PATH, "--data", DATA_PATH,
                    "--out", OUT_DIR, "--ledger", LEDGER_URL], check=True)
    print(f"charged to {LEDGER_URL}; the new bundle (with report.html) is in {OUT_DIR}/")
else:
    release, ledger = export.replay(config, DATA_PATH)
    export.export_folder(release, OUT_DIR, ledger)
    entry = release.entry
    print(f"new release {release.id}: {release.kind} {entry.mechanism}, charged epsilon {entry.epsilon:.4g}, "
          f"delta {entry.delta:.3g}; bundle in {OUT_DIR}/")
"""),
        _cell("markdown", "## What was released, and what it guarantees"),
        _cell("code", """
if release is not None:
    for paragraph in export.privacy_statement(release):
        print(paragraph)
    print(release.accuracy)
    note = export.data_mismatch(config, release)
    if note:
        print("note:", note)
"""),
        _cell("markdown", "## Figures (sanitized output only)"),
        _cell("code", """
if release is not None:
    export.release_figure(release).show()
"""),
        _cell("code", """
if release is not None:
    if release.tradeoff:
        export.tradeoff_figure(release).show()
    export.power_figure(release, ledger).show()
"""),
    ]
    notebook = {"cells": cells, "nbformat": 4, "nbformat_minor": 5,
                "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                             "language_info": {"name": "python"}}}
    for i, cell in enumerate(notebook["cells"]):
        cell["id"] = f"fdp-{i}"
    return json.dumps(notebook, indent=1) + "\n"
