"""The ``"precomputed"`` kernel: Gram blocks computed elsewhere (graph, sequence kernels ...).

With ``input_kernel="precomputed"`` (or ``output_kernel=``, or ``kernel=`` of the kernel
machines) the samples *are* rows of Gram matrices against the training set:

* **fit**: the ``n x n`` training Gram ``K[i, j] = k(x_i, x_j)`` (square and symmetric:
  the full matrix, since the sketch -- hence which columns are needed -- is drawn inside
  ``fit``);
* **predict**: the ``n_q x n`` block ``K[q, j] = k(x_q, x_j)`` of the queries against the
  *training* samples, columns in training order;
* **candidates** (output side): the ``n_c x n`` block of the candidates against the
  training outputs, wrapped as ``GramBlock(K_c, diag=k(c, c))`` unless the kernel is
  normalised (``output_kernel_params={"normalized": True}`` when ``k(c, c) = 1``): decoding
  needs ``k(c, c)``, which a block against the training set does not contain.

Only the columns a fitted model uses are read.  A sketched model uses few of them (its
support points): pass just those with ``GramBlock(K_q_S, columns=S)``, where ``S`` are
training indices, e.g. ``required_columns(model)["input"]``, which costs ``n_q x m'`` kernel
evaluations instead of ``n_q x n``.

How it works without any change to the estimators: :meth:`PrecomputedKernel.prepare`
wraps the matrix into a :class:`GramBlock`, an indexable collection whose items know the
training index of their row (``rows``) and of each column (``columns``).  Taking samples
(``sprokr.utils.take`` / ``take_slice``, e.g. the support points ``take(Xp, R.indices)``)
keeps track of the rows, and ``pairwise(A, B)`` returns ``A``'s values at the columns of
``B``'s training rows -- so the right-hand operand must be training samples (rows of the
training Gram), which it always is in the estimators.

Examples
--------
>>> import numpy as np
>>> from sprokr import SISOKR
>>> from sprokr.kernels import GaussianKernel
>>> from sprokr.kernels.precomputed import GramBlock, required_columns
>>> rng = np.random.default_rng(0)
>>> X, Xq, Y = rng.normal(size=(60, 3)), rng.normal(size=(5, 3)), rng.normal(size=(60, 2))
>>> k = GaussianKernel(gamma=0.5)
>>> model = SISOKR(input_kernel="precomputed", output_kernel="gaussian", input_sketch="subsample",
...                m_x=20, random_state=0).fit(k(X), Y)
>>> S = required_columns(model)["input"]            # training indices of the support points
>>> top = model.predict_topk(GramBlock(k(Xq, X[S]), columns=S), k=1)   # a 5 x m' block only
"""
from __future__ import annotations

from typing import Any, Dict, Iterator, Optional

import numpy as np
import scipy.sparse as sp

from ..utils import check_bool, check_finite, resolve_dtype
from .base import Kernel, describe_samples

__all__ = ["PrecomputedKernel", "GramBlock", "GramRow", "required_columns"]

#: relative tolerance of the symmetry test that recognises a training Gram
SYMMETRY_RTOL = 1e-5


def _index_array(idx: Any, name: str, n: Optional[int] = None) -> np.ndarray:
    a = np.asarray(idx)
    if a.dtype == bool:
        raise TypeError(f"{name} must be integer indices, not a boolean mask")
    try:
        a = a.astype(np.intp, casting="safe") if a.size else a.astype(np.intp)
    except TypeError:
        raise TypeError(f"{name} must be integer indices; got dtype {a.dtype}") from None
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got shape {a.shape}")
    if a.size and a.min() < 0:
        raise ValueError(f"{name} must be non-negative training indices; got {int(a.min())}")
    if n is not None and a.size != n:
        raise ValueError(f"{name} has {a.size} entries for {n} columns/rows")
    return a


class GramRow:
    """One sample of a :class:`GramBlock`: its kernel values and, if known, its training index.

    Rows compare (and hash) by their values, so that repeated training outputs are
    recognised as such (:func:`sprokr.utils.unique_inverse`).

    Attributes
    ----------
    values : ndarray of shape (n_columns,)
    index : int or None
        Training index of the sample, None for a query or candidate.
    """

    __slots__ = ("values", "index")

    def __init__(self, values: np.ndarray, index: Optional[int]) -> None:
        self.values = values
        self.index = index

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GramRow) and np.array_equal(self.values, other.values)

    def __hash__(self) -> int:
        return hash(self.values.tobytes())

    def __repr__(self) -> str:
        return f"GramRow(index={self.index}, n_columns={self.values.size})"


