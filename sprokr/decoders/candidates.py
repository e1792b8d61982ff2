"""A candidate set embedded in a fitted model's output basis: the input of every decoder.

Every model of the IOKR family predicts, for a query ``x``, coordinates ``H(x)`` of
``h(x)`` in some output basis, and embeds any candidate output ``c`` in the same basis as
``E(c)`` (the sketched feature map ``psi~(c)``, or the kernel column ``k_Y(Y_train, c)``
when the output is not sketched).  Scores are then one GEMM ``H E^T`` plus the offsets
``-k(c, c)/2``: :class:`CandidateIndex` stores ``E`` (here, or partitioned across an
executor's workers) once, so that every later query batch costs a product and a top-k.
"""
from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
from numpy.typing import ArrayLike

from ..numerics import (
    DEFAULT_MAX_MEMORY_MB,
    SCREEN_DIM,
    ClientClosedError,
    Decoded,
    Screen,
    ScreenedTopKTask,
    build_screen,
    score_block_size,
    screened_topk_search,
    topk_search,
    topk_task,
)
from ..persistence import SaveMixin
from ..utils import iter_chunks, num_samples, take

if TYPE_CHECKING:  # imported for the annotations only
    from ..kernels.base import Kernel
    from ..numerics import RowPartitions
    from ..types import Samples

__all__ = ["CandidateIndex", "Decoded"]

logger = logging.getLogger("sprokr.decoders")

#: serialises the builds of derived forms (:meth:`CandidateIndex.cached`): threads
#: predicting at once with a fresh index build its folded form once, not once each
_DERIVED_BUILD = threading.RLock()


