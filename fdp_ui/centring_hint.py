"""The Principal components page's suggestion: centre by a released mean, at a shown price.

Without centring, X'X/n is a second moment: the first component mostly follows the mean and
"mean +/- 2 sd" bands leave the data's range. Centring by a mean that was itself released
keeps everything differentially private; the price is that mean release's budget, shown here
before anything is committed (the Release & audit page commits it).
"""

from __future__ import annotations

import streamlit as st

from fdp_core.errors import FdpError
from fdp_core.publish.export import prepare_mean_commit
from fdp_core.releases.mean import MeanSettings
from fdp_core.releases.pca import PcaSettings
from fdp_core.settings_fields import page_keys

CENTRING_KEY = page_keys(PcaSettings, "components")["centring"]  # the page's centring radio
TOUCHED_KEY = "pca_centring_touched"
COST_MEMO_KEY, COST_MEMO_SIZE = "pca_centring_cost_memo", 16  # (data set, {MeanSettings: price})


def mark_touched() -> None:
    """on_change of the centring radio: the user's own choice is never overridden."""
    st.session_state[TOUCHED_KEY] = True


def preselect(has_committed_mean: bool, range_declared: bool = False) -> None:
    """Before the radio is drawn, unless the user chose: a committed mean of this data set is the
    default centring, else the centre of the declared public range (free: a public input), else none."""
    ss = st.session_state
    if ss.get(TOUCHED_KEY):
        return
    if has_committed_mean and ss.get(CENTRING_KEY) in ("none", "public"):
        ss[CENTRING_KEY] = "released-mean"
    elif range_declared and ss.get(CENTRING_KEY) == "none":
        ss[CENTRING_KEY] = "public"
    elif not range_declared and ss.get(CENTRING_KEY) == "public":
        ss[CENTRING_KEY] = "none"  # the range was withdrawn: 'public' has no centre any more


def mean_release_cost(fd, g) -> tuple[float, float] | None:
    """(epsilon, delta) charged for a Gaussian mean release at the sidebar's settings, or None."""
    settings = MeanSettings(mechanism="gaussian", kernel=g.kernel, rho=g.rho, nu=g.nu, eta=g.eta, phi=g.phi,
                            epsilon=g.epsilon, delta=g.delta, tau=g.tau, tau_from_data=g.tau_from_data, **g.bounds)
    # Planning the release reads the whole data set; the price changes only with the data and the
    # settings, while the page reruns on every change: remembered per data set in this session.
    return _remembered(fd, settings)


def _price(fd, settings: MeanSettings) -> tuple[float, float] | None:
    try:
        entry = prepare_mean_commit(fd, settings).entry
    except FdpError:
        return None
    return entry.epsilon, entry.delta


def _remembered(fd, settings: MeanSettings) -> tuple[float, float] | None:
    """_price, remembered per data set (by identity) and settings in this session."""
    memo = st.session_state.get(COST_MEMO_KEY)
    if memo is None or memo[0] is not fd:
        memo = (fd, {})
        st.session_state[COST_MEMO_KEY] = memo
    if settings not in memo[1]:
        memo[1][settings] = _price(fd, settings)
        while len(memo[1]) > COST_MEMO_SIZE:
            memo[1].pop(next(iter(memo[1])))
    return memo[1][settings]


def render_suggestion(container, fd, g) -> None:
    """Shown while no centring is chosen: what a released mean would cost."""
    cost = mean_release_cost(fd, g)
    price = (f"at the sidebar's settings a Gaussian mean release is charged epsilon {cost[0]:.3g}, delta "
             f"{cost[1]:.2g}" if cost else "its price depends on the Mean page's settings")
    container.info(f"Suggested: centre by a released mean. Uncentred components mostly follow the mean, and "
                   f"'mean +/- 2 sd' can leave the data's range. Commit a mean on the Release & audit page first "
                   f"({price}; it counts once, then PCA reuses it for free).")
