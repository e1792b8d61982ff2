"""Validation retrieval scores of DSOKR with a linear regressor, through projected targets.

A DSOKR regresses its training targets ``Psi`` (n x p: the outputs' coordinates on the
sketched output basis) and scores a candidate ``c`` by ``<g(x), E(c)> + offset(c)``.  When
the regressor is linear in its targets (a ridge), fitting it to ``Psi`` and multiplying its
predictions by ``E^T`` is the same as fitting it to ``C = Psi E^T`` (n x n_c) directly:

    ridge(F, Psi)(x) E^T = ridge(F, Psi E^T)(x)

(the coefficients ``(F_c^T F_c + alpha I)^-1 F_c^T Psi`` and the intercept are linear in
``Psi``).  A selection that tries many input feature maps and penalties for one output
basis therefore computes ``C`` once; each trial then fits ``n_c`` targets instead of ``p``
and skips the ``n_val x p x n_c`` decode.  At 8000 training molecules with ``m_y = 8000``
(``p = 7933``) and 2000 validation candidates that is four times fewer targets per fit.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted

from ..utils import NamedPrepare, num_samples
from ._scorers import retrieval_value

__all__ = ["ProjectedTargets", "LINEAR_REGRESSORS"]

#: regressors whose predictions are linear in their targets (checked by name: the identity
#: above holds for these and would silently fail for a network)
LINEAR_REGRESSORS = ("Ridge", "LinearRegression")


class ProjectedTargets:
    """Retrieval scores of one DSOKR output basis for many linear regressors and input features.

    Parameters
    ----------
    model : DSOKR
        Fitted on ``Y_train`` (any regressor): its output basis ``output_features_``.
    Y_train : samples (n,)
        The training outputs ``model`` was fitted on (in the same order).
    Y_val : samples (n_val,)
        The validation outputs: the candidate set, query ``i``'s truth is candidate ``i``
        (as :func:`retrieval_scorer`).

    Attributes
    ----------
    targets_ : ndarray of shape (n, n_val)
        ``C = Psi E^T``, float64.
    offsets_ : ndarray of shape (n_val,) or None
        The candidates' score offsets.
    """

    def __init__(self, model: Any, Y_train: Any, Y_val: Any) -> None:
        check_is_fitted(model, "output_features_")
        n = num_samples(Y_train, "Y_train")
        if n != getattr(model, "n_train_", n):
            raise ValueError(f"Y_train has {n} samples but the model was fitted on {model.n_train_}")
        if model.output_features_ is None:
            raise ValueError(f"{type(model).__name__} has no sketched output basis (output_features_ is None)")
        self._project(model.output_features_, Y_train, Y_val)

    @classmethod
    def from_features(cls, features: Any, Y_train: Any, Y_val: Any) -> "ProjectedTargets":
        """From an output basis alone (:func:`sprokr.models.dsokr.sketched_output_basis`: the
        one ``DSOKR.fit`` builds with that sketch on ``Y_train``), without a fit."""
        self = cls.__new__(cls)
        self._project(features, Y_train, Y_val)
        return self

    def _project(self, features, Y_train, Y_val):
        # C = features.inner(Y_train, Y_val): never the n x p targets (on the triangular
        # route one r x r x n_val solve and an n x r x n_val product)
        from ..numerics import candidate_offsets

        ky = features.kernel
        Ytp = NamedPrepare(ky.prepare_outputs, "Y_train")(Y_train)
        Yvp = NamedPrepare(ky.prepare_outputs, "Y_val")(Y_val)
        self.targets_ = features.inner(Ytp, Yvp)
        off = candidate_offsets(ky, Yvp)
        self.offsets_ = None if off is None else np.asarray(off, dtype=np.float64)

    def scores(self, regressor: Any, F_train: np.ndarray, F_val: np.ndarray) -> np.ndarray:
        """Score matrix (n_val, n_val) of ``regressor`` fitted on ``(F_train, Psi)``.

        ``regressor``: an unfitted scikit-learn regressor of :data:`LINEAR_REGRESSORS` (cloned,
        never fitted in place); ``F_train`` (n, d), ``F_val`` (n_val, d): input features.
        Equal to ``DSOKR(regressor=...).fit(F_train, Y_train).predict_scores(F_val, Y_val)``.
        """
        name = type(regressor).__name__
        if name not in LINEAR_REGRESSORS:
            raise TypeError(f"regressor must be one of {', '.join(LINEAR_REGRESSORS)} (its predictions "
                            f"linear in its targets), got {name}")
        if num_samples(F_train, "F_train") != self.targets_.shape[0]:
            raise ValueError(f"F_train has {num_samples(F_train)} rows, expected {self.targets_.shape[0]}")
        if num_samples(F_val, "F_val") != self.targets_.shape[1]:
            raise ValueError(f"F_val has {num_samples(F_val)} rows, expected {self.targets_.shape[1]}")
        S = np.asarray(clone(regressor).fit(F_train, self.targets_).predict(F_val), dtype=np.float64)
        if self.offsets_ is not None:
            S += self.offsets_
        return S

    def score(self, regressor: Any, F_train: np.ndarray, F_val: np.ndarray, metric: str = "mrr",
              k: int = 1) -> float:
        """Validation MRR (or top-``k`` accuracy, ``metric="top_k"``) of :meth:`scores`, as
        :func:`retrieval_scorer` computes it for the fitted DSOKR."""
        from ..metrics import ranks_from_scores

        if metric not in ("mrr", "top_k"):
            raise ValueError(f"metric must be 'mrr' or 'top_k', got {metric!r}")
        S = self.scores(regressor, F_train, F_val)
        ranks = ranks_from_scores(S, np.arange(S.shape[0]))
        return retrieval_value(ranks, {"metric": metric, "k": int(k)})
