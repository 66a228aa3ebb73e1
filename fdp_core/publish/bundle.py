"""The publishable bundle of a committed release: a zip (app) or a folder (CLI).

``analyst_view.json`` is never inside the zip: the app offers it as a separate download and
the CLI writes it beside the bundle's files, marked not for publication.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Mapping

import yaml

from . import bundle_readme
from . import rerun
from ..budget.accounting import NEIGHBOURING, PERSON_NEIGHBOURING, Ledger
from .release import ANALYST_VIEW_FILE, analyst_record, to_json, write_files
from .commit import CommittedRelease, csv_text, ledger_state
from .report import report_html

# --------------------------------------------------------------------------- bundle: zip (app) or folder (CLI)

def config_yaml(config: Mapping) -> str:
    return yaml.safe_dump(json.loads(to_json(dict(config))), sort_keys=False, default_flow_style=False)


def neighbouring_of(release: CommittedRelease) -> str:
    """The neighbouring relation in the release's own unit: a person when a person column (or a sparse
    file's ids) groups the curves, else one curve."""
    person = (release.record.get("person_column") or release.config.get("settings", {}).get("person_column")
              or release.config.get("kind") == "sparse")
    return PERSON_NEIGHBOURING if person else NEIGHBOURING


def bundle_files(release: CommittedRelease, ledger: Ledger | None = None) -> dict[str, bytes]:
    """Every exported file by name (BUNDLE_FILES), as bytes."""
    record = dict(release.record)
    if ledger is not None:
        record["ledger_at_export"] = ledger_state(ledger)
    files = {
        "release.csv": csv_text(release.table),
        "coefficients.csv": csv_text(release.coefficients),
        "release.json": to_json(record),
        "config.yaml": config_yaml(release.config),
        "ledger.json": to_json(ledger.to_dict(neighbouring_of(release)) if ledger is not None else {}),
        "report.html": report_html(release, ledger),
        # Verify the release against its config and the data (a new release only on request).
        rerun.SCRIPT_NAME: rerun.script_text(release.id, release.label, record.get("data", {}).get("label")),
        rerun.NOTEBOOK_NAME: rerun.notebook_text(release.id, release.label, record.get("data", {}).get("label")),
        # What each file is, which are publishable, how to verify (public facts only).
        bundle_readme.README_NAME: bundle_readme.readme_text(release.id, release.label, release.kind,
                                                              release.entry.mechanism, release.part_entries,
                                                              record.get("verdict")),
    }
    return {name: text.encode("utf-8") for name, text in files.items()}


def export_zip(release: CommittedRelease, ledger: Ledger | None = None) -> bytes:
    """The bundle as a zip archive in memory (one folder fdp_release_<id>/ inside).

    Parameters
    ----------
    release : CommittedRelease
    ledger : Ledger, optional
        Its ledger.json lists this ledger's entries.

    Returns
    -------
    bytes
        The zip archive (publishable files only; never the analyst view).

    Examples
    --------
    >>> import io, zipfile
    >>> import numpy as np
    >>> import fdp_core as fdp
    >>> t = np.linspace(0, 1, 20)
    >>> fd = fdp.from_arrays(t, np.outer(np.linspace(0.2, 0.8, 100), 1 + t) / 2)
    >>> release = fdp.commit_mean(fdp.Ledger(4.0, 1e-4), fd, fdp.MeanSettings(value_range=(0, 1)))
    >>> names = zipfile.ZipFile(io.BytesIO(export_zip(release))).namelist()
    >>> any(n.endswith("release.json") for n in names), any("analyst_view" in n for n in names)
    (True, False)
    """
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for name, content in bundle_files(release, ledger).items():
            archive.writestr(f"fdp_release_{release.id}/{name}", content)
    return buffer.getvalue()


def analyst_view_json(release: CommittedRelease) -> bytes:
    """analyst_view.json of a commit: NOT publishable (marked so inside); never part of the zip."""
    return to_json(analyst_record({"release_id": release.id, "kind": release.kind, **release.analyst})).encode("utf-8")


def export_folder(release: CommittedRelease, out_dir, ledger: Ledger | None = None, *,
                  include_analyst_view: bool = False) -> Path:
    """Write the bundle into ``out_dir`` (created); temporary names first, renamed at the end.

    ``include_analyst_view`` adds analyst_view.json (not for publication) beside the bundle's
    files, as every CLI command does; the zip of :func:`export_zip` never contains it.

    Parameters
    ----------
    release : CommittedRelease
    out_dir : path
        Created; must not hold another release.
    ledger : Ledger, optional
    include_analyst_view : bool

    Returns
    -------
    Path
        The folder.

    Examples
    --------
    >>> import tempfile
    >>> import numpy as np
    >>> import fdp_core as fdp
    >>> t = np.linspace(0, 1, 20)
    >>> fd = fdp.from_arrays(t, np.outer(np.linspace(0.2, 0.8, 100), 1 + t) / 2)
    >>> release = fdp.commit_mean(fdp.Ledger(4.0, 1e-4), fd, fdp.MeanSettings(value_range=(0, 1)))
    >>> folder = export_folder(release, tempfile.mkdtemp() + "/out")
    >>> (folder / "release.json").exists(), (folder / "analyst_view.json").exists()
    (True, False)
    """
    files = bundle_files(release, ledger)
    if include_analyst_view:
        files = {**files, ANALYST_VIEW_FILE: analyst_view_json(release)}
    return write_files(out_dir, files)
