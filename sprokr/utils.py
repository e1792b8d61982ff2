"""Small helpers shared by the whole package: sample handling, validation, seeding.

The estimators never assume that ``X`` or ``Y`` are arrays: a kernel decides what it
accepts (arrays, sparse matrices, lists of strings, graphs, molecules).  The helpers here
work on any *indexable collection* of samples.
"""
from __future__ import annotations

import collections.abc
import contextlib
import functools
import numbers
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence, cast

import numpy as np
from numpy.typing import ArrayLike, DTypeLike
import scipy.sparse as sp

if TYPE_CHECKING:  # imported for the annotations only
    from .types import RandomStateLike, Samples

__all__ = [
    "frame_as_array",
    "frame_feature_names",
    "set_feature_names",
    "check_feature_names",
    "num_samples",
    "check_paired",
    "check_strings",
    "check_chunk_size",
    "take",
    "take_slice",
    "concat_samples",
    "unique_indices",
    "unique_inverse",
    "check_random_state",
    "check_random_state_param",
    "check_finite",
    "check_dense",
    "check_numeric_array",
    "is_real",
    "check_bool",
    "check_positive",
    "check_integer",
    "check_fraction",
    "check_params_mapping",
    "check_quantile_levels",
    "type_with_article",
    "copy_with_coef",
    "iter_chunks",
    "resolve_dtype",
    "NamedPrepare",
    "reword_error",
    "error_text",
    "RowError",
    "row_offset",
    "atomic_fit",
    "consistent_read",
]


def frame_as_array(data: Any) -> Any:
    """A dataframe or a series (pandas, polars, ...) as a numpy array; anything else as is.

    A dataframe-like is an object with ``columns`` (a DataFrame) or ``iloc`` (a pandas
    Series) that converts to an array (``__array__``).  The estimators read collections of
    samples by length, position and iteration, which a DataFrame does not follow (it
    iterates over its column labels, and ``df[i]`` is a column): outputs ``Y`` and
    candidates given as one are taken as ``np.asarray(data)``, as scikit-learn's
    ``check_array`` does -- predictions are then arrays, without the frame's index.
    """
    if isinstance(data, (np.ndarray, list, tuple, str, bytes)) or sp.issparse(data):
        return data
    if (hasattr(data, "columns") or hasattr(data, "iloc")) and hasattr(data, "__array__"):
        return np.asarray(data)
    return data


def frame_feature_names(X: Any) -> np.ndarray | None:
    """The column names of a dataframe ``X`` (an object ndarray) when they are all strings,
    else None -- scikit-learn's rule for ``feature_names_in_``: numbers as names (a frame
    built from an array) are no names; mixed string and non-string names are a TypeError."""
    columns = getattr(X, "columns", None)
    if columns is None or isinstance(X, np.ndarray) or sp.issparse(X):
        return None
    names = np.asarray(list(columns), dtype=object)
    if names.ndim != 1 or names.size == 0:
        return None
    types = sorted({type(c).__name__ for c in names})
    if all(isinstance(c, str) for c in names):
        return names
    if any(isinstance(c, str) for c in names):
        raise TypeError(f"Feature names are only supported if all input features have string names, but the "
                        f"input has {types} as feature name / column name types; convert them all to str "
                        f"(X.columns = X.columns.astype(str)) to keep them")
    return None


def set_feature_names(est: Any, X: Any) -> None:
    """Record ``feature_names_in_`` at fit, as scikit-learn does: the column names of a
    dataframe ``X`` when they are all strings (an ndarray of objects); without them a
    previous fit's names are removed.  Mixed string and non-string names are a TypeError."""
    names = frame_feature_names(X)
    if names is not None:
        est.feature_names_in_ = names
    else:
        est.__dict__.pop("feature_names_in_", None)


