"""Nystrom features of any registered kernel, as a scikit-learn transformer.

``KernelFeatures(kernel, m_x=m)`` draws an input sketch ``R`` (m x n, uniform
sub-sampling by default) of the training inputs and maps every input to

    z(x) = D^-1/2 U^T R k(X, x)        (U, D) eigenpairs of R K R^T, rank r <= m

(above :data:`~sprokr.numerics.EIGH_BASIS_MAX_M` = 1000 sketch rows, ``z(x) = L_11^-1 (R
k(X, x))[P_r]`` from the pivoted Cholesky factorisation of ``R K R^T``: the same features up
to a rotation, ordered by pivot instead of by variance)

(:class:`~sprokr.numerics.SketchedFeatures`, the map SIOKR/SISOKR use on the input side),
so that ``z(a)^T z(b) = k_a^T R^T (R K R^T)^+ R k_b`` is the Nystrom approximation of
``k(a, b)``.  A linear model on ``z`` is SISOKR's hypothesis space; a network on ``z``
(e.g. DSOKR's ``MLPSurrogate``) adds a nonlinearity on top of the kernel.

``standardize=True`` additionally rescales each coordinate to unit variance on the
training inputs (``z_j`` has variance ~ ``d_j / n``: the leading eigen-directions dominate
otherwise, which matters for networks with weight decay, not for a ridge).
"""
from __future__ import annotations

from typing import Any, Optional, Self

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ..numerics import DEFAULT_RCOND, SketchedFeatures, check_kernel_sample, default_chunk_size
from ..deprecation import RenamedParametersMixin
from ..persistence import SaveMixin
from ..utils import atomic_fit, check_bool, check_chunk_size, check_feature_names, consistent_read, check_positive, \
    iter_chunks, num_samples, resolve_dtype, row_offset, set_feature_names, take, take_slice
from .base import fit_on_training_inputs

__all__ = ["KernelFeatures"]


