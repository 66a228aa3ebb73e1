"""The Covariance & regression page's expensive work, computed once per server and shared by sessions.

Ten people opening the page together each planned the release, ran 2,000 Monte Carlo draws for
its error radius, sampled the exponential mechanism's components and drew the regression bands:
~2 CPU-seconds and (before the radius was chunked) ~400 MB per session on DTI (issue 40). Each
result here is keyed by a digest of the curves and the full settings (a frozen dataclass's repr
names every field), so sessions on the same data and settings share one object
(st.cache_resource: no copy per session; nothing here is mutated by the page). Draws that depend
on the preview generator are shared only under a demo seed (reproducible by design); with fresh
randomness they are drawn anew, as before.
"""

from __future__ import annotations

import hashlib

import pandas as pd
import streamlit as st

from fdp_core.releases.covariance import exponential_mechanism_components, plan_covariance_release
from fdp_core.releases.regression import bands, plan_regression_release



def data_key(fd) -> str:
    """A digest of everything the page's computations read: grid, curves, the metadata (the
    person column's codes weight the persons; the covariates come from it) and the load report
    with its dropped curves' metadata (their persons still count towards n, hence the noise)."""
    h = hashlib.sha1(fd.grid_points.tobytes())
    h.update(fd.data_matrix.tobytes())
    h.update(repr(fd.report).encode())  # read, dropped and interpolated counts, dropped rows
    for frame in (fd.metadata, fd.report.dropped_metadata):
        if frame is None:
            h.update(b"none")
            continue
        h.update(repr(list(frame.columns)).encode() + repr(frame.shape).encode())
        if not frame.empty:
            try:
                h.update(pd.util.hash_pandas_object(frame, index=True).values.tobytes())
            except TypeError:  # cells pandas cannot hash (lists): their text
                h.update(frame.to_csv().encode())
    return h.hexdigest()


@st.cache_resource(show_spinner="Planning the covariance release...", max_entries=32)
def _covariance(key: str, settings_repr: str, _fd, _settings):
    plan = plan_covariance_release(_fd, _settings)
    return plan, plan.hs_error_radius(0.95)


def covariance_plan(fd, settings):
    """(the planned covariance release, its 95% HS error radius); FdpError as plan_covariance_release."""
    return _covariance(data_key(fd), repr(settings), fd, settings)


@st.cache_resource(show_spinner="Sampling the exponential mechanism's components...", max_entries=32)
def _components(key: str, settings_repr: str, k: int, seed: int, salt: int, _fd, _settings, _rng):
    return exponential_mechanism_components(_fd, _settings, k, _rng)


def em_components(fd, settings, k: int, g, salt: int):
    """The exponential mechanism's k components drawn with the sidebar's generator ``g.rng(salt)``."""
    if g.seed is None:
        return exponential_mechanism_components(fd, settings, k, g.rng(salt))
    return _components(data_key(fd), repr(settings), k, g.seed, salt, fd, settings, g.rng(salt))


@st.cache_resource(show_spinner="Planning the regression release...", max_entries=32)
def _regression(key: str, settings_repr: str, _fd, _settings):
    return plan_regression_release(_fd, _settings)


def regression_plan(fd, settings):
    return _regression(data_key(fd), repr(settings), fd, settings)


@st.cache_resource(show_spinner=False, max_entries=32)
def _bands(key: str, settings_repr: str, draws: int, seed: int, salt: int, _plan, _rng):
    return bands(_plan, _rng, draws)


def regression_bands(fd, plan, draws: int, g, salt: int) -> dict:
    """Pointwise noise bands over ``draws`` releases drawn with ``g.rng(salt)``."""
    if g.seed is None:
        return bands(plan, g.rng(salt), draws)
    return _bands(data_key(fd), repr(plan.settings), draws, g.seed, salt, plan, g.rng(salt))
