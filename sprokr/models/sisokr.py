"""IOKR with optional input and output sketching: IOKR, SIOKR, ISOKR, SISOKR.

Notation of the SISOKR paper (El Ahmad et al.): ``n`` training pairs, input sketch
``R_x`` (m_x x n), output sketch ``R_y`` (m_y x n), ridge ``lam``.

Output side.  With ``K~_y = R_y K_y R_y^T = U D U^T`` (rank p_y) the sketched output
feature map is ``psi~(y) = D^-1/2 U^T R_y k_y^y`` (:class:`~sprokr.numerics.SketchedFeatures`,
from the sketch's support points alone); the training targets are
``Psi~ = K_y R_y^T U D^-1/2`` (n x p_y), computed chunk by chunk.  Without output sketch
the output coordinates of a candidate ``c`` are the kernel column ``k_y(Y_train, c)``,
i.e. the targets are ``I_n``.

Input side.  With ``A = K_x R_x^T`` (n x m_x), sketched kernel ridge regression of the
targets ``T`` gives

    gamma = (A^T A + n lam R_x K_x R_x^T)^+ A^T T        (m_x x p_y)
    H(x)  = k_x^x^T R_x^T gamma                          (the predicted coordinates)

which is the paper's ``Omega`` in factored form:  ``scores = K_x^{te,tr} R_x^T Omega^T
R_y K_y^{tr,c}`` with ``Omega^T = gamma D^-1/2 U^T``.  ``A^T A`` and ``A^T T`` are summed
over row chunks by the executor (:func:`sprokr.numerics.sketched_ridge`), so memory is
O(m_x^2 + chunk x m'), never n x n.  Without input sketch (IOKR / ISOKR):
``H(x) = k_x^x^T (K_x + n lam I)^-1 T`` by Cholesky.

Decoding: ``argmax_c H(x) . E(c) - k_y(c, c)/2`` over a candidate set (see
:mod:`sprokr.decoders`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Self

import logging
import time

import numpy as np
from numpy.typing import ArrayLike, DTypeLike
import scipy.linalg as sla
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from ..decoders.candidates import CandidateIndex
from ..numerics import (
    LocalExecutor,
    WORK_DTYPE,
    KernelExpansion,
    KernelRows,
    check_gram_block,
    default_chunk_size,
    matmul,
)
from ..progress import log_estimator
from ..utils import (
    atomic_fit,
    consistent_read,
    check_chunk_size,
    copy_with_coef,
    num_samples,
    NamedPrepare,
    check_feature_names,
    frame_as_array,
    set_feature_names,
)
from ._sisokr_fit import SISOKRTraining
from ._sisokr_rows import all_rows
from .base import (
    OUTPUT_DTYPE, ExecutorParamsMixin, OutputKernelModel, check_n_features, new_index_token, set_n_features,
)

if TYPE_CHECKING:  # imported for the annotations only
    from ..decoders.base import Decoder
    from ..kernels.base import Kernel
    from ..sketches.base import Sketch
    from ..types import RandomStateLike, Samples

__all__ = ["SISOKR", "IOKR", "SIOKR", "ISOKR", "check_chunk_size", "all_rows"]


class SISOKR(ExecutorParamsMixin, OutputKernelModel, SISOKRTraining, BaseEstimator):
    """Sketched input, sketched output kernel regression (IOKR family).

    Parameters
    ----------
    input_kernel, output_kernel : str or Kernel
        Registered name (see ``sprokr plugins``) or instance.
    lam : float
        Ridge parameter (the objective is ``1/n sum |h(x_i) - psi(y_i)|^2 + lam |h|^2``).
    input_sketch, output_sketch : str, Sketch or None
        Sketch of each side (None: exact).  Names: ``subsample``, ``gaussian``, ``psr``,
        ``psg``, ``psparsified``, ``accumulation``, ``countsketch``, ``identity``.
    m_x, m_y : int, optional
        Sketch sizes when the sketches are given by name.
    input_kernel_params, output_kernel_params, input_sketch_params, output_sketch_params : dict
        Parameters of components given by name (e.g. ``{"sigma2": 1e4}``, ``{"p": 0.004}``).
    decoder : str or Decoder, default "candidates"
    decoder_params : dict, optional
    dtype : {"float64", "float32"}
        Precision of the input-kernel blocks (for kernels given by name), of the O(n m_x^2)
        products of the sketched ridge -- formed on double-centred blocks
        (:class:`sprokr.numerics.ShiftedCrossProducts`) and kept only when a check shows
        that they change the solution by at most 1e-4 (else redone in float64; an explicit
        ``solver="cholesky"`` / ``"eigh"`` by the same route, which warns if its estimate
        still exceeds 1e-4) -- and of
        the prediction products (centred, :class:`sprokr.numerics.KernelExpansion`).  Sums,
        solves, coefficients and the output side are float64.  Without input sketch (exact
        IOKR, ISOKR) the fitted model is replayed on 256 training rows with float64 kernel
        values (IOKR: its scores of 8 training outputs); when that changes them by more
        than 1e-4 (``solver_error_estimate_``, e.g. a flat kernel with a tiny ``lam``) the
        factor is recomputed with float64 kernel values (a ``LinAlgWarning``, also logged; ``dtype_``
        then says float64).
        An input kernel computing in float32 (``dtype="float32"`` in its parameters or
        instance) makes the model a float32 one, checked the same way
        (:func:`sprokr.kernels.model_dtype`).
    rcond : float, optional
        Relative threshold of the output side's pseudo-inverse ``K~_y^+`` (default 1e-10)
        and, when given, of the input side's: the pivots of ``K~_x`` (whitened and stable
        routes; default: the rounding level ``m_x eps``) and the eigenvalues of
        ``A^T A + n lam K~_x`` (``solver="eigh"``, and the jitter of ``"cholesky"``).
    solver : {"auto", "whitened", "mixed", "cholesky", "qr", "eigh"}
        How the sketched ridge ``(A^T A + n lam K~_x)^+ A^T T`` is solved
        (:func:`sprokr.numerics.sketched_ridge`; ``docs/architecture.md``, "Solvers"):
        ``"auto"`` (default) the plain normal equations when ``K~_x`` is well conditioned
        and a measured check shows them accurate, else the whitened normal equations
        (``K~_x = L L^T`` by pivoted Cholesky, one pass summing ``Z^T Z`` and ``Z^T T`` of
        ``Z = A L^-T``, condition number at most ``1 + k_max / lam``); with few output
        coordinates (``16 p (n + m_x) <= n m_x``, ``p`` the output rank) that pass runs its
        products in float32 and the
        solution is refined by float64 residuals of the un-squared problem (two or three
        steps) -- each accepted when its error estimate is at most 1e-6 (float64;
        1e-4 for float32), else a further pass (float64 kernel values and products, then
        the stable route);
        ``"whitened"`` the whitened normal equations alone (products in ``dtype``);
        ``"mixed"`` the refined route whenever the targets are not ``I_n``;
        ``"cholesky"`` the plain normal equations (one ``syrk`` pass, Cholesky with an
        explicit relative jitter ``rcond * mean(diag)``; fastest, but they square the
        condition number: 4e-3 relative error on Bibtex SIOKR; their error is measured by a
        float64 residual and a warning logged above 1e-6; with ``dtype="float32"`` a
        solution above 1e-4 is redone by the same route in float64, which warns above 1e-4);
        ``"qr"`` the stable route
        (tall-skinny QR of ``A`` over row chunks in float64, never forming a Gram; several
        times slower); ``"eigh"`` the plain normal equations' eigendecomposition
        pseudo-inverse.  Ignored without input sketch (Cholesky of ``K_x + n lam I``, well
        conditioned).
    chunk_size : int, optional
        Rows of the training set processed at once (default: from a 64 MB budget).
    max_memory_mb : float, optional
        Budget of one score block while decoding, handed to the decoder (default: the
        decoder's own, 256 MB).
    executor : str, Executor or dask.distributed.Client, default "local"
        Runs the chunked passes (``"local"``: this process; ``"dask"``: the workers of the
        current ``dask.distributed`` client; see ``docs/scaling.md``).  A client is shared,
        not copied, by ``sklearn.base.clone`` (searches, ensembles, cross-validation) and
        saved as ``"dask"``.
    executor_params : dict, optional
        Parameters of an executor given by name.
    random_state : None, int, numpy.random.Generator or RandomState
        Seeds the sketches (input sketch drawn first).  None: each sketch is drawn with its
        own ``random_state`` (of a sketch instance or in ``*_sketch_params``), if any.
    verbose : bool
        Log the time of each training phase (logger ``sprokr.<class name>``) and show it on standard error.
    default_index : bool, default True
        Build ``default_index_`` at fit: the distinct training outputs embedded in the
        output basis, the candidates of ``predict(X)`` without ``candidates`` (``n_distinct
        x d`` float64, and finding the distinct outputs needs them all in this process).
        ``False`` skips it -- for a million training molecules decoded against a candidate
        index of your own it saves 1.6 GB at d = 128 -- and the training targets are then
        computed chunk by chunk; ``predict`` and ``predict_weights`` then need
        ``candidates``.

    Attributes
    ----------
    input_kernel_, output_kernel_ : Kernel
    input_sketch_matrix_, output_sketch_matrix_ : SketchMatrix or None
    coef_ : ndarray of shape (m'_x or n, d) or None
        Coefficients on the input support samples (None for exact IOKR, which keeps a
        Cholesky factor instead).
    X_support_ : prepared support inputs (``coef_``'s rows)
    output_rank_ : int
        ``d``, the dimension of the output coordinates (p_y, or n without output sketch).
    output_features_ : SketchedFeatures or None
        The output feature map ``psi~`` (None without output sketch).
    Y_train_ : prepared training outputs (without output sketch only) or None
    default_index_ : CandidateIndex of the distinct training outputs, or None
        (``default_index=False``)
    index_token_ : str
        Identifies the fitted output basis (candidate indexes carry it).
    executor_ : Executor
        The resolved ``executor`` (a :class:`~sprokr.numerics.LocalExecutor` in a loaded
        model: the file holds the whole fitted state, see ``docs/scaling.md``).
    solver_ : {"whitened", "cholesky", "eigh", "qr"}
        The route the input side's solve took (``"auto"`` resolved: ``"cholesky"`` when the
        plain normal equations passed their check, else ``"whitened"`` or, when that check
        failed too, ``"qr"``); None after :meth:`fit_state` (no solve) and in its
        :meth:`with_coef` copies -- a lam path's copies name the path's route instead
        (``"lam path (eigh)"``, ``"lam path (cholesky)"``).
    solver_error_estimate_ : float or None
        The relative error estimate of the input side's solution (in the predictions;
        compared with :func:`sprokr.numerics.tolerance`): measured after iterative
        refinement, bounded for the whitened normal equations, measured by a float64
        residual for an explicitly requested ``"cholesky"`` / ``"eigh"`` (a
        ``scipy.linalg.LinAlgWarning``, also logged, when it exceeds the tolerance); without
        input sketch, the float32 check's measured estimate with ``dtype="float32"`` (kept after a float64 refit, which
        ``dtype_`` shows); None for the exact input side in float64.  The whitened and QR
        routes with float64 kernel values add how far the formula itself moves when ``R K R^T`` moves by its float64
        rounding (:func:`sprokr.numerics.rounding_sensitivity`: no float64 route evaluates
        it more closely; a ``LinAlgWarning`` above the tolerance).
    solver_precision_ : numpy dtype
        Precision of the input side's kernel values the model predicts with (``dtype``, or
        float64 when float32 failed the check).
    solver_refinement_steps_ : int
        Iterative refinement steps (float64 residuals) applied to the input side's solution.
    n_train_ : int
    fit_time_ : float (s)
    fit_times_ : dict of phase -> seconds
    """

    def __init__(
        self,
        input_kernel: str | Kernel = "gaussian",
        output_kernel: str | Kernel = "gaussian",
        lam: float = 1e-5,
        input_sketch: str | Sketch | None = None,
        m_x: int | None = None,
        output_sketch: str | Sketch | None = None,
        m_y: int | None = None,
        input_kernel_params: Mapping[str, Any] | None = None,
        output_kernel_params: Mapping[str, Any] | None = None,
        input_sketch_params: Mapping[str, Any] | None = None,
        output_sketch_params: Mapping[str, Any] | None = None,
        decoder: str | Decoder = "candidates",
        decoder_params: Mapping[str, Any] | None = None,
        dtype: DTypeLike = "float64",
        rcond: float | None = None,
        solver: str = "auto",
        chunk_size: int | None = None,
        max_memory_mb: float | None = None,
        executor: Any = "local",
        executor_params: Mapping[str, Any] | None = None,
        random_state: RandomStateLike = None,
        verbose: bool | int = False,
        default_index: bool = True,
    ) -> None:
        self.input_kernel = input_kernel
        self.output_kernel = output_kernel
        self.lam = lam
        self.input_sketch = input_sketch
        self.m_x = m_x
        self.output_sketch = output_sketch
        self.m_y = m_y
        self.input_kernel_params = input_kernel_params
        self.output_kernel_params = output_kernel_params
        self.input_sketch_params = input_sketch_params
        self.output_sketch_params = output_sketch_params
        self.decoder = decoder
        self.decoder_params = decoder_params
        self.dtype = dtype
        self.rcond = rcond
        self.solver = solver
        self.chunk_size = chunk_size
        self.max_memory_mb = max_memory_mb
        self.executor = executor
        self.executor_params = executor_params
        self.random_state = random_state
        self.verbose = verbose
        self.default_index = default_index

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # the vector kernels take scipy sparse inputs
        tags.target_tags.required = True
        tags.target_tags.multi_output = True  # label sets, vectors, structured objects
        tags.target_tags.single_output = True
        return tags

    # ------------------------------------------------------------------ fit
    def check_params(self) -> Self:
        """Validate the parameters without data (clear errors naming them).

        Checks ``lam`` (> 0), ``dtype`` (float32 or float64), ``solver``, ``rcond`` (>= 0),
        ``chunk_size``, the kernels (registered names, their ``*_params``, their own
        ``check_params``), the sketches (registered names, ``*_sketch_params``, sizes
        ``m_x`` / ``m_y`` integers >= 1 given with a sketch), the decoder (with
        ``decoder_params`` and ``max_memory_mb``), the executor, ``random_state`` (its type;
        nothing is drawn) and ``default_index``.  ``fit`` runs the same checks first, with
        the same messages; the checks that need the data (a sketch size larger than the
        number of samples, a sketch's ``validate(n)``, the kernels on the samples) stay in
        ``fit``.  Nothing of the estimator or of its parameters is changed.

        Returns
        -------
        self

        Raises
        ------
        ValueError, TypeError
            A parameter value is invalid (the message names it).
        """
        self._checked_params()
        return self

    @atomic_fit
    def fit(self, X: Any, Y: Any) -> Self:
        """Fit on ``n`` pairs.  ``X``, ``Y``: anything the kernels accept.  Returns self.

        The parameters are checked first (:meth:`check_params`), before the data."""
        return self._fit(X, Y, solve=True)

    @atomic_fit
    def fit_state(self, X: Any, Y: Any) -> Self:
        """Fit the model's state on ``n`` pairs, without solving the ridge problem.

        Runs the validation and the parts of :meth:`fit` that do not depend on ``lam``:
        the resolved kernels (a data-dependent input kernel fitted on ``X``), the drawn
        sketches (same random stream as ``fit``), the output basis ``output_features_`` and
        the prepared input support ``X_support_``.  It neither factorises nor solves (no
        ``K_x + n lam I`` Cholesky, no sketched ridge) and makes no float32 accuracy check
        (that needs a solution).  A ``lam`` path (:func:`sprokr.model_selection.lambda_path`)
        computes its solutions from this state, for every ``lam`` of its grid, and makes
        each a model with :meth:`with_coef`.

        State left: every fitted attribute of :meth:`fit` (``input_kernel_``,
        ``output_kernel_``, ``input_sketch_matrix_``, ``output_sketch_matrix_``,
        ``output_features_``, ``Y_train_``, ``X_support_``, ``output_rank_``,
        ``index_token_``, ``n_train_``, ``dtype_`` -- the requested precision --, ``fit_times_``)
        except the solution: ``coef_`` is None, ``solver_`` and ``solver_error_estimate_``
        are None.  ``default_index_`` is built only when it costs nothing more (an output
        sketch with the outputs in this process: its embeddings are the training targets
        this fit computes anyway), else None until :meth:`build_default_index`.
        :meth:`make_candidate_index`, :meth:`embed_candidates` and :meth:`with_coef` work;
        predicting does not.

        Parameters
        ----------
        X, Y : the ``n`` training pairs (anything the kernels accept)

        Returns
        -------
        self

        Raises
        ------
        ValueError
            As :meth:`fit`, for invalid parameters or data (checked identically).
        """
        return self._fit(X, Y, solve=False)

    def _fit(self, X: Any, Y: Any, solve: bool) -> Self:
        t0 = time.perf_counter()
        set_feature_names(self, X)  # scikit-learn's feature_names_in_ (dataframe inputs)
        # the validation and the training phases: SISOKRTraining (sprokr/models/_sisokr_fit.py);
        # outputs given as a dataframe are an array (predictions too): see frame_as_array
        setup = self._validate_fit(X, frame_as_array(Y))

        # ---- validated: learned state starts here.  Any failure further on (a numerical
        # one, a worker's) restores the previous state before re-raising.
        previous = dict(self.__dict__)
        try:
            self._fit_validated(setup, solve=solve)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(previous)
            raise
        self.fit_time_ = time.perf_counter() - t0
        self._log(f"{'fit' if solve else 'state fit'} done in {self.fit_time_:.3f} s (n={setup.n}, output rank {self.output_rank_})")
        return self

    @atomic_fit
    def build_default_index(self, Y: Any) -> Self:
        """Build ``default_index_``, the candidates of ``predict(X)`` without ``candidates``.

        For a model fitted by :meth:`fit_state` (which builds the index only when it costs
        nothing more) or with ``default_index=False``: the distinct training outputs
        embedded in the output basis, as :meth:`fit` builds them (with the attributes that
        go with them: ``n_distinct_outputs_``, and those :meth:`predict_weights` uses).
        The embeddings depend on the output side only: copies made afterwards by
        :meth:`with_coef` share the index.  A model that has an index already is returned
        unchanged.

        Parameters
        ----------
        Y : the ``n_train_`` training outputs the model was fitted on, in the same order

        Returns
        -------
        self

        Raises
        ------
        sklearn.exceptions.NotFittedError
            When the model is not fitted (neither :meth:`fit` nor :meth:`fit_state`).
        ValueError
            When ``Y`` does not hold ``n_train_`` outputs.
        """
        check_is_fitted(self, "output_rank_")
        Y = frame_as_array(Y)
        n = num_samples(Y, "Y")
        if n != self.n_train_:
            raise ValueError(f"Y has {n} outputs but the model was fitted on {self.n_train_}")
        if self.default_index_ is not None:
            return self
        ex, ky, fy = self.executor_, self.output_kernel_, self.output_features_
        parts = ex.partition(Y, Y, prepare=(NamedPrepare(ky.prepare_outputs, "Y"), None),
                             names=("outputs", "raw_outputs"))
        if fy is not None:  # the raw outputs at the basis' support (merged duplicates: fy.R's)
            self._support_outputs = (ex.take_rows(parts, fy.R.indices, which="raw_outputs"), fy.R.indices)
        width = self.n_train_ if fy is None else fy.R.indices.size
        chunk = check_chunk_size(self.chunk_size) or default_chunk_size(width, self.dtype_)
        self._build_default_index(parts, chunk, None, None)
        return self

    def _set_coef(self, beta):
        """Store the coefficients on the support samples and the prediction map."""
        set_n_features(self, self.X_support_)
        self.coef_ = np.asarray(beta, dtype=WORK_DTYPE)
        self._cho = None
        self._expansion = KernelExpansion(self.input_kernel_, self.X_support_, self.coef_, self.dtype_)
        self.output_rank_ = self.coef_.shape[1] if self.output_features_ is not None else self.n_train_

    def _log(self, msg, level=logging.INFO):
        log_estimator(self, msg, level)

    @consistent_read
    def exact_output_embedding(self, Cp: Any) -> np.ndarray:
        """Output coordinates without sketch: ``k_y(c, Y_train)`` rows, shape (n_c, n)."""
        ex = LocalExecutor()  # exact outputs: the training outputs are in this process
        E = np.empty((num_samples(Cp), self.n_train_), dtype=OUTPUT_DTYPE)
        return ex.map_rows(ex.partition(Cp), KernelRows(self.output_kernel_, self.Y_train_, OUTPUT_DTYPE),
                           default_chunk_size(self.n_train_, OUTPUT_DTYPE), out=E, name="candidate embedding")

    # ------------------------------------------------------------------ predict
    @consistent_read
    def prepare_inputs(self, X: Samples) -> Any:
        """Validate and prepare query inputs (the input kernel's ``prepare``)."""
        check_is_fitted(self, "output_rank_")
        check_feature_names(self, X)
        Xp = NamedPrepare(self.input_kernel_.prepare, "X")(X)
        check_n_features(self, Xp)
        return Xp

    @consistent_read
    def predict_coordinates(self, X: Samples, prepared: bool = False) -> np.ndarray:
        """Coordinates ``H(x)`` of the predicted output in the output basis, (n_q, d)."""
        check_is_fitted(self, "output_rank_")
        self._check_solved()
        Xp = X if prepared else self.prepare_inputs(X)
        if self.coef_ is None:
            Kq = check_gram_block(self.input_kernel_.pairwise(Xp, self.X_support_),
                                  (num_samples(Xp), self.n_train_), "input kernel")
            return sla.cho_solve(self._cho, np.asarray(Kq, dtype=WORK_DTYPE).T, check_finite=False).T
        return self._expansion(Xp)

    def _check_solved(self):
        if self.coef_ is None and getattr(self, "_cho", None) is None:
            raise NotFittedError(f"this {type(self).__name__} holds the state of fit_state only (no ridge "
                                 f"solution): fit it, or make a fitted copy with with_coef")

    @consistent_read
    def search_pair(self, Xp: Any, index: CandidateIndex) -> tuple[np.ndarray, CandidateIndex]:
        """``(H, index')`` for a batch of prepared queries: the cheapest equivalent scoring.

        Without output sketch the coordinates have one entry per training sample and
        ``scores = K_q C E^T``, with ``C`` the coefficients (sketched input, m x n) or
        ``(K + n lam I)^-1`` (exact input).  Folding the index once, ``F = E C^T``
        (n_c x m, cached on the index), makes each query batch one ``n_q x m x n_c``
        product instead of ``n_q m n + n_q n n_c`` flops (Bibtex SIOKR: 12 instead of 53
        GFlop); it is done when it pays off already for this batch, or is cached.
        """
        self._check_solved()
        if self.output_features_ is None:
            F = self._folded_index(index, num_samples(Xp))
            if F is not None:
                Kq = check_gram_block(self.input_kernel_.pairwise(Xp, self.X_support_),
                                      (num_samples(Xp), F.dim), "input kernel")
                return np.asarray(Kq, dtype=WORK_DTYPE), F
        return self.predict_coordinates(Xp, prepared=True), index

    def _folded_index(self, index, n_q):
        """``E C^T`` for ``index`` as a CandidateIndex (cached on it), or None when it does not pay."""
        F = index.cache.get(self.index_token_)
        if F is not None:
            return F
        n_c, d = len(index), index.dim
        m = d if self.coef_ is None else self.coef_.shape[0]
        # fold once + folded product  vs  product with C + product with E
        if m * d * n_c + n_q * m * n_c > n_q * m * d + n_q * d * n_c:
            return None

        def fold():
            E = np.asarray(index.gather_embeddings(), dtype=WORK_DTYPE)
            if self.coef_ is None:  # exact input: F^T = (K + n lam I)^-1 E^T
                Fe = np.ascontiguousarray(sla.cho_solve(self._cho, E.T, check_finite=False).T)
            else:
                Fe = matmul(E, self.coef_.T)
            return CandidateIndex(index.candidates, Fe, index.offsets, owner=index.owner, kernel=index.kernel)

        return index.cached(self.index_token_, fold)  # once, whichever threads predict at once

    @consistent_read
    def predict_weights(self, X: Samples, prepared: bool = False) -> np.ndarray:
        """Weights ``alpha(x)`` with ``h(x) = sum_u alpha_u(x) psi(y_u)`` over the distinct
        training outputs ``y_u`` (the columns follow ``default_index_.candidates``).

        Exact for every variant: without output sketch ``H(x)`` are weights over the
        training samples; with one, ``h = sum_j H_j e~_j`` and the basis vectors are
        ``e~ = (R_y^T U D^-1/2)^T psi(Y)``, whose weights sit on the output sketch's support.
        Weights of repeated outputs are summed.  Used by decoders that build outputs from
        training examples (FGW barycenters).

        Returns
        -------
        ndarray of shape (n_queries, n_distinct_training_outputs)
        """
        if self.default_index_ is None:
            raise ValueError("predict_weights needs the distinct training outputs: this model was fitted "
                             "with default_index=False")
        H = self.predict_coordinates(X, prepared=prepared)
        n_u = self.n_distinct_outputs_
        f = self.output_features_
        if f is None:
            n = self.output_groups_.size
            P = sp.csr_matrix((np.ones(n), (np.arange(n), self.output_groups_)), shape=(n, n_u))
            return np.asarray((P.T @ H.T).T)
        Cs = f.R.apply_left_transpose(f.basis_times(H.T)).T  # (n_q, m')
        g = self._support_groups
        P = sp.csr_matrix((np.ones(g.size), (np.arange(g.size), g)), shape=(g.size, n_u))
        return np.asarray((P.T @ Cs.T).T)

    @consistent_read
    def with_coef(self, coef: ArrayLike, lam: float | None = None) -> Self:
        """A fitted copy of this model with other coefficients on ``X_support_``.

        Kernels, sketches, output basis, decoder and default candidates are shared with this
        model (not copied); only the prediction map changes.  Model selection
        (:mod:`sprokr.model_selection`) computes the solutions of a whole ``lam`` path from
        one pass over the data and scores each as a model through its copy.

        Parameters
        ----------
        coef : array-like of shape (n_support, ``output_rank_``)
            ``H(x) = k(x, X_support_) coef``; ``n_support`` is ``m'_x`` with an input
            sketch, else ``n_train_`` (exact IOKR too: then ``coef = (K + n lam I)^-1``).
        lam : float, optional
            Recorded as the copy's ``lam`` parameter.

        The copy has its own ``index_token_``: a candidate index built by this model must be
        rebuilt with the copy's ``make_candidate_index``.
        """
        check_is_fitted(self, "output_rank_")
        Rx = self.input_sketch_matrix_
        shape = (Rx.indices.size if Rx is not None else self.n_train_, self.output_rank_)
        new, coef = copy_with_coef(self, coef, shape, lam)
        new._set_coef(coef)
        new.index_token_ = new_index_token()  # folded indexes cached under the old token depend on coef_
        d = self.default_index_
        new.default_index_ = None if d is None else CandidateIndex(
            d.candidates, d.embeddings, d.offsets, owner=new.index_token_, kernel=d.kernel, partitions=d.partitions,
            dim=d.dim)
        return new


class IOKR(SISOKR):
    """Exact input-output kernel regression (no sketch): Cholesky of ``K_x + n lam I``.

    Parameters
    ----------
    input_kernel : str or Kernel, default "gaussian"
        Input kernel: a registered name (see ``sprokr plugins``) or an instance.
    output_kernel : str or Kernel, default "gaussian"
        Output kernel: a registered name (see ``sprokr plugins``) or an instance.
    lam : float, default 1e-5
        Ridge parameter (the objective is ``1/n sum |h(x_i) - psi(y_i)|^2 + lam |h|^2``).
    input_kernel_params : dict, optional
        Parameters of an input kernel given by name (e.g. ``{"sigma2": 1e4}``).
    output_kernel_params : dict, optional
        Parameters of an output kernel given by name.
    decoder : str or Decoder, default "candidates"
        Decoder of the predicted output coordinates (a registered name or an instance).
    decoder_params : dict, optional
        Parameters of a decoder given by name.
    dtype : {"float64", "float32"}, default "float64"
        Precision of the input-kernel blocks and of the prediction products, kept only when a
        check shows float32 accurate (see :class:`SISOKR`).
    rcond : float, optional
        Relative threshold of the output side's pseudo-inverse ``K~_y^+`` (default 1e-10).
    chunk_size : int, optional
        Rows of the training set processed at once (default: from a 64 MB budget).
    max_memory_mb : float, optional
        Budget of one score block while decoding, handed to the decoder (default: the
        decoder's own, 256 MB).
    executor : str, Executor or dask.distributed.Client, default "local"
        Runs the chunked passes (``"local"``: this process; ``"dask"``: the workers of the
        current ``dask.distributed`` client; see ``docs/scaling.md``).
    executor_params : dict, optional
        Parameters of an executor given by name.
    verbose : bool, default False
        Log the time of each training phase (logger ``sprokr.<class name>``) and show it on standard error.
    default_index : bool, default True
        Build ``default_index_`` at fit: the distinct training outputs embedded in the
        output basis, the candidates of ``predict(X)`` without ``candidates`` (``False``
        skips it; ``predict`` and ``predict_weights`` then need ``candidates``).

    See Also
    --------
    SISOKR : The parameters in full, and the fitted attributes.
    """

    def __init__(
        self,
        input_kernel: str | Kernel = "gaussian",
        output_kernel: str | Kernel = "gaussian",
        lam: float = 1e-5,
        input_kernel_params: Mapping[str, Any] | None = None,
        output_kernel_params: Mapping[str, Any] | None = None,
        decoder: str | Decoder = "candidates",
        decoder_params: Mapping[str, Any] | None = None,
        dtype: DTypeLike = "float64",
        rcond: float | None = None,
        chunk_size: int | None = None,
        max_memory_mb: float | None = None,
        executor: Any = "local",
        executor_params: Mapping[str, Any] | None = None,
        verbose: bool | int = False,
        default_index: bool = True,
    ) -> None:
        super().__init__(
            input_kernel=input_kernel, output_kernel=output_kernel, lam=lam,
            input_kernel_params=input_kernel_params, output_kernel_params=output_kernel_params,
            decoder=decoder, decoder_params=decoder_params, dtype=dtype, rcond=rcond,
            chunk_size=chunk_size, max_memory_mb=max_memory_mb, executor=executor,
            executor_params=executor_params, verbose=verbose, default_index=default_index,
        )


class SIOKR(SISOKR):
    """Sketched-input IOKR: ``SISOKR`` with an input sketch and exact outputs.

    Parameters
    ----------
    input_kernel : str or Kernel, default "gaussian"
        Input kernel: a registered name (see ``sprokr plugins``) or an instance.
    output_kernel : str or Kernel, default "gaussian"
        Output kernel: a registered name (see ``sprokr plugins``) or an instance.
    lam : float, default 1e-5
        Ridge parameter (the objective is ``1/n sum |h(x_i) - psi(y_i)|^2 + lam |h|^2``).
    input_sketch : str, Sketch or None, default "subsample"
        Sketch of the input side (None: exact), a registered name or an instance.
    m_x : int or None, default 100
        Input sketch size when the sketch is given by name.
    input_kernel_params : dict, optional
        Parameters of an input kernel given by name (e.g. ``{"sigma2": 1e4}``).
    output_kernel_params : dict, optional
        Parameters of an output kernel given by name.
    input_sketch_params : dict, optional
        Parameters of an input sketch given by name.
    decoder : str or Decoder, default "candidates"
        Decoder of the predicted output coordinates (a registered name or an instance).
    decoder_params : dict, optional
        Parameters of a decoder given by name.
    dtype : {"float64", "float32"}, default "float64"
        Precision of the input-kernel blocks and of the prediction products, kept only when a
        check shows float32 accurate (see :class:`SISOKR`).
    rcond : float, optional
        Relative threshold of the output side's pseudo-inverse ``K~_y^+`` (default 1e-10)
        and, when given, of the input side's (see :class:`SISOKR`).
    solver : {"auto", "whitened", "mixed", "cholesky", "qr", "eigh"}, default "auto"
        How the sketched ridge is solved (:func:`sprokr.numerics.sketched_ridge`; see
        :class:`SISOKR`).
    chunk_size : int, optional
        Rows of the training set processed at once (default: from a 64 MB budget).
    max_memory_mb : float, optional
        Budget of one score block while decoding, handed to the decoder (default: the
        decoder's own, 256 MB).
    executor : str, Executor or dask.distributed.Client, default "local"
        Runs the chunked passes (``"local"``: this process; ``"dask"``: the workers of the
        current ``dask.distributed`` client; see ``docs/scaling.md``).
    executor_params : dict, optional
        Parameters of an executor given by name.
    random_state : None, int, numpy.random.Generator or RandomState
        Seeds the input sketch.  None: the sketch is drawn with its own ``random_state`` (of
        a sketch instance or in ``input_sketch_params``), if any.
    verbose : bool, default False
        Log the time of each training phase (logger ``sprokr.<class name>``) and show it on standard error.
    default_index : bool, default True
        Build ``default_index_`` at fit: the distinct training outputs embedded in the
        output basis, the candidates of ``predict(X)`` without ``candidates`` (``False``
        skips it; ``predict`` and ``predict_weights`` then need ``candidates``).

    See Also
    --------
    SISOKR : The parameters in full, and the fitted attributes.
    """

    def __init__(
        self,
        input_kernel: str | Kernel = "gaussian",
        output_kernel: str | Kernel = "gaussian",
        lam: float = 1e-5,
        input_sketch: str | Sketch | None = "subsample",
        m_x: int | None = 100,
        input_kernel_params: Mapping[str, Any] | None = None,
        output_kernel_params: Mapping[str, Any] | None = None,
        input_sketch_params: Mapping[str, Any] | None = None,
        decoder: str | Decoder = "candidates",
        decoder_params: Mapping[str, Any] | None = None,
        dtype: DTypeLike = "float64",
        rcond: float | None = None,
        solver: str = "auto",
        chunk_size: int | None = None,
        max_memory_mb: float | None = None,
        executor: Any = "local",
        executor_params: Mapping[str, Any] | None = None,
        random_state: RandomStateLike = None,
        verbose: bool | int = False,
        default_index: bool = True,
    ) -> None:
        super().__init__(
            input_kernel=input_kernel, output_kernel=output_kernel, lam=lam,
            input_sketch=input_sketch, m_x=m_x, input_kernel_params=input_kernel_params,
            output_kernel_params=output_kernel_params, input_sketch_params=input_sketch_params,
            decoder=decoder, decoder_params=decoder_params, dtype=dtype, rcond=rcond,
            solver=solver, chunk_size=chunk_size, max_memory_mb=max_memory_mb, executor=executor,
            executor_params=executor_params, random_state=random_state, verbose=verbose,
            default_index=default_index,
        )


class ISOKR(SISOKR):
    """Sketched-output IOKR: ``SISOKR`` with an output sketch and an exact input side.

    Parameters
    ----------
    input_kernel : str or Kernel, default "gaussian"
        Input kernel: a registered name (see ``sprokr plugins``) or an instance.
    output_kernel : str or Kernel, default "gaussian"
        Output kernel: a registered name (see ``sprokr plugins``) or an instance.
    lam : float, default 1e-5
        Ridge parameter (the objective is ``1/n sum |h(x_i) - psi(y_i)|^2 + lam |h|^2``).
    output_sketch : str, Sketch or None, default "psg"
        Sketch of the output side (None: exact), a registered name or an instance.
    m_y : int or None, default 100
        Output sketch size when the sketch is given by name.
    input_kernel_params : dict, optional
        Parameters of an input kernel given by name (e.g. ``{"sigma2": 1e4}``).
    output_kernel_params : dict, optional
        Parameters of an output kernel given by name.
    output_sketch_params : dict, optional
        Parameters of an output sketch given by name (e.g. ``{"p": 0.004}``).
    decoder : str or Decoder, default "candidates"
        Decoder of the predicted output coordinates (a registered name or an instance).
    decoder_params : dict, optional
        Parameters of a decoder given by name.
    dtype : {"float64", "float32"}, default "float64"
        Precision of the input-kernel blocks and of the prediction products, kept only when a
        check shows float32 accurate (see :class:`SISOKR`).
    rcond : float, optional
        Relative threshold of the output side's pseudo-inverse ``K~_y^+`` (default 1e-10).
    chunk_size : int, optional
        Rows of the training set processed at once (default: from a 64 MB budget).
    max_memory_mb : float, optional
        Budget of one score block while decoding, handed to the decoder (default: the
        decoder's own, 256 MB).
    executor : str, Executor or dask.distributed.Client, default "local"
        Runs the chunked passes (``"local"``: this process; ``"dask"``: the workers of the
        current ``dask.distributed`` client; see ``docs/scaling.md``).
    executor_params : dict, optional
        Parameters of an executor given by name.
    random_state : None, int, numpy.random.Generator or RandomState
        Seeds the output sketch.  None: the sketch is drawn with its own ``random_state`` (of
        a sketch instance or in ``output_sketch_params``), if any.
    verbose : bool, default False
        Log the time of each training phase (logger ``sprokr.<class name>``) and show it on standard error.
    default_index : bool, default True
        Build ``default_index_`` at fit: the distinct training outputs embedded in the
        output basis, the candidates of ``predict(X)`` without ``candidates`` (``False``
        skips it; ``predict`` and ``predict_weights`` then need ``candidates``).

    See Also
    --------
    SISOKR : The parameters in full, and the fitted attributes.
    """

    def __init__(
        self,
        input_kernel: str | Kernel = "gaussian",
        output_kernel: str | Kernel = "gaussian",
        lam: float = 1e-5,
        output_sketch: str | Sketch | None = "psg",
        m_y: int | None = 100,
        input_kernel_params: Mapping[str, Any] | None = None,
        output_kernel_params: Mapping[str, Any] | None = None,
        output_sketch_params: Mapping[str, Any] | None = None,
        decoder: str | Decoder = "candidates",
        decoder_params: Mapping[str, Any] | None = None,
        dtype: DTypeLike = "float64",
        rcond: float | None = None,
        chunk_size: int | None = None,
        max_memory_mb: float | None = None,
        executor: Any = "local",
        executor_params: Mapping[str, Any] | None = None,
        random_state: RandomStateLike = None,
        verbose: bool | int = False,
        default_index: bool = True,
    ) -> None:
        super().__init__(
            input_kernel=input_kernel, output_kernel=output_kernel, lam=lam,
            output_sketch=output_sketch, m_y=m_y, input_kernel_params=input_kernel_params,
            output_kernel_params=output_kernel_params, output_sketch_params=output_sketch_params,
            decoder=decoder, decoder_params=decoder_params, dtype=dtype, rcond=rcond,
            chunk_size=chunk_size, max_memory_mb=max_memory_mb, executor=executor,
            executor_params=executor_params, random_state=random_state, verbose=verbose,
            default_index=default_index,
        )
