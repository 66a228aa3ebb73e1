"""Regenerate the built-in example files (the project's own simulated data, no third-party data).

    python data/make_examples.py

example_curves.csv   wide CSV, 60 simulated growth-like curves on an uneven grid + metadata
example_long.csv     the first 20 of those curves in long format (id, t, value)
example_missing.csv  wide CSV with a few missing cells (interior gaps and one missing end point)
example_sparse.csv   long CSV (id, t, value) of 500 persons with 2..10 visits each at their own Uniform(0, 1) times,
                     fdp_core.data.simulate.sparse_design (known mean sparse_true_mean, seed 20): the sparse route
example_counts.csv   value,count table: simulated deaths per single year of age 0..100 (Gompertz-Makeham
                     hazard on a stationary population of 20,000), for densities from counts
"""

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent


def main() -> None:
    rng = np.random.default_rng(2024)
    # An uneven grid (denser early, like growth-study visit ages) so examples exercise
    # trapezoid weights on non-uniform grids.
    grid = np.round(np.concatenate([np.linspace(0, 0.3, 13), np.linspace(0.35, 1.0, 14)]), 4)
    n = 60
    group = rng.choice(["A", "B"], n)
    amp = rng.normal(1.0, 0.15, n) + 0.15 * (group == "B")
    phase = rng.normal(0.0, 0.05, n)
    wiggle = rng.normal(0.0, 0.08, (n, 3))
    t = grid[None, :]
    values = (0.4 + 0.5 * amp[:, None] * np.sin(np.pi * (t + phase[:, None]))
              + wiggle[:, [0]] * np.cos(2 * np.pi * t) + wiggle[:, [1]] * np.sin(3 * np.pi * t)
              + wiggle[:, [2]] * t + rng.normal(0, 0.01, (n, grid.size)))
    ids = [f"p{i + 1:03d}" for i in range(n)]
    wide = pd.DataFrame(np.round(values, 5), columns=[f"{g:g}" for g in grid])
    wide.insert(0, "group", group)
    wide.insert(0, "id", ids)
    wide.to_csv(HERE / "example_curves.csv", index=False)

    long = pd.DataFrame([(ids[i], g, round(values[i, j], 5)) for i in range(20) for j, g in enumerate(grid)],
                        columns=["id", "t", "value"])
    long.to_csv(HERE / "example_long.csv", index=False)

    missing = wide.iloc[:30].copy().astype(object)
    missing.iloc[3, 5] = ""
    missing.iloc[7, 10:12] = ""
    missing.iloc[12, 2] = ""  # missing first grid value: cannot be interpolated
    missing.to_csv(HERE / "example_missing.csv", index=False)

    # Deaths per age: hazard 0.0005 + 0.00003 exp(0.1 age), infant bump; multinomial counts.
    age = np.arange(101)
    hazard = 0.0005 + 0.00003 * np.exp(0.1 * age) + 0.02 * (age == 0)
    survival = np.exp(-np.concatenate([[0.0], np.cumsum(hazard)[:-1]]))
    deaths = survival * (1 - np.exp(-hazard))
    counts = rng.multinomial(20_000, deaths / deaths.sum())
    pd.DataFrame({"value": age, "count": counts}).to_csv(HERE / "example_counts.csv", index=False)

    make_sparse_example()


def make_sparse_example() -> None:
    """data/example_sparse.csv from the library's own sparse design (fixed seed)."""
    import sys

    sys.path.insert(0, str(HERE.parent))
    from fdp_core.data.simulate import SPARSE_EXAMPLE, sparse_design

    d = sparse_design(SPARSE_EXAMPLE["n"], visits=SPARSE_EXAMPLE["visits"], noise_sd=SPARSE_EXAMPLE["noise_sd"],
                      seed=SPARSE_EXAMPLE["seed"])
    pd.DataFrame({"id": d.ids, "t": d.t, "value": d.y}).to_csv(HERE / "example_sparse.csv", index=False)


if __name__ == "__main__":
    main()
