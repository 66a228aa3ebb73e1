"""Data in: loading and layouts, the per-record transform (ranges, persons), fingerprints, counts, features, simulations."""
