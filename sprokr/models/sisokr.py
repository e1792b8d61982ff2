"""IOKR with optional input and output sketching: IOKR, SIOKR, ISOKR, SISOKR.

Notation of the SISOKR paper (El Ahmad et al.): ``n`` training pairs, input sketch
``R_x`` (m_x x n), output sketch ``R_y`` (m_y x n), ridge ``lam``.

Output side.  With ``K~_y = R_y K_y R_y^T = U D U^T`` (rank p_y) the sketched output
feature map is ``psi~(y) = D^-1/2 U^T R_y k_y^y`` (``SketchedFeatures``); training targets
are ``Psi~ = K_y R_y^T U D^-1/2`` (n x p_y).  Without output sketch the output
coordinates of a candidate ``c`` are the kernel column ``k_y(Y_train, c)``, i.e. the
targets are ``I_n``.

Input side.  With ``A = K_x R_x^T`` (n x m_x), sketched kernel ridge regression of the
targets ``T`` gives

    gamma = (A^T A + n lam R_x K_x R_x^T)^+ A^T T        (m_x x p_y)
    H(x)  = k_x^x^T R_x^T gamma                          (the predicted coordinates)

which is the paper's ``Omega`` in factored form:  ``scores = K_x^{te,tr} R_x^T Omega^T
R_y K_y^{tr,c}`` with ``Omega^T = gamma D^-1/2 U^T``.  ``A^T A`` and ``A^T T`` are
accumulated over row chunks, so memory is O(m_x^2 + chunk x m'), never n x n.  Without
input sketch (IOKR / ISOKR): ``H(x) = k_x^x^T (K_x + n lam I)^-1 T`` by Cholesky.

Decoding: ``argmax_c H(x) . E(c) - k_y(c, c)/2`` over a candidate set (see
:mod:`sprokr.decoders`).
"""
from __future__ import annotations

import time
import uuid

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ..numerics import (
    DEFAULT_RCOND,
    WORK_DTYPE,
    RowGatherer,
    SketchedFeatures,
    default_chunk_size,
    exact_ridge_factor,
    matmul,
    sketched_ridge_coef,
    topk_search,
)
from ..utils import (
    check_paired,
    check_positive,
    check_random_state,
    iter_chunks,
    num_samples,
    resolve_dtype,
    take,
    take_slice,
    unique_inverse,
)
from ..decoders.candidates import CandidateIndex
from ..registry import get_registry, resolve_kernel, resolve_sketch
from .base import OUTPUT_DTYPE, OutputKernelModel

__all__ = ["SISOKR", "IOKR", "SIOKR", "ISOKR"]


