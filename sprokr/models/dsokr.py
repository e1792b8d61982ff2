"""DSOKR: deep sketched output kernel regression, and ensembles over output sketches.

El Ahmad et al. (2024).  With an output sketch ``R_y`` (m_y x n) and the eigenpairs
``(U, D)`` of ``K~_y = R_y K_y R_y^T`` (rank p), the sketched output basis
``e~_j = sum_i [R_y^T U D^-1/2]_ij psi(y_i)`` is orthonormal in the output RKHS, and the
coordinates of ``psi(y)`` on it are ``psi~(y) = D^-1/2 U^T R_y k_y^y`` (p,) -- the
:class:`~sprokr.models.SketchedFeatures` of the output kernel.  Any regressor
``g_W: X -> R^p`` then defines ``h(x) = sum_j g_W(x)_j e~_j`` and::

    |h(x) - psi(y)|^2_H = |g_W(x) - psi~(y)|^2 + r(y),    r(y) = k(y, y) - |psi~(y)|^2 >= 0,

so training ``g_W`` on targets ``psi~(y_i)`` with the square loss minimises the
kernel-induced loss.  Decoding is ``argmax_c g_W(x)^T psi~(c) - k(c, c)/2`` over a
candidate set, through the same decoders and :class:`~sprokr.CandidateIndex` as SISOKR.
"""
from __future__ import annotations

import inspect
import numbers
import time

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import check_is_fitted

from ..decoders.candidates import CandidateIndex, Decoded
from ..numerics import DEFAULT_RCOND, SketchedFeatures, topk_rows
from ..registry import get_registry, resolve_kernel, resolve_sketch
from ..utils import check_paired, check_random_state, iter_chunks, num_samples, take, take_slice, unique_indices, unique_inverse
from .base import OUTPUT_DTYPE, OutputKernelModel

__all__ = ["DSOKR", "DSOKREnsemble", "sketched_output_targets"]


def sketched_output_targets(kernel, R, Yp, rcond=DEFAULT_RCOND, chunk_size=None, distinct=None):
    """Output basis and training targets of an output sketch, streamed over row chunks.

    Parameters
    ----------
    kernel : Kernel
    R : SketchMatrix (m, n)
    Yp : prepared collection of the n training outputs
    distinct : (first, inverse), optional
        From :func:`sprokr.utils.unique_inverse` of the raw outputs.  When at most half
        the outputs are distinct, the sketch is collapsed onto them (``R P``, exact) and
        kernel values are computed between distinct outputs only, as in SISOKR.

    Returns
    -------
    features : SketchedFeatures
        With ``basis_`` (m, p) set: ``features.transform(C)`` is ``psi~(C)`` (n_c, p).
    Psi : ndarray of shape (n, p)
        ``psi~(y_i)`` = ``K_y R^T U D^-1/2``.
    offsets : ndarray of shape (n,)
        ``r_i = k(y_i, y_i) - |psi~(y_i)|^2`` (clipped at 0): the squared norm of the part
        of ``psi(y_i)`` outside the sketched subspace.
    """
    n = num_samples(Yp)
    if distinct is not None and distinct[0].size <= n // 2:
        first, inverse = distinct
        Yu = take(Yp, first)
        feats = SketchedFeatures(kernel, R.collapse(inverse, first.size), Yu, OUTPUT_DTYPE, rcond)
        Tu = feats.transform_raw(Yu, chunk_size)
        feats.set_basis(Tu[feats.R.indices])
        Psi_u = Tu @ feats.basis_
        r_u = np.maximum(kernel.diag(Yu).astype(np.float64) - np.einsum("ij,ij->i", Psi_u, Psi_u), 0.0)
        return feats, Psi_u[inverse], r_u[inverse]
    feats = SketchedFeatures(kernel, R, Yp, OUTPUT_DTYPE, rcond)
    raw = feats.transform_raw(Yp, chunk_size)  # K_y R^T: the n x m targets before rotation
    feats.set_basis(raw[R.indices])
    Psi = raw @ feats.basis_
    offsets = np.maximum(kernel.diag(Yp).astype(np.float64) - np.einsum("ij,ij->i", Psi, Psi), 0.0)
    return feats, Psi, offsets


def _accepts(func, name):
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return name in params  # not **kwargs: a Pipeline forwards those to its steps and fails


