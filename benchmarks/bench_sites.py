"""Several sites, one curve (METHODS.md 26): the combined mean against a single site, a central release, the rate.

    python benchmarks/bench_sites.py [--replications 40] [--coverage-replications 100]

Population: 20,000 curves of the KL design (fdp_core/data/simulate.py, m = 50; its sure value range
is public), Gaussian mechanism, Matern 5/2 kernel, rho 0.1. m_S is the non-private smoothed mean
of the whole population; v = tr(S Sigma S) is measured from 200 subsamples of 50 (and declared to
the weights, METHODS 26's "declared" source). For K in {2, 5, 10} sites, equal (all 1) or spread
(0.5 .. 4, geometric) epsilons, equal (200 each) or unequal (50 .. 800) n, each replication draws
disjoint persons for the sites, releases each site's mean (numpy preview noise, the commit's law
up to the exact sampler's c ~ 1) and combines them with fdp_core.publish.combine. Reported, as
mean squared L2 errors to m_S over the replications:
- combined: the weighted sum; stated: sum_k w_k^2 (v / n_k + E||Z_k||^2), and their ratio;
- best site: the smallest of the sites' own errors;
- central: one release over all persons at the smallest epsilon_k (the guarantee every person keeps);
- rate: 1 / sum_k min(n_k / v, (n_k epsilon_k)^2 / C), the federated rate with heterogeneous
  privacy (Cai, Chakraborty & Vuursteen 2024), C = E||Z||^2 (n epsilon)^2 of one release.
Coverage: sites released with confidence bands (share 0.2, level 0.95), v from their bands, the
combined band of fdp_core.publish.combine; the share of replications whose band holds m_S on the grid.
"""

from __future__ import annotations

import argparse
import json
import time

import _util  # noqa: F401  (first: sets the BLAS thread variables before numpy loads)

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from fdp_core.data.loading import FunctionalData  # noqa: E402
from fdp_core.data.simulate import design_value_range, simulate  # noqa: E402
from fdp_core.publish.combine import combined_bands, optimal_weights, sampling_term  # noqa: E402
from fdp_core.publish.site_bundle import Site  # noqa: E402
from fdp_core.releases.bands import confidence_band, plan_band_release  # noqa: E402
from fdp_core.releases.mean import MeanSettings, plan_mean_release  # noqa: E402

M, POPULATION = 50, 20_000


def settings(epsilon: float, value_range, **changes) -> MeanSettings:
    return MeanSettings(mechanism="gaussian", kernel="matern52", rho=0.1, epsilon=float(epsilon), delta=1e-5,
                        value_range=value_range, **changes)


def subset(population: FunctionalData, rows: np.ndarray) -> FunctionalData:
    return FunctionalData(population.grid_points, population.data_matrix[rows])


def l2sq(curve: np.ndarray, weights: np.ndarray) -> float:
    return float(curve**2 @ weights)


def cell(population, m_s, v, C, value_range, ns, epsilons, replications, rng) -> dict:
    K = len(ns)
    w_quad = population.weights
    combined_err, site_err, central_err, stated = [], np.zeros(K), [], None
    for _ in range(replications):
        rows = rng.permutation(POPULATION)
        starts = np.cumsum([0, *ns])
        plans = [plan_mean_release(subset(population, rows[starts[k]:starts[k + 1]]), settings(epsilons[k], value_range))
                 for k in range(K)]
        curves = np.stack([p.sample(rng, 1)[0] for p in plans])
        w, e, stated = optimal_weights(ns, [p.expected_sq_l2_error for p in plans], v)
        combined_err.append(l2sq(w @ curves - m_s, w_quad))
        site_err += [l2sq(c - m_s, w_quad) for c in curves]
        central = plan_mean_release(subset(population, rows[:starts[-1]]), settings(min(epsilons), value_range))
        central_err.append(l2sq(central.sample(rng, 1)[0] - m_s, w_quad))
    combined = float(np.mean(combined_err))
    rate = 1.0 / sum(min(n / v, (n * eps) ** 2 / C) for n, eps in zip(ns, epsilons))
    return {"K": K, "n": list(map(int, ns)), "epsilon": [round(float(e), 3) for e in epsilons], "combined": combined,
            "stated": stated, "combined_over_stated": combined / stated,
            "best_site": float(np.min(site_err / replications)), "central_min_eps": float(np.mean(central_err)),
            "rate": rate, "combined_over_rate": combined / rate, "weights": [round(float(x), 4) for x in w]}