def check_feature_names(est: Any, X: Any) -> None:
    """Check the column names of query inputs ``X`` against ``feature_names_in_``, as
    scikit-learn does (and with its messages): a ``UserWarning`` when only one of the fit
    and ``X`` had names, a ``ValueError`` listing them when they differ (another order
    included)."""
    import warnings

    fitted: Any = getattr(est, "feature_names_in_", None)
    names = frame_feature_names(X)
    cls = type(est).__name__
    if fitted is None and names is None:
        return
    if names is not None and fitted is None:
        warnings.warn(f"X has feature names, but {cls} was fitted without feature names", UserWarning,
                      stacklevel=3)
        return
    if names is None:
        warnings.warn(f"X does not have valid feature names, but {cls} was fitted with feature names",
                      UserWarning, stacklevel=3)
        return
    if len(fitted) != len(names) or np.any(fitted != names):
        known, given = set(fitted), set(names)  # (once: a set per name made this quadratic)
        unseen = [n for n in names if n not in known]
        missing = [n for n in fitted if n not in given]
        detail = "".join(f"\n{title}:\n" + "\n".join(f"- {n}" for n in items[:5]) + ("\n- ..." if len(items) > 5 else "")
                         for title, items in (("Feature names unseen at fit time", unseen),
                                              ("Feature names seen at fit time, yet now missing", missing)) if items)
        if not detail:
            detail = "\nFeature names must be in the same order as they were in fit."
        raise ValueError(f"The feature names should match those that were passed during fit.{detail}\n")


def num_samples(X: Samples, name: str = "X") -> int:
    """Number of samples of an array, sparse matrix or sequence."""
    if sp.issparse(X) or isinstance(X, np.ndarray):
        if X.ndim == 0:
            raise ValueError(f"{name} must be a collection of samples, got a scalar array")
        return X.shape[0]
    try:
        return len(X)
    except TypeError:
        if hasattr(X, "__array__"):  # array-likes without a length (scikit-learn's checks use one)
            return num_samples(np.asarray(X), name)
        raise TypeError(
            f"{name} must be an array, a sparse matrix or a sequence of samples; "
            f"got {type(X).__name__}, which has no length"
        ) from None


def check_chunk_size(chunk_size: int | None) -> int | None:
    """``chunk_size`` (rows per block of the chunked passes): None or an integer >= 1."""
    if chunk_size is None:
        return None
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (numbers.Integral, np.integer)) or chunk_size < 1:
        raise ValueError(f"chunk_size must be None or an integer >= 1, got {chunk_size!r}")
    return int(chunk_size)


