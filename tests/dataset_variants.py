"""Variants of one data set as a custodian meets them (issue 21), and unrelated data sets.

Each builder writes one file into a folder and returns (path, load options). Used by
tests/test_datasets.py; the variants table of the closing note is printed from there.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

GRID_START = 4  # dti_cca.csv: subject, visit, case, sex, then 93 grid columns


def _wide(path: Path) -> pd.DataFrame:
    return pd.read_csv(path)


def _grid_columns(frame: pd.DataFrame) -> list[str]:
    return list(frame.columns[GRID_START:])


def _write(frame: pd.DataFrame, folder: Path, name: str) -> Path:
    out = folder / name
    if name.endswith(".parquet"):
        frame.to_parquet(out, index=False)
    else:
        frame.to_csv(out, index=False)
    return out


def _long(frame: pd.DataFrame) -> pd.DataFrame:
    grid = _grid_columns(frame)
    ids = [f"{s}_{v}" for s, v in zip(frame["subject"], frame["visit"])]
    values = frame[grid].to_numpy(float)
    keep = np.isfinite(values)
    rows = [(ids[i], float(grid[j]), values[i, j]) for i in range(len(ids)) for j in range(len(grid)) if keep[i, j]]
    return pd.DataFrame(rows, columns=["id", "t", "value"])


def variants(source: Path, folder: Path) -> dict[str, tuple[Path, dict]]:
    """Name -> (file, load_curves keyword arguments, person column or None)."""
    base = _wide(source)
    grid = _grid_columns(base)
    rng = np.random.default_rng(21)
    complete = base[base[grid].notna().all(axis=1)]
    out: dict[str, tuple[Path, dict]] = {}

    def add(name, frame, filename=None, **options):
        out[name] = (_write(frame, folder, filename or f"{name}.csv"), options)

    add("identical copy", base)
    f = base.copy()
    row = int(complete.index[0])
    f.loc[row, grid[10]] = f.loc[row, grid[10]] + 1e-12
    add("one value + 1e-12", f)
    add("rounded to 6 significant digits", base.assign(**{c: base[c].map(lambda v: float(f"{v:.6g}")) for c in grid}))
    extra = complete.iloc[[3]].copy()
    extra["subject"] = 999_001
    extra[grid] = extra[grid].to_numpy(float) * 1.01 + 0.002
    add("one late-consent person added", pd.concat([base, extra], ignore_index=True))
    add("one curve removed", base.drop(index=row))
    relabel = {s: 5000 + i for i, s in enumerate(rng.permutation(base["subject"].unique()))}
    add("person ids relabelled", base.assign(subject=base["subject"].map(relabel)))
    scaled = base.rename(columns={c: f"{float(c) * 1000:g}" for c in grid})
    add("grid x 1000 (other units)", scaled)
    add("values x 100 (percent)", base.assign(**{c: base[c] * 100 for c in grid}))
    add("every other grid point", base.drop(columns=grid[1::2]))
    add("missing values interpolated", base, "interpolated.csv", missing="interpolate")
    add("another person column", base.rename(columns={"subject": "participant"}), person="participant")
    add("persons re-sorted", base.sample(frac=1.0, random_state=3))
    add("metadata column renamed", base.rename(columns={"case": "group"}))
    persons = base["subject"].unique()
    keep = rng.choice(persons, size=int(0.9 * persons.size), replace=False)
    add("90% of the persons", base[base["subject"].isin(keep)])
    more = complete.sample(n=max(1, int(0.05 * persons.size)), random_state=5).copy()
    more["subject"] = 900_000 + np.arange(len(more))
    more[grid] = more[grid].to_numpy(float)[::-1] * 0.97 + rng.normal(0, 0.01, size=(len(more), len(grid)))
    add("5% more persons", pd.concat([base, more], ignore_index=True))
    add("Parquet", base, "dti.parquet")
    # Persons with missing cells are seen on fewer points: a long file then needs a declared grid (METHODS.md 24).
    add("long layout", _long(base), "long.csv", person=None, grid="0,1,93")
    add("values x 100 and grid x 1000", scaled.assign(**{f"{float(c) * 1000:g}": base[c] * 100 for c in grid}))
    add("half of the persons", base[base["subject"].isin(persons[: persons.size // 2])])
    add("rounded to 4 decimals", base.assign(**{c: base[c].round(4) for c in grid}))
    add("persons re-sorted, Parquet, ids relabelled", base.assign(subject=base["subject"].map(relabel))
        .sample(frac=1.0, random_state=4), "resorted.parquet")
    add("first visit only", base[base["visit"] == 1])
    return out


def unrelated(shared: Path, root: Path, folder: Path) -> dict[str, tuple[Path, dict]]:
    """Other studies and simulated data: must not match the DTI registration."""
    from fdp_core.data.simulate import SIMULATIONS, simulate

    out = {"Berkeley growth": (shared / "berkeley_growth.csv", {}),
           "example curves": (root / "data" / "example_curves.csv", {}),
           "DTI, another tract (rcst)": (shared / "dti_rcst.csv", {})}
    for key in SIMULATIONS:
        fd = simulate(key)
        frame = pd.DataFrame(fd.data_matrix, columns=[f"{t:.6g}" for t in fd.grid_points])
        frame.insert(0, "id", [f"s{i}" for i in range(fd.data_matrix.shape[0])])
        out[f"simulation {key}"] = (_write(frame, folder, f"sim_{key}.csv"), {})
    return out
