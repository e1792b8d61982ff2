"""What the fits of one model selection share: prepared samples, kernel columns, factorisations.

A selection fits the same estimator many times on the same training pairs -- one fit and
one lam path per kernel-parameter point, per sketch size, per output kernel -- and every
fit used to start from the raw samples: the SMILES were parsed and hashed into n-grams
again, the molecule graphs relabelled by Weisfeiler-Lehman again, the same kernel columns
recomputed, the same Gram factorised again for every output kernel.

:class:`SelectionCache` keeps them for the duration of a selection:

* **samples** (:meth:`SelectionCache.samples`): the training and validation samples are
  registered once as one *master* collection; the fits get :class:`SampleView` objects
  (positions into it), which behave as collections of the raw samples (``len``,
  indexing, :func:`sprokr.utils.take`);
* **prepared samples** (:meth:`SelectionCache.kernel` wraps a kernel as a
  :class:`CachedKernel`): a view is prepared by taking rows of the master, prepared once
  per kernel configuration (its parameters, and for a kernel that learns from data
  its training samples) -- so grid points that only change ``lam``, a sketch size or the
  other side's kernel share them;
* **kernel columns**: a block ``k(A, B)`` between two views is served from the columns
  ``k(master, b)`` of the master against each sample ``b`` of ``B``, computed once (in
  row chunks) and kept -- the exact Gram of IOKR for every output kernel, the support
  columns of a sketch for its fit, its lam path's pass and its validation block, the
  columns a larger sketch shares with a smaller one;
* **derived results** (:meth:`SelectionCache.memo`): e.g. the eigendecomposition of the
  training Gram, which depends on the input side only and so serves every output kernel.

Values are the ones the kernel computes (same calls, on row chunks of the master), so a
selection with the cache chooses what it chooses without (tested).  Memory is bounded by
``max_memory_mb``: when an entry would not fit, the entries that are cheapest to recompute
per byte are dropped first, and a block that still does not fit is computed without
being kept.  The default bound follows the machine (:func:`default_cache_mb`): what one
output kernel's fits share grows as ``n m_y`` (at 10,000 molecules with ``m_y`` = 8000,
~3 GB: its kernel columns, the sketched basis and the training outputs' features), and a
bound below the working set evicts and recomputes them at every grid point (measured: the
output side of a SISOKR fit 10-16 s again instead of 0.1 s).
"""
from __future__ import annotations

import hashlib
import os
import time
from typing import Any, Callable, Hashable, Iterator

import numpy as np
import scipy.sparse as sp

from ..kernels.base import Kernel
from ..numerics import SketchMatrix, default_chunk_size
from ..utils import concat_samples, iter_chunks, num_samples, take

__all__ = ["SelectionCache", "SampleView", "CachedKernel", "default_cache_mb"]

#: the smallest default memory bound of a cache (MB)
DEFAULT_MEMORY_MB = 2048.0
#: the largest default memory bound of a cache (MB)
MAX_DEFAULT_MEMORY_MB = 8192.0