def check_strings(X: Any, what: str = "text", name: str = "X", owner: str | None = None) -> list[str]:
    """``X`` as a list of str, or a TypeError naming the first element that is not one.

    ``what`` names the strings in the messages (``"text"``, ``"SMILES"``); a single string
    is refused (it would otherwise be read as a sequence of characters).  ``owner`` (e.g.
    ``"the 'text' kernel"``) is named as what takes the strings.
    """
    takes = f" ({owner} takes a sequence of {what} strings)" if owner else ""
    if isinstance(X, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of {what} strings, not a single string{takes}")
    try:
        texts = list(X)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of {what} strings, got {type(X).__name__}{takes}") from None
    for i, s in enumerate(texts):
        if not isinstance(s, str):
            raise TypeError(f"{name}[{i}] must be a {what} string, got {type(s).__name__}{takes}")
    return texts


def check_paired(X: Samples, Y: Samples, x_name: str = "X", y_name: str = "Y") -> int:
    """Number of samples ``n >= 1`` of two collections that must pair up one to one."""
    if Y is None:
        raise ValueError(f"fit requires y to be passed, but the target y is None: give the outputs {y_name}")
    n, ny = num_samples(X, x_name), num_samples(Y, y_name)
    if n != ny:
        raise ValueError(f"{x_name} and {y_name} have different numbers of samples: {n} and {ny}")
    if n < 1:
        raise ValueError(f"cannot fit on 0 samples: {x_name} is empty")
    return n


def take(X: Samples, idx: ArrayLike) -> Samples:
    """Samples ``X[idx]`` for arrays, sparse matrices, sequences and objects with ``take``."""
    idx = np.asarray(idx)
    if sp.issparse(X) and X.format not in ("csr", "csc"):
        X = X.tocsr()  # coo, dia, dok, ... are not row-indexable
    if isinstance(X, np.ndarray) or sp.issparse(X):
        return X[idx]
    if hasattr(X, "take") and not isinstance(X, (list, tuple)):
        return X.take(idx)
    return [X[int(i)] for i in idx]


def take_slice(X: Samples, sl: slice) -> Samples:
    """Samples ``X[sl]`` for a slice: a view for arrays, sparse matrices and lists."""
    if sp.issparse(X) and X.format not in ("csr", "csc"):
        X = X.tocsr()
    if isinstance(X, (np.ndarray, list, tuple)) or sp.issparse(X):
        return X[sl]
    return take(X, np.arange(sl.start, sl.stop))


def concat_samples(parts: Sequence[Samples]) -> Samples:
    """Concatenate collections of samples along rows (arrays, sparse matrices, sequences,
    or objects whose type has a ``concat(parts)`` class/static method)."""
    parts = list(parts)
    if not parts:
        raise ValueError("nothing to concatenate")
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    if isinstance(first, np.ndarray):
        return np.concatenate(parts, axis=0)
    if sp.issparse(first):
        return sp.vstack(parts, format="csr")
    if isinstance(first, (list, tuple)):
        return [x for p in parts for x in p]
    concat = getattr(type(first), "concat", None)
    if concat is not None:
        return concat(parts)
    raise TypeError(f"cannot concatenate collections of type {type(first).__name__}; give it a "
                    f"concat(parts) static method, or use a list")


def unique_inverse(Y: Samples) -> tuple[np.ndarray, np.ndarray]:
    """Distinct samples of ``Y``: ``(first, inverse)`` with ``Y[i] == Y[first[inverse[i]]]``.

    ``first`` holds the index of the first occurrence of each distinct sample, in order of
    appearance.  Rows of arrays and sparse matrices are compared by value; other samples by
    equality of their hashable form (unhashable samples, e.g. graphs, are all distinct).
    """
    n = num_samples(Y)
    if sp.issparse(Y):
        return _unique_sparse_rows(Y)
    if isinstance(Y, np.ndarray) and Y.dtype == object:
        try:  # numbers stored as objects compare as numbers
            Y = Y.astype(np.float64)
        except (TypeError, ValueError):
            Y = [tuple(np.ravel(y)) if np.ndim(y) else y for y in Y]
    if isinstance(Y, np.ndarray):
        Y2 = np.ascontiguousarray(Y.reshape(n, -1))
        if n == 0:
            return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
        # rows as opaque byte strings: one vectorised sort, no per-row Python work
        rows = Y2.view(np.dtype((np.void, Y2.dtype.itemsize * max(Y2.shape[1], 1)))).ravel() \
            if Y2.shape[1] else np.zeros(n, dtype=np.int8)
        _, first_sorted, inv_sorted = np.unique(rows, return_index=True, return_inverse=True)
        order = np.argsort(first_sorted, kind="stable")  # groups in order of appearance
        relabel = np.empty_like(order)
        relabel[order] = np.arange(order.size)
        return first_sorted[order].astype(np.intp), relabel[inv_sorted.ravel()].astype(np.intp)
    keys = (y if not isinstance(y, (list, np.ndarray)) else tuple(np.ravel(y)) for y in Y)
    seen: dict[Any, int]
    first: list[int]
    seen, first = {}, []
    inverse = np.empty(n, dtype=np.intp)
    try:
        for i, key in enumerate(keys):
            j = seen.setdefault(key, len(first))
            if j == len(first):
                first.append(i)
            inverse[i] = j
    except TypeError:  # unhashable samples
        return np.arange(n), np.arange(n)
    return np.asarray(first, dtype=np.intp), inverse


def _mix64(x):
    """splitmix64 finaliser on uint64 arrays (wrapping)."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _unique_sparse_rows(Y):
    """:func:`unique_inverse` of the rows of a sparse matrix, without densifying it.

    Each row's (column, value) entries are hashed (a 64-bit commutative hash, one
    vectorised pass), rows are grouped by (hash, number of entries), and rows sharing a
    group are compared entry by entry, so the result is exact (a hash collision only
    costs a comparison).
    """
    Y = sp.csr_matrix(Y)
    if not Y.has_canonical_format or (Y.nnz and (Y.data == 0).any()):
        Y = Y.copy()
        Y.sum_duplicates()
        Y.eliminate_zeros()
    n = Y.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
    vals = np.ascontiguousarray(Y.data, dtype=np.float64).view(np.uint64)
    with np.errstate(over="ignore"):
        h = _mix64(_mix64(Y.indices.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)) ^ vals)
    nnz = np.diff(Y.indptr)
    row_h = np.zeros(n, dtype=np.uint64)
    has = nnz > 0
    if Y.nnz:
        with np.errstate(over="ignore"):
            row_h[has] = np.add.reduceat(h, Y.indptr[:-1][has])
    keys = np.stack([row_h, nnz.astype(np.uint64)], axis=1)
    keys = np.ascontiguousarray(keys).view(np.dtype((np.void, 16))).ravel()
    _, first_sorted, inv_sorted = np.unique(keys, return_index=True, return_inverse=True)
    inv_sorted = inv_sorted.ravel()
    group = inv_sorted.astype(np.intp)
    # exact check of the rows that share a key with an earlier row
    counts = np.bincount(group)
    shared = np.flatnonzero(counts[group] > 1)
    if shared.size:
        reps: dict[int, list[int]] = {}
        next_group = first_sorted.size
        ind, dat, ptr = Y.indices, Y.data, Y.indptr
        for i in shared:  # in row order: the first row of a value is its representative
            g = int(group[i])
            row = (ind[ptr[i]:ptr[i + 1]], dat[ptr[i]:ptr[i + 1]])
            for r, rg in reps.setdefault(g, []):
                if np.array_equal(row[0], ind[ptr[r]:ptr[r + 1]]) and np.array_equal(row[1], dat[ptr[r]:ptr[r + 1]]):
                    group[i] = rg
                    break
            else:
                if reps[g]:  # a collision: a new group
                    group[i] = next_group
                    next_group += 1
                reps[g].append((int(i), int(group[i])))
    # groups in order of first appearance
    first_of = np.full(int(group.max()) + 1, n, dtype=np.intp)
    np.minimum.at(first_of, group, np.arange(n))
    used = np.flatnonzero(first_of < n)
    order = used[np.argsort(first_of[used], kind="stable")]
    relabel = np.empty(first_of.size, dtype=np.intp)
    relabel[order] = np.arange(order.size)
    return first_of[order].astype(np.intp), relabel[group]


def unique_indices(Y: Samples) -> np.ndarray:
    """Indices of the first occurrence of each distinct sample of ``Y`` (see :func:`unique_inverse`)."""
    return unique_inverse(Y)[0]


def check_random_state(seed: RandomStateLike) -> np.random.Generator:
    """Turn ``None``, an int, a ``numpy.random.Generator`` or a legacy ``RandomState``
    into a ``Generator``.

    A ``RandomState`` (scikit-learn's convention) is used as a source of entropy: one draw
    from it seeds the generator, so the same ``RandomState`` state gives the same result.
    """
    check_random_state_param(seed)
    if seed is None or isinstance(seed, (numbers.Integral, np.integer)):
        return np.random.default_rng(seed)
    if isinstance(seed, np.random.Generator):
        return seed
    # a RandomState (checked: check_random_state_param)
    return np.random.default_rng(int(cast(np.random.RandomState, seed).randint(2**31 - 1)))


def check_random_state_param(seed: Any) -> None:
    """Check a ``random_state`` parameter without using it (nothing is drawn from a
    generator or a ``RandomState``): None, an int >= 0, a ``numpy.random.Generator`` or a
    ``numpy.random.RandomState``.

    Raises
    ------
    TypeError
        A bool, or another type.
    ValueError
        A negative int.
    """
    if isinstance(seed, bool):
        raise TypeError("random_state must be None, an int, a numpy.random.Generator or a "
                        "numpy.random.RandomState; got a bool")
    if seed is None or isinstance(seed, (numbers.Integral, np.integer)):
        if seed is not None and seed < 0:
            raise ValueError(f"random_state must be a non-negative int, got {seed}")
        return
    if not isinstance(seed, (np.random.Generator, np.random.RandomState)):
        raise TypeError(
            f"random_state must be None, an int, a numpy.random.Generator or a numpy.random.RandomState; "
            f"got {type(seed).__name__}"
        )


def check_finite(X: Any, name: str = "X") -> Any:
    """Raise ``ValueError`` when a numeric array (dense or sparse) holds NaN or inf, naming
    ``name``, the count and the row of the first (dense arrays and CSR matrices)."""
    data = X.data if sp.issparse(X) else X
    if isinstance(data, np.ndarray) and data.dtype.kind in "fc" and not np.isfinite(data).all():
        finite = np.isfinite(data)
        bad = int(np.size(data) - np.count_nonzero(finite))
        first = int(np.argmin(finite.ravel()))  # the first non-finite value, in storage order
        if not sp.issparse(X):
            row: int | None = int(np.unravel_index(first, data.shape)[0]) if data.ndim else None
        elif X.format == "csr":
            row = int(np.searchsorted(X.indptr, first, side="right") - 1)
        else:
            row = None
        where = "" if row is None else f" (the first in row {row})"
        verb = "contain" if name.endswith("s") and not name.endswith("ss") else "contains"
        raise ValueError(f"{name} {verb} {bad} NaN or infinite value(s){where}; expected finite numbers")
    return X


def check_dense(X: Any, name: str = "X") -> Any:
    """``X`` itself, or a TypeError naming ``name`` when it is a scipy sparse matrix or array.

    For the arguments that take dense numbers only (regression targets, weights, the inputs
    of the neural regressors): numpy would read a sparse matrix as a 0-D object array, and
    the error then spoke of "dtype object" or "a sequence".  As scikit-learn's message
    ("Sparse data was passed ..., but dense data is required"), with the conversion to use.
    """
    if sp.issparse(X):
        raise TypeError(f"{name} must be a dense array: got a scipy sparse {type(X).__name__} of shape {X.shape}, "
                        f"but dense data is required; use {name}.toarray() to convert it")
    return X


def check_numeric_array(X: Any, name: str = "X", dtype: DTypeLike = np.float64, owner: str | None = None,
                        ndim: int | None = 2) -> np.ndarray:
    """``X`` as a dense numeric array of ``dtype`` (a new array when converted), checked.

    One validation for every component that takes numbers directly (not through a
    kernel), so that each names the problem the same way instead of leaking numpy's
    internal errors: rows of different lengths (a ragged list), values that are not
    numbers, complex numbers, NaN or inf, and finite values that ``dtype`` cannot hold
    (``X * 1e200`` overflows float32, the dtype of the neural surrogates).

    Parameters
    ----------
    X : array-like
    name : str
        The argument, named in the errors (``"X"``, ``"y"``).
    dtype : float dtype
    owner : str, optional
        What computes in ``dtype`` (e.g. ``"the MLP surrogate"``), named in the range error.
    ndim : int or None
        Required number of dimensions (None: any, at least 1).
    """
    shape_doc = "(n_samples, n_features)" if ndim == 2 else "(n_samples, ...)" if ndim is None else f"{ndim}-D"
    check_dense(X, name)
    try:
        A = np.asarray(X)
    except (TypeError, ValueError):
        A = None
    if A is None or (A.dtype == object and A.ndim == 1 and any(isinstance(r, (list, tuple, np.ndarray)) for r in A)):
        raise ValueError(f"{name} must be a numeric array of shape {shape_doc}; got {type_with_article(X)} "
                         f"whose rows have different lengths (a ragged collection)")
    if A.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {name} must hold real numbers")
    if A.dtype.kind not in "biuf":
        try:
            A = A.astype(np.float64)
        except (TypeError, ValueError) as exc:
            first = next((v for v in A.ravel() if not isinstance(v, (numbers.Real, np.number))), None)
            cls = TypeError if isinstance(exc, TypeError) else ValueError  # objects: a TypeError, like numpy's
            raise cls(f"{name} must hold numbers, got dtype {A.dtype}"
                      + (f" (e.g. {first!r}: {exc})" if first is not None else f" ({exc})")) from None
    if (ndim is not None and A.ndim != ndim) or A.ndim < 1:
        raise ValueError(f"{name} must be a {shape_doc} array, got shape {A.shape}"
                         + (". Reshape your data: X.reshape(-1, 1) for a single feature" if A.ndim == 1 else ""))
    check_finite(A, name)
    dt = np.dtype(dtype)
    if dt.kind == "f" and A.size and A.dtype.itemsize > dt.itemsize:
        big = float(np.max(np.abs(A)))
        if big > np.finfo(dt).max:
            raise ValueError(f"{name} holds values up to {big:.3g}, beyond the {dt.name} range "
                             f"({np.finfo(dt).max:.3g}){f' that {owner} computes in' if owner else ''}; "
                             f"rescale {name} (e.g. standardise it)")
    return np.asarray(A, dtype=dt)


def type_with_article(value: Any) -> str:
    """``"a list"``, ``"an ndarray"``, ``"an int"``: the type of ``value`` after its
    indefinite article, for messages ("got a {type}" read "got a ndarray").

    Parameters
    ----------
    value : object
        The value whose type is named.

    Returns
    -------
    str
    """
    name = type(value).__name__
    # by sound: "an ndarray" (en-dee-array), "a uint8" (you-int)
    return f"{'an' if name[:1].lower() in 'aeio' or name.startswith('nd') else 'a'} {name}"


def is_real(value: Any) -> bool:
    """True for a real number (a Python or numpy int or float), False for anything else,
    bools included: ``bool`` is an ``int`` (and a :class:`numbers.Real`), so without this
    ``coef0=True`` or ``p=True`` would silently be 1.0.  The numeric parameter checks of the
    kernels and sketches test it."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def check_bool(value: Any, name: str) -> bool:
    """Check a flag parameter is a bool (or a numpy bool): anything else (``"no"``, 0, None)
    is a ``ValueError`` naming ``name``, not read by its truth value (``"no"`` is true)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_positive(value: float, name: str, strict: bool = True) -> float:
    """Check a real number is > 0 (or >= 0 when ``strict`` is False).

    Parameters
    ----------
    value : int or float
        The value to check: a finite Python or numpy int or float (see :func:`is_real`).
    name : str
        The argument's name in the error messages.
    strict : bool, default=True
        ``value > 0`` when True, ``value >= 0`` when False.

    Returns
    -------
    float
        ``value`` as a float.

    Raises
    ------
    ValueError
        A bool, another type (a string, a ``fractions.Fraction``, a ``decimal.Decimal``),
        NaN or an infinity, or a value out of range.
    """
    # bool is a numbers.Real: without this, lam=True would silently become 1.0
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be a finite real number, not a bool; got {value!r}")
    # (is_real: another numbers.Real, e.g. a Fraction, ended in a TypeError of np.isfinite)
    if not is_real(value) or not np.isfinite(value):
        raise ValueError(f"{name} must be a finite real number, got {value!r}")
    if (strict and value <= 0) or (not strict and value < 0):
        raise ValueError(f"{name} must be {'>' if strict else '>='} 0, got {value!r}")
    return float(value)


def check_integer(value: Any, name: str, low: int = 1) -> int:
    """Check ``value`` is an integer >= ``low`` (bools and floats refused, as sizes and
    counts are everywhere): a ``ValueError`` naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def check_fraction(p: float, name: str = "p") -> float:
    """Check ``p`` is a real number in (0, 1] (a bool is refused: True is not 1.0)."""
    if not is_real(p):
        raise ValueError(f"{name} must be a real number in (0, 1], got {p!r}")
    if not (0 < p <= 1):
        raise ValueError(f"{name} must lie in (0, 1], got {p!r}")
    return float(p)


def check_params_mapping(params: Any, name: str) -> dict[str, Any]:
    """A ``*_params`` argument (keyword arguments of a component given by name) as a new dict.

    None is an empty dict; anything but a mapping is a TypeError naming ``name`` (``dict('abc')``
    would otherwise fail with "dictionary update sequence element #0 has length 1").
    """
    if params is None:
        return {}
    if not isinstance(params, collections.abc.Mapping):
        raise TypeError(f"{name} must be a dict of parameters (name -> value) or None, "
                        f"got {type(params).__name__} {params!r}")
    return dict(params)


def check_quantile_levels(tau: float | ArrayLike, name: str = "quantile levels") -> np.ndarray:
    """Quantile levels as a 1-D float array, each strictly inside (0, 1); errors name ``name``
    (an estimator's parameter, e.g. ``taus``): a TypeError for what is not numbers, else a
    ValueError."""
    expected = "a quantile level or a non-empty 1-D sequence of levels strictly inside (0, 1)"
    if tau is None or isinstance(tau, (str, bytes)):
        raise TypeError(f"{name} must be {expected}, got {tau!r}")
    try:
        t = np.asarray(tau)
    except (TypeError, ValueError):  # rows of different lengths
        raise ValueError(f"{name} must be {expected}, got a ragged collection {tau!r}") from None
    if t.dtype.kind not in "iuf":  # strings, objects, booleans
        raise TypeError(f"{name} must be {expected}, got values of dtype {t.dtype}: {tau!r}")
    t = np.atleast_1d(t.astype(np.float64, copy=False))
    if t.ndim != 1 or t.size == 0:
        raise ValueError(f"{name} must be {expected}, got shape {np.shape(tau)}")
    if not np.all(np.isfinite(t)) or np.any(t <= 0) or np.any(t >= 1):
        raise ValueError(f"{name} must lie strictly inside (0, 1), got {t.tolist()}")
    return t


def iter_chunks(n: int, chunk_size: int) -> Iterator[slice]:
    """Yield ``slice`` objects covering ``range(n)`` in blocks of ``chunk_size`` rows."""
    chunk_size = max(1, int(chunk_size))
    for start in range(0, n, chunk_size):
        yield slice(start, min(n, start + chunk_size))


def resolve_dtype(dtype: DTypeLike, name: str = "dtype") -> np.dtype:
    """Accept ``"float32"``, ``"float64"``, ``np.float32`` or ``np.float64``; anything else
    is a ValueError naming the argument (``name``)."""
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError):  # not a dtype at all ('nope', a dict, ...)
        raise ValueError(f"{name} must be float32 or float64, got {dtype!r}") from None
    # (no ``None`` sentinel in the test: numpy's float64 dtype compares equal to None)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"{name} must be float32 or float64, got {dtype!r}")
    return dt