class SISOKR(OutputKernelModel, BaseEstimator):
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
        Precision of the input-kernel blocks (for kernels given by name) and of the
        O(n m_x^2) cross products, which are formed on double-centred blocks
        (:class:`sprokr.numerics.ShiftedCrossProducts`) so that float32 keeps ~1e-10
        relative accuracy on flat kernels (Bibtex F1 identical to float64).  The m_x x m_x
        solve, the coefficients and the output side are always float64.
    rcond : float, optional
        Relative threshold of pseudo-inverses and relative Cholesky shift (default 1e-10).
    solver : {"cholesky", "eigh"}
        How ``(A^T A + n lam K~_x)^+`` is applied (see :func:`sprokr.numerics.psd_solve`).
    chunk_size : int, optional
        Rows of the training set processed at once (default: from a 64 MB budget).
    max_memory_mb : float
        Budget of one score block while decoding.
    random_state : None, int or numpy.random.Generator
        Seeds the sketches (input sketch drawn first).
    verbose : bool
        Print the time of each training phase.

    Attributes
    ----------
    input_kernel_, output_kernel_ : Kernel
    input_sketch_matrix_, output_sketch_matrix_ : SketchMatrix or None
    coef_ : ndarray of shape (m'_x or n, d) or None
        Coefficients on the input support samples (None for exact IOKR, which keeps a
        Cholesky factor instead).
    output_rank_ : int
        ``d``, the dimension of the output coordinates (p_y, or n without output sketch).
    output_features_ : SketchedFeatures or None
        The output feature map ``psi~`` (None without output sketch).
    n_train_ : int
    fit_time_ : float (s)
    """

    def __init__(
        self,
        input_kernel="gaussian",
        output_kernel="gaussian",
        lam=1e-5,
        input_sketch=None,
        m_x=None,
        output_sketch=None,
        m_y=None,
        input_kernel_params=None,
        output_kernel_params=None,
        input_sketch_params=None,
        output_sketch_params=None,
        decoder="candidates",
        decoder_params=None,
        dtype="float64",
        rcond=None,
        solver="cholesky",
        chunk_size=None,
        max_memory_mb=256,
        random_state=None,
        verbose=False,
    ):
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
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ fit
    def fit(self, X, Y):
        """Fit on ``n`` pairs.  ``X``, ``Y``: anything the kernels accept.  Returns self."""
        from ..decoders.base import Decoder

        t0 = time.perf_counter()
        n = check_paired(X, Y)
        lam = check_positive(self.lam, "lam")
        dtype = resolve_dtype(self.dtype)
        if self.solver not in ("cholesky", "eigh"):
            raise ValueError(f"solver must be 'cholesky' or 'eigh', got {self.solver!r}")
        rcond = self.rcond if self.rcond is not None else DEFAULT_RCOND
        kx = resolve_kernel(self.input_kernel, self.input_kernel_params, "input", dtype)
        ky = resolve_kernel(self.output_kernel, self.output_kernel_params, "output", OUTPUT_DTYPE)
        sx = resolve_sketch(self.input_sketch, self.m_x, self.input_sketch_params, n, "input")
        sy = resolve_sketch(self.output_sketch, self.m_y, self.output_sketch_params, n, "output")
        decoder = get_registry().create("decoder", self.decoder, self.decoder_params, base=Decoder)
        Xp = kx.prepare(X)
        Yp = ky.prepare(Y)
        rng = check_random_state(self.random_state)
        Rx = sx.draw(n, rng) if sx is not None else None
        Ry = sy.draw(n, rng) if sy is not None else None
        u, inv = unique_inverse(Y)

        # ---- validated: learned state starts here.  A numerical failure further on
        # (e.g. an indefinite exact system) restores the previous state before re-raising.
        previous = dict(self.__dict__)
        try:
            self._fit_validated(Y, Xp, Yp, n, lam, dtype, rcond, kx, ky, decoder, Rx, Ry, u, inv)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(previous)
            raise
        self.fit_time_ = time.perf_counter() - t0
        self._log(f"fit done in {self.fit_time_:.3f} s (n={n}, output rank {self.output_rank_})")
        return self

    def _fit_validated(self, Y, Xp, Yp, n, lam, dtype, rcond, kx, ky, decoder, Rx, Ry, u, inv):
        """The training proper, on validated and prepared inputs."""
        self.input_kernel_, self.output_kernel_, self.decoder_ = kx, ky, decoder
        self.input_sketch_matrix_, self.output_sketch_matrix_ = Rx, Ry
        self.n_train_, self._dtype, self._rcond = n, dtype, rcond
        self.output_features_ = None
        out_rows = self._init_output_side(Yp, Ry, u, inv) if Ry is not None else None
        self._Y_train = Yp if Ry is None else None
        chunk = self.chunk_size or default_chunk_size(max(Rx.indices.size if Rx else n, 1), dtype)
        if Rx is not None:
            E_default = self._fit_sketched_input(Xp, Yp, n, lam, Rx, Ry, u, chunk, out_rows)
        else:
            E_default = self._fit_exact_input(Xp, Yp, n, lam, Ry, u, chunk, out_rows)
        self.output_rank_ = E_default.shape[1]
        self._train_inverse, self._n_distinct = inv, u.size
        self.index_token_ = uuid.uuid4().hex  # persistent: survives save/load and pickle
        offsets = None if ky.normalized else -0.5 * ky.diag(take(Yp, u)).astype(OUTPUT_DTYPE)
        self.default_index_ = CandidateIndex(take(Y, u), E_default, offsets, owner=self.index_token_)

    def _log(self, msg):
        if self.verbose:
            print(f"[{type(self).__name__}] {msg}", flush=True)

    def _init_output_side(self, Yp, Ry, u, inv):
        """Set up ``psi~`` and return ``rows(idx)``: rows of the training targets.

        Structured outputs repeat (Bibtex: 2058 distinct label sets among 4880 documents).
        Rows of ``K_y R_y^T`` depend on the output only, so when at most half the outputs
        are distinct they are computed once per distinct output, with the sketch collapsed
        onto distinct outputs (``R_y P``): an exact identity that also merges repeated
        sketch columns, and whose basis is known before the input-side pass -- the rows
        are then the targets ``Psi~ = K_y R_y^T U D^-1/2`` themselves (n x p_y: fewer
        right-hand sides than m_y).  Otherwise they are the raw rows of ``K_y R_y^T``
        (n x m_y), rotated after the input pass.
        """
        n = inv.size
        if u.size > n // 2:
            self.output_features_ = SketchedFeatures(self.output_kernel_, Ry, Yp, OUTPUT_DTYPE, self._rcond)
            return lambda sl: self.output_features_.block(take_slice(Yp, sl))
        t0 = time.perf_counter()
        Yu = take(Yp, u)
        self.output_features_ = SketchedFeatures(self.output_kernel_, Ry.collapse(inv, u.size), Yu, OUTPUT_DTYPE, self._rcond)
        Tu = self.output_features_.block(Yu)  # (n_distinct, m_y)
        self.output_features_.set_basis(Tu[self.output_features_.R.indices])
        Psi_u = matmul(Tu, self.output_features_.basis_)  # (n_distinct, p_y)
        self._log(f"output side on {u.size} distinct outputs: {time.perf_counter() - t0:.3f} s")
        return lambda sl: Psi_u[inv[sl]]

    def _fit_sketched_input(self, Xp, Yp, n, lam, Rx, Ry, u, chunk, out_rows):
        """Sketched ridge of the targets ``Psi~`` (or ``I_n``).

        When the output basis is not known yet, the raw rows ``K_y R_y^T`` are solved for
        and rotated afterwards, ``gamma = G^+ A^T Psi~ = (G^+ A^T K_y R_y^T) U D^-1/2``, so
        that the basis comes from rows gathered during the same pass.
        """
        targets, width = None, n
        basis_known = Ry is not None and self.output_features_.basis_ is not None
        if Ry is not None:
            width = self.output_features_.rank if basis_known else Ry.m
            targets = out_rows
        if Ry is not None and not basis_known:
            rows_y = RowGatherer(Ry.indices, Ry.m, OUTPUT_DTYPE)  # gives K~_y
            rows_u = RowGatherer(u, Ry.m, OUTPUT_DTYPE)  # default candidates' raw embeddings

            def targets(sl):
                T = out_rows(sl)
                rows_y.add(sl, T)
                rows_u.add(sl, T)
                return T

        beta, support = sketched_ridge_coef(self.input_kernel_, Rx, Xp, n, lam, targets, width,
                                            self._rcond, chunk, self.solver, self._log if self.verbose else None,
                                            product_dtype=self._dtype)
        if basis_known:
            E_default = out_rows(u)  # targets were already rotated
        elif Ry is not None:
            self.output_features_.set_basis(rows_y.rows)
            V = self.output_features_.basis_
            beta, E_default = matmul(beta, V), matmul(rows_u.rows, V)
        else:
            E_default = self._exact_output_embedding(take(Yp, u))
        self._set_coef(beta)
        self.X_support_ = self.input_kernel_.prepare_support(support)
        self._cho = None
        return E_default

    def _fit_exact_input(self, Xp, Yp, n, lam, Ry, u, chunk, out_rows):
        """Cholesky of ``K_x + n lam I`` (n x n: only when no input sketch is asked for)."""
        kx = self.input_kernel_
        cho = exact_ridge_factor(kx, Xp, n, lam, chunk)
        self.X_support_ = kx.prepare_support(Xp)
        if Ry is None:
            self.coef_, self._cho = None, cho
            return self._exact_output_embedding(take(Yp, u))
        rotated = self.output_features_.basis_ is not None
        T = np.empty((n, self.output_features_.rank if rotated else Ry.m), dtype=OUTPUT_DTYPE)
        for sl in iter_chunks(n, chunk):
            T[sl] = out_rows(sl)
        if rotated:
            Psi = T
        else:
            self.output_features_.set_basis(T[Ry.indices])
            Psi = matmul(T, self.output_features_.basis_)
        self._set_coef(sla.cho_solve(cho, Psi, check_finite=False))
        self._cho = None
        return Psi[u]

    def _set_coef(self, beta):
        """Store the coefficients on the support samples (and their column sums, float64)."""
        self.coef_ = np.asarray(beta, dtype=WORK_DTYPE)
        self._coef32, self._coef_sum = self.coef_.astype(np.float32), self.coef_.sum(axis=0)

    def _exact_output_embedding(self, Cp):
        """Output coordinates without sketch: ``k_y(c, Y_train)`` rows, shape (n_c, n)."""
        n_c = num_samples(Cp)
        E = np.empty((n_c, self.n_train_), dtype=OUTPUT_DTYPE)
        chunk = default_chunk_size(self.n_train_, OUTPUT_DTYPE)
        for sl in iter_chunks(n_c, chunk):
            E[sl] = self.output_kernel_.pairwise(take_slice(Cp, sl), self._Y_train)
        return E

    # ------------------------------------------------------------------ predict
    def prepare_inputs(self, X):
        """Validate and prepare query inputs (the input kernel's ``prepare``)."""
        check_is_fitted(self, "coef_")
        return self.input_kernel_.prepare(X)

    def predict_coordinates(self, X, prepared=False):
        """Coordinates ``H(x)`` of the predicted output in the output basis, (n_q, d)."""
        check_is_fitted(self, "coef_")
        Xp = X if prepared else self.input_kernel_.prepare(X)
        Kq = np.asarray(self.input_kernel_.pairwise(Xp, self.X_support_))
        if self.coef_ is None:
            return sla.cho_solve(self._cho, np.asarray(Kq, dtype=WORK_DTYPE).T, check_finite=False).T
        if Kq.dtype == np.float32:
            # k^T beta = (k - mu)^T beta + mu 1^T beta, mu the row mean of k: the ridge
            # coefficients of a flat kernel cancel, and removing the common offset of the
            # kernel row keeps the (2x faster) float32 product accurate (~1e-6 here).
            mu = Kq.mean(axis=1, keepdims=True, dtype=np.float64)
            Kq = Kq - mu.astype(np.float32)
            return matmul(Kq, self._coef32) + mu * self._coef_sum
        return matmul(np.asarray(Kq, dtype=WORK_DTYPE), self.coef_)


    def search_index(self, Xp, index, k=1, max_memory_mb=None):
        """Top-k of a :class:`CandidateIndex` for prepared queries ``Xp`` (a ``Decoded``).

        Without output sketch the coordinates have one entry per training sample and
        ``scores = K_q C E^T``, with ``C`` the coefficients (sketched input, m x n) or
        ``(K + n lam I)^-1`` (exact input).  Folding the index once, ``F = E C^T``
        (n_c x m, cached on the index), makes each query batch one ``n_q x m x n_c``
        product instead of ``n_q m n + n_q n n_c`` flops (Bibtex SIOKR: 12 instead of 53
        GFlop); it is done when it pays off already for this batch, or is cached.
        """
        budget = max_memory_mb or self.max_memory_mb
        F = self._folded_index(index, num_samples(Xp)) if self.output_features_ is None else None
        if F is None:
            return super().search_index(Xp, index, k, budget)
        Kq = np.asarray(self.input_kernel_.pairwise(Xp, self.X_support_), dtype=WORK_DTYPE)
        return topk_search(Kq, F, k, index.offsets, budget)

    def _folded_index(self, index, n_q):
        """``E C^T`` for ``index`` (cached on it), or None when folding does not pay."""
        F = getattr(index, "_folded", None)
        if F is not None:
            return F
        n_c, d = index.embeddings.shape
        m = d if self.coef_ is None else self.coef_.shape[0]
        # fold once + folded product  vs  product with C + product with E
        if m * d * n_c + n_q * m * n_c > n_q * m * d + n_q * d * n_c:
            return None
        E = index.embeddings
        if self.coef_ is None:  # exact input: F^T = (K + n lam I)^-1 E^T
            F = np.ascontiguousarray(sla.cho_solve(self._cho, np.asarray(E, dtype=WORK_DTYPE).T,
                                                   check_finite=False).T)
        else:
            F = matmul(np.asarray(E, dtype=WORK_DTYPE), self.coef_.T)
        index._folded = F
        return F

    def predict_weights(self, X, prepared=False):
        """Weights ``alpha(x)`` with ``h(x) = sum_u alpha_u(x) psi(y_u)`` over the distinct
        training outputs ``y_u`` (the columns follow ``default_index_.candidates``).

        Exact for every variant: without output sketch ``H(x)`` are weights over the
        training samples; with one, ``h = sum_j H_j e~_j`` and the basis vectors are
        ``e~ = (R_y^T U D^-1/2)^T psi(Y)``.  Weights of repeated outputs are summed.
        Used by decoders that build outputs from training examples (FGW barycenters).

        Returns
        -------
        ndarray of shape (n_queries, n_distinct_training_outputs)
        """
        H = self.predict_coordinates(X, prepared=prepared)
        f = self.output_features_
        if f is None:
            C = H
        else:
            C = np.zeros((H.shape[0], f.R.n))
            C[:, f.R.indices] = f.R.apply_left_transpose(f.basis_ @ H.T).T
            if f.R.n == self._n_distinct:  # the sketch was collapsed onto distinct outputs
                return C
        n = self._train_inverse.size
        P = sp.csr_matrix((np.ones(n), (np.arange(n), self._train_inverse)), shape=(n, self._n_distinct))
        return np.asarray((P.T @ C.T).T)


class IOKR(SISOKR):
    """Exact input-output kernel regression (no sketch): Cholesky of ``K_x + n lam I``."""

    def __init__(
        self,
        input_kernel="gaussian",
        output_kernel="gaussian",
        lam=1e-5,
        input_kernel_params=None,
        output_kernel_params=None,
        decoder="candidates",
        decoder_params=None,
        dtype="float64",
        rcond=None,
        chunk_size=None,
        max_memory_mb=256,
        verbose=False,
    ):
        super().__init__(
            input_kernel=input_kernel, output_kernel=output_kernel, lam=lam,
            input_kernel_params=input_kernel_params, output_kernel_params=output_kernel_params,
            decoder=decoder, decoder_params=decoder_params, dtype=dtype, rcond=rcond,
            chunk_size=chunk_size, max_memory_mb=max_memory_mb, verbose=verbose,
        )


class SIOKR(SISOKR):
    """Sketched-input IOKR: ``SISOKR`` with an input sketch and exact outputs."""

    def __init__(
        self,
        input_kernel="gaussian",
        output_kernel="gaussian",
        lam=1e-5,
        input_sketch="subsample",
        m_x=100,
        input_kernel_params=None,
        output_kernel_params=None,
        input_sketch_params=None,
        decoder="candidates",
        decoder_params=None,
        dtype="float64",
        rcond=None,
        solver="cholesky",
        chunk_size=None,
        max_memory_mb=256,
        random_state=None,
        verbose=False,
    ):
        super().__init__(
            input_kernel=input_kernel, output_kernel=output_kernel, lam=lam,
            input_sketch=input_sketch, m_x=m_x, input_kernel_params=input_kernel_params,
            output_kernel_params=output_kernel_params, input_sketch_params=input_sketch_params,
            decoder=decoder, decoder_params=decoder_params, dtype=dtype, rcond=rcond,
            solver=solver, chunk_size=chunk_size, max_memory_mb=max_memory_mb,
            random_state=random_state, verbose=verbose,
        )


class ISOKR(SISOKR):
    """Sketched-output IOKR: ``SISOKR`` with an output sketch and an exact input side."""

    def __init__(
        self,
        input_kernel="gaussian",
        output_kernel="gaussian",
        lam=1e-5,
        output_sketch="psg",
        m_y=100,
        input_kernel_params=None,
        output_kernel_params=None,
        output_sketch_params=None,
        decoder="candidates",
        decoder_params=None,
        dtype="float64",
        rcond=None,
        chunk_size=None,
        max_memory_mb=256,
        random_state=None,
        verbose=False,
    ):
        super().__init__(
            input_kernel=input_kernel, output_kernel=output_kernel, lam=lam,
            output_sketch=output_sketch, m_y=m_y, input_kernel_params=input_kernel_params,
            output_kernel_params=output_kernel_params, output_sketch_params=output_sketch_params,
            decoder=decoder, decoder_params=decoder_params, dtype=dtype, rcond=rcond,
            chunk_size=chunk_size, max_memory_mb=max_memory_mb, random_state=random_state,
            verbose=verbose,
        )
