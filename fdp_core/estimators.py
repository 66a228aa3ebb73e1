"""scikit-learn-style estimators for the common releases: a few lines from curves to a private result.

Thin wrappers over the plans (:func:`~fdp_core.releases.mean.plan_mean_release`,
:func:`~fdp_core.releases.pca.private_pca`) and the commit protocol: the same settings, the same
defaults as the command line (tau and the centre follow ``bounds``), the same noise. Without an
``accountant`` a fit is a *preview* (numpy noise, nothing charged, not for publication); with one
(an in-memory :class:`~fdp_core.budget.accounting.Ledger`) the fit commits with the exact discrete
noise and charges it, refusing beyond its budget. Fitted attributes end in ``_``, as in
scikit-learn; ``quote(X)`` gives the charge before anything is drawn.
"""

from __future__ import annotations

import numpy as np

from .data.loading import FunctionalData, from_arrays
from .errors import ParameterError
from .params import short_repr


def as_functional_data(X, grid=None, metadata=None, person_column: str | None = None) -> FunctionalData:
    """Curves from a FunctionalData, a scikit-fda FDataGrid, or an (n, m) array with its ``grid``."""
    if isinstance(X, FunctionalData):
        return X
    if hasattr(X, "grid_points") and hasattr(X, "data_matrix"):
        from .data.skfda_io import from_skfda  # lazy: scikit-fda's objects only arrive with it installed

        return from_skfda(X, metadata=metadata, person_column=person_column)
    if grid is None:
        raise ParameterError("curves given as an array need their grid: fit(X, grid=t), X of shape (n, len(t))")
    return from_arrays(grid, X, metadata=metadata)


class _Estimator:
    """What both estimators share: parameters kept as given, the settings built at fit time."""

    _kind = ""

    def __init__(self, epsilon: float = 1.0, *, bounds=None, person_column: str | None = None, accountant=None,
                 random_state=None, **settings):
        self.epsilon = epsilon
        self.bounds = bounds
        self.person_column = person_column
        self.accountant = accountant
        self.random_state = random_state
        self.settings = settings

    def get_params(self, deep: bool = True) -> dict:
        return {"epsilon": self.epsilon, "bounds": self.bounds, "person_column": self.person_column,
                "accountant": self.accountant, "random_state": self.random_state, **self.settings}

    def _settings_object(self):
        raise NotImplementedError

    def _data(self, X, grid, metadata):
        return as_functional_data(X, grid, metadata, self.person_column)

    def quote(self, X, grid=None, metadata=None):
        """What committing this fit would charge, before any draw: the ledger entries, one per part.

        ``sum(e.epsilon for e in quote.entries)`` is the charge (the exact discrete noise's epsilon,
        slightly above the calibrated one)."""
        from .publish import kinds  # lazy: the commit protocol (the 'commit' extra) only when asked
        from .publish.protocol import CommitRequest  # lazy: as above

        return kinds.quote(self._kind, CommitRequest(self._data(X, grid, metadata), self._settings_object(),
                                                     inputs=self._inputs()))

    def _inputs(self) -> dict:
        """What a kind needs beyond its settings (a density's feature)."""
        return {}

    def _commit(self, data):
        from .publish import kinds  # lazy: the commit protocol (the 'commit' extra) only when committing
        from .publish.protocol import CommitRequest  # lazy: as above

        return kinds.commit(self._kind, self.accountant, CommitRequest(data, self._settings_object(),
                                                                       inputs=self._inputs()))

    def _rng(self) -> np.random.Generator:
        return np.random.default_rng(self.random_state)