class NamedPrepare:
    """A kernel's ``prepare`` whose errors name the estimator argument (``X``, ``Y``, ...).

    Kernels word their messages without the argument ("the samples contain 2 NaN ...");
    the models wrap ``prepare`` so that the user reads "Y contains 2 NaN ...".
    Picklable (the Dask executor prepares partitions on the workers).
    """

    def __init__(self, prepare: Callable[[Any], Any], name: str) -> None:
        self.prepare, self.name = prepare, name

    def __call__(self, data: Samples) -> Any:
        try:
            return self.prepare(data)
        except (ValueError, TypeError) as exc:
            raise reword_error(exc, name_error(str(exc), self.name))


def reword_error(exc: BaseException, msg: str) -> BaseException:
    """``exc`` itself, now carrying the message ``msg`` (to re-raise it with more context).

    Never builds a new instance of ``type(exc)``: a constructor may take other arguments
    (``MoleculeReadError(index, record, reason)``) or none, and a plugin's exception type can
    be anything.  The same object keeps its type, attributes, cause and traceback.  When the
    type prints its one string argument the default way (``BaseException.__str__``), that
    argument becomes ``msg``; otherwise (a custom ``__str__``, several arguments) ``msg`` is
    attached as a PEP 678 note, which tracebacks and :func:`error_text` show.
    """
    if type(exc).__str__ is BaseException.__str__ and len(exc.args) == 1 and isinstance(exc.args[0], str):
        exc.args = (msg,)
    elif msg != str(exc) and msg not in getattr(exc, "__notes__", ()):
        exc.add_note(msg)
    return exc


