"""The app's non-private views, as the commit record and the report name them.

A module of constants only, so that the app's sidebar and pages can name a view
(fdp_ui.state.note_view) without importing the commit machinery (fdp_core.publish.commit
pulls in the mechanisms, the PCA samplers and scipy.linalg: about 0.2 s at app start).
"""

# The app's non-private views, as the report names them (fdp_ui.state.note_view records them).
NONPRIVATE_VIEWS = {
    "curves": "the raw curves (Data page)",
    "norms": "the histogram of curve norms and the clipping counts (Data page, sidebar)",
    "range_suggestion": "the data's minimum and maximum (value-range suggestion, Data page)",
    "mean_estimate": "the non-private mean estimate and its bias (Mean page)",
    "tradeoff_truth": "error curves against the non-private estimate (Trade-offs page)",
    "pcv": "the PCV score surface and its optimum (Trade-offs page)",
    "density_estimate": "the non-private density estimate (Density page)",
    "pca_estimate": "the non-private principal components and scree (Components page)",
    "covariance_estimate": "the non-private covariance surface, its eigenfunctions and variance ratios "
                           "(Covariance & regression page)",
    "regression_ols": "the non-private OLS coefficient functions and noise bands (Covariance & regression page)",
}