class DSOKR(OutputKernelModel, BaseEstimator):
    """Deep sketched output kernel regression.

    Parameters
    ----------
    output_kernel : str or Kernel
    output_sketch : str or Sketch
        Output sketch (``subsample``, ``gaussian``, ``psg``, ...; see ``sprokr plugins``).
    m_y : int, optional
        Output sketch size (when the sketch is given by name).
    regressor : str or estimator
        Registered surrogate regressor (``mlp``, ``kernel_ridge``, ``torch_mlp``, ``ridge``)
        or any scikit-learn style regressor instance (cloned, never modified).  It must
        return ``p`` columns, ``p`` the rank of ``R_y K_y R_y^T`` (``output_rank_``).
    output_kernel_params, output_sketch_params, regressor_params : dict, optional
        Parameters of components given by name.
    validation_fraction : float, optional
        If set and no ``validation_data`` is given to ``fit``, this fraction of the training
        pairs is held out (seeded) for early stopping of regressors that support it.
    decoder, decoder_params : decoder by name (default ``"candidates"``)
    rcond : float, optional
        Relative eigenvalue threshold of the output basis.
    chunk_size : int, optional
    max_memory_mb : float
        Budget of one score block while decoding.
    random_state : None, int or numpy.random.Generator
        Seeds the output sketch, the validation split and (when it has a
        ``random_state`` parameter left to None) the regressor.
    verbose : int
        Print the training phases (and, passed to built-in regressors, their epochs).

    Attributes
    ----------
    output_kernel_ : Kernel
    output_sketch_matrix_ : SketchMatrix
    output_features_ : SketchedFeatures
        ``transform(Yp)`` gives ``psi~`` of prepared outputs.
    output_rank_ : int
        ``p``.
    regressor_ : fitted regressor
    default_index_ : CandidateIndex of the distinct training outputs
    validation_loss_ : float or None
        Kernel-induced loss ``mean |h(x) - psi(y)|^2_H`` on the validation data.
    n_train_, fit_time_ : int, float
    """

    def __init__(self, output_kernel="gaussian", output_sketch="subsample", m_y=100, regressor="mlp",
                 output_kernel_params=None, output_sketch_params=None, regressor_params=None,
                 validation_fraction=None, decoder="candidates", decoder_params=None, rcond=None,
                 chunk_size=None, max_memory_mb=256, random_state=None, verbose=0):
        self.output_kernel = output_kernel
        self.output_sketch = output_sketch
        self.m_y = m_y
        self.regressor = regressor
        self.output_kernel_params = output_kernel_params
        self.output_sketch_params = output_sketch_params
        self.regressor_params = regressor_params
        self.validation_fraction = validation_fraction
        self.decoder = decoder
        self.decoder_params = decoder_params
        self.rcond = rcond
        self.chunk_size = chunk_size
        self.max_memory_mb = max_memory_mb
        self.random_state = random_state
        self.verbose = verbose

    def _log(self, msg):
        if self.verbose:
            print(f"[{type(self).__name__}] {msg}", flush=True)

    def _make_regressor(self, rng):
        reg = get_registry().create("regressor", self.regressor, self.regressor_params)
        if not (hasattr(reg, "fit") and hasattr(reg, "predict")):
            raise TypeError(f"regressor must have fit and predict methods; got {type(reg).__name__}")
        if not isinstance(self.regressor, str):
            reg = clone(reg)  # never fit the user's instance
        if hasattr(reg, "get_params"):
            params = reg.get_params(deep=False)
            if "random_state" in params and params["random_state"] is None:
                reg.set_params(random_state=int(rng.integers(2**31 - 1)))
            if self.verbose and params.get("verbose", None) in (0, False):
                reg.set_params(verbose=self.verbose)
        return reg

    def fit(self, X, Y, validation_data=None):
        """Fit on ``n`` pairs; ``validation_data=(X_val, Y_val)`` enables early stopping.

        ``X``: anything the regressor accepts (n samples); ``Y``: anything the output kernel
        accepts.  Returns self.
        """
        from ..decoders.base import Decoder

        t0 = time.perf_counter()
        n = check_paired(X, Y)
        vf = self.validation_fraction
        if vf is not None and not (isinstance(vf, numbers.Real) and 0 < vf < 1):
            raise ValueError(f"validation_fraction must lie in (0, 1) or be None, got {vf!r}")
        rcond = self.rcond if self.rcond is not None else DEFAULT_RCOND
        rng = check_random_state(self.random_state)
        ky = resolve_kernel(self.output_kernel, self.output_kernel_params, "output", OUTPUT_DTYPE)
        if validation_data is None and vf is not None:
            perm = rng.permutation(n)
            n_val = max(1, int(round(vf * n)))
            val_idx, tr_idx = np.sort(perm[:n_val]), np.sort(perm[n_val:])
            validation_data = (take(X, val_idx), take(Y, val_idx))
            X, Y, n = take(X, tr_idx), take(Y, tr_idx), n - n_val
        if validation_data is not None:
            if len(validation_data) != 2 or num_samples(validation_data[0], "X_val") != num_samples(
                validation_data[1], "Y_val"
            ):
                raise ValueError("validation_data must be a pair (X_val, Y_val) of equal lengths")
        sy = resolve_sketch(self.output_sketch, self.m_y, self.output_sketch_params, n, "output")
        if sy is None:
            raise ValueError("DSOKR needs an output sketch (output_sketch=None was given)")
        decoder = get_registry().create("decoder", self.decoder, self.decoder_params, base=Decoder)
        Yp = ky.prepare(Y)
        R = sy.draw(n, rng)  # the sketch is drawn first: same seed, same sketch as ISOKR
        reg = self._make_regressor(rng)

        feats, Psi, r = sketched_output_targets(ky, R, Yp, rcond, self.chunk_size, distinct=unique_inverse(Y))
        p = Psi.shape[1]
        self._log(f"output basis: m_y={R.m}, rank p={p}, mean residual r={r.mean():.4g} "
                  f"({time.perf_counter() - t0:.2f} s)")
        ev = None
        if validation_data is not None:
            Yvp = ky.prepare(validation_data[1])
            Tv = feats.transform(Yvp)
            rv = np.maximum(ky.diag(Yvp).astype(np.float64) - np.einsum("ij,ij->i", Tv, Tv), 0.0)
            ev = (validation_data[0], Tv, rv)
        kwargs = {}
        if _accepts(reg.fit, "sample_offsets"):
            kwargs["sample_offsets"] = r
        if ev is not None and _accepts(reg.fit, "eval_set"):
            kwargs["eval_set"] = ev
        t1 = time.perf_counter()
        reg.fit(X, Psi, **kwargs)
        self._log(f"regressor {type(reg).__name__} fitted in {time.perf_counter() - t1:.2f} s")
        self._check_output(reg.predict(take(X, np.arange(min(n, 4)))), min(n, 4), p, reg)
        val_loss = None
        if ev is not None:
            G = self._check_output(reg.predict(ev[0]), num_samples(ev[0]), p, reg)
            val_loss = float(np.mean(np.einsum("ij,ij->i", G - ev[1], G - ev[1]) + ev[2]))
            self._log(f"validation kernel-induced loss {val_loss:.5g}")

        # ---- validated: learned state starts here
        u = unique_indices(Y)
        self.output_kernel_, self.output_sketch_matrix_, self.output_features_ = ky, R, feats
        self.decoder_, self.regressor_, self.output_rank_, self.n_train_ = decoder, reg, p, n
        self.validation_loss_ = val_loss
        self.train_offsets_ = r
        self._index_token = object()
        offsets = None if ky.normalized else -0.5 * ky.diag(take(Yp, u)).astype(OUTPUT_DTYPE)
        self.default_index_ = CandidateIndex(take(Y, u), Psi[u], offsets, owner=self._index_token)
        self.fit_time_ = time.perf_counter() - t0
        self._log(f"fit done in {self.fit_time_:.2f} s (n={n}, p={p})")
        return self

    @staticmethod
    def _check_output(G, n_q, p, reg):
        G = np.asarray(G)
        if G.ndim == 1 and p == 1:
            G = G[:, None]
        if G.shape != (n_q, p):
            raise ValueError(
                f"regressor {type(reg).__name__} returned predictions of shape {G.shape} for "
                f"{n_q} inputs, but DSOKR needs ({n_q}, {p}): one column per output-basis vector "
                f"(p = rank of R_y K_y R_y^T = output_rank_). Make the regressor output p values."
            )
        return G

    # ------------------------------------------------------------- model interface
    def prepare_inputs(self, X):
        """Inputs for :meth:`predict_coordinates` (unchanged: the regressor prepares them)."""
        check_is_fitted(self, "regressor_")
        num_samples(X, "X")
        return X

    def predict_coordinates(self, X, prepared=False):
        """``g_W(x)``: coordinates of ``h(x)`` on the sketched output basis, (n_q, p)."""
        check_is_fitted(self, "regressor_")
        return self._check_output(self.regressor_.predict(X), num_samples(X, "X"), self.output_rank_,
                                  self.regressor_)

    def output_basis_vectors(self, feature_map=None):
        """The basis ``e~_j`` as explicit vectors, (p, D), for kernels with finite features.

        ``feature_map(Y_sel)`` must return ``psi(y)`` (n_sel, D) of prepared outputs; default:
        the identity (the linear kernel).  ``e~ = basis^T W psi(Y_sel)``.
        """
        check_is_fitted(self, "regressor_")
        f = self.output_features_
        Phi = np.asarray(f.Z_sel if feature_map is None else feature_map(f.Z_sel), dtype=np.float64)
        W = f.R.weights
        WPhi = W @ Phi if f.R.scale is None else f.R.scale * Phi
        return f.basis_.T @ np.asarray(WPhi)

    def predict_features(self, X, feature_map=None):
        """``h(x)`` as explicit output feature vectors (n_q, D) (linear kernel by default)."""
        return self.predict_coordinates(X) @ self.output_basis_vectors(feature_map)