class KernelFeatures(RenamedParametersMixin, SaveMixin, TransformerMixin, BaseEstimator):
    """Nystrom feature map ``z(x) = D^-1/2 U^T R k(X, x)`` of a kernel (see the module doc).

    Saved and loaded like the estimators (``save(path)``, ``sprokr.load``), so a model
    trained on these features is deployed with them.

    Parameters
    ----------
    kernel : str or Kernel
        Registered input kernel name (``sprokr plugins``) or a kernel instance (a kernel
        that learns from data, e.g. ``text``, is fitted on a copy at ``fit``).
    kernel_params : dict, optional
        Parameters of a kernel given by name.
    m_x : int
        Input sketch size ``m`` (support inputs for sub-sampling); at most ``n``
        (formerly ``n_components``).
    input_sketch : str or Sketch
        Registered sketch (``subsample``, ``gaussian``, ``psg``, ...) (formerly ``sketch``).
    input_sketch_params : dict, optional
        (formerly ``sketch_params``)
    standardize : bool
        Divide each feature by its standard deviation on the training inputs.
    rcond : float, optional
        Relative eigenvalue threshold (default :data:`~sprokr.numerics.DEFAULT_RCOND`).
    dtype : {"float64", "float32"}
        Dtype of the kernel blocks and of the returned features.
    chunk_size : int, optional
        Rows per kernel block in ``transform`` (default: a 64 MB block).
    random_state : None, int or numpy.random.Generator

    Attributes
    ----------
    kernel_ : Kernel
    features_ : SketchedFeatures
    n_components_ : int
        ``r``, the numerical rank of ``R K R^T`` (the number of output columns, at most
        ``m_x``).
    scale_ : ndarray of shape (r,) or None
        Per-feature standard deviations (``standardize=True``).
    n_features_in_ : int
        Number of input features seen in ``fit``, when the kernel's prepared inputs are an
        array or a sparse matrix (not for strings, graphs, molecules ...).

    The former names ``n_components``, ``sketch`` and ``sketch_params`` still work until
    sprokr 0.3, with a ``FutureWarning`` (``docs/parameters.md``).
    """

    #: deprecated parameter names (sprokr.deprecation): old -> new
    renamed_parameters = {"n_components": "m_x", "sketch": "input_sketch", "sketch_params": "input_sketch_params"}

    def __init__(self, kernel: Any = "gaussian", kernel_params: Optional[dict] = None, m_x: int = 500,
                 input_sketch: Any = "subsample", input_sketch_params: Optional[dict] = None, standardize: bool = False,
                 rcond: Optional[float] = None, dtype: str = "float64", chunk_size: Optional[int] = None,
                 random_state: Any = None):
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.m_x = m_x
        self.input_sketch = input_sketch
        self.input_sketch_params = input_sketch_params
        self.standardize = standardize
        self.rcond = rcond
        self.dtype = dtype
        self.chunk_size = chunk_size
        self.random_state = random_state

    @atomic_fit
    def fit(self, X: Any, y: Any = None) -> Self:
        """Draw the sketch of the ``n`` training inputs ``X`` and fit the feature map.  Returns self."""
        self._fit(X)
        return self

    @atomic_fit
    def fit_transform(self, X: Any, y: Any = None, **fit_params: Any) -> np.ndarray:
        """``fit(X).transform(X)``, without a second pass when ``standardize`` computed it."""
        Z = self._fit(X)
        return self.transform(X) if Z is None else Z

    def _fit(self, X):
        """The fit; returns the training features when ``standardize`` computed them, else None."""
        from ..sketches import drawing_state, resolve_sketch
        from .base import resolve_kernel

        n = num_samples(X, "X")
        if n < 1:
            raise ValueError("cannot fit on 0 samples: X is empty")
        dtype = resolve_dtype(self.dtype)
        check_chunk_size(self.chunk_size)
        check_bool(self.standardize, "standardize")  # (standardize="no" was true)
        set_feature_names(self, X)  # scikit-learn's feature_names_in_ (dataframe inputs)
        kernel = resolve_kernel(self.kernel, self.kernel_params, "input", dtype, "kernel")
        sketch = resolve_sketch(self.input_sketch, self.m_x, self.input_sketch_params, n, "input")
        if sketch is None:
            raise ValueError("input_sketch must be a sketch (name or instance), got None")
        kernel = fit_on_training_inputs(kernel, X)
        R = sketch.draw(n, drawing_state(self.random_state))
        support = kernel.prepare(take(X, R.indices))
        check_kernel_sample(kernel, take(support, np.arange(min(R.indices.size, 64))), "kernel")
        rcond = DEFAULT_RCOND if self.rcond is None else check_positive(self.rcond, "rcond", strict=False)
        feats = SketchedFeatures(kernel, R, kernel.prepare_support(support), dtype, rcond).fit_basis()
        scale = Z = None
        if self.standardize:  # the training features' deviations
            Z = self._map(feats, kernel, X)
            sd = Z.std(axis=0, dtype=np.float64)
            scale = np.where(sd > 0, sd, 1.0)
            Z /= scale.astype(Z.dtype)
        # learned state only once everything succeeded
        self.kernel_, self.features_, self.n_components_, self.scale_ = kernel, feats, feats.rank, scale
        # as the estimators (sprokr.models.base.set_n_features): a feature count when the
        # kernel's prepared inputs are an array or a sparse matrix, none for strings, graphs, ...
        if isinstance(support, np.ndarray) or sp.issparse(support):
            self.n_features_in_ = int(support.shape[1])
        elif hasattr(self, "n_features_in_"):  # (a previous fit's, on vectors)
            del self.n_features_in_
        return Z

    def _map(self, feats, kernel, X):
        n = num_samples(X, "X")
        out = np.empty((n, feats.rank), dtype=feats.dtype)
        # checked again: set_params(chunk_size=...) after fit is read here
        chunk = check_chunk_size(self.chunk_size) or default_chunk_size(feats.R.indices.size, feats.dtype)
        for sl in iter_chunks(n, chunk):
            with row_offset(sl.start):  # an invalid sample is named by its row of X, not of the chunk
                out[sl] = feats.transform(kernel.prepare(take_slice(X, sl)), dedupe=False)
        return out

    @consistent_read
    def transform(self, X: Any) -> np.ndarray:
        """``z(X)``, shape (n_q, ``n_components_``), computed over row chunks."""
        check_is_fitted(self, "features_")
        check_feature_names(self, X)
        out = self._map(self.features_, self.kernel_, X)
        if self.scale_ is not None:
            out /= self.scale_.astype(out.dtype)
        return out

    @consistent_read
    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """``kernelfeatures0 .. kernelfeatures{r-1}``."""
        check_is_fitted(self, "features_")
        return np.asarray([f"kernelfeatures{j}" for j in range(self.n_components_)], dtype=object)