class GramBlock:
    """Kernel values between some samples (rows) and training samples (columns).

    Parameters
    ----------
    values : array-like of shape (n_rows, n_columns)
        ``values[i, j] = k(sample_i, training sample columns[j])``.  Dense and finite.
    columns : array-like of int, shape (n_columns,), optional
        Training index of each column (default ``0 .. n_columns - 1``: the whole training
        set, in order).
    rows : array-like of int, shape (n_rows,), optional
        Training index of each row, for blocks whose rows are training samples (default:
        none, i.e. queries or candidates; :class:`PrecomputedKernel` sets them for the
        training Gram).
    diag : array-like of shape (n_rows,), optional
        ``k(sample_i, sample_i)``; needed for the candidates of an output kernel that is
        not normalised.  Training rows take it from the matrix.
    n_train : int, optional
        Size of the training set (default: ``n_columns`` when ``columns`` is not given).

    Notes
    -----
    Taking a contiguous range of rows (``take_slice``) shares the matrix; other selections
    (support points, distinct outputs) copy their rows, so that a fitted model does not
    keep the training Gram alive.  The matrix is never modified.
    """

    def __init__(self, values: Any, columns: Any = None, rows: Any = None, diag: Any = None,
                 n_train: Optional[int] = None) -> None:
        if sp.issparse(values):
            raise TypeError("a precomputed Gram block must be a dense array; got a sparse matrix "
                            "(use .toarray())")
        if isinstance(values, GramBlock):
            raise TypeError("values is already a GramBlock")
        try:
            V = np.asarray(values)
        except (TypeError, ValueError):
            raise TypeError(f"a precomputed Gram block must be a numeric 2-D array; got "
                            f"{describe_samples(values)}") from None
        if V.dtype.kind not in "biuf":
            raise TypeError(f"a precomputed Gram block must be numeric; got dtype {V.dtype} "
                            f"({describe_samples(values)})")
        if V.ndim != 2:
            raise ValueError(f"a precomputed Gram block must be 2-D (n_samples, n_train_columns); got "
                             f"{V.ndim}-D of shape {V.shape}")
        if V.dtype.kind != "f":
            V = V.astype(np.float64)
        check_finite(V, "the precomputed Gram block")
        self._values = V
        self._lo, self._hi = 0, V.shape[0]
        self.identity_columns = columns is None
        self.columns = (np.arange(V.shape[1], dtype=np.intp) if columns is None
                        else _index_array(columns, "columns", V.shape[1]))
        self.rows = None if rows is None else _index_array(rows, "rows", V.shape[0])
        self.diag = None
        if diag is not None:
            d = np.asarray(diag, dtype=np.float64).ravel()
            if d.size != V.shape[0]:
                raise ValueError(f"diag has {d.size} entries for {V.shape[0]} rows")
            self.diag = check_finite(d, "diag")
        if n_train is None and columns is None:
            n_train = V.shape[1]
        self.n_train = None if n_train is None else int(n_train)
        if self.n_train is not None and self.columns.size and self.columns.max() >= self.n_train:
            raise ValueError(f"columns holds training index {int(self.columns.max())} but the training set "
                             f"has {self.n_train} samples")
        self._col_sorted: Optional[np.ndarray] = None
        self._col_order: Optional[np.ndarray] = None
        #: why the rows are not training samples (for error messages), or None
        self.not_training_reason: Optional[str] = None

    # ------------------------------------------------------------ collection
    @property
    def values(self) -> np.ndarray:
        """The block, shape (n_rows, n_columns) (a read-only view: copy before modifying)."""
        v = self._values[self._lo:self._hi]
        v.flags.writeable = False
        return v

    @property
    def shape(self) -> tuple[int, int]:
        return (self._hi - self._lo, self.columns.size)

    @property
    def dtype(self) -> np.dtype:
        return self._values.dtype

    def __len__(self) -> int:
        return self._hi - self._lo

    def __getitem__(self, i: int) -> GramRow:
        n = len(self)
        if not -n <= int(i) < n:
            raise IndexError(f"row {i} out of range for {n} rows")
        i = int(i) % n
        return GramRow(self._values[self._lo + i], None if self.rows is None else int(self.rows[i]))

    def __iter__(self) -> Iterator[GramRow]:
        return (self[i] for i in range(len(self)))

    def __repr__(self) -> str:
        kind = "training rows" if self.rows is not None else "query rows"
        return f"GramBlock(shape={self.shape}, {kind}, n_train={self.n_train})"

    def take(self, idx: Any) -> "GramBlock":
        """The rows ``idx`` (a new block; contiguous ranges share the matrix)."""
        idx = np.asarray(idx, dtype=np.intp).ravel()
        n = len(self)
        if idx.size and (idx.min() < -n or idx.max() >= n):
            raise IndexError(f"row index out of range for {n} rows")
        idx = idx % n if n else idx
        out = GramBlock.__new__(GramBlock)
        out.__dict__.update(self.__dict__)
        if idx.size and idx[-1] - idx[0] + 1 == idx.size and np.all(np.diff(idx) == 1):
            out._lo, out._hi = self._lo + int(idx[0]), self._lo + int(idx[-1]) + 1
        elif idx.size == 0:
            out._lo = out._hi = self._lo
        else:
            out._values, out._lo, out._hi = self._values[self._lo + idx], 0, idx.size
        out.rows = None if self.rows is None else self.rows[idx]
        out.diag = None if self.diag is None else self.diag[idx]
        return out

    def astype(self, dtype: Any) -> "GramBlock":
        """The same block with values in ``dtype`` (self when it already is)."""
        dt = np.dtype(dtype)
        if self._values.dtype == dt:
            return self
        out = GramBlock.__new__(GramBlock)
        out.__dict__.update(self.__dict__)
        out._values, out._lo, out._hi = self._values[self._lo:self._hi].astype(dt), 0, len(self)
        return out

    # ------------------------------------------------------------ columns
    def column_positions(self, train_idx: np.ndarray, purpose: str = "these samples") -> np.ndarray:
        """Positions in this block of the columns of training samples ``train_idx``.

        Raises
        ------
        ValueError
            When a needed column is missing, naming the first missing training indices.
        """
        train_idx = np.asarray(train_idx, dtype=np.intp)
        if self.identity_columns:
            bad = train_idx[train_idx >= self.columns.size]
            if bad.size:
                raise ValueError(
                    f"precomputed kernel: the block has {self.columns.size} columns but {purpose} need the "
                    f"column of training sample {int(bad.max())}; pass the (n_samples, n_train) block "
                    "against all training samples, or GramBlock(values, columns=training indices)")
            return train_idx
        if self._col_sorted is None or self._col_order is None:
            self._col_order = np.argsort(self.columns, kind="stable")
            self._col_sorted = self.columns[self._col_order]
        col_sorted, col_order = self._col_sorted, self._col_order
        pos = np.searchsorted(col_sorted, train_idx)
        pos_c = np.minimum(pos, col_sorted.size - 1)
        ok = (col_sorted.size > 0) & (col_sorted[pos_c] == train_idx)
        if not np.all(ok):
            missing = np.unique(train_idx[~ok])
            shown = ", ".join(map(str, missing[:10])) + (", ..." if missing.size > 10 else "")
            raise ValueError(
                f"precomputed kernel: the block lacks the columns of {missing.size} training sample(s) "
                f"that {purpose} need: [{shown}]; its columns must include "
                "sprokr.kernels.precomputed.required_columns(model)")
        return col_order[pos_c]