def error_text(exc: BaseException) -> str:
    """One line for a user-facing error: ``str(exc)`` followed by its PEP 678 notes."""
    parts = [str(exc)] + [str(n) for n in getattr(exc, "__notes__", ()) or ()]
    return "; ".join(dict.fromkeys(p for p in parts if p)) or type(exc).__name__


class RowError(Exception):
    """Base of the errors that name a row (a sample, a record) by its position ``index`` in
    the collection given to the code that raised them.

    Chunked work hands that code rows ``start:stop`` of a larger input -- a chunk of a pass,
    a partition on a Dask worker, a task of a process pool -- so the row it names is a row
    *of its chunk*.  Whoever cut the chunk knows ``start`` and renumbers the error for the
    whole input (:func:`row_offset`; the executors do it for every pass, partition and task
    map), then lets it propagate: the user gets the same exception object, of its own type
    (``except MoleculeReadError`` works whatever the executor), naming the row of the input
    they gave.

    A subclass keeps the row in ``index`` and names it in its message through
    :meth:`row_text`; one that names other rows too (e.g. "2 more invalid records, at
    [5, 9]") extends :meth:`shift_rows`.
    """

    index: int

    def row_text(self) -> str:
        """The part of the message that names the row(s): what renumbering rewrites."""
        return f"row {self.index}"

    def shift_rows(self, offset: int) -> None:
        """Add ``offset`` to every row number the error holds (here: ``index``)."""
        self.index += offset

    def add_row_offset(self, offset: int) -> RowError:
        """Renumber the error raised on rows ``offset:...`` for the whole input; returns it.

        :meth:`row_text` is replaced in the message -- in the arguments (a message
        reworded with context, ``"Y: ..."``, keeps its context) and in the PEP 678 notes.
        """
        offset = int(offset)
        if offset == 0:
            return self
        old = self.row_text()
        self.shift_rows(offset)
        new = self.row_text()
        found = any(isinstance(a, str) and old in a for a in self.args)
        self.args = tuple(a.replace(old, new, 1) if isinstance(a, str) else a for a in self.args)
        notes = getattr(self, "__notes__", None)
        if notes:
            found = found or any(isinstance(n, str) and old in n for n in notes)
            self.__notes__ = [n.replace(old, new, 1) if isinstance(n, str) else n for n in notes]
        if not found:  # a message reworded beyond recognition: say the row all the same
            self.add_note(f"in the whole input: {new}")
        return self


