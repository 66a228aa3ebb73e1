"""One site's committed mean bundle, read from its publishable files and checked without its data.

A coordinator combining several sites' means (METHODS.md 26) holds only what each site published:
release.json, release.csv, coefficients.csv, config.yaml and ledger.json (never analyst_view.json).
:func:`read_site` reads them and :func:`check_site` re-derives, from the public settings, the
declared n and the grid alone, everything the release claims that does not depend on the data:
the sensitivity, sigma, the exact sampler's calibration and grid, the charge, the noise scale of
every coefficient and the expected error. It then rebuilds the published curve from the
published noised coefficients (the site's own post-processing) and, for a mean released with
bands, the privacy band. A bundle that fails any of these is refused: the combination may
then rely on each site's curve having the noise law its record states.

The plan needs curves only for their shape: n rows at the public centre stand in for the data
(a mean's sensitivity, noise scales and error depend on n, the grid and the settings only).
"""

from __future__ import annotations

import io
import json
import math
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Mapping

import numpy as np
import pandas as pd

from ..budget.ledger_store import printable_name
from ..data.layouts import clean_text
from ..data.loading import FunctionalData
from ..data.yaml_files import parse_yaml
from ..errors import FdpError, ParameterError, shown
from ..limits import MAX_FILE_BYTES, MAX_GRID_POINTS, MAX_SITE_PERSONS
from ..releases.bands import SIMULATION_SEED, mean_part, privacy_band
from ..releases.mean import MeanRelease, mean_sums, plan_mean_release
from ..releases.postprocess import finish_mean
from .commit import prepare_mean_commit
from .replay import parse_config, settings_of

# The publishable files a combination reads; analyst_view.json is never opened.
SITE_FILES = ("release.json", "release.csv", "coefficients.csv", "config.yaml", "ledger.json")
REL_TOL = 1e-9


