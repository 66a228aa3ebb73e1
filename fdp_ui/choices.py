"""The global settings' choices and defaults, shared by the sidebar and by callbacks that set them.

Kept apart from fdp_ui.sidebar so that the ledger's preset callback can set epsilon and delta
without importing the sidebar (which draws the ledger's meter): no import cycle.
"""

import numpy as np
import streamlit as st

# Log-spaced epsilon values, 0.01 ... 10, two significant digits (a select slider moves in
# equal steps of log epsilon, which is how privacy loss should be explored).
EPSILON_CHOICES = tuple(float(f"{v:.2g}") for v in np.logspace(-2, 1, 61))
# Caution from epsilon = 5 (the threshold OpenDP's DP Wizard warns at), stronger from 10.
EPSILON_WARNING, EPSILON_STRONG_WARNING = 5.0, 10.0
DELTA_CHOICES = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-10, 0.01, 0.05, 0.1)

DEFAULTS = {"g_kernel": "matern52", "g_rho": 0.1, "g_nu": 2.0, "g_eta": 1.5, "g_log_phi": -2.0,
             "g_epsilon": 1.0, "g_delta": 1e-5, "g_tau": 1.0, "g_tau_from_data": False,
             "g_seed_mode": "demo seed", "g_seed": 42, "g_tutorial": False, "g_tau_from_range": True}


def setting_default(key: str):
    """The default of a global setting (its value before the sidebar's first run)."""
    return DEFAULTS[key]


def apply(values: dict) -> None:
    """Set global settings programmatically (presets, PSS/PCV buttons). Call from a callback."""
    for key, value in values.items():
        st.session_state[key] = value