@contextlib.contextmanager
def row_offset(start: int) -> Iterator[None]:
    """Context of code run on the rows from ``start`` of a larger input: a :class:`RowError`
    raised inside is renumbered for the whole input (``add_row_offset(start)``) and
    propagates, the same object; any other error passes unchanged.

    >>> class BadRow(RowError):
    ...     def __init__(self, index):
    ...         self.index = index
    ...         super().__init__(f"no value at row {index}")
    >>> try:
    ...     with row_offset(100):      # working on the rows 100: of the input
    ...         raise BadRow(3)        # the chunk's row 3
    ... except BadRow as exc:
    ...     print(exc)
    no value at row 103
    """
    try:
        yield
    except RowError as exc:
        exc.add_row_offset(start)
        raise


def name_error(msg, name):
    """``msg`` of a kernel or validation error, rewritten to name the argument ``name``."""
    for generic, verb in (("the samples contain", "contains"), ("the samples have", "has"), ("the samples", "")):
        if msg.startswith(generic):
            return f"{name} {verb}{msg[len(generic):]}" if verb else f"{name}{msg[len(generic):]}"
    if msg.startswith(f"{name} ") or msg.startswith(f"{name}:"):
        return msg
    return f"{name}: {msg}"


def copy_with_coef(estimator: Any, coef: ArrayLike, shape: tuple[int, ...],
                   lam: float | None = None) -> tuple[Any, np.ndarray]:
    """A shallow copy of a fitted ``estimator`` for new coefficients (the models' ``with_coef``).

    Checks ``coef`` (finite, of ``shape``) and records ``lam`` (> 0) as the copy's
    parameter; the caller installs the coefficients.  Returns ``(copy, coef as float64)``.
    """
    import copy

    coef = np.asarray(coef, dtype=np.float64)
    if coef.shape != tuple(shape):
        raise ValueError(f"coef must have shape {tuple(shape)}, got {coef.shape}")
    if not np.isfinite(coef).all():
        raise ValueError("coef contains NaN or infinite values")
    new = copy.copy(estimator)
    if lam is not None:
        new.lam = check_positive(lam, "lam")
    return new, coef