class PrivateMean(_Estimator):
    """A differentially private mean curve (the Gaussian-process mechanism by default).

    Parameters
    ----------
    epsilon, delta : float
        The privacy parameters (delta is ignored by the pure epsilon-DP mechanisms).
    bounds : (lo, hi), optional
        The public value range: values are clipped to it, curves centred at its midpoint and
        clipped in L2 at tau = (hi - lo)/2 (as on the command line).
    person_column : str, optional
        The metadata column naming each curve's person: the unit of privacy is then the person.
    accountant : Ledger, optional
        Commit with exact discrete noise and charge this budget; without it, a preview.
    random_state : int or Generator, optional
        The preview's numpy noise (never used by a commit).
    **settings
        Any other :class:`~fdp_core.releases.mean.MeanSettings` field (kernel, rho, phi, mechanism...).

    Attributes
    ----------
    mean_ : ndarray (m,)
        The sanitized mean on ``grid_points_``.
    n_ : int
        The n of the guarantee (persons with a person column).
    tau_, sigma_, sensitivity_ : float
    expected_sq_l2_error_, l2_error_radius_95_ : float
        The noise's expected squared L2 error and its 95% radius (data-free).
    verdict_ : str
        green, amber, red or unrated: the radius against the range's width.
    release_ : CommittedRelease or None
        The committed release (publishable), None for a preview.
    publishable_ : bool

    Examples
    --------
    >>> import numpy as np
    >>> t = np.linspace(0, 1, 30)
    >>> X = np.vstack([0.5 + 0.3 * np.sin(np.pi * t) * (1 + i / 40) for i in range(40)])
    >>> est = PrivateMean(epsilon=1.0, delta=1e-5, bounds=(0, 1), random_state=0).fit(X, grid=t)
    >>> est.mean_.shape, est.n_, est.tau_, est.publishable_
    ((30,), 40, 0.5, False)
    """

    _kind = "mean"

    def __init__(self, epsilon: float = 1.0, delta: float = 1e-5, *, bounds=None, person_column=None,
                 accountant=None, random_state=None, **settings):
        super().__init__(epsilon, bounds=bounds, person_column=person_column, accountant=accountant,
                         random_state=random_state, **settings)
        self.delta = delta

    def get_params(self, deep: bool = True) -> dict:
        return {**super().get_params(deep), "delta": self.delta}

    def _settings_object(self):
        from .releases.mean import MeanSettings  # lazy: `import fdp_core` stays light

        return MeanSettings(epsilon=self.epsilon, delta=self.delta, value_range=self.bounds,
                            person_column=self.person_column, **self.settings).validated()

    def fit(self, X, y=None, *, grid=None, metadata=None) -> "PrivateMean":
        """Release the mean of the curves ``X`` (FunctionalData, FDataGrid, or (n, m) array with ``grid``)."""
        from .explore.verdict import mean_verdict  # lazy: the verdict rule
        from .releases.mean import plan_mean_release  # lazy: `import fdp_core` stays light
        from .releases.postprocess import finish_mean  # lazy: as above

        data = self._data(X, grid, metadata)
        plan = plan_mean_release(data, self._settings_object())
        if self.accountant is None:
            self.release_, self.publishable_ = None, False
            # the free post-processing a commit applies too (projection onto the declared range)
            self.mean_ = finish_mean(plan.sample(self._rng(), 1)[0], plan.settings).values
        else:
            self.release_, self.publishable_ = self._commit(data), True
            self.mean_ = self.release_.table["value"].to_numpy(dtype=float)
        self.grid_points_ = plan.grid_points
        self.n_, self.tau_, self.sigma_, self.sensitivity_ = plan.n, plan.tau, plan.sigma, plan.sensitivity
        self.expected_sq_l2_error_ = plan.expected_sq_l2_error
        self.l2_error_radius_95_ = plan.l2_error_radius(0.95)
        self.verdict_ = mean_verdict(plan, with_bias=False).level
        self.guarantee_ = plan.guarantee
        return self

    def to_skfda(self):
        """The released mean as a scikit-fda FDataGrid (one curve)."""
        from .data.skfda_io import to_skfda  # lazy: the optional 'skfda' extra

        return to_skfda(self.grid_points_, self.mean_, dataset_name="private mean")

    def __repr__(self) -> str:
        return short_repr("PrivateMean", epsilon=float(self.epsilon), delta=float(self.delta), bounds=self.bounds,
                          person_column=self.person_column,
                          fitted=("committed" if getattr(self, "publishable_", False) else "preview")
                          if hasattr(self, "mean_") else "no")


class PrivateFPCA(_Estimator):
    """Differentially private functional principal components (the exponential mechanism, epsilon-DP).

    Parameters
    ----------
    n_components : int
        k, the number of components.
    epsilon : float
    bounds, person_column, accountant, random_state : as for :class:`PrivateMean`
        With ``bounds`` the curves are centred at the range's midpoint (as on the command line).
    **settings
        Any other :class:`~fdp_core.releases.pca.PcaSettings` field (kernel, rho, sampler, p...).

    Attributes
    ----------
    components_ : ndarray (k, m)
        The private components as rows (scikit-learn's and scikit-fda's orientation).
    n_, tau_ : the n of the guarantee and the L2 clip
    release_, publishable_ : as for :class:`PrivateMean`

    Examples
    --------
    >>> import numpy as np
    >>> t = np.linspace(0, 1, 30)
    >>> rng = np.random.default_rng(1)
    >>> X = 0.5 + 0.2 * rng.standard_normal((50, 1)) * np.sin(np.pi * t)
    >>> est = PrivateFPCA(n_components=1, epsilon=1.0, bounds=(0, 1), random_state=0).fit(X, grid=t)
    >>> est.components_.shape
    (1, 30)
    """

    _kind = "components"

    def __init__(self, n_components: int = 1, epsilon: float = 1.0, *, bounds=None, person_column=None,
                 accountant=None, random_state=None, **settings):
        super().__init__(epsilon, bounds=bounds, person_column=person_column, accountant=accountant,
                         random_state=random_state, **settings)
        self.n_components = n_components

    def get_params(self, deep: bool = True) -> dict:
        return {**super().get_params(deep), "n_components": self.n_components}

    def _settings_object(self):
        from .releases.pca import PcaSettings  # lazy: `import fdp_core` stays light

        return PcaSettings(k=self.n_components, epsilon=self.epsilon, value_range=self.bounds,
                           person_column=self.person_column, **self.settings).validated()

    def fit(self, X, y=None, *, grid=None, metadata=None) -> "PrivateFPCA":
        """Release the components of the curves ``X`` (FunctionalData, FDataGrid, or array with ``grid``)."""
        from .releases.pca import private_pca  # lazy: `import fdp_core` stays light

        data = self._data(X, grid, metadata)
        if self.accountant is None:
            result = private_pca(data, self._settings_object(), self._rng())
            self.release_, self.publishable_ = None, False
            components = result.components
        else:
            self.release_, self.publishable_ = self._commit(data), True
            result = self.release_.analyst.get("result") if isinstance(self.release_.analyst, dict) else None
            table = self.release_.table
            components = table[[c for c in table.columns if c != "t"]].to_numpy(dtype=float)
        self.grid_points_ = np.asarray(data.grid_points)
        self.components_ = np.ascontiguousarray(np.asarray(components).T)
        if result is not None:
            self.n_, self.tau_, self.guarantee_ = result.n, result.tau, result.guarantee
        else:
            record = self.release_.record
            self.n_, self.tau_ = record.get("n"), record.get("tau")
        return self

    def to_skfda(self):
        """The private components as a scikit-fda FDataGrid, one component per sample."""
        from .data.skfda_io import to_skfda  # lazy: the optional 'skfda' extra

        return to_skfda(self.grid_points_, self.components_, dataset_name="private components",
                        sample_names=[f"component {j + 1}" for j in range(self.components_.shape[0])])

    def __repr__(self) -> str:
        return short_repr("PrivateFPCA", n_components=self.n_components, epsilon=float(self.epsilon),
                          bounds=self.bounds, person_column=self.person_column)