class CandidateIndex(SaveMixin):
    """A candidate set embedded once in a fitted model's output basis.

    Build it with ``model.make_candidate_index(candidates)``; pass it to
    ``model.predict(X, candidates=index)``.  Embedding is the only step that evaluates the
    output kernel; each later query batch costs ``O(n_queries n_candidates d)`` flops.

    Parameters
    ----------
    candidates : collection
        The raw candidates, as given (what ``predict`` returns).
    embeddings : ndarray of shape (n_candidates, d) or None
        ``E``; None when the embeddings are held by an executor (``partitions``).
    offsets : ndarray of shape (n_candidates,) or None
        ``-k(c, c)/2`` when the output kernel is not normalised.
    owner : str or None
        ``index_token_`` of the fitted model whose output basis the embeddings are in (a
        random hex string drawn at each fit, so it survives saving and loading); a model
        refuses an index with another token.
    kernel : Kernel or None
        The output kernel that embedded the candidates (decoders that build outputs from
        candidates use it, e.g. FGW barycenter weights).
    partitions : RowPartitions or None
        Row partitions of ``E`` held by an executor (a distributed index); when
        ``offsets`` is not None their last column holds the offsets, so that a search is
        one product ``[H, 1] [E, offsets]^T`` where the partitions live.
    dim : int, optional
        ``d``, needed with ``partitions`` only.

    Attributes
    ----------
    candidates, embeddings, offsets, owner, kernel, partitions, dim :
        As given.
    cache : dict
        Derived forms of the index computed by models (e.g. an index folded with a
        model's coefficients), keyed by the model's token; built through :meth:`cached`
        (once, when threads search the index at once).
    screen : Screen or None
        The bounded screen of the embeddings (:meth:`build_screen`), which makes the
        exact search of a large local index cost a fraction of the full GEMM; None
        without one.
    """

    #: attribute types for the type checker (set in __init__ / fit)
    embeddings: Any  # None for a distributed index
    partitions: Any  # None for a local index
    kernel: Any  # None for an index built without a model

    def __init__(self, candidates: Samples, embeddings: np.ndarray | None, offsets: np.ndarray | None = None,
                 owner: str | None = None, kernel: Kernel | None = None, partitions: RowPartitions | None = None,
                 dim: int | None = None) -> None:
        n = num_samples(candidates, "candidates")
        if n == 0:
            raise ValueError("the candidate set is empty; expected at least one candidate")
        if embeddings is None and partitions is None:
            raise ValueError("a CandidateIndex needs embeddings or partitions")
        rows = embeddings.shape[0] if embeddings is not None else partitions.n  # type: ignore[union-attr]
        if rows != n:
            raise ValueError(f"one embedding row is needed per candidate: {rows} rows for {n} candidates")
        if offsets is not None and np.shape(offsets) != (n,):
            raise ValueError(f"offsets must have shape ({n},), got {np.shape(offsets)}")
        self.candidates = candidates
        self.embeddings = embeddings
        self.offsets = offsets
        self.owner = owner
        self.kernel = kernel
        self.partitions = partitions
        self._dim = embeddings.shape[1] if embeddings is not None else int(dim)  # type: ignore[arg-type]
        # partitions made by distribute() hold the offsets as a second collection (the
        # embeddings may be memory-mapped in place); the models' own put them in a column
        self._split_offsets = False
        self._dtype = embeddings.dtype if embeddings is not None else np.dtype(np.float64)
        self.screen: Screen | None = None

    def __len__(self):
        return self.embeddings.shape[0] if self.embeddings is not None else self.partitions.n

    @property
    def dim(self) -> int:
        """Dimension ``d`` of the embeddings."""
        return self._dim

    @property
    def cache(self) -> dict[Any, Any]:
        """Derived forms of the index computed by models, keyed by the model's token
        (recomputed on demand: never shipped, pickled or saved)."""
        derived = self.__dict__.get("_derived")
        if derived is None:  # setdefault: threads asking at once get the same dict
            derived = self.__dict__.setdefault("_derived", {})
        return derived

    def cached(self, key: Any, build: Callable[[], Any]) -> Any:
        """``cache[key]``, built by ``build()`` on first use (not stored when it returns None).

        Safe for threads searching the index at once: one of them builds the value, the
        others wait for it and share it (a folded form costs a pass over the embeddings and
        as much memory as they do: it must not be built once per thread).
        """
        value = self.cache.get(key)
        if value is not None:
            return value
        with _DERIVED_BUILD:
            value = self.cache.get(key)
            if value is None:
                value = build()
                if value is not None:
                    self.cache[key] = value
        return value

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_derived", None)
        return state

    def check_owner(self, model: Any, where: str = "this CandidateIndex") -> None:
        """Raise ``ValueError`` unless this index was built by ``model`` (its current fit).

        The index belongs to ``model`` when :attr:`owner` equals the model's
        ``index_token_`` (drawn at each fit, kept by saving, loading and pickling).
        :func:`sprokr.load` calls it for ``load(path, model=model)``; ``where`` names the
        index in the message.
        """
        token = getattr(model, "index_token_", None)
        if token is None or self.owner != token:
            raise ValueError(
                f"{where} was built by another model (or before the model's last fit); rebuild it "
                f"with model.make_candidate_index(candidates)")

    def _check_queries(self, H):
        H = np.asarray(H)
        if H.ndim != 2 or H.shape[1] != self.dim:
            raise ValueError(
                f"query coordinates of shape {H.shape} do not match the index's dimension "
                f"{self.dim}; was the index built by this model?"
            )
        return H

    def build_screen(self, dim: int = SCREEN_DIM, out: np.ndarray | None = None) -> CandidateIndex:
        """Give this index a bounded screen (:func:`sprokr.numerics.build_screen`); returns self.

        Searches of a local index then score exactly only the candidates whose upper
        bound, from a ``dim``-dimensional principal projection of the embeddings and the
        norm of the rest, reaches the running k-th best score: the same top-k as the full
        search, for about ``dim / d`` of its GEMM when the embeddings are anisotropic (on
        MOSES molecules, d = 512, dim = 128: ~1 candidate in 4000 passes, the search
        takes about half the time of the float32 GEMM).  Costs two passes over the embeddings
        and ``(dim + 1) * 4`` bytes per candidate.  ``model.make_candidate_index(...,
        path=...)`` builds one for large candidate sets
        (:data:`~sprokr.numerics.SCREEN_MIN_CANDIDATES`).

        Parameters
        ----------
        dim : int
            Columns of the screen's basis (fewer than the embeddings' ``d``).
        out : ndarray of shape (n_candidates, dim + 1), float32, optional
            Where to write the projections (e.g. a memory-mapped file).
        """
        if self.partitions is not None:  # its partitions would not hold the projections
            raise ValueError("build_screen needs a local index: build the screen first, then distribute() it")
        self.screen = build_screen(self.embeddings, dim, self.offsets, out=out)
        return self

    def search(self, H: np.ndarray, k: int = 1, max_memory_mb: float = DEFAULT_MAX_MEMORY_MB) -> Decoded:
        """Top-k candidates for query coordinates ``H`` (n_queries, d): a :data:`Decoded`.

        Ties are broken by the smaller candidate index; a distributed index is searched
        where its partitions live and the partial top-k lists are merged exactly.  A local
        index with a :attr:`screen` is searched through it (the same result, exact float64
        scores of the stored embeddings).
        """
        H = self._check_queries(H)
        k = min(int(k), len(self))
        if self.partitions is None:
            screen = self.__dict__.get("screen")  # None in indexes saved before screens existed
            if screen is not None and k < len(self):
                return screened_topk_search(H, self.embeddings, screen, k, self.offsets, max_memory_mb)
            return topk_search(H, self.embeddings, k, self.offsets, max_memory_mb)
        parts = self.partitions
        screen = self.__dict__.get("screen")
        if screen is not None and k < len(self):  # partitions of (E, P, [offsets])
            try:
                return parts.executor.map_reduce(parts, ScreenedTopKTask(H, screen, k),
                                                 score_block_size(H.shape[0], k, 8, max_memory_mb))
            except ClientClosedError as exc:
                self._fall_back_to_local(exc)
            return topk_search(H, self.embeddings, k, self.offsets, max_memory_mb)
        Hq = H
        if self.offsets is not None and not self._split:  # the offsets are a last column
            Hq = np.hstack([H, np.ones((H.shape[0], 1), dtype=H.dtype)])
        block = score_block_size(H.shape[0], k, 8, max_memory_mb)
        dtype = self.__dict__.get("_dtype", np.float64)
        try:
            return parts.executor.map_reduce(parts, topk_task(Hq, k, dtype, len(self)), block)
        except ClientClosedError as exc:
            self._fall_back_to_local(exc)
        return topk_search(H, self.embeddings, k, self.offsets, max_memory_mb)

    def scores(self, H: np.ndarray, max_memory_mb: float = DEFAULT_MAX_MEMORY_MB) -> np.ndarray:
        """All scores ``H E^T + offsets``, shape (n_queries, n_candidates) (float64)."""
        H = self._check_queries(H)
        E = self.embeddings if self.embeddings is not None else self.gather_embeddings()
        out = np.empty((H.shape[0], len(self)))
        block = score_block_size(H.shape[0], 1, 8, max_memory_mb)
        for sl in iter_chunks(len(self), block):
            out[:, sl] = H @ np.asarray(E[sl], dtype=np.float64).T
            if self.offsets is not None:
                out[:, sl] += self.offsets[sl]
        return out

    def gather_embeddings(self) -> np.ndarray:
        """``E`` as one local array (gathered from the executor for a distributed index)."""
        if self.embeddings is not None:
            return self.embeddings
        parts = self.partitions
        try:
            E = parts.executor.take_rows(parts, np.arange(parts.n), which=0)
        except ClientClosedError as exc:
            return self._fall_back_to_local(exc)
        return E[:, :self.dim] if self.offsets is not None and not self._split else E

    @property
    def _split(self):
        return self.__dict__.get("_split_offsets", False)

    def distribute(self, executor: Any, n_partitions: int | None = None) -> CandidateIndex:
        """This index with its embeddings held in row partitions by ``executor``'s workers.

        Searches then run where the partitions live and only the top-k lists travel
        (:class:`~sprokr.numerics.TopKTask`, merged exactly).  An index loaded with
        ``sprokr.load(path, model=..., mmap=True)`` is not copied to the workers: each
        worker memory-maps its rows of the file (the workers must see the same file
        system, e.g. a ``LocalCluster`` or a shared disk); an index in memory is scattered.

        Parameters
        ----------
        executor : Executor
            E.g. a :class:`~sprokr.numerics.DaskExecutor`.
        n_partitions : int, optional
            Row partitions (default: the executor's).

        Returns
        -------
        CandidateIndex
            Same candidates, owner and scores; ``embeddings`` is None.
        """
        if self.partitions is not None:
            return self
        E = self.embeddings
        screen = self.__dict__.get("screen")
        # the partitions hold (E, [P,] [offsets]): the screen's projections travel with the rows
        arrays = (E,) if screen is None else (E, screen.projections)
        if all(_mapped(a) for a in arrays):
            loader = _MappedRows([(a.filename, a.offset, a.dtype.str, a.shape) for a in arrays], self.offsets)
            parts = executor.partition_from(loader, len(self), n_partitions)
        else:
            cols = arrays if self.offsets is None else arrays + (self.offsets,)
            parts = executor.partition(*cols)
        out = CandidateIndex(self.candidates, None, self.offsets, owner=self.owner, kernel=self.kernel,
                             partitions=parts, dim=self.dim)
        out._split_offsets = True
        out._dtype = E.dtype  # float32 partitions are searched with float64 rescoring
        out.screen = screen
        return out

    def __sprokr_save__(self) -> CandidateIndex:
        """What the safe model format writes in place of this index: the index itself, or
        for a distributed one a local copy of it (the embeddings gathered here), so that a
        saved file is self-contained and loading it needs no cluster."""
        if self.partitions is None:
            return self
        E = np.ascontiguousarray(self.gather_embeddings())
        if self.partitions is None:  # the cluster was gone: gathering made this index local
            return self
        out = CandidateIndex(self.candidates, E, self.offsets, owner=self.owner, kernel=self.kernel)
        out.screen = self.__dict__.get("screen")  # distribute() keeps the screen here as well
        return out

    def _fall_back_to_local(self, exc: Exception) -> np.ndarray:
        """The cluster holding the embeddings is gone (its client closed): embed the
        candidates again in this process, from the partitions' sources, and keep the
        index local from now on.  Returns the embeddings."""
        parts = self.partitions
        rebuild = getattr(parts.executor, "local_partitions", None)
        if rebuild is None:
            raise exc
        local = rebuild(parts)
        # one block (a memory-mapped index, mapped again from its file) is kept as it is, a
        # np.memmap: a concatenation would copy the whole file into memory
        blocks = [np.asanyarray(b[0]) for b in local.blocks]
        E = blocks[0] if len(blocks) == 1 else np.concatenate(blocks, axis=0)
        logger.warning("%s; the candidate index (%d candidates) was rebuilt in this process and is searched "
                       "here from now on", exc, len(self))
        E = np.ascontiguousarray(E[:, :self.dim]) if self.offsets is not None and not self._split else E
        self.embeddings, self.partitions = E, None
        self.screen = None  # its projections were held by the lost partitions
        return E

    def take(self, idx: ArrayLike) -> Samples:
        """The raw candidates at positions ``idx``."""
        return take(self.candidates, idx)


def _mapped(a):
    return isinstance(a, np.memmap) and getattr(a, "filename", None) and a.flags.c_contiguous


class _MappedRows:
    """``(E[start:stop], [P[start:stop],] [offsets[start:stop]])`` memory-mapped from their
    files where called; ``specs`` are ``(filename, offset, dtype, shape)`` of each array."""

    def __init__(self, specs, offsets):
        self.specs = [(str(f), int(o), str(dt), tuple(sh)) for f, o, dt, sh in specs]
        self.offsets = None if offsets is None else np.asarray(offsets)

    def __call__(self, start, stop):
        rows = tuple(np.memmap(f, dtype=np.dtype(dt), mode="r", offset=o, shape=sh)[start:stop]
                     for f, o, dt, sh in self.specs)
        return rows if self.offsets is None else rows + (self.offsets[start:stop],)