# ----------------------------------------------------------------------------- fitted state
# A model may be shared between threads: one predicts while another refits it.  A fit
# therefore builds its whole learned state on a copy and publishes it with one reference
# assignment (``obj.__dict__ = new``, atomic), and the readers run on the attribute
# dictionary they started with (never mutated afterwards: the next fit brings a new one).
# A reader thus sees the old model or the new one, never a mix; and a failed fit
# publishes nothing, which leaves the previous model intact.

def atomic_fit(fit: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator for an estimator's ``fit``: build the new state aside, publish it at once.

    The decorated ``fit`` runs on a shallow copy of the estimator (its parameters and its
    current state); when it returns, the copy's attribute dictionary replaces the
    estimator's in one assignment.  If it raises, nothing is published.  Readers
    decorated with :func:`consistent_read` see either the state before or the one after.
    A fit must not modify objects of the previous state in place (each fit makes its
    own arrays, kernels and sub-estimators).
    """

    @functools.wraps(fit)
    def fit_aside(self, *args, **kwargs):
        aside = object.__new__(type(self))
        aside.__dict__.update(self.__dict__)
        result = fit(aside, *args, **kwargs)
        self.__dict__ = aside.__dict__  # one reference swap: the new model, all at once
        return self if result is aside else result

    return fit_aside


def consistent_read(method: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator for methods reading the fitted state (``predict``, ``transform``, ...).

    The method runs on a view holding the attribute dictionary of the moment it was
    called, so that a fit publishing a new state meanwhile (:func:`atomic_fit`) does not
    change what the rest of the call reads.  Attributes the method sets (caches) go to
    that same dictionary, as they would without the decorator.
    """

    @functools.wraps(method)
    def on_one_state(self, *args, **kwargs):
        view = object.__new__(type(self))
        view.__dict__ = self.__dict__  # shared, not copied: one state for the whole call
        return method(view, *args, **kwargs)

    return on_one_state