def _is_symmetric(V: np.ndarray, rtol: float = SYMMETRY_RTOL, chunk: int = 1024):
    """(symmetric?, largest asymmetry) of a square matrix, in row chunks (O(chunk x n) memory)."""
    n = V.shape[0]
    scale = float(np.max(np.abs(V))) if V.size else 0.0
    tol = rtol * max(scale, np.finfo(np.float64).tiny)
    worst = 0.0
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        d = np.abs(V[start:stop] - V[:, start:stop].T)
        worst = max(worst, float(d.max()) if d.size else 0.0)
        if worst > tol:
            return False, worst
    return True, worst


class PrecomputedKernel(Kernel):
    """Kernel values given as Gram blocks against the training samples (``"precomputed"``).

    Parameters
    ----------
    normalized : bool
        True when ``k(x, x) = 1`` for every sample: decoders then need no ``k(c, c)`` for
        candidates (otherwise candidate blocks must carry ``diag``).
    dtype : {"float64", "float32"}
        Dtype of the returned blocks (set by the estimators from their ``dtype``).

    Notes
    -----
    ``prepare(X)`` accepts a 2-D array or a :class:`GramBlock`.  A plain array that is
    square and symmetric (relative tolerance ``1e-5``) is a training Gram: its rows are
    training samples ``0 .. n-1``.  Any other array is a block of queries (or candidates)
    against all training samples, columns in training order.  See the module documentation
    for the whole protocol and :func:`required_columns` for sketched models.
    """

    name = "precomputed"

    def __init__(self, normalized: bool = False, dtype: str = "float64") -> None:
        self.normalized = normalized
        self.dtype = dtype

    def check_params(self) -> PrecomputedKernel:
        """``normalized`` (True or False: ``normalized="no"`` was true); returns self."""
        check_bool(self.normalized, "normalized")
        return self

    def prepare(self, X: Any) -> GramBlock:
        """Wrap a Gram block (validated: dense, 2-D, finite) into a :class:`GramBlock`."""
        dt = resolve_dtype(self.dtype)
        if isinstance(X, GramBlock):
            return X.astype(dt)
        if isinstance(X, (list, tuple)) and X and isinstance(X[0], str):
            raise TypeError("kernel 'precomputed' expects Gram blocks (arrays of kernel values), not raw "
                            "samples such as strings; compute the kernel first, or use a named kernel")
        B = GramBlock(X)
        B = B.astype(dt)
        n, m = B.shape
        if n == m:
            sym, worst = _is_symmetric(B.values)
            if sym:
                B.rows = np.arange(n, dtype=np.intp)
            else:
                B.not_training_reason = (f"the square ({n}, {n}) matrix is not symmetric (largest "
                                         f"|K - K^T| = {worst:.3g})")
        else:
            B.not_training_reason = f"it is a ({n}, {m}) block, not a square training Gram"
        return B

    def pairwise(self, A: GramBlock, B: GramBlock) -> np.ndarray:
        """``A``'s values at the columns of ``B``'s training rows: ndarray (len(A), len(B)).

        ``B`` must be training samples (taken from the training Gram).
        """
        if not isinstance(A, GramBlock) or not isinstance(B, GramBlock):
            raise TypeError("kernel 'precomputed' works on prepared Gram blocks (call prepare first)")
        if B.rows is None:
            why = f": {B.not_training_reason}" if B.not_training_reason else ""
            raise ValueError(
                "precomputed kernel: the right-hand samples must be training samples, i.e. rows of the "
                f"square, symmetric train x train Gram given to fit{why}.  Kernel values between two "
                "sets of non-training samples (e.g. predictions and true outputs) are not available "
                "from blocks against the training set")
        if A.identity_columns and B.n_train is not None and A.columns.size != B.n_train:
            raise ValueError(
                f"precomputed kernel: expected a block with one column per training sample, shape "
                f"(n_samples, {B.n_train}); got {A.shape}.  To pass only some columns, use "
                "GramBlock(values, columns=training indices of the columns) "
                "(see sprokr.kernels.precomputed.required_columns)")
        pos = A.column_positions(B.rows, "the model's training samples")
        return np.take(A.values, pos, axis=1).astype(resolve_dtype(self.dtype), copy=False)

    def prepare_support(self, A: GramBlock) -> GramBlock:
        """Support points keep only their training indices and their own square block.

        A model's support is only ever the right-hand operand of ``pairwise``: the block
        ``K[S, S]`` (``m' x m'``) replaces the ``m' x n`` rows, so that the fitted model does
        not hold the training Gram.
        """
        if A.rows is None or (len(A) == A.columns.size and np.array_equal(A.rows, A.columns)):
            return A  # the whole training set (exact models), or prepared already: nothing to drop
        pos = A.column_positions(A.rows, "the support points")
        return GramBlock(np.take(A.values, pos, axis=1), columns=A.rows, rows=A.rows, diag=A.diag,
                         n_train=A.n_train)

    def diag(self, A: GramBlock) -> np.ndarray:
        """``k(a, a)``: given ``diag``, else read on the matrix for training rows."""
        dt = resolve_dtype(self.dtype)
        if self.normalized:
            return np.ones(len(A), dtype=dt)
        if A.diag is not None:
            return A.diag.astype(dt)
        if A.rows is None:
            raise ValueError(
                "precomputed kernel: k(x, x) of samples that are not training samples is unknown; "
                "pass the block as GramBlock(values, diag=k(x, x)) (e.g. candidates of a non-normalised "
                "output kernel), or set normalized=True when k(x, x) = 1")
        pos = A.column_positions(A.rows, "the diagonal k(x, x) of training samples")
        return A.values[np.arange(len(A)), pos].astype(dt)


def required_columns(model: Any) -> Dict[str, Optional[np.ndarray]]:
    """Training indices whose Gram columns a fitted model reads at prediction time.

    Parameters
    ----------
    model : fitted estimator using ``"precomputed"`` kernels
        IOKR / SIOKR / ISOKR / SISOKR, DSOKR (output side), SketchedKernelMachine.

    Returns
    -------
    dict
        ``"input"``: sorted training indices the query block needs (the support points;
        all ``n`` for exact models), or None when the input kernel is not precomputed;
        ``"output"``: those a candidate block needs (the output sketch's selected
        samples, or all), or None when the output kernel is not precomputed.
    """
    out: Dict[str, Optional[np.ndarray]] = {"input": None, "output": None}
    support = getattr(model, "X_support_", None)
    if isinstance(support, GramBlock) and support.rows is not None:
        out["input"] = np.unique(support.rows)
    if isinstance(getattr(model, "output_kernel_", None), PrecomputedKernel):
        feats = getattr(model, "output_features_", None)
        if feats is not None and isinstance(getattr(feats, "Z_sel", None), GramBlock):
            out["output"] = np.unique(feats.Z_sel.rows)
        else:
            out["output"] = np.arange(int(model.n_train_), dtype=np.intp)
    return out