def band_site(fd: FunctionalData, s: MeanSettings, rng, label: str) -> tuple[Site, np.ndarray]:
    """A site released with bands (numpy preview noise), as combine reads it: plan, curve, bands."""
    plan = plan_band_release(fd, s)
    values = plan.mean.sample(rng, 1)[0]
    bands = confidence_band(plan, values, plan.second_moment.sample(rng, 1)["second_moment"][0])
    table = pd.DataFrame({"t": fd.grid_points, "value": values, "ci_lower": bands.band.lower,
                          "ci_upper": bands.band.upper})
    record = {"band": {"confidence_quantile": bands.band.quantile, "level": s.confidence_band}, "n": plan.mean.n}
    return Site(label, record, {}, table, pd.DataFrame(), {}, s, plan.mean, 1.0), values


def coverage(population, m_s, value_range, K: int, n: int, epsilons, replications, rng) -> dict:
    covered, privacy, widths = 0, 0, []
    for _ in range(replications):
        rows = rng.permutation(POPULATION)
        sites = [band_site(subset(population, rows[k * n:(k + 1) * n]),
                           settings(epsilons[k], value_range, confidence_band=0.95), rng, f"s{k}")[0]
                 for k in range(K)]
        v, _ = sampling_term(sites, None)
        w, _, _ = optimal_weights([n] * K, [s.noise_sq_l2_error for s in sites], v)
        values = w @ np.stack([s.values for s in sites])
        b = combined_bands(sites, w, values, 0.95)
        covered += bool(np.all((b["ci_lower"] <= m_s) & (m_s <= b["ci_upper"])))
        widths.append(float(np.mean(b["ci_upper"] - b["ci_lower"]) / 2))
    return {"K": K, "n": n, "epsilon": [round(float(e), 3) for e in epsilons], "coverage": covered / replications,
            "mean_half_width": float(np.mean(widths)), "replications": replications}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=40)
    parser.add_argument("--coverage-replications", type=int, default=100)
    parser.add_argument("--seed", type=int, default=43)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    population = simulate("kl", n=POPULATION, m=M, seed=args.seed)
    value_range, _ = design_value_range("kl", m=M)
    m_s = plan_mean_release(population, settings(1.0, value_range)).estimate
    v = 50 * float(np.mean([l2sq(plan_mean_release(subset(population, rng.choice(POPULATION, 50, replace=False)),
                                                   settings(1.0, value_range)).estimate - m_s, population.weights)
                            for _ in range(200)]))
    probe = plan_mean_release(subset(population, np.arange(100)), settings(1.0, value_range))
    C = probe.expected_sq_l2_error * (100 * 1.0) ** 2
    print(f"v = {v:.4g}, C = {C:.4g}, value range {value_range[0]:.3g}..{value_range[1]:.3g}")
    rows = []
    print(f"{'K':>3} {'eps':>7} {'n':>7} {'combined':>10} {'stated':>10} {'c/stated':>8} {'best site':>10} "
          f"{'central':>10} {'rate':>10} {'c/rate':>7}")
    for K in (2, 5, 10):
        for eps_name, epsilons in (("equal", np.ones(K)), ("spread", np.geomspace(0.5, 4.0, K))):
            for n_name, ns in (("equal", np.full(K, 200)), ("unequal", np.geomspace(50, 800, K).round().astype(int))):
                row = cell(population, m_s, v, C, value_range, ns, epsilons, args.replications, rng)
                rows.append({**row, "eps_pattern": eps_name, "n_pattern": n_name})
                print(f"{K:>3} {eps_name:>7} {n_name:>7} {row['combined']:>10.3g} {row['stated']:>10.3g} "
                      f"{row['combined_over_stated']:>8.2f} {row['best_site']:>10.3g} {row['central_min_eps']:>10.3g} "
                      f"{row['rate']:>10.3g} {row['combined_over_rate']:>7.2f}", flush=True)
    cover = []
    for K in (2, 5):
        for epsilons in (np.ones(K), np.geomspace(0.5, 4.0, K)):
            c = coverage(population, m_s, value_range, K, 300, epsilons, args.coverage_replications, rng)
            cover.append(c)
            print(f"coverage K={K} eps {c['epsilon']}: {c['coverage']:.3f} ({c['replications']} replications), "
                  f"mean half-width {c['mean_half_width']:.3g}", flush=True)
    print(json.dumps({"benchmark": "bench_sites", "v": v, "C": C, "replications": args.replications,
                      "cells": rows, "coverage": cover, "seconds": time.perf_counter() - start}))


if __name__ == "__main__":
    main()