@dataclass(frozen=True)
class Site:
    """A site's committed mean as published, and the public plan re-derived from it."""

    label: str
    record: dict = field(repr=False)
    config: dict = field(repr=False)
    table: pd.DataFrame = field(repr=False)
    coefficients: pd.DataFrame = field(repr=False)
    ledger: dict = field(repr=False)
    settings: object = field(default=None, repr=False)  # the mean part's settings (MeanSettings)
    plan: MeanRelease | None = field(default=None, repr=False)  # data-free: noise law, grid, smoother
    unit_noise_scale: float = 1.0  # the exact sampler's inflation c: the committed noise is c times the plan's

    @property
    def smoothed_probe(self) -> np.ndarray:
        """The site's estimator applied to the public probe curve of :func:`stand_in` (its smoother S)."""
        return self.plan.estimate

    @property
    def release_id(self) -> str:
        return str(self.record.get("id"))

    @property
    def n(self) -> int:
        return int(self.record["n"])

    @property
    def grid(self) -> np.ndarray:
        return self.table["t"].to_numpy(dtype=float)

    @property
    def values(self) -> np.ndarray:
        return self.table["value"].to_numpy(dtype=float)

    @property
    def has_bands(self) -> bool:
        return "band" in self.record and {"ci_lower", "ci_upper"} <= set(self.table.columns)

    @property
    def noise_scales(self) -> np.ndarray:
        """The committed noise's per-coefficient scales (the plan's times c)."""
        return self.plan.noise_scales * self.unit_noise_scale

    @property
    def noise_sq_l2_error(self) -> float:
        """E||Z_k||^2 of the committed noise (the record's expected_sq_l2_error, re-derived)."""
        return float(self.plan.expected_sq_l2_error * self.unit_noise_scale**2)

    def noise_variance(self) -> np.ndarray:
        """Var Z_k(t) on the grid (coefficients independent)."""
        var = self.plan.family.variance_factor * self.noise_scales**2
        return (self.plan.synthesis**2) @ var

    def noise_draws(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` draws of Z_k on the grid from its published law."""
        return (self.plan.family.standard(rng, (size, self.noise_scales.size)) * self.noise_scales) @ self.plan.synthesis.T

    def sampling_variance(self) -> np.ndarray | None:
        """Var of S (Ybar_k - E Y)(t) on the grid, read off the two published bands (METHODS 18):
        the confidence band's sd w(t) = half-width / q covers sampling and noise, the noise's own
        variance is known, the difference is the sampling part. None without bands."""
        if not self.has_bands:
            return None
        q = float(self.record["band"]["confidence_quantile"])
        half = (self.table["ci_upper"].to_numpy(dtype=float) - self.table["ci_lower"].to_numpy(dtype=float)) / 2.0
        return np.clip((half / q) ** 2 - self.noise_variance(), 0.0, None)


def _refuse(label: str, why: str):
    raise ParameterError(f"site {label}: {why}")


# A label names the site in messages (one line), in the report and in release.json.
_LABEL_MAX = 100


def site_label(text) -> str:
    """A site's label from a folder's or an upload's name: without the control, bidirectional and
    invalid characters a name may not hold (the rule of data set and budget names), at most _LABEL_MAX."""
    return printable_name(text, "site")[:_LABEL_MAX].strip()


def read_files(files: Mapping[str, bytes], label: str) -> Site:
    """A site from its files by name (bytes); only SITE_FILES are read. config.yaml is read as every
    YAML fdp is handed (data/yaml_files.py: at most MAX_YAML_BYTES, 1e-5 a number), as replay reads it."""
    label = site_label(label)
    missing = [name for name in SITE_FILES if name not in files]
    if missing:
        _refuse(label, f"not a committed bundle: {', '.join(missing)} missing")
    try:
        record = json.loads(files["release.json"])
        ledger = json.loads(files["ledger.json"])
        config = parse_config(parse_yaml(files["config.yaml"].decode("utf-8"), "config"))
        table = pd.read_csv(io.BytesIO(files["release.csv"]))
        coefficients = pd.read_csv(io.BytesIO(files["coefficients.csv"]))
    except ParameterError as exc:
        _refuse(label, f"config.yaml: {exc}")
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        _refuse(label, f"unreadable bundle file ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})")
    if not isinstance(record, dict) or not isinstance(ledger, dict):
        _refuse(label, "release.json and ledger.json must hold JSON objects")
    return Site(label, record, config, table, coefficients, ledger)


def read_dir(path, label: str | None = None) -> Site:
    folder = Path(path)
    label = site_label(label or folder.name)
    if not folder.is_dir():
        _refuse(label, f"{clean_text(folder, 200)} is not a folder")
    files = {}
    for name in SITE_FILES:
        file = folder / name
        if file.is_file():  # regular files only (symlinks followed): a pipe or a device is never read
            if file.stat().st_size > MAX_FILE_BYTES:
                _refuse(label, f"{name} is larger than a bundle file may be")
            files[name] = file.read_bytes()
    return read_files(files, label)


def read_zip(data: bytes, label: str) -> Site:
    """A site from an exported zip (one folder fdp_release_<id>/ inside, or the files at its top)."""
    label = site_label(label)
    if len(data) > MAX_FILE_BYTES:
        _refuse(label, "the zip is larger than an upload may be")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            files = {}
            for info in archive.infolist():
                name = PurePosixPath(info.filename).name
                if name in SITE_FILES and info.file_size <= MAX_FILE_BYTES:
                    files[name] = archive.read(info)
    except (zipfile.BadZipFile, OSError) as exc:
        _refuse(label, f"not a zip archive ({exc})")
    return read_files(files, label)


# --------------------------------------------------------------------------- the data-free check

def stand_in(settings, grid: np.ndarray) -> FunctionalData:
    """One public row: the centre plus a small public probe curve, inside the range and the tau ball
    (nothing is clipped), so the plan's estimate is the site's smoother applied to the probe."""
    lo, hi = (float(v) for v in settings.value_range) if settings.value_range is not None else (-1.0, 1.0)
    unit = (grid - grid[0]) / (grid[-1] - grid[0])
    row = (lo + hi) / 2.0 + 0.01 * min(hi - lo, float(settings.tau or 1.0)) * np.cos(np.pi * unit)
    meta = pd.DataFrame({settings.person_column: [0]}) if settings.person_column else pd.DataFrame()
    return FunctionalData(grid, row[None, :], meta)


def _public_plan(settings, grid: np.ndarray, n: int, granularity_exp: int):
    """The commit's plan for n persons all equal to the stand-in row: public quantities only.
    The sums are linear in the persons, so one row's sums times n stand for n rows (no n x m matrix)."""
    one_settings = replace(settings, n_public=None)
    one = stand_in(one_settings, grid)
    sums = mean_sums(one, one_settings)
    sums = replace(sums, n=n, n_curves=n, total=sums.total * n, raw_sum=sums.raw_sum * n)
    plan = plan_mean_release(sums, settings)
    return prepare_mean_commit(one, settings, granularity_exp=granularity_exp, plan=plan)


def _close(a, b, scale: float = 1.0) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= REL_TOL * np.maximum(np.abs(b), scale)))


def check_site(site: Site) -> Site:
    """The site with its public plan, or ParameterError naming the first thing that does not verify."""
    try:
        return _checked(site)
    except FdpError:
        raise
    # A field of the wrong shape (or an absurd value: overflow, division by zero).
    except (KeyError, TypeError, AttributeError, ValueError, IndexError, ArithmeticError) as exc:
        _refuse(site.label, f"malformed bundle ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})")


def _checked(site: Site) -> Site:
    r, label = site.record, site.label
    if r.get("publishable") is not True or r.get("preview"):
        _refuse(label, "release.json is not marked publishable (a preview or an analyst view): commit the release first")
    if r.get("kind") != "mean" or site.config.get("kind") != "mean" or r.get("route") == "sparse":
        _refuse(label, f"only committed mean curves combine (this is a {r.get('kind')} release)")
    for key in ("id", "ledger_entry", "charged", "noise_sampler", "n"):
        if key not in r:
            _refuse(label, f"not a committed release (release.json has no '{key}'): commit it to a ledger first")
    n = r["n"]  # every public quantity is a function of n: a count, not a number of any other kind
    if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= MAX_SITE_PERSONS:
        _refuse(label, f"release.json's n (the site's persons) must be a whole number from 2 to {MAX_SITE_PERSONS:,}, "
                       f"got {shown(n)}")
    ids = {e.get("id") for e in site.ledger.get("entries", []) if isinstance(e, dict)}
    for entry_id in [*r.get("part_entry_ids", ()), r["id"]]:
        if entry_id not in ids:
            _refuse(label, f"ledger.json holds no entry {entry_id}: the release was not charged to this ledger")
    if not 3 <= len(site.table) <= MAX_GRID_POINTS:
        _refuse(label, f"release.csv must hold 3 to {MAX_GRID_POINTS} grid points")
    if not {"t", "value"} <= set(site.table.columns) or len(site.table) != int(r.get("m", -1)):
        _refuse(label, "release.csv does not hold the m grid points (columns t, value) release.json states")
    try:
        settings = mean_part(settings_of(site.config))
    except ParameterError as exc:
        _refuse(label, f"config.yaml: {exc}")
    if int(site.config.get("data", {}).get("n", -1)) != int(r["n"]):
        _refuse(label, "does not verify: n in config.yaml differs from release.json")
    sampler = r["noise_sampler"]
    pending = _public_plan(settings, site.grid, int(r["n"]), sampler.get("granularity_exp"))
    plan, noise, entry = pending.plan, pending.noise_plan, pending.entry
    c = float(noise.unit_noise_scale)
    charged = r["charged"]
    checks = [("sensitivity", r.get("sensitivity"), plan.sensitivity), ("sigma", r.get("sigma"), plan.sigma),
              ("scaled sensitivity", sampler.get("scaled_sensitivity"), noise.scaled_sensitivity),
              ("unit noise scale", sampler.get("unit_noise_scale"), c),
              ("grid exponent k", sampler.get("granularity_exp"), noise.granularity_exp),
              ("charged epsilon", charged.get("epsilon"), entry.epsilon),
              ("charged delta", charged.get("delta"), entry.delta),
              ("expected squared L2 error", r.get("expected_sq_l2_error"), plan.expected_sq_l2_error * c * c)]
    for name, published, derived in checks:
        if (published is None) != (derived is None) or (derived is not None and not _close(published, derived)):
            _refuse(label, f"does not verify: {name} published {published!r}, re-derived {derived!r} from config.yaml")
    coefs = site.coefficients
    active = pending.active
    if len(coefs) != active.size or not _close(coefs["noise_scale"].to_numpy()[active], pending.scales):
        _refuse(label, "does not verify: coefficients.csv's noise scales differ from those config.yaml implies")
    unit = coefs["unit_value"].to_numpy(dtype=float)
    if not _close(coefs["value"].to_numpy(dtype=float), coefs["noise_scale"].to_numpy(dtype=float) * unit):
        _refuse(label, "does not verify: coefficients.csv's values are not noise_scale x unit_value")
    full = np.zeros(active.size)
    full[active] = coefs["value"].to_numpy(dtype=float)[active]
    curve = finish_mean(plan.offset + plan.synthesis @ full, settings).values
    if not _close(site.values, curve, scale=1.0):
        _refuse(label, "does not verify: release.csv is not the curve of the published coefficients")
    checked = replace(site, settings=settings, plan=plan, unit_noise_scale=c)
    if "band" in r:
        _check_privacy_band(checked)
    return checked


def _check_privacy_band(site: Site) -> None:
    """The privacy band is data-free: re-simulate it (public seed) and compare."""
    band = site.record["band"]
    if not {"privacy_lower", "privacy_upper", "ci_lower", "ci_upper"} <= set(site.table.columns):
        _refuse(site.label, "does not verify: release.json states bands that release.csv lacks")
    committed = replace(site.plan, noise_scales=site.noise_scales)
    again = privacy_band(committed, site.values, float(band["level"]), n_draws=int(band["n_draws"]),
                         seed=int(band.get("simulation_seed", SIMULATION_SEED)))
    if not (math.isclose(again.quantile, float(band["privacy_quantile"]), rel_tol=1e-6)
            and _close(site.table["privacy_upper"].to_numpy(dtype=float), again.upper, scale=1.0)):
        _refuse(site.label, "does not verify: the privacy band is not the one its noise law gives")
