"""Local kernel ridge regression: one ridge per input region, or per query's neighbourhood.

A sketched kernel ridge with ``m`` support points is a smooth map: on a million samples
of a few dozen features (MOSES molecules described by 21 descriptors), ``m = 2000``
support points cannot follow the structure a nearest-neighbour search exploits, and a
larger ``m`` costs ``n m^2``.  Splitting the inputs into ``R`` regions (k-means) and
fitting one ridge per region with ``m`` support points of its own gives ``R m`` support
points for the same ``n m^2`` (each sample meets only its region's support).  It is the
ridge of the block-diagonal kernel ``k(x, x') [r(x) = r(x')]`` -- positive semi-definite,
so DSOKR with this regressor is SISOKR with that kernel and a sub-sampling sketch
stratified by region -- and a region with at most ``m`` samples is fitted exactly.

A query is predicted by the ridge of its region (the nearest k-means centre).

:class:`NeighbourKernelRidgeRegressor` has no regions and no boundaries: each query gets the
ridge of its ``k`` nearest training samples, ``g(x) = k(x, X_N)(K_NN + k lam I)^-1 T_N``.
With ``k = 1`` it ranks candidates as the nearest-neighbour regressor does, and a narrow
kernel tends to it; a wider one weighs the neighbours and fits their local trend (local learning, Bottou and
Vapnik 1992).  It has no fit beyond storing the samples; a prediction costs the
neighbour search (scikit-learn's ``NearestNeighbors``, Euclidean) and ``k^3`` per query.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Mapping, Self

import numpy as np
import scipy.sparse as sp
from numpy.typing import DTypeLike
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from ..persistence import SaveMixin
from ..progress import grouped_accuracy_warnings, progress
from ..kernels import resolve_kernel
from ..numerics import check_kernel_sample, single_blas_thread
from ..utils import (atomic_fit, check_chunk_size, check_feature_names, check_finite, check_integer,
                     check_numeric_array, check_positive, check_random_state, check_random_state_param,
                     consistent_read, num_samples, set_feature_names, take)
from ._targets import R2ScoreMixin
from .base import check_n_features, set_n_features
from .regressors import KernelRidgeRegressor

if TYPE_CHECKING:  # imported for the annotations only
    from ..kernels.base import Kernel
    from ..sketches.base import Sketch
    from ..types import RandomStateLike

__all__ = ["LocalKernelRidgeRegressor", "NeighbourKernelRidgeRegressor"]

#: samples the k-means of the regions is fitted on at most (seeded sub-sample)
KMEANS_MAX_SAMPLES = 200_000
#: regions of ``n_regions="auto"`` (:class:`LocalKernelRidgeRegressor`), at most one per sample
AUTO_REGIONS = 16
#: neighbours of ``n_neighbors="auto"`` (:class:`NeighbourKernelRidgeRegressor`), at most the samples
AUTO_NEIGHBORS = 8


class _LocalRidge(SaveMixin, R2ScoreMixin, RegressorMixin, BaseEstimator):
    """What both local ridges share: vector (dense or CSR) inputs, vector targets."""

    #: DSOKR gives these regressors float32 targets (half the n x p array: the regional
    #: ridges convert their own rows to float64, the neighbour ridge its neighbours' rows)
    target_dtype = np.float32

    def _check_kernel_on(self, kernel: Kernel, X: Any, prepare: bool) -> None:
        """The kernel on a few of the numeric input vectors, as the model calls it: a kernel
        that does not take them (precomputed, text, SMILES, graphs) is refused by ``fit``,
        naming ``kernel``, before any work on the data, instead of failing later with the
        kernel's internals.  Any kernel that does take them is accepted (a third party's
        too, whatever its class).

        ``prepare``: the sample goes through ``kernel.prepare`` first, as a regional ridge
        prepares its rows; it is then a part of the rows, as a region's are (a small
        precomputed training Gram, whole, would pass: its rows are refused as the regions'
        would be).  Without it (the neighbour ridge's ``predict``) the kernel gets the
        vectors as they are."""
        n = X.shape[0]
        try:
            sample = X[: min(n - 1 if prepare and n > 1 else n, 8)]
            check_kernel_sample(kernel, kernel.prepare(sample) if prepare else sample, "kernel")
        except Exception as exc:
            if isinstance(exc, ValueError) and "kernel is not" in str(exc):  # asymmetric / indefinite: as is
                raise
            name = self.kernel if isinstance(self.kernel, str) else type(self.kernel).__name__
            raise ValueError(f"kernel must be a vector kernel, evaluated on the numeric input vectors themselves "
                             f"(e.g. 'gaussian', 'laplacian', 'linear', 'tanimoto'), got {name!r}, which failed on "
                             f"them: {type(exc).__name__}: {exc}") from exc

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        return tags


class LocalKernelRidgeRegressor(_LocalRidge):
    """Kernel ridge regression of vector targets, one (sketched) ridge per input region.

    The inputs (numeric vectors, dense or CSR) are split into ``n_regions`` regions by
    k-means (scikit-learn's ``MiniBatchKMeans``, seeded); each region's samples are fitted
    by a :class:`~sprokr.models.KernelRidgeRegressor` with ``m_x`` support points drawn
    from that region (all its samples when it has at most ``m_x``: the exact ridge).  A
    query is predicted by the ridge of the nearest centre's region.

    Parameters
    ----------
    n_regions : int or "auto", default="auto"
        Number of regions ``R``: an integer between 1 and the number of training samples
        (a larger one is refused by ``fit``, naming ``n_samples``, as scikit-learn's
        ``KMeans`` refuses more clusters than samples), or ``"auto"``:
        ``min(16, n_samples)``, 16 regions on any training set of at least 16 samples
        (the former default of 16) and one per sample on a smaller one.
    kernel, kernel_params, lam, input_sketch, m_x, input_sketch_params, dtype, rcond, solver, chunk_size :
        As :class:`~sprokr.models.KernelRidgeRegressor`, for every region (``lam`` is each
        region's own ridge: ``1/n_r sum |g(x_i) - t_i|^2 + lam |g|^2``).  ``m_x``: support
        points per region.  The kernel is a vector kernel (default Gaussian): ``fit``
        refuses one that does not take the numeric input vectors (precomputed, text,
        SMILES, graphs), before the k-means.
    random_state : None, int or numpy.random.Generator
        Seeds the k-means and every region's sketch.
    verbose : bool
        Force the progress bar over the regions on (default: shown on a terminal).

    Attributes
    ----------
    centres_ : ndarray of shape (r, n_features)
        The k-means centres of the ``r = n_regions_`` regions that hold training samples.
    regions_ : list of KernelRidgeRegressor
        The fitted ridge of each region, in the order of ``centres_``.
    region_sizes_ : ndarray of shape (r,)
        Training samples per region.
    n_regions_ : int
        Regions with training samples (k-means may leave some empty).
    n_outputs_ : int
    fit_times_ : dict of phase -> seconds
    """

    def __init__(self, n_regions: int | str = "auto", kernel: str | Kernel = "gaussian",
                 kernel_params: Mapping[str, Any] | None = None, lam: float = 1e-5,
                 input_sketch: str | Sketch | None = "subsample", m_x: int | None = 1000,
                 input_sketch_params: Mapping[str, Any] | None = None, dtype: DTypeLike = "float64",
                 rcond: float | None = None, solver: str = "auto", chunk_size: int | None = None,
                 random_state: RandomStateLike = None, verbose: bool | int = False) -> None:
        self.n_regions = n_regions
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.lam = lam
        self.input_sketch = input_sketch
        self.m_x = m_x
        self.input_sketch_params = input_sketch_params
        self.dtype = dtype
        self.rcond = rcond
        self.solver = solver
        self.chunk_size = chunk_size
        self.random_state = random_state
        self.verbose = verbose

    def _region(self, m_x: int | None, seed: int) -> KernelRidgeRegressor:
        # a region no larger than m_x is fitted exactly: no sketch, so no sketch parameters
        # (a ridge refuses input_sketch_params without input_sketch)
        return KernelRidgeRegressor(
            kernel=self.kernel, kernel_params=self.kernel_params, lam=self.lam,
            input_sketch=None if m_x is None else self.input_sketch, m_x=m_x,
            input_sketch_params=None if m_x is None else self.input_sketch_params, dtype=self.dtype, rcond=self.rcond,
            chunk_size=self.chunk_size, random_state=seed, solver=self.solver)

    def check_params(self) -> Self:
        """Validate the parameters without data (clear errors naming them).

        Checks ``m_x`` (a positive integer with a sketch), ``random_state`` (its type;
        nothing is drawn) and what every region's ridge checks without data
        (:meth:`KernelRidgeRegressor.check_params`: ``lam``, ``dtype``, ``rcond``,
        ``chunk_size``, ``solver``, the kernel).  ``fit`` runs the same checks first, with
        the same messages; ``n_regions`` is ``"auto"`` or an integer >= 1 (``fit`` checks it
        against the number of samples).  The checks that need the data stay in ``fit``: the kernel on a
        few input vectors (a vector kernel) and the input sketch, which only regions
        larger than ``m_x`` use (its name, parameters and sizes are checked by their
        ridges).  Nothing of the estimator or of its parameters is changed.

        Returns
        -------
        self

        Raises
        ------
        ValueError, TypeError
            A parameter value is invalid (the message names it).
        """
        if self.input_sketch is not None:
            check_integer(self.m_x, "m_x (support points per region)")
        _count_on(self.n_regions, "n_regions", None, AUTO_REGIONS)  # (its upper bound, the samples: at fit)
        # the components every region's ridge resolves, checked before the k-means
        self._region(None, 0).check_params()
        check_random_state_param(self.random_state)
        return self

    @atomic_fit
    def fit(self, X: Any, y: Any) -> Self:
        """Fit on inputs ``X`` (n, d) and targets ``y`` (n,) or (n, p).  Returns self.

        The parameters are checked first (:meth:`check_params`), before the data."""
        from sklearn.cluster import MiniBatchKMeans

        self.check_params()
        t0 = time.perf_counter()
        set_feature_names(self, X)  # scikit-learn's feature_names_in_ (dataframe inputs)
        X = _vectors(X, "X")
        n = X.shape[0]
        if n < 1:
            raise ValueError("cannot fit on 0 samples: X is empty")
        T, scalar = _targets(y, n, type(self).__name__)
        R = _count_on(self.n_regions, "n_regions", n, AUTO_REGIONS)
        # the regions' kernel on a few rows, before the k-means: a kernel of other samples is named
        self._check_kernel_on(resolve_kernel(self.kernel, self.kernel_params, "input", np.dtype(np.float64), "kernel"),
                              X, prepare=True)
        m_x = self.m_x
        rng = check_random_state(self.random_state)
        fit_rows = np.sort(rng.choice(n, KMEANS_MAX_SAMPLES, replace=False)) if n > KMEANS_MAX_SAMPLES \
            else np.arange(n)
        km = MiniBatchKMeans(int(R), random_state=int(rng.integers(2**31 - 1)), n_init=1,
                             batch_size=min(4096, n)).fit(take(X, fit_rows))
        centres = np.asarray(km.cluster_centers_, dtype=np.float64)
        labels = _nearest(X, centres)
        sizes = np.bincount(labels, minlength=centres.shape[0])
        used = np.flatnonzero(sizes)
        seeds = np.asarray(rng.integers(2**31 - 1, size=centres.shape[0]))
        cap = None if self.input_sketch is None else int(m_x)  # type: ignore[arg-type]
        t1 = time.perf_counter()
        regions = []
        order, bounds = _groups(labels, centres.shape[0])
        # a float32 check failing in many regions: one warning, not one per region
        with grouped_accuracy_warnings("regional ridges", int(used.size), self), \
                progress(total=used.size, desc="regional ridges", unit="region",
                         enabled=True if self.verbose else None) as bar:
            for r in used:
                rows = order[bounds[r]:bounds[r + 1]]
                reg = self._region(cap if cap is not None and rows.size > cap else None, int(seeds[r]))
                regions.append(reg.fit(take(X, rows), T[rows]))
                bar.update(1)
        # ---- fitted: learned state
        self.centres_, self.regions_, self.region_sizes_ = centres[used], regions, sizes[used]
        self.n_regions_, self.n_outputs_, self._scalar = int(used.size), T.shape[1], scalar
        set_n_features(self, X)
        self.fit_times_ = {"regions": t1 - t0, "ridges": time.perf_counter() - t1, "total": time.perf_counter() - t0}
        return self

    @consistent_read
    def predict(self, X: Any) -> np.ndarray:
        """Predicted targets, (n_q,) for 1-D training targets, else (n_q, p)."""
        check_is_fitted(self, "regions_")
        check_feature_names(self, X)
        X = _vectors(X, "X")
        check_n_features(self, X)
        out = np.zeros((X.shape[0], self.n_outputs_))
        if X.shape[0]:
            order, bounds = _groups(_nearest(X, self.centres_), self.n_regions_)
            for r in np.flatnonzero(np.diff(bounds)):
                rows = order[bounds[r]:bounds[r + 1]]
                out[rows] = np.asarray(self.regions_[r].predict(take(X, rows))).reshape(rows.size, -1)
        return out[:, 0] if self._scalar else out


class NeighbourKernelRidgeRegressor(_LocalRidge):
    """Kernel ridge regression of vector targets on each query's nearest training samples.

    For a query ``x`` with nearest training inputs ``N`` (``n_neighbors`` of them, Euclidean
    distance), ``g(x) = k(x, X_N) (K_NN + k lam I)^-1 T_N``: the ridge
    ``1/k sum_{i in N} |g(x_i) - t_i|^2 + lam |g|^2`` fitted on the neighbourhood alone.
    With ``n_neighbors=1`` it predicts the nearest training target scaled by
    ``k(x, x_1) / (k(x_1, x_1) + lam) > 0``: a retrieval ranks as with the nearest-neighbour
    regressor; a narrow kernel tends to that, a wider one weighs the neighbours.

    Parameters
    ----------
    n_neighbors : int or "auto", default="auto"
        Neighbours ``k`` of each query: an integer between 1 and the number of training
        samples (a larger one is refused by ``fit``, naming ``n_samples``), or ``"auto"``:
        ``min(8, n_samples)``, 8 neighbours on any training set of at least 8 samples (the
        former default of 8) and all the samples -- one kernel ridge -- on a smaller one.
    kernel, kernel_params : str or Kernel, dict
        The kernel of the local ridges (a vector kernel; default Gaussian).
    lam : float > 0
        Ridge of each neighbourhood.
    chunk_size : int, optional
        Queries per block (default: blocks of about 64 MB of gathered targets).

    Attributes
    ----------
    X_fit_ : ndarray or CSR matrix of shape (n, n_features)
        The training inputs (float arrays are kept as given, not copied).
    targets_ : ndarray of shape (n, p)
        The training targets (float arrays kept as given: DSOKR's float32 targets are not
        copied).
    kernel_ : Kernel
    n_neighbors_ : int
    lam_ : float
        The neighbours (``"auto"`` resolved) and ridge of the fit (predictions use them,
        not later ``set_params``).
    n_outputs_ : int
    """

    def __init__(self, n_neighbors: int | str = "auto", kernel: str | Kernel = "gaussian",
                 kernel_params: Mapping[str, Any] | None = None, lam: float = 1e-5,
                 chunk_size: int | None = None) -> None:
        self.n_neighbors = n_neighbors
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.lam = lam
        self.chunk_size = chunk_size

    def _checked_kernel(self) -> Kernel:
        """The checks of :meth:`check_params` (nothing of ``self`` or of its parameters is
        changed): the kernel the parameters resolve to."""
        check_positive(self.lam, "lam")
        check_chunk_size(self.chunk_size)
        return resolve_kernel(self.kernel, self.kernel_params, "input", np.dtype(np.float64), "kernel")

    def check_params(self) -> Self:
        """Validate the parameters without data (clear errors naming them).

        Checks ``n_neighbors`` (``"auto"`` or an integer >= 1; ``fit`` checks it against
        the number of samples), ``lam`` (> 0), ``chunk_size`` and the kernel (registered
        name, ``kernel_params``, its own ``check_params``).  ``fit`` runs the same checks
        first, with the same messages; the kernel on the input vectors (a vector kernel)
        needs the data and is checked by ``fit``.  Nothing of the estimator or of its parameters is
        changed.

        Returns
        -------
        self

        Raises
        ------
        ValueError, TypeError
            A parameter value is invalid (the message names it).
        """
        _count_on(self.n_neighbors, "n_neighbors", None, AUTO_NEIGHBORS)  # (its upper bound, the samples: at fit)
        self._checked_kernel()
        return self

    @atomic_fit
    def fit(self, X: Any, y: Any) -> Self:
        """Store inputs ``X`` (n, d) and targets ``y`` (n,) or (n, p).  Returns self.

        The parameters are checked first (:meth:`check_params`), before the data."""
        kernel = self._checked_kernel()
        set_feature_names(self, X)  # scikit-learn's feature_names_in_ (dataframe inputs)
        X = _vectors(X, "X")
        n = X.shape[0]
        if n < 1:
            raise ValueError("cannot fit on 0 samples: X is empty")
        T, scalar = _targets(y, n, type(self).__name__)
        k = _count_on(self.n_neighbors, "n_neighbors", n, AUTO_NEIGHBORS)
        self._check_kernel_on(kernel, X, prepare=False)
        chunk = check_chunk_size(self.chunk_size)  # (checked: check_params)
        # ---- fitted: learned state
        self.X_fit_, self.targets_, self.kernel_ = X, T, kernel
        self.n_neighbors_, self.lam_, self._chunk = int(k), float(self.lam), chunk
        self.n_outputs_, self._scalar = T.shape[1], scalar
        set_n_features(self, X)
        return self

    @consistent_read
    def predict(self, X: Any) -> np.ndarray:
        """Predicted targets, (n_q,) for 1-D training targets, else (n_q, p)."""
        from sklearn.neighbors import NearestNeighbors

        check_is_fitted(self, "targets_")
        check_feature_names(self, X)
        X = _vectors(X, "X")
        check_n_features(self, X)
        k, p = self.n_neighbors_, self.n_outputs_
        out = np.zeros((X.shape[0], p))
        search = NearestNeighbors(n_neighbors=k).fit(self.X_fit_)
        step = int(self._chunk or max(1, min(4096, (64 << 20) // (8 * k * p))))
        # the tree search of dense training inputs takes dense queries only: sparse queries
        # are densified a block at a time (a block is no wider than the dense inputs' rows)
        densify = sp.issparse(X) and not sp.issparse(self.X_fit_)
        for a in range(0, X.shape[0], step):
            Q = X[a:a + step]
            if densify:
                Q = Q.toarray()
            nb = search.kneighbors(Q, return_distance=False)
            out[a:a + nb.shape[0]] = self._local_ridges(Q, nb)
        return out[:, 0] if self._scalar else out

    def _local_ridges(self, Q: Any, nb: np.ndarray) -> np.ndarray:
        """``k(q, X_N) (K_NN + k lam I)^-1 T_N`` for every query row of ``Q`` and its neighbours."""
        q, k = nb.shape
        K = np.empty((q, k, k))
        kq = np.empty((q, k))
        Q = Q.astype(np.float64)  # the kernel in float64 whatever the stored precision
        # The neighbourhoods differ from query to query, so each needs its own k x k Gram.
        # A group of queries takes them from one Gram of the union of its neighbours (nearby
        # queries share many): two kernel blocks per group instead of one call per query,
        # at most NEIGHBOUR_BLOCK kernel values each.
        # Blocks this small gain nothing from BLAS threads, and lose much to their start-up
        # and to pools still spinning after the neighbour search: one thread.
        group = max(1, int(np.sqrt(NEIGHBOUR_BLOCK)) // k)
        with single_blas_thread():
            for a in range(0, q, group):
                nbg = nb[a:a + group]
                u, pos = np.unique(nbg, return_inverse=True)
                pos = pos.reshape(nbg.shape)
                Xu = take(self.X_fit_, u).astype(np.float64)
                K[a:a + group] = self.kernel_.pairwise(Xu, Xu)[pos[:, :, None], pos[:, None, :]]
                kq[a:a + group] = np.take_along_axis(self.kernel_.pairwise(Q[a:a + group], Xu), pos, axis=1)
        # eigenvalues clipped at 0: a PSD kernel's rounding must not make a tiny ridge negative
        w, V = np.linalg.eigh(K)
        coef = np.einsum("qij,qj->qi", V, np.einsum("qji,qj->qi", V, kq) / (np.maximum(w, 0.0) + k * self.lam_))
        T = np.asarray(self.targets_[nb.ravel()], dtype=np.float64).reshape(q, k, -1)
        return np.einsum("qk,qkp->qp", coef, T)


#: kernel values of the Gram of one group of neighbourhoods (:class:`NeighbourKernelRidgeRegressor`)
NEIGHBOUR_BLOCK = 1 << 16


def _count_on(value: Any, name: str, n: int | None, auto: int) -> int:
    """The parameter ``name`` (regions, neighbours) resolved on ``n`` training samples:
    ``"auto"`` is ``min(auto, n)``; an integer must be between 1 and ``n`` (a ValueError
    naming ``name`` and ``n_samples`` otherwise).  ``n`` None: checked without data (by
    ``check_params``: ``"auto"`` or an integer >= 1; ``"auto"`` resolves to ``auto``)."""
    if isinstance(value, str) and value == "auto":
        return auto if n is None else min(auto, n)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1 or \
            (n is not None and value > n):
        samples = "" if n is None else f" (n_samples={n})"
        raise ValueError(f"{name} must be an integer between 1 and the number of samples{samples}, "
                         f"or 'auto' (min({auto}, n_samples)), got {value!r}")
    return int(value)


def _targets(y: Any, n: int, owner: str) -> tuple[np.ndarray, bool]:
    """``(T, scalar)``: the targets as an (n, p) float array and whether they were 1-D.

    Float targets are checked in row blocks (finite, and not so large that the sums of
    their squares overflow, as :func:`check_targets` checks) and used as they are (each
    region's ridge converts its own rows to float64): at 1.58 M x 512 a float64 copy of
    float32 targets would be 6.5 GB.  Anything else goes through the ridge's own check (a
    float64 copy)."""
    from ._targets import check_target_scale, check_targets

    T = y if isinstance(y, np.ndarray) else None
    if T is None or T.dtype.kind != "f" or T.ndim not in (1, 2):
        return check_targets(y, n, owner)
    if T.shape[0] != n:
        raise ValueError(f"X and y have different numbers of samples: {n} and {T.shape[0]}")
    big = 0.0
    for s in range(0, n, 65536):
        block = T[s:s + 65536]
        if not np.isfinite(block).all():
            raise ValueError("y contains NaN or infinite values")
        if block.size:  # max and min: no |block| copy
            big = max(big, abs(float(block.max())), abs(float(block.min())))
    check_target_scale(big, T.size, owner)
    return T.reshape(n, -1), T.ndim == 1


def _vectors(X: Any, name: str) -> Any:
    """``X`` as a 2-D float array or CSR matrix (regions are k-means regions of vectors),
    through the package's numeric checks; a float array is not copied."""
    num_samples(X, name)  # None or a scalar: a wrong type, not "an array of shape ()"
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        if X.dtype.kind not in "fiub":
            raise TypeError(f"{name} must hold numbers, got a sparse matrix of dtype {X.dtype}")
        X = check_finite(X if X.dtype.kind == "f" else X.astype(np.float64), name)
    else:
        keep = isinstance(X, np.ndarray) and X.dtype.kind == "f"
        X = check_numeric_array(X, name, dtype=X.dtype if keep else np.float64)
    if X.shape[1] == 0:  # no distances to measure: the neighbours (or k-means regions) would be arbitrary
        raise ValueError(f"{name} has 0 feature(s) (shape={X.shape}) while a minimum of 1 is required; "
                         f"expected an array of shape (n_samples, n_features) with n_features >= 1")
    return X


def _groups(labels: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """``(order, bounds)``: the rows of group ``g`` are ``order[bounds[g]:bounds[g + 1]]``."""
    order = np.argsort(labels, kind="stable")
    return order, np.concatenate([[0], np.cumsum(np.bincount(labels, minlength=n_groups))])


def _nearest(X: Any, centres: np.ndarray, block: int = 65536) -> np.ndarray:
    """Index of the nearest centre (Euclidean) of every row of ``X``, in row blocks."""
    c2 = np.einsum("ij,ij->i", centres, centres)
    out = np.empty(X.shape[0], dtype=np.intp)
    for s in range(0, X.shape[0], block):
        B = X[s:s + block]
        D = np.asarray(B @ centres.T, dtype=np.float64) * -2.0 + c2  # |x|^2 is common to a row
        out[s:s + block] = np.argmin(D, axis=1)
    return out
