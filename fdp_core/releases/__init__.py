"""Kinds of release: each plans its estimator, sensitivity and noise (mean, density, components, covariance, regression)."""