class PrivateDensity(_Estimator):
    """A differentially private density of one number per curve (or per person), e.g. a curve's mean.

    Parameters
    ----------
    feature : str
        The per-curve number, as on the command line: ``"mean:0:1"`` (the curve's mean over
        [0, 1]), ``"value:0.5"``, ``"l2norm"``, or a metadata column's name.
    box : (lo, hi)
        The public range of the feature: observations are clipped to it.
    epsilon, delta : float
    bounds, person_column, accountant, random_state : as for :class:`PrivateMean`
        With a person column each person's features are averaged into one observation.
    **settings
        Any other :class:`~fdp_core.releases.kde.KdeSettings` field (mechanism, bandwidth, grid_size...).

    Attributes
    ----------
    density_ : ndarray (G,)
        The sanitized density on ``grid_`` (feature units).
    n_ : int
    expected_sq_l2_error_ : float
    release_, publishable_ : as for :class:`PrivateMean`

    Examples
    --------
    >>> import numpy as np
    >>> t = np.linspace(0, 1, 20)
    >>> X = np.random.default_rng(0).uniform(0.2, 0.8, (60, 1)) + 0.1 * np.sin(np.pi * t)
    >>> est = PrivateDensity(feature="mean:0:1", box=(0, 1), epsilon=1.0, random_state=0).fit(X, grid=t)
    >>> est.n_, est.density_.shape == est.grid_.shape
    (60, True)
    """

    _kind = "density"

    def __init__(self, feature: str = "mean:0:1", box=(0.0, 1.0), epsilon: float = 1.0, delta: float = 1e-5, *,
                 bounds=None, person_column=None, accountant=None, random_state=None, **settings):
        super().__init__(epsilon, bounds=bounds, person_column=person_column, accountant=accountant,
                         random_state=random_state, **settings)
        self.feature, self.box, self.delta = feature, box, delta

    def get_params(self, deep: bool = True) -> dict:
        return {**super().get_params(deep), "feature": self.feature, "box": self.box, "delta": self.delta}

    def _inputs(self) -> dict:
        return {"feature": self.feature}

    def _settings_object(self):
        from .releases.kde import KdeSettings  # lazy: `import fdp_core` stays light
        from .releases.box import check_box  # lazy: as above

        box = check_box(self.box if np.ndim(self.box) == 2 else (tuple(self.box),))
        return KdeSettings(box=box, epsilon=self.epsilon, delta=self.delta, value_range=self.bounds,
                           person_column=self.person_column, **self.settings)

    def fit(self, X, y=None, *, grid=None, metadata=None) -> "PrivateDensity":
        """Release the density of the feature of the curves ``X``."""
        from .releases.kde import plan_kde_release  # lazy: `import fdp_core` stays light
        from .releases.postprocess import finish_density  # lazy: as above

        data = self._data(X, grid, metadata)
        settings = self._settings_object()
        plan = plan_kde_release(data, settings, feature=self.feature)
        if self.accountant is None:
            self.release_, self.publishable_ = None, False
            self.density_ = finish_density(plan.sample(self._rng(), 1)[0], plan.weights, settings).values
        else:
            self.release_, self.publishable_ = self._commit(data), True
            self.density_ = self.release_.table["density"].to_numpy(dtype=float)
        box = plan.box[0]
        self.grid_ = box[0] + (box[1] - box[0]) * np.asarray(plan.grids[0])
        self.n_, self.expected_sq_l2_error_ = plan.n, plan.expected_sq_l2_error
        self.guarantee_ = plan.guarantee
        return self

    def __repr__(self) -> str:
        return short_repr("PrivateDensity", feature=self.feature, box=self.box, epsilon=float(self.epsilon),
                          person_column=self.person_column)