class DSOKREnsemble(BaseEstimator):
    """Ensemble of DSOKR models over ``T`` output sketches.

    ``mean``: ``argmax_c sum_t w_t g_t(x)^T psi~_t(c) - k(c,c)/2`` with ``sum_t w_t = 1``;
    ``max``:  ``argmax_c max_t g_t(x)^T psi~_t(c) - k(c,c)/2``.

    Parameters
    ----------
    estimators : DSOKR or list of DSOKR
        A list is used as given (each keeps its own ``random_state``, so different sketch
        types can be mixed); a single DSOKR is cloned ``n_estimators`` times with seeds
        drawn from ``random_state``.
    n_estimators : int
        Only with a single DSOKR.
    aggregation : {"mean", "max"}
    weights : array-like of shape (T,), optional
        Non-negative weights of the mean, normalised to sum 1 (default uniform).
    random_state : None, int or numpy.random.Generator
    max_memory_mb : float

    Attributes
    ----------
    estimators_ : list of fitted DSOKR
    weights_ : ndarray (T,)
    default_index_ : CandidateIndex over the distinct training outputs
    """

    def __init__(self, estimators, n_estimators=3, aggregation="mean", weights=None, random_state=None,
                 max_memory_mb=256):
        self.estimators = estimators
        self.n_estimators = n_estimators
        self.aggregation = aggregation
        self.weights = weights
        self.random_state = random_state
        self.max_memory_mb = max_memory_mb

    def _members(self):
        if isinstance(self.estimators, DSOKR):
            T = self.n_estimators
            if not isinstance(T, (numbers.Integral, np.integer)) or T < 1:
                raise ValueError(f"n_estimators must be a positive integer, got {T!r}")
            rng = check_random_state(self.random_state)
            return [clone(self.estimators).set_params(random_state=int(rng.integers(2**31 - 1)))
                    for _ in range(T)]
        members = list(self.estimators)
        if not members or not all(isinstance(e, DSOKR) for e in members):
            raise TypeError("estimators must be a DSOKR or a non-empty list of DSOKR")
        return [clone(e) for e in members]

    def fit(self, X, Y, validation_data=None):
        """Fit every member on the same data.  Returns self."""
        if self.aggregation not in ("mean", "max"):
            raise ValueError(f"aggregation must be 'mean' or 'max', got {self.aggregation!r}")
        members = self._members()
        w = np.full(len(members), 1.0 / len(members)) if self.weights is None else np.asarray(
            self.weights, dtype=float)
        if w.shape != (len(members),) or (w < 0).any() or not w.sum() > 0 or not np.isfinite(w).all():
            raise ValueError(f"weights must be {len(members)} non-negative numbers with a positive sum")
        fitted = []
        for e in members:
            fitted.append(e.fit(X, Y, validation_data=validation_data))
        kernels = {type(e.output_kernel_).__name__ + repr(e.output_kernel_.get_params()) for e in fitted}
        if len(kernels) > 1:
            raise ValueError("all ensemble members must use the same output kernel")
        self.estimators_, self.weights_ = fitted, w / w.sum()
        self.output_kernel_ = fitted[0].output_kernel_
        self._index_token = object()
        self.default_index_ = self._index(fitted[0].default_index_.candidates,
                                          [e.default_index_.embeddings for e in fitted],
                                          fitted[0].default_index_.offsets)
        return self

    def _index(self, candidates, Es, offsets):
        idx = CandidateIndex(candidates, np.hstack(Es), offsets, owner=self._index_token)
        idx.splits = np.cumsum([E.shape[1] for E in Es])[:-1]
        return idx

    def make_candidate_index(self, candidates):
        """Embed a candidate set once for every member."""
        check_is_fitted(self, "estimators_")
        parts = [e.embed_candidates(candidates) for e in self.estimators_]
        return self._index(candidates, [E for E, _ in parts], parts[0][1])

    def prepare_inputs(self, X):
        check_is_fitted(self, "estimators_")
        num_samples(X, "X")
        return X

    def predict_coordinates(self, X, prepared=False):
        """Concatenated ``[w_1 g_1(x), ..., w_T g_T(x)]`` (mean aggregation), (n_q, sum p_t)."""
        check_is_fitted(self, "estimators_")
        return np.hstack([w * e.predict_coordinates(X) for w, e in zip(self.weights_, self.estimators_)])

    def predict(self, X, candidates=None, top_k=None):
        """Decode ``X``; same contract as :meth:`DSOKR.predict`."""
        from ..decoders.base import CandidateDecoder, check_top_k

        check_is_fitted(self, "estimators_")
        dec = CandidateDecoder(max_memory_mb=self.max_memory_mb)
        if self.aggregation == "mean":
            return dec.decode(self, X, candidates=candidates, top_k=top_k)
        k = check_top_k(top_k)
        index = dec.resolve_index(self, candidates)
        n_q = num_samples(X, "X")
        kk = min(k or 1, len(index))
        idx, scores = np.empty((n_q, kk), dtype=np.intp), np.empty((n_q, kk))
        for sl in iter_chunks(n_q, 2048):
            Xq = take_slice(X, sl)
            Hs = [e.predict_coordinates(Xq) for e in self.estimators_]
            idx[sl], scores[sl] = self._max_search(Hs, index, kk)
        return index.take(idx[:, 0]) if k is None else Decoded(idx, scores)

    def _max_search(self, Hs, index, k):
        """Top-k of ``max_t H_t E_t^T + offsets``, chunked over candidates."""
        Es = np.split(index.embeddings, index.splits, axis=1)
        nq, nc = Hs[0].shape[0], len(index)
        block = max(k, int(self.max_memory_mb * 2**20 / (16 * max(nq, 1))))
        rows = np.arange(nq)[:, None]
        best_i = np.empty((nq, 0), dtype=np.intp)
        best_s = np.empty((nq, 0))
        for sl in iter_chunks(nc, block):
            S = Hs[0] @ Es[0][sl].T
            for H, E in zip(Hs[1:], Es[1:]):
                np.maximum(S, H @ E[sl].T, out=S)
            if index.offsets is not None:
                S += index.offsets[sl][None, :]
            loc = topk_rows(S, min(k, S.shape[1]))
            all_i = np.concatenate([best_i, loc + sl.start], axis=1)
            all_s = np.concatenate([best_s, S[rows, loc]], axis=1)
            sel = topk_rows(all_s, min(k, all_s.shape[1]))
            best_i, best_s = all_i[rows, sel], all_s[rows, sel]
        order = np.argsort(-best_s, axis=1, kind="stable")
        return best_i[rows, order], best_s[rows, order]

    def score(self, X, Y):
        """Minus the mean squared output-kernel distance of the decoded outputs (0 is best)."""
        check_is_fitted(self, "estimators_")
        return OutputKernelModel.score(self, X, Y)
