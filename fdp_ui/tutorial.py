"""Tutorial mode: plain-words help for every page, and the switch that survives a reload.

The sidebar's "tutorial mode" toggle (key ``g_tutorial``) is mirrored in the URL
(``?tutorial=1``), so a reload, a bookmark or a link handed to a classroom keeps it on.
app.py calls :func:`sync_with_url` before the page and :func:`render` to show the page's
text above it.
"""

from __future__ import annotations

import streamlit as st

KEY = "g_tutorial"
PARAM = "tutorial"

# Per page: what it is for, each control in plain words, what a classroom should try.
TEXTS = {
    "pages/data.py": (
        "This page chooses the curves. Each curve (one row of a wide file, or one id of a long file) belongs to "
        "one person: that person is what differential privacy protects.",
        [("Source", "the built-in example, your own file (CSV, Parquet; long files with any column names: map "
                    "them below the upload), or a simulation whose true mean is known."),
         ("Curves with missing values", "drop incomplete curves, or fill interior gaps by straight lines."),
         ("t label, value unit", "names used on every axis of every chart (e.g. 'day', 'deg C')."),
         ("Unit & bounds", "tick the declaration once tau (sidebar) was chosen from domain knowledge: a bound read "
                           "off the data leaks information."),
         ("tau (sidebar)", "the largest size (L2 norm) a curve may have; larger curves are shrunk. The histogram "
                           "shows how many curves a tau clips.")],
        ["Switch to 'simulate' and change the number of curves N: how does the histogram of norms move?",
         "Set tau below most norms (sidebar): the warning says the estimate is biased towards 0. Why?",
         "Upload a long file whose columns are called station, day, temp: map them and name the axes."]),
    "pages/mean.py": (
        "The mean curve, released with noise. The red dashed line is the analyst's non-private view (never "
        "published); the blue curves are what the public could see. Previews cost no budget.",
        [("mechanism", "how the noise is made: Gaussian ((epsilon, delta)-DP) or one of four pure epsilon-DP "
                       "mechanisms with Laplace-type noise."),
         ("compare all mechanisms", "one small chart per mechanism at the same settings, with a table of their "
                                    "errors."),
         ("sensitivity bound", "how far one person can move the estimate; 'tight' is the exact worst case."),
         ("calibration", "how the noise scale is computed from epsilon and delta ('analytic' is the smallest "
                         "valid one)."),
         ("draws / band", "several independent releases, or the range that 90% of them stay inside."),
         ("epsilon (sidebar)", "the privacy loss: smaller is more private and noisier.")],
        ["Move epsilon from 0.1 to 10 (sidebar): watch the blue curves close in on the red dashed line (the "
         "value axis stays fixed to the declared range, so only the spread moves; 'show: band' draws them as one "
         "band).",
         "Turn on 'compare all mechanisms': which mechanism is closest to the analyst view at epsilon = 1?",
         "Raise log10 phi (sidebar): the release gets smoother but moves away from the data (bias)."]),
    "pages/density.py": (
        "A private density (a smoothed histogram) of one number per curve, e.g. the value at one time point. "
        "Each person contributes one observation.",
        [("observations", "a feature of your curves, or a built-in example with a known true density."),
         ("feature", "which number per curve: the value at t0, an average over [u, v], the size, the maximum, "
                     "or a numeric column of the file."),
         ("public box", "the range the feature can take, known in advance (not read off the data)."),
         ("bandwidth h", "the width of each bump: larger = smoother and less noise, but details vanish."),
         ("grid points", "where the density is evaluated."),
         ("mechanism", "Hall's Gaussian process noise, ICLP (pure epsilon-DP), or both side by side.")],
        ["Halve the bandwidth: the density gets more detail and much more noise. Why does the noise grow?",
         "Make the box twice as wide as needed: what happens to the error radius?",
         "Compare both mechanisms at epsilon = 0.5 and at epsilon = 5."]),
    "pages/components.py": (
        "The main directions along which the curves vary (functional principal components), drawn privately "
        "by the exponential mechanism: directions that explain much variance are more likely.",
        [("components k", "how many directions."),
         ("basis", "the smooth functions the curves are expressed in before the mechanism sees them."),
         ("gamma", "a fixed preference for smooth directions; it does not change the guarantee."),
         ("sampler", "exact (no caveat) or Gibbs (a Markov chain: only approximate DP)."),
         ("centring", "subtract a mean first: best a mean already released (its budget is already counted)."),
         ("private draws", "several independent releases overlaid; publishing d of them costs d x epsilon.")],
        ["Set epsilon to 0.1, then 10: how far are the private components from the red analyst view?",
         "Centre by a committed mean (commit one on the Release page first) and compare with no centring.",
         "Raise k to 3: epsilon is split across the components; which one suffers most?"]),
    "pages/covariance.py": (
        "How the curves vary together (the covariance function, a surface over pairs of time points) and how "
        "a per-person number such as age shifts the curves (function-on-scalar regression), both released "
        "with noise.",
        [("mechanism", "Gaussian noise on the whole surface ((epsilon, delta)-DP) or Laplace-type noise (pure "
                       "epsilon-DP)."),
         ("Gaussian bound", "how far one person can move the surface; the default is the tighter one."),
         ("centring", "about a public centre, or about a mean released at the same time (gamma: the mean's "
                      "share of the budget)."),
         ("eigenfunctions shown", "the main shapes of variation read off the private surface."),
         ("public bound B, gamma, kappa", "the regression's bound on the covariate, the budget split between "
                                          "its two releases, and a floor that keeps the solve stable.")],
        ["Compare the private and the analyst's covariance heatmaps at epsilon = 0.5 and at epsilon = 5.",
         "Switch the centring: what does releasing the mean as well cost, and what does it change?",
         "Raise gamma in the regression: which coefficient band gets narrower?"]),
    "pages/tradeoffs.py": (
        "How the error of the private mean changes with one setting at a time, and which epsilon reaches an "
        "accuracy you name. Use it to pick settings before spending budget.",
        [("parameter", "the setting swept along the x axis (epsilon, smoothing, tau, n, ...)."),
         ("mechanisms", "which mechanisms to draw."),
         ("Monte Carlo draws", "simulated releases behind the shaded bands (0: formulas only)."),
         ("PCV vs PSS", "choosing the smoothing by looking at the data (PCV: not DP) or by a data-free rule "
                        "(PSS)."),
         ("acceptable error", "the accuracy you need; the table answers with the smallest epsilon.")],
        ["Sweep epsilon: where does the curve flatten (more epsilon buys little accuracy)?",
         "Type an acceptable error and set the sidebar's epsilon from the table.",
         "Apply the PCV optimum and read the warning: why is that choice not private?"]),
    "pages/plan.py": (
        "Plan a whole release before spending anything: say how accurate each statistic must be (its 95% radius), "
        "or give it a weight or an epsilon, and read what each costs and what the plan costs in total. Only public "
        "inputs are used: the declared n, the grid, the range and the smoothing settings.",
        [("n (persons, declared public)", "the number of persons the release covers: you declare it."),
         ("rule", "target: a 95% radius to reach; weight: a share of a total budget; epsilon: stated."),
         ("charged epsilon", "what the ledger will charge for that statistic (the exact sampler's own figure)."),
         ("whole plan", "a valid total for all parts together, cheaper than adding them up, because the plan is "
                        "fixed before any output is seen.")],
        ["Halve the mean's target radius: how much more epsilon does it cost (about 2x, or 4x in rho)?",
         "Switch the density to a weight and give a total budget: how is it split?",
         "Download the plan and commit it with 'fdp plan plan.yaml --data FILE --commit'."]),
    "pages/combine.py": (
        "Combine the private means several sites released on their own (hospitals, countries that may not pool "
        "their data) into one curve. Each site's bundle is checked without any data, their public settings must "
        "agree, and the curves are weighed by their accuracy. Nothing is charged: only published files are read.",
        [("site bundles", "the zip each site exported after its commit (one per site, two or more)."),
         ("declared sampling term v", "how much one person's smoothed curve varies: a public value you declare; "
                                      "sites that released a second moment give it themselves."),
         ("weight", "each site's share of the combined curve: larger for more persons and a larger epsilon."),
         ("expected squared L2 error", "the combined curve's accuracy, always better than the best single site.")],
        ["Combine a site at epsilon 0.5 with one at epsilon 2: which gets the larger weight, and why?",
         "Upload a site released with another kernel: read the refusal.",
         "Compare the combined error with the best site's: how much did combining buy?"]),
    "pages/release.py": (
        "The one page where privacy budget is spent: set the session budget, commit a release (fresh noise, "
        "charged to the ledger), and download what may be published.",
        [("budget / harm level", "the total epsilon and delta all releases of this session may use."),
         ("what to commit", "the mean, a density or principal components, with the settings you explored."),
         ("Commit", "draws the noise once; there is no undo and no free second draw."),
         ("ledger", "every release and the combined privacy loss."),
         ("export", "a zip with the release, its provenance, a report, and a script and notebook that re-run "
                    "the same release on a data file."),
         ("audit", "runs the mechanism many times on two data sets that differ in one person and checks the "
                   "claimed guarantee empirically.")],
        ["Commit a mean, then look at the ledger: how much budget is left?",
         "Open the HTML report: is any raw data in it?",
         "Run the audit: why is the under-noised control not always flagged?"]),
}


def sync_with_url() -> bool:
    """Start from ``?tutorial=1`` on a new session; afterwards write the toggle into the URL.

    Called before the page: the toggle's value from the previous interaction is already in
    the session state. Returns whether tutorial mode is on.
    """
    ss = st.session_state
    if KEY not in ss:
        ss[KEY] = st.query_params.get(PARAM) == "1"
    on = bool(ss[KEY])
    if on and st.query_params.get(PARAM) != "1":
        st.query_params[PARAM] = "1"
    elif not on and PARAM in st.query_params:
        del st.query_params[PARAM]
    return on


def render(page_path: str) -> None:
    """The page's tutorial text (only in tutorial mode)."""
    text = TEXTS.get(page_path)
    if text is None or not st.session_state.get(KEY):
        return
    purpose, controls, exercises = text
    with st.expander("Tutorial: what this page does, its controls, what to try", expanded=True):
        st.markdown(purpose)
        st.markdown("\n".join(f"- **{name}**: {what}" for name, what in controls))
        st.markdown("**Try this in class**\n" + "\n".join(f"{i}. {task}" for i, task in enumerate(exercises, 1)))