def _available_mb() -> float | None:
    """Memory the system can give without swapping (MB): ``MemAvailable`` (Linux), else the
    free physical pages; None when neither is known."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (AttributeError, ValueError, OSError):
        return None


def default_cache_mb() -> float:
    """The default bound of a :class:`SelectionCache` (MB): a third of the memory available
    now, between :data:`DEFAULT_MEMORY_MB` and :data:`MAX_DEFAULT_MEMORY_MB`.

    The bound changes only what is recomputed, never what a selection chooses.
    """
    avail = _available_mb()
    if avail is None:
        return DEFAULT_MEMORY_MB
    return float(min(MAX_DEFAULT_MEMORY_MB, max(DEFAULT_MEMORY_MB, avail / 3.0)))


class _Master:
    """One registered collection of raw samples."""

    __slots__ = ("samples", "n", "cache", "__weakref__")

    def __init__(self, samples, cache):
        self.samples, self.n, self.cache = samples, num_samples(samples), cache


class SampleView:
    """Samples of a registered collection, by position: a collection of the raw samples.

    ``len(view)``, ``view[i]`` (the raw sample), iteration, ``view.take(idx)`` (another
    view) and ``SampleView.concat(views)`` -- what the estimators do with samples.
    Made by :meth:`SelectionCache.samples`.

    Parameters
    ----------
    master : registered collection
        The cache's record of the whole collection of raw samples (internal).
    idx : array-like of int
        The positions of the view's samples in the collection (kept as an ``intp`` array).
    """

    __slots__ = ("master", "idx")

    def __init__(self, master: _Master, idx: np.ndarray) -> None:
        self.master, self.idx = master, np.asarray(idx, dtype=np.intp)

    def __len__(self) -> int:
        return int(self.idx.size)

    def __getitem__(self, i: int) -> Any:
        if isinstance(i, slice):
            return SampleView(self.master, self.idx[i])
        return take(self.master.samples, self.idx[[int(i)]])[0]

    def __iter__(self) -> Iterator[Any]:
        for sl in iter_chunks(len(self), 4096):
            yield from _iter_rows(take(self.master.samples, self.idx[sl]))

    def take(self, idx: Any) -> SampleView:
        return SampleView(self.master, self.idx[np.asarray(idx, dtype=np.intp)])

    def raw(self) -> Any:
        """The raw samples (a collection of the master's type)."""
        return take(self.master.samples, self.idx)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray(self.raw(), dtype=dtype)

    @staticmethod
    def concat(parts: list) -> Any:
        if all(isinstance(p, SampleView) and p.master is parts[0].master for p in parts):
            return SampleView(parts[0].master, np.concatenate([p.idx for p in parts]))
        return concat_samples([p.raw() if isinstance(p, SampleView) else p for p in parts])

    def __repr__(self) -> str:
        return f"SampleView({len(self)} of {self.master.n} samples)"


def _iter_rows(block):
    if hasattr(block, "shape") and len(block.shape) == 2:  # arrays, sparse matrices: their rows
        for i in range(block.shape[0]):
            yield block[i]
    else:
        yield from block


class PreparedView:
    """Prepared samples of a view: rows of the master's prepared collection for one kernel."""

    __slots__ = ("entry", "idx", "_rows")

    def __init__(self, entry: _Entry, idx: np.ndarray) -> None:
        self.entry, self.idx, self._rows = entry, idx, None

    def __len__(self) -> int:
        return int(self.idx.size)

    @property
    def rows(self) -> Any:
        """The prepared rows themselves (the kernel's own prepared collection)."""
        if self._rows is None:
            self._rows = take(self.entry.prepared, self.idx)
        return self._rows

    def take(self, idx: Any) -> PreparedView:
        return PreparedView(self.entry, self.idx[np.asarray(idx, dtype=np.intp)])

    @staticmethod
    def concat(parts: list) -> Any:
        if all(isinstance(p, PreparedView) and p.entry is parts[0].entry for p in parts):
            return PreparedView(parts[0].entry, np.concatenate([p.idx for p in parts]))
        return concat_samples([_rows(p) for p in parts])

    def __repr__(self) -> str:
        return f"PreparedView({len(self)} rows, {self.entry.kernel!r})"


def _rows(A):
    return A.rows if isinstance(A, PreparedView) else A


def _digest(idx: np.ndarray) -> str:
    return hashlib.blake2b(np.ascontiguousarray(idx, dtype=np.int64).tobytes(), digest_size=16).hexdigest()


def key_digest(parts: Any) -> str:
    """A digest of numbers, strings, arrays, sparse matrices and sketch matrices (nested in
    tuples / lists): the key of a memoised result."""
    h = hashlib.blake2b(digest_size=16)

    def add(v):
        if isinstance(v, (tuple, list)):
            h.update(b"(")
            for x in v:
                add(x)
            h.update(b")")
        elif isinstance(v, np.ndarray):
            h.update(f"a{v.dtype.str}{v.shape}".encode())
            h.update(np.ascontiguousarray(v).tobytes())
        elif sp.issparse(v):
            v = v.tocsr()
            add(("sparse", v.shape, v.data, v.indices, v.indptr))
        elif isinstance(v, SketchMatrix):
            add(("sketch", v.n, v.indices, v.weights, v.scale))
        elif v is None or isinstance(v, (bool, int, float, str, np.number, np.dtype)):
            h.update(f"{type(v).__name__}:{v!r};".encode())
        else:
            raise TypeError(f"cannot key a memoised result on a {type(v).__name__}")

    add(parts)
    return h.hexdigest()


def _param_key(value):
    """A parameter in a kernel's key: arrays by their contents (a repr elides large ones)."""
    if isinstance(value, np.ndarray) or sp.issparse(value):
        return ("array", key_digest(value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((str(k), _param_key(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_param_key(v) for v in value))
    return repr(value)


def kernel_key(kernel: Kernel) -> Hashable:
    """Identity of a kernel configuration: its class and parameters (and, for a fitted kernel
    that learns from data, the object itself: its fitted state is not a parameter)."""
    params = tuple(sorted((k, _param_key(v)) for k, v in kernel.get_params(deep=False).items()))
    key = (type(kernel).__module__, type(kernel).__qualname__, params)
    return key + (id(kernel),) if getattr(kernel, "learns_from_data", False) else key


class _Entry:
    """A kernel's prepared master (one side: ``prepare`` or ``prepare_outputs``) and its columns."""

    def __init__(self, cache, kernel, master, kind, key):
        self.cache, self.kernel, self.master, self.kind, self.key = cache, kernel, master, kind, key
        self._prepared = None
        self.columns = np.full(master.n, -1, dtype=np.intp)  # master index -> position in values
        self.values = None  # (n, capacity): k(master, master[col]) for the cached columns
        self.count = 0
        self._diag = None
        self.seconds = 0.0  # time spent computing what the entry holds

    @property
    def prepared(self):
        if self._prepared is None:
            t0 = time.perf_counter()
            fn = self.kernel.prepare if self.kind == "inputs" else self.kernel.prepare_outputs
            self._prepared = fn(self.master.samples)
            self.seconds += time.perf_counter() - t0
            self.cache._stats["prepared"] += 1
        return self._prepared

    def nbytes(self):
        return 0 if self.values is None else self.values.nbytes

    def diag(self, idx):
        if self._diag is None:
            self._diag = np.asarray(self.kernel.diag(self.prepared), dtype=np.float64)
        return self._diag[idx]

    def block(self, rows, cols):
        """``k(master[rows], master[cols])`` (a new array), from the kept columns when they fit."""
        pos = self._positions(cols)
        if pos is None:
            self.cache._stats["blocks_computed"] += 1
            P = self.prepared
            return np.asarray(self.kernel.pairwise(take(P, rows), take(P, cols)))
        self.cache._stats["blocks_served"] += 1
        if pos.size and pos[-1] - pos[0] == pos.size - 1 and (pos.size == 1 or np.all(np.diff(pos) == 1)):
            # columns kept in one run (a Gram's columns computed together): one gather of
            # the rows' segments, not a full-width row copy gathered again by column
            return np.take(self.values[:, pos[0]:pos[-1] + 1], rows, axis=0)
        return np.take(np.take(self.values, rows, axis=0), pos, axis=1)  # (faster than np.ix_)

    def _positions(self, cols):
        new = np.unique(cols[self.columns[cols] < 0])
        if new.size:
            if not self._grow(self.count + new.size):
                return None
            t0 = time.perf_counter()
            P = self.prepared
            C = take(P, new)
            n = self.master.n
            out = self.values[:, self.count:self.count + new.size]
            for sl in iter_chunks(n, default_chunk_size(new.size, self.values.dtype)):
                out[sl] = np.asarray(self.kernel.pairwise(take(P, np.arange(sl.start, sl.stop)), C))
            self.columns[new] = np.arange(self.count, self.count + new.size)
            self.count += new.size
            self.seconds += time.perf_counter() - t0
            self.cache._stats["columns_computed"] += int(new.size)
        return self.columns[cols]

    def _grow(self, need):
        have = 0 if self.values is None else self.values.shape[1]
        if need <= have:
            return True
        n = self.master.n
        width = min(n, max(need, 2 * have, 64))
        dtype = self.values.dtype if self.values is not None else \
            np.asarray(self.kernel.pairwise(take(self.prepared, [0]), take(self.prepared, [0]))).dtype
        extra = n * (width - have) * dtype.itemsize
        if not self.cache._make_room(extra, keep=self):
            width = need  # no slack
            extra = n * (width - have) * dtype.itemsize
            if not self.cache._make_room(extra, keep=self):
                return False
        values = np.empty((n, width), dtype=dtype)
        if self.values is not None:
            values[:, :self.count] = self.values[:, :self.count]
        self.values = values
        return True

    def drop(self):
        self.values, self.count = None, 0
        self.columns[:] = -1


class _Handle:
    """What a :class:`CachedKernel` refers to: shared by its clones (copying returns itself)."""

    def __init__(self, cache, kernel):
        self.cache, self.kernel, self.key = cache, kernel, kernel_key(kernel)

    def __deepcopy__(self, memo):
        return self

    def __copy__(self):
        return self

    def entry(self, master, kind):
        return self.cache._entry(self, master, kind)


class CachedKernel(Kernel):
    """A kernel whose prepared samples and blocks come from a :class:`SelectionCache`.

    Made by :meth:`SelectionCache.kernel`.  On :class:`SampleView` samples of the cache it
    prepares by taking rows of the prepared master, and its blocks between such prepared
    samples come from the cache's columns; on any other samples it is the wrapped kernel.
    Clones share the cache (its one parameter is a handle that copying returns unchanged).

    Parameters
    ----------
    handle : cache handle, optional
        The cache and the wrapped kernel (internal: made by :meth:`SelectionCache.kernel`,
        shared by the clones).
    """

    learns_from_data = False

    def __init__(self, handle: Any = None) -> None:
        self.handle = handle

    @property
    def base(self) -> Kernel:
        """The wrapped kernel."""
        return self.handle.kernel

    @property
    def name(self) -> str | None:  # type: ignore[override]
        return self.base.name

    @property
    def normalized(self) -> bool:  # type: ignore[override]
        return self.base.normalized

    @property
    def dtype(self) -> Any:
        return getattr(self.base, "dtype", "float64")

    def __repr__(self, N_CHAR_MAX: int = 700) -> str:
        return f"CachedKernel({self.base!r})"

    def check_params(self) -> CachedKernel:
        self.base.check_params()
        return self

    def _prepare(self, X, kind):
        if isinstance(X, SampleView) and X.master.cache is self.handle.cache:
            return PreparedView(self.handle.entry(X.master, kind), X.idx)
        base = self.base
        return base.prepare(X) if kind == "inputs" else base.prepare_outputs(X)

    def prepare(self, X: Any) -> Any:
        return self._prepare(X, "inputs")

    def prepare_outputs(self, Y: Any) -> Any:
        return self._prepare(Y, "outputs")

    def prepare_support(self, A: Any) -> Any:
        return A if isinstance(A, PreparedView) else self.base.prepare_support(A)

    def pairwise(self, A: Any, B: Any) -> np.ndarray:
        if isinstance(A, PreparedView) and isinstance(B, PreparedView) and A.entry is B.entry:
            return A.entry.block(A.idx, B.idx)
        return self.base.pairwise(_rows(A), _rows(B))

    def diag(self, A: Any) -> np.ndarray:
        if isinstance(A, PreparedView):
            return A.entry.diag(A.idx)
        return self.base.diag(A)

    def memo(self, name: str, samples: Any, compute: Callable[[], Any], key: tuple = ()) -> Any:
        """``compute()``, kept in the cache under this kernel, ``name``, the samples (views of
        the cache: raw or prepared; other samples: not kept) and the arrays of ``key``."""
        if isinstance(samples, PreparedView):
            where = (id(samples.entry.master), samples.entry.kind)
        elif isinstance(samples, SampleView) and samples.master.cache is self.handle.cache:
            where = (id(samples.master), "raw")
        else:
            return compute()
        full = (self.handle.key, where, name, _digest(samples.idx), key_digest(key))
        return self.handle.cache.memo(full, compute)


class SelectionCache:
    """Prepared samples, kernel columns and factorisations shared by the fits of a selection.

    Parameters
    ----------
    max_memory_mb : float or None
        Bound on what the cache keeps (kernel columns and memoised results); entries that
        are cheapest to recompute per byte are dropped first.  None (default):
        :func:`default_cache_mb`, a third of the memory available when the cache is made
        (2 to 8 GB).

    Attributes
    ----------
    stats : dict
        Counts of what was computed and what was served (``prepared``: master collections
        prepared; ``columns_computed``; ``blocks_served`` / ``blocks_computed``: kernel
        blocks taken from kept columns / computed directly; ``memo_hits`` /
        ``memo_misses``; ``evicted``; ``released``: bytes dropped by :meth:`release`), and
        ``bytes``, the memory held.

    Examples
    --------
    >>> import numpy as np
    >>> from sprokr.kernels import GaussianKernel
    >>> from sprokr.model_selection import SelectionCache
    >>> cache = SelectionCache()
    >>> X = cache.samples(np.random.default_rng(0).normal(size=(50, 3)))
    >>> k = cache.kernel(GaussianKernel(gamma=0.5))
    >>> A = k.prepare(X.take(np.arange(10)))
    >>> K = k.pairwise(A, k.prepare(X))   # the 50 columns are computed once and kept
    >>> K.shape, cache.stats["columns_computed"]
    ((10, 50), 50)
    """

    def __init__(self, max_memory_mb: float | None = None) -> None:
        if max_memory_mb is None:
            max_memory_mb = default_cache_mb()
        if isinstance(max_memory_mb, bool) or not isinstance(max_memory_mb, (int, float, np.number)) \
                or not max_memory_mb > 0:
            raise ValueError(f"max_memory_mb must be a number > 0, got {max_memory_mb!r}")
        self.max_memory_mb = float(max_memory_mb)
        self._masters: dict[int, _Master] = {}  # id(samples) -> master (the samples are kept alive)
        self._handles: dict[Hashable, _Handle] = {}  # kernel key -> handle
        self._entries: dict[Hashable, _Entry] = {}  # (kernel key, id(master), kind) -> entry
        self._memo: dict[Hashable, list] = {}  # key -> [value, nbytes, seconds, last use]
        self._fitted: dict[Hashable, Kernel] = {}  # (kernel key, master, digest) -> kernel fitted on them
        self._clock = 0
        self._stats = {"prepared": 0, "columns_computed": 0, "blocks_served": 0, "blocks_computed": 0,
                       "memo_hits": 0, "memo_misses": 0, "evicted": 0, "released": 0}

    @property
    def stats(self) -> dict:
        return {**self._stats, "bytes": int(self._bytes())}

    # ---- samples and kernels
    def samples(self, X: Any) -> SampleView:
        """A view on all of ``X`` (registered once; the same object gives the same master)."""
        if isinstance(X, SampleView) and X.master.cache is self:
            return X
        master = self._masters.get(id(X))
        if master is None or master.samples is not X:
            master = self._masters[id(X)] = _Master(X, self)
        return SampleView(master, np.arange(master.n))

    def kernel(self, kernel: Kernel) -> CachedKernel:
        """``kernel`` served by this cache (a :class:`CachedKernel`; one per configuration)."""
        if isinstance(kernel, CachedKernel):
            if kernel.handle.cache is not self:
                raise ValueError("this kernel is cached by another SelectionCache")
            return kernel
        key = kernel_key(kernel)
        handle = self._handles.get(key)
        if handle is None:
            handle = self._handles[key] = _Handle(self, kernel)
        return CachedKernel(handle)

    def fitted_kernel(self, kernel: Kernel, X: SampleView) -> Kernel:
        """``kernel``, fitted on ``X`` when it learns from data and is not fitted yet (a fitted
        copy, made once per configuration and training samples)."""
        from sklearn.exceptions import NotFittedError
        from sklearn.utils.validation import check_is_fitted

        from ..kernels.base import fit_on_training_inputs

        if not getattr(kernel, "learns_from_data", False):
            return kernel
        try:
            check_is_fitted(kernel)
            return kernel  # fitted by the user, on purpose: as is (fit_on_training_inputs)
        except NotFittedError:
            pass
        # an unfitted kernel is its parameters (kernel_key would tell two new objects apart)
        params = tuple(sorted((k, _param_key(v)) for k, v in kernel.get_params(deep=False).items()))
        key = (type(kernel).__qualname__, params, id(X.master), _digest(X.idx))
        if key not in self._fitted:
            self._fitted[key] = fit_on_training_inputs(kernel, X.raw())
        return self._fitted[key]

    def _entry(self, handle, master, kind):
        key = (handle.key, id(master), kind)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry(self, handle.kernel, master, kind, key)
        self._clock += 1
        entry.last = self._clock
        return entry

    # ---- memoised results
    def memo(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per ``key`` (kept while the memory bound allows)."""
        self._clock += 1
        hit = self._memo.get(key)
        if hit is not None:
            hit[3] = self._clock
            self._stats["memo_hits"] += 1
            return hit[0]
        self._stats["memo_misses"] += 1
        t0 = time.perf_counter()
        value = compute()
        seconds = time.perf_counter() - t0
        size = _nbytes(value)
        if self._make_room(size):
            _freeze(value)  # shared from now on: an in-place change would corrupt the next fit
            self._memo[key] = [value, size, seconds, self._clock]
        return value

    # ---- memory
    def _bytes(self):
        return sum(e.nbytes() for e in self._entries.values()) + sum(v[1] for v in self._memo.values())

    def _make_room(self, extra, keep=None):
        """Drop entries (cheapest to recompute per byte first) until ``extra`` bytes fit."""
        limit = self.max_memory_mb * 2**20
        if extra > limit:
            return False
        while self._bytes() + extra > limit:
            cands = [(e.seconds / max(e.nbytes(), 1), getattr(e, "last", 0), "entry", k)
                     for k, e in self._entries.items() if e.nbytes() and e is not keep]
            cands += [(v[2] / max(v[1], 1), v[3], "memo", k) for k, v in self._memo.items() if v[1]]
            if not cands:
                return False
            _, _, kind, key = min(cands)
            if kind == "entry":
                self._entries[key].drop()
            else:
                del self._memo[key]
            self._stats["evicted"] += 1
        return True

    def release(self, kernel: Kernel) -> int:
        """Drop the kernel columns and memoised results kept for ``kernel`` (a kernel or the
        :class:`CachedKernel` serving it); its prepared samples stay.  Returns the bytes freed.

        A selection that is done with a kernel (e.g. one output kernel of several, tried in
        turn) releases it so that the next one's columns and factorisations do not have to
        evict each other.
        """
        if not isinstance(kernel, Kernel):
            raise TypeError(f"kernel must be a Kernel or the CachedKernel serving it, got {type(kernel).__name__}")
        key = kernel.handle.key if isinstance(kernel, CachedKernel) else kernel_key(kernel)
        freed = 0
        for entry in self._entries.values():
            if entry.key[0] == key and entry.nbytes():
                freed += entry.nbytes()
                entry.drop()
        # CachedKernel.memo keys start with the kernel's key; keys given to memo() may be anything
        for k in [k for k in self._memo if isinstance(k, tuple) and k and k[0] == key]:
            freed += self._memo.pop(k)[1]
        self._stats["released"] += int(freed)
        return int(freed)

    def clear(self) -> None:
        """Drop everything kept (the registered samples too)."""
        for store in (self._masters, self._handles, self._entries, self._memo, self._fitted):
            store.clear()


def _freeze(value):
    if isinstance(value, np.ndarray):
        value.setflags(write=False)
    elif isinstance(value, (tuple, list)):
        for v in value:
            _freeze(v)


def _nbytes(value):
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(v) for v in value)
    return 0
