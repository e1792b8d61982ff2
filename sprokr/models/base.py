"""Decoding for every model that predicts in an output-kernel basis (IOKR family, DSOKR).

A model predicts coordinates ``H(x)`` of ``h(x)`` on an output basis and embeds candidates
in the same basis; :class:`OutputKernelModel` turns that into ``predict`` /
``predict_topk`` / ``predict_scores`` / ``make_candidate_index`` / ``score`` through the
model's decoder.  A model provides: ``output_kernel_``, ``output_features_`` (a fitted
:class:`~sprokr.numerics.SketchedFeatures`, or None for exact outputs, then
``exact_output_embedding``), ``decoder_``, ``executor_``, ``index_token_``, ``dtype_``,
``prepare_inputs`` and ``predict_coordinates``; optionally ``search_pair`` (a cheaper
equivalent of (coordinates, index) for a batch) and ``predict_weights``.

:class:`ExecutorParamsMixin` is the base of every estimator with an ``executor``
parameter (the IOKR family, DSOKR, the sketched kernel machines): a Dask client in it is
shared by clones, not copied, and saved as ``"dask"``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional

import uuid

import numpy as np
from numpy.typing import DTypeLike
from sklearn.utils.validation import check_is_fitted

from ..decoders.base import CandidateSets, Decoded, Decoder
from ..decoders.candidates import CandidateIndex
from ..kernels import VectorKernel
from ..numerics import LocalExecutor, candidate_offsets, default_chunk_size, is_dask_client
from ..persistence import SaveMixin
from ..registry import get_registry
from ..utils import (NamedPrepare, check_chunk_size, check_integer, check_params_mapping, check_positive,
                     consistent_read, frame_as_array, iter_chunks, num_samples, take_slice)

if TYPE_CHECKING:  # imported for the annotations only
    from ..types import Samples

__all__ = ["OutputKernelModel", "ExecutorParamsMixin", "OUTPUT_DTYPE", "make_decoder", "new_index_token",
           "set_n_features", "check_n_features", "check_output_width"]

OUTPUT_DTYPE = np.dtype(np.float64)


def set_n_features(est: Any, Xp: Any) -> None:
    """Record ``n_features_in_`` when the prepared inputs are an array or sparse matrix."""
    import scipy.sparse as sp

    if isinstance(Xp, np.ndarray) or sp.issparse(Xp):
        est.n_features_in_ = int(Xp.shape[1])
    elif hasattr(est, "n_features_in_"):
        del est.n_features_in_


def check_n_features(est: Any, Xp: Any, expected: int | None = None) -> None:
    """Prepared query inputs must have the training feature count (clear error naming it).

    ``est``: the fitted estimator, or its class name with ``expected`` the feature count.
    """
    import scipy.sparse as sp

    name = est if isinstance(est, str) else type(est).__name__
    expected = getattr(est, "n_features_in_", None) if expected is None else expected
    if expected is None or not (isinstance(Xp, np.ndarray) or sp.issparse(Xp)):
        return
    if Xp.shape[1] != expected:
        raise ValueError(f"X has {Xp.shape[1]} features, but {name} is expecting {expected} "
                         f"features as input: expected shape (n_samples, {expected})")


def check_output_width(model: Any, Yp: Any, name: str) -> None:
    """Prepared outputs ``Yp`` (``y`` of ``score``, ``candidates``) of a vector output kernel
    must have the training outputs' feature count (clear error naming ``name``).

    The training outputs' width is read from the prepared outputs the model keeps (the
    output sketch's support, or every training output without sketch; an ensemble's first
    member).  Only vector kernels are checked: other kernels (graphs, strings, molecules)
    compare their own prepared forms, whose widths may legitimately differ (a count
    fingerprint's unary expansion grows with its largest count).
    """
    if not isinstance(model.output_kernel_, VectorKernel) or len(getattr(Yp, "shape", ())) != 2:
        return
    expected = _training_output_width(model)
    if expected is not None and Yp.shape[1] != expected:
        raise ValueError(f"{name}: got outputs with {Yp.shape[1]} features, but {type(model).__name__} was "
                         f"trained on outputs with {expected} features: expected shape (n_samples, {expected})")


def _training_output_width(model):
    """Feature count of the prepared training outputs a fitted model keeps (None if unknown)."""
    f = getattr(model, "output_features_", None)
    ref = getattr(f, "Z_sel", None) if f is not None else getattr(model, "Y_train_", None)
    members = getattr(model, "estimators_", None)
    if ref is None and members:
        return _training_output_width(members[0])
    shape = getattr(ref, "shape", ())
    return int(shape[1]) if len(shape) == 2 else None


def new_index_token() -> str:
    """A fresh identifier for a fitted output basis (persistent: a string, not ``object()``)."""
    return uuid.uuid4().hex


def make_decoder(spec: str | Decoder, params: Mapping[str, Any] | None, max_memory_mb: float | None) -> Decoder:
    """The model's decoder: by name or instance; the model's ``max_memory_mb`` (if not None)
    becomes the decoder's budget, and conflicting budgets are an error."""
    params = check_params_mapping(params, "decoder_params")
    if max_memory_mb is not None:
        check_positive(max_memory_mb, "max_memory_mb")
        given = params.get("max_memory_mb", getattr(spec, "max_memory_mb", None) if not isinstance(spec, str) else None)
        if given is not None and given != max_memory_mb:
            raise ValueError(f"max_memory_mb={max_memory_mb} conflicts with the decoder's max_memory_mb={given}; "
                             f"give the budget once (the model's max_memory_mb or the decoder's)")
    if isinstance(spec, str):
        if max_memory_mb is not None:
            reg = get_registry()
            accepted = reg.factory_parameters(reg.get("decoder", spec))  # lazy factories too
            if accepted is not None and "max_memory_mb" in accepted:
                params["max_memory_mb"] = max_memory_mb
        dec = get_registry().create("decoder", spec, params, base=Decoder)
    else:
        from sklearn.base import clone

        dec = get_registry().create("decoder", spec, params, base=Decoder)
        dec = clone(dec)  # never modify the user's instance
        if max_memory_mb is not None and "max_memory_mb" in dec.get_params():
            dec.set_params(max_memory_mb=max_memory_mb)
    validate = getattr(dec, "validate", None)
    if validate is not None:
        validate()
    return dec


class ExecutorParamsMixin:
    """Mixin of the estimators with an ``executor`` parameter: it is runtime configuration.

    A ``dask.distributed.Client`` given as a parameter is a connection to a cluster, not a
    value to copy:

    * ``sklearn.base.clone`` (model selection, ensembles, ``cross_val_score``) clones every
      parameter as scikit-learn does, except a Client, which the clone shares (a deep copy
      of it fails on its sockets); a :class:`~sprokr.numerics.DaskExecutor` parameter is
      cloned by its own ``__sklearn_clone__``, sharing its client too; ``copy.deepcopy``
      likewise copies everything but the Client;
    * the safe model format (``save``) writes a Client parameter as ``"dask"`` and the
      fitted ``executor_`` of a distributed fit as a :class:`~sprokr.numerics.LocalExecutor`
      (the file holds the whole fitted state: the loaded model predicts in the process
      that loads it, without a cluster); a DaskExecutor parameter is written without its
      client, and a distributed candidate index as its gathered embeddings, by their own
      ``__sprokr_save__``.

    Put it before ``BaseEstimator`` in the bases.
    """

    def __sklearn_clone__(self) -> Any:
        """``sklearn.base.clone(self)``: a new unfitted estimator with the same parameters,
        sharing any ``dask.distributed.Client`` among them."""
        clients = {name: v for name, v in self.get_params(deep=False).items()  # type: ignore[attr-defined]
                   if is_dask_client(v)}
        if not clients:
            return super().__sklearn_clone__()  # type: ignore[misc]
        # scikit-learn's own clone (metadata requests, output configuration, its checks) of
        # a stand-in sharing this estimator's attributes with the clients unset; the clone
        # then gets the same clients.  Nothing of this estimator is modified.
        stand_in = object.__new__(type(self))
        stand_in.__dict__.update(self.__dict__)
        stand_in.__dict__.update(dict.fromkeys(clients))
        new = super(ExecutorParamsMixin, stand_in).__sklearn_clone__()  # type: ignore[misc]
        for name, client in clients.items():
            setattr(new, name, client)
        return new

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        """``copy.deepcopy(self)``: everything copied except a ``dask.distributed.Client``
        parameter, which the copy shares (a connection: its sockets cannot be copied)."""
        import copy

        for v in self.__dict__.values():
            if is_dask_client(v):
                memo[id(v)] = v  # deepcopy then returns the client itself
        new = object.__new__(type(self))
        memo[id(self)] = new
        new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return new

    def __sprokr_save__(self) -> Any:
        """What the safe model format writes in place of this estimator: itself, or when
        it holds a Dask client or was fitted on a cluster, a copy (sharing everything else)
        whose Client parameters are ``"dask"`` and whose ``executor_`` is local."""
        clients = [name for name, v in self.get_params(deep=False).items()  # type: ignore[attr-defined]
                   if is_dask_client(v)]
        local = self._local_executor()
        if not clients and local is None:
            return self
        out = object.__new__(type(self))
        out.__dict__.update(self.__dict__)
        out.__dict__.update(dict.fromkeys(clients, "dask"))
        if local is not None:
            out.__dict__["executor_"] = local
        return out

    def __sprokr_load__(self) -> None:
        """Called by the safe model format on a loaded estimator: a fitted ``executor_``
        that runs elsewhere is replaced by a :class:`~sprokr.numerics.LocalExecutor`, as
        :meth:`__sprokr_save__` writes it.  Only files of an earlier sprokr, which wrote the
        ``executor_`` of a model fitted with ``executor="dask"`` (or a ``DaskExecutor``) as
        it was, have one: their model predicted through Dask, so it needed a client.  The
        ``executor`` parameter is kept (a refit follows it)."""
        local = self._local_executor()
        if local is not None:
            self.__dict__["executor_"] = local

    def _local_executor(self) -> LocalExecutor | None:
        """The ``executor_`` a saved or loaded model gets in place of a fitted executor that
        does not run in this process (a cluster's), or None when it needs none: the file
        holds the whole fitted state (a distributed index gathered), so the model predicts
        where it is loaded, with the same settings (progress bars)."""
        ex = self.__dict__.get("executor_")
        if ex is None or getattr(ex, "in_process", True):  # unfitted, local, or not an executor
            return None
        return LocalExecutor(progress=getattr(ex, "progress", None))


class OutputKernelModel(SaveMixin):
    """Mixin: candidate decoding for models with an output-kernel basis."""

    #: provided by the models (fitted attributes and methods), for the type checker
    default_index_: CandidateIndex | None
    output_features_: Any  # None without output sketch
    predict_coordinates: Callable[..., np.ndarray]
    exact_output_embedding: Callable[[Any], np.ndarray]

    # learned by the models' fit (declared for readers and type checkers)
    index_token_: str
    output_kernel_: Any
    decoder_: Decoder

    def prepare_inputs(self, X: Any) -> Any:
        """Validate and prepare query inputs (each model's input side)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ candidates
    @consistent_read
    def embed_candidates(self, candidates: Any, dtype: DTypeLike | None = None,
                         out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
        """Output coordinates ``E(c)`` (n_c, d) and offsets ``-k(c,c)/2`` (None if normalised).

        ``dtype``: precision of ``E`` (default float64; see :meth:`make_candidate_index`).
        ``out``: an array of shape (n_c, d) to write ``E`` into, chunk by chunk (e.g. a
        memory-mapped file: a million candidates never sit in memory at once); sketched
        outputs only.
        """
        check_is_fitted(self, "output_rank_")
        ky = self.output_kernel_
        candidates = frame_as_array(candidates)
        n_c = num_samples(candidates, "candidates")
        if n_c == 0:
            raise ValueError("the candidate set is empty; expected at least one candidate")
        Cp = NamedPrepare(ky.prepare_outputs, "candidates")(candidates)
        check_output_width(self, Cp, "candidates")  # before the chunked pass, which would wrap the error
        offsets = candidate_offsets(ky, Cp)
        if self.output_features_ is not None:
            f = self.output_features_
            if out is not None:
                if getattr(out, "shape", None) != (n_c, f.rank):
                    raise ValueError(f"out must have shape ({n_c}, {f.rank}), got {getattr(out, 'shape', None)}")
                E = out
            else:
                E = np.empty((n_c, f.rank), dtype=np.float64 if dtype is None else dtype)
            ex = getattr(self, "executor_", None) or LocalExecutor()
            if not ex.in_process:  # the candidates are embedded here; a distributed index is
                ex = LocalExecutor()  # built by the models that hold one (the default index)
            ex.map_rows(ex.partition(Cp), _Finite(f.transform), self._chunk(f.R.indices.size), out=E,
                        name="candidate embedding")
        else:
            if out is not None:
                raise ValueError("out= needs a sketched output basis (output_features_); this model embeds "
                                 "candidates against every training output")
            E = self.exact_output_embedding(Cp)
            if dtype is not None:
                E = E.astype(dtype, copy=False)
            if not np.isfinite(E).all():
                raise ValueError("candidates: the output kernel returned non-finite values on them")
        return E, offsets

    @consistent_read
    def make_candidate_index(self, candidates: Any, dtype: Optional[str] = None, path: Any = None,
                             labels: Any = None) -> CandidateIndex:
        """Embed a candidate set once; pass the result as ``predict(X, candidates=index)``.

        Parameters
        ----------
        candidates : collection of outputs the output kernel accepts
        dtype : {None, "float64", "float32"}
            Precision of the stored embeddings and of the scores.  float32 halves the
            memory and doubles the search speed; it is exact enough when the output
            coordinates are well scaled (a sketched output with a not-too-flat kernel),
            but a flat output kernel (e.g. a Gaussian with a very wide bandwidth) spreads
            the coordinates over many orders of magnitude and float32 scores then lose
            the ranking: compare ``predict_topk`` with both on validation data first.
        path : path, optional
            Build the index on disk, for candidate sets larger than memory: the embeddings
            are written chunk by chunk into a memory-mapped file beside ``path``, the index
            is saved at ``path`` in the safe format (:meth:`CandidateIndex.save`) and
            returned memory-mapped from there (``sprokr.load(path, model=self,
            mmap=True)``); reload it later the same way.  Sketched outputs only.
        labels : collection, optional
            What ``predict`` returns for each candidate (stored in the index instead of
            ``candidates``), e.g. the SMILES strings of candidates given as precomputed
            fingerprints; default the candidates themselves.
        """
        dt = None if dtype is None else np.dtype(dtype)
        if dt is not None and dt not in (np.float32, np.float64):
            raise ValueError(f"dtype must be 'float32' or 'float64', got {dt}")
        # a dataframe of candidates (or labels) is an array: predictions take rows of it
        candidates, labels = frame_as_array(candidates), frame_as_array(labels)
        n_c = num_samples(candidates, "candidates")
        if labels is not None and num_samples(labels, "labels") != n_c:
            raise ValueError(f"labels: one per candidate expected, got {num_samples(labels, 'labels')} for {n_c}")
        shown = candidates if labels is None else labels
        if path is None:
            E, offsets = self.embed_candidates(candidates, dt)
            return CandidateIndex(shown, E, offsets, owner=self.index_token_, kernel=self.output_kernel_)
        return _index_on_disk(self, candidates, shown, dt or np.dtype(np.float64), path)

    def _chunk(self, width):
        # checked again: set_params(chunk_size=...) after fit is read here
        return check_chunk_size(self.chunk_size) or default_chunk_size(width, np.float64)

    @consistent_read
    def resolve_index(self, candidates: Samples | CandidateIndex | None) -> CandidateIndex:
        """A :class:`CandidateIndex` from None (training outputs), an index or a collection."""
        if candidates is None:
            if self.default_index_ is None and hasattr(self, "build_default_index") and \
                    getattr(self, "default_index", False):  # asked for, not built: fit_state skips it
                raise ValueError("candidates: this model holds no index of its training outputs (a model from "
                                 "fit_state builds none: fit it; a with_coef copy of one: call "
                                 "build_default_index(Y) first, or pass candidates)")
            if self.default_index_ is None:
                raise ValueError("candidates: this model was fitted with default_index=False (no index of the "
                                 "training outputs); pass candidates, e.g. a CandidateIndex of your own")
            return self.default_index_
        if isinstance(candidates, CandidateIndex):
            if candidates.owner != self.index_token_:
                raise ValueError(
                    "candidates: this CandidateIndex was built by another model (or before the "
                    "last fit); rebuild it with model.make_candidate_index(candidates)"
                )
            return candidates
        return self.make_candidate_index(candidates)

    # ------------------------------------------------------------------ decoding
    @consistent_read
    def search_pair(self, Xp: Any, index: CandidateIndex) -> tuple[np.ndarray, CandidateIndex]:
        """``(H, index')`` with scores ``H E'^T``: by default the coordinates and the index."""
        return self.predict_coordinates(Xp, prepared=True), index

    def _batches(self, Xp):
        """``(n_q, query batches)``; zero queries make one empty batch, so that every result
        (outputs, top-k arrays, scores) comes out empty with its usual type and width."""
        n_q = num_samples(Xp, "X")
        size = getattr(self.decoder_, "query_batch_size", None) or 4096
        return n_q, list(iter_chunks(n_q, size)) or [slice(0, 0)]

    def _decode(self, X, candidates, top_k):
        check_is_fitted(self, "output_rank_")
        if isinstance(candidates, CandidateSets):
            return self._decode_sets(X, candidates, top_k)
        index = self.resolve_index(candidates)
        Xp = self.prepare_inputs(X)
        n_q, batches = self._batches(Xp)
        dec = self.decoder_
        weights = dec.needs_weights and candidates is None and hasattr(self, "predict_weights")
        outs = []
        for sl in batches:
            Xb = take_slice(Xp, sl)
            H, idx = self.search_pair(Xb, index)
            W = self.predict_weights(Xb, prepared=True) if weights else None
            outs.append(dec.decode(H, idx, top_k=top_k, weights=W))
        if top_k is not None:
            from ..numerics import Decoded

            return Decoded(np.concatenate([o.indices for o in outs]), np.concatenate([o.scores for o in outs]))
        return _concat_outputs(outs)

    def _decode_sets(self, X, sets, top_k):
        Xp = self.prepare_inputs(X)
        n_q, batches = self._batches(Xp)
        if n_q != len(sets):
            raise ValueError(f"candidates: {n_q} queries but {len(sets)} candidate sets; give one set per query")
        pool, flat = sets.flat_pool()
        index = self.resolve_index(pool)
        ends = np.cumsum(sets.sizes)
        starts = ends - sets.sizes
        outs = []
        for sl in batches:
            H = self.predict_coordinates(take_slice(Xp, sl), prepared=True)
            f = flat[starts[sl.start]:ends[sl.stop - 1]]
            outs.append(self.decoder_.decode_sets(H, index, sets.sizes[sl], f, top_k=top_k))
        if top_k is not None:
            from ..numerics import Decoded

            return Decoded(np.concatenate([o.indices for o in outs]), np.concatenate([o.scores for o in outs]))
        return _concat_outputs(outs)

    @consistent_read
    def predict(self, X: Any, candidates: Any = None) -> Any:
        """Decode ``X`` over a candidate set.

        Parameters
        ----------
        X : inputs the model accepts, n_q samples
        candidates : collection, CandidateIndex, CandidateSets or None
            Candidate outputs (default: the distinct training outputs).

        Returns
        -------
        The decoded outputs (n_q of them, from the candidates, in their own type).
        """
        return self._decode(X, candidates, None)

    @consistent_read
    def predict_topk(self, X: Any, k: int = 5, candidates: Any = None) -> Decoded:
        """The ``k`` best candidates of each query, best first.

        Returns
        -------
        Decoded
            ``indices`` (n_q, k') into the candidate set (into each query's own set for
            :class:`CandidateSets`, ``-1`` where a set is smaller) and ``scores``;
            ``k' = min(k, n_candidates)``; ties are broken by the smaller index.

        Raises
        ------
        ValueError
            ``k`` is not an integer >= 1 (None too: it decoded like ``predict`` and
            returned the outputs, not a ``Decoded``).
        """
        return self._decode(X, candidates, check_integer(k, "k"))  # (None too: it decoded like predict)

    @consistent_read
    def predict_scores(self, X: Any, candidates: Any = None) -> Any:
        """Scores of every candidate, shape (n_q, n_c): greater is better.

        The full score matrix (its argmax is ``predict``'s choice, its ranking
        ``predict_topk``'s); computed in query batches and candidate blocks within the
        decoder's memory budget (the returned matrix itself is n_q x n_c float64).

        Returns
        -------
        scores : ndarray of shape (n_q, n_c)
            ``<h(x), psi(c)> - k(c, c)/2`` -- minus half the squared RKHS distance
            ``|h(x) - psi(c)|^2``, up to the term ``|h(x)|^2`` shared by a query's
            candidates -- when the output kernel is not normalised.  For a normalised output
            kernel (``normalized = True``: ``k(c, c) = 1`` for every candidate, e.g. the
            Gaussian, Laplacian, cosine, Tanimoto, MinMax and text kernels) the constant
            ``-k(c, c)/2 = -1/2`` is left out: the scores are ``<h(x), psi(c)>``, each 0.5
            above the formula's value.  Rankings and predictions are the same either way;
            compare absolute values only between models whose output kernels agree on it.
        """
        check_is_fitted(self, "output_rank_")
        if isinstance(candidates, CandidateSets):
            raise ValueError("candidates: predict_scores takes one candidate set for all queries, "
                             "not CandidateSets")
        index = self.resolve_index(candidates)
        Xp = self.prepare_inputs(X)
        n_q, batches = self._batches(Xp)
        budget = getattr(self.decoder_, "max_memory_mb", None) or 256
        out = np.empty((n_q, len(index)))
        for sl in batches:
            H, idx = self.search_pair(take_slice(Xp, sl), index)
            out[sl] = idx.scores(H, budget)
        return out

    @consistent_read
    def score(self, X: Any, y: Any) -> float:
        """Minus the mean squared output-kernel distance ``|psi(f(x)) - psi(y)|^2`` (0 is best).

        ``y``: the true outputs of ``X`` (anything the output kernel accepts).
        """
        check_is_fitted(self, "output_rank_")  # before the fitted output kernel is read
        y = frame_as_array(y)
        n, n_y = num_samples(X, "X"), num_samples(y, "y")
        if n != n_y:  # checked first: a shorter y would otherwise score a prefix of X silently
            raise ValueError(f"X and y have different numbers of samples: {n} and {n_y}")
        if n == 0:
            raise ValueError("cannot score on 0 samples: X is empty; expected at least one sample")
        ky = self.output_kernel_
        B = NamedPrepare(ky.prepare_outputs, "y")(y)  # y's errors come before the predictions' cost
        check_output_width(self, B, "y")
        A = ky.prepare_outputs(self.predict(X))
        total = 0.0
        for sl in iter_chunks(n, 512):
            a, b = take_slice(A, sl), take_slice(B, sl)
            total += float(np.sum(ky.diag(a) + ky.diag(b) - 2 * np.diag(ky.pairwise(a, b))))
        return -total / n


class _Finite:
    """A chunk map whose output must be finite (a clear error naming the bad rows)."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, chunk):
        E = self.fn(chunk)
        if not np.isfinite(E).all():
            raise ValueError("candidates: the output kernel returned non-finite values on them")
        return E


def _index_on_disk(model, candidates, shown, dtype, path):
    """Embed into a memory-mapped temporary ``.npy`` beside ``path``, save, reload mapped."""
    import os
    import uuid
    from pathlib import Path

    from numpy.lib.format import open_memmap

    from ..persistence import load

    if getattr(model, "output_features_", None) is None:
        raise ValueError("make_candidate_index(path=...) needs a sketched output basis (an output sketch)")
    path = Path(path)
    if not path.parent.is_dir():
        raise FileNotFoundError(f"cannot build the index at {path}: directory {path.parent} does not exist")
    from .. import numerics

    stem = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    tmp, tmp_screen = Path(f"{stem}.embeddings.npy"), Path(f"{stem}.screen.npy")
    n_c, d = num_samples(candidates), model.output_features_.rank
    try:
        E = open_memmap(tmp, mode="w+", dtype=dtype, shape=(n_c, d))
        E, offsets = model.embed_candidates(candidates, dtype, out=E)
        E.flush()
        index = CandidateIndex(shown, E, offsets, owner=model.index_token_, kernel=model.output_kernel_)
        # a large set gets a bounded screen: its exact searches then cost a fraction of the GEMM
        dim = numerics.SCREEN_DIM
        if n_c >= numerics.SCREEN_MIN_CANDIDATES and d >= 2 * dim:
            P = open_memmap(tmp_screen, mode="w+", dtype=np.float32, shape=(n_c, dim + 1))
            index.build_screen(dim, out=P)
            P.flush()
        index.save(path)
        del E, index
    finally:
        for f in (tmp, tmp_screen):
            if os.path.exists(f):
                os.unlink(f)
    return load(path, model=model, mmap=True)


def _concat_outputs(outs):
    """Concatenate decoded output batches (arrays, sparse matrices or lists)."""
    from ..utils import concat_samples

    if len(outs) == 1:
        return outs[0]
    return concat_samples([o if not isinstance(o, tuple) else list(o) for o in outs])
