"""The ``Kernel`` protocol every input and output kernel follows.

A kernel works in two steps so that expensive per-sample work (parsing SMILES, computing
fingerprints, standardising) happens once per sample, never once per pair:

``prepare(X)``
    validate the raw samples and return a *prepared collection* (an array, a sparse
    matrix, a list, ... -- anything :func:`sprokr.utils.take` can index).
``pairwise(A, B)``
    the Gram block between two prepared collections, an ndarray of shape
    ``(len(A), len(B))`` in ``self.dtype``.

``__call__(X, Y=None)`` chains both for convenience.  ``diag(A)`` returns ``k(a, a)``.
A kernel whose values satisfy ``k(x, x) = 1`` sets ``normalized = True`` (decoders then
skip the ``-k(y, y)/2`` term).

Kernels are scikit-learn ``BaseEstimator`` objects: their parameters are constructor
arguments, so ``get_params``/``clone`` and grid searches over kernel parameters work.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional
import numpy as np
from sklearn.base import BaseEstimator

from ..registry import get_registry
from ..utils import check_finite, check_params_mapping, num_samples, resolve_dtype, reword_error, type_with_article

if TYPE_CHECKING:  # imported for the annotations only
    from typing import Self
    from ..types import Samples

__all__ = ["Kernel", "VectorKernel", "fit_on_training_inputs", "describe_samples", "resolve_kernel",
           "model_dtype"]


class Kernel(BaseEstimator):
    """Base class of all kernels.  Subclasses implement ``pairwise`` (and usually ``prepare``)."""

    #: name under which the kernel is registered (set by subclasses)
    name: Optional[str] = None
    #: True when k(x, x) == 1 for every x
    normalized = False
    #: True when ``pairwise`` / ``diag`` may run in several threads at once (a call changes
    #: no state): a chunked pass may then fold its chunks in parallel threads
    #: (:attr:`sprokr.numerics.ChunkTask.thread_safe`).  False by default: a kernel with a
    #: cache or a lazily built vocabulary must not set it.
    thread_safe = False
    #: True for kernels with statistics learned from data (``fit(X)``, fitted state ending
    #: in ``_``, e.g. the text kernel's idf): a model fits an unfitted one on its training
    #: inputs (see :func:`fit_on_training_inputs`)
    learns_from_data = False

    def check_params(self) -> Self:
        """Validate the kernel's parameters (clear errors naming them).

        Called when a model resolves the kernel at ``fit``, before any fitted state
        changes; the default accepts anything.  Returns self.
        """
        return self

    def prepare(self, X: Samples) -> Any:
        """Validate raw samples and return the prepared collection (default: unchanged).

        Error messages should not name the estimator argument (``X``, ``Y``, candidates):
        the models prefix it.
        """
        num_samples(X)
        return X

    def pairwise(self, A: Any, B: Any) -> np.ndarray:  # pragma: no cover - abstract
        """Gram block between prepared collections ``A`` and ``B``: ndarray (len(A), len(B))."""
        raise NotImplementedError

    def prepare_outputs(self, Y: Samples) -> Any:
        """``prepare`` for the OUTPUT side (training outputs, candidates); default: ``prepare``.

        Models prepare outputs through this method, so that an output kernel may accept
        forms an input kernel rejects (vector kernels take a 1-D array as one scalar
        output per sample).
        """
        return self.prepare(Y)

    def prepare_support(self, A: Any) -> Any:
        """Representation of prepared samples that will be the *right* operand of many
        ``pairwise`` calls (a model's support points).  Default: unchanged."""
        return A

    def memo(self, name: str, samples: Any, compute: Callable[[], Any], key: tuple = ()) -> Any:
        """``compute()``: a result derived from this kernel's values on ``samples``.

        Where a result depends only on the kernel, some samples and a few arrays (``key``:
        e.g. a sketch matrix), computations call it through this method, so that a kernel
        serving a model selection (:class:`sprokr.model_selection.CachedKernel`) can keep it
        for the next fit on the same samples.  The default keeps nothing.  A kept result is
        shared: callers must not modify it in place.
        """
        return compute()

    def diag(self, A: Any) -> np.ndarray:
        """``k(a, a)`` for every prepared sample: ndarray of shape (len(A),)."""
        if self.normalized:
            return np.ones(num_samples(A), dtype=self._dtype())
        from ..utils import iter_chunks, take_slice

        # generic fallback: diagonals of small diagonal blocks (subclasses override it
        # with an O(n) formula when they have one)
        n = num_samples(A)
        out = np.empty(n, dtype=np.float64)
        for sl in iter_chunks(n, 256):
            out[sl] = np.diag(np.asarray(self.pairwise(take_slice(A, sl), take_slice(A, sl))))
        return out

    def __call__(self, X: Samples, Y: Samples | None = None) -> np.ndarray:
        """Gram matrix between raw samples ``X`` and ``Y`` (``Y=None``: ``X`` with itself).

        The parameters are checked first (:meth:`check_params`), as a model resolving the
        kernel checks them: ``GaussianKernel(gamma=-1)(X)`` is refused, not a Gram of NaN."""
        self.check_params()
        A = self.prepare(X)
        B = A if Y is None else self.prepare(Y)
        return self.pairwise(A, B)

    def _dtype(self):
        return resolve_dtype(getattr(self, "dtype", np.float64))


class VectorKernel(Kernel):
    """Kernels on real vectors: dense ``(n, d)`` arrays or scipy sparse matrices.

    ``prepare`` converts to a 2-D float array (or CSR matrix) in ``dtype`` and rejects
    NaN/inf.  Sparse inputs stay sparse: products are sparse x dense (no densification
    of the n x d data).
    """

    def prepare_outputs(self, Y: Samples) -> Any:
        """Outputs: a 1-D array is one scalar output per sample, shape (n, 1)."""
        import scipy.sparse as sp

        if sp.issparse(Y) or not (hasattr(Y, "shape") or isinstance(Y, (list, tuple))):
            return self.prepare(Y)
        try:
            arr = np.asarray(Y)
        except (TypeError, ValueError):  # ragged: sequences of different lengths, graphs, ...
            arr = None
        if arr is None or arr.dtype.kind in "OUSV":
            try:
                arr = np.asarray(Y, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"Unknown label type: the output kernel {self.name!r} takes numeric outputs "
                                 f"(arrays of shape (n,) or (n, d)); got {describe_samples(Y)}") from None
        return self.prepare(arr.reshape(-1, 1) if arr.ndim == 1 else arr)

    def prepare(self, X: Samples) -> Any:
        import scipy.sparse as sp

        dt = self._dtype()
        if not sp.issparse(X):
            try:
                X = np.asarray(X)
            except (TypeError, ValueError):
                raise TypeError(f"kernel {self.name!r} expects a numeric array or sparse matrix of shape "
                                f"(n_samples, n_features); got {describe_samples(X)}") from None
        if X.dtype.kind == "c":
            raise ValueError(f"Complex data not supported: kernel {self.name!r} takes real numbers")
        if sp.issparse(X):
            X = sp.csr_matrix(X, dtype=dt)
        else:
            try:
                X = np.asarray(X, dtype=dt)
            except (TypeError, ValueError) as exc:
                raise TypeError(
                    f"kernel {self.name!r} expects a numeric array or sparse matrix of shape "
                    f"(n_samples, n_features); got {describe_samples(X)} ({exc})"
                ) from None
            if X.ndim != 2:
                raise ValueError(
                    f"kernel {self.name!r} expects a 2-D array (n_samples, n_features); got a {X.ndim}-D "
                    f"array of shape {X.shape}. Reshape your data: X.reshape(-1, 1) for a single feature, "
                    f"X.reshape(1, -1) for a single sample"
                )
        if X.shape[1] == 0:
            raise ValueError(f"the samples have 0 feature(s) (shape={X.shape}) while a minimum of 1 is "
                             f"required by kernel {self.name!r}")
        check_finite(X, "the samples")
        return X

    def prepare_support(self, A: Any) -> Any:
        """Support points: a CSR support carries a memo of its side of the Gram products
        (column densities, split by dense columns, transpose, row norms) across calls."""
        from ._gram import support_operand

        return support_operand(A)


def describe_samples(X: Any) -> str:
    """What non-numeric samples are, for the vector kernels' errors ("a list of str (e.g. 'CCO')")."""
    first = None
    try:
        flat = np.ravel(X) if isinstance(X, np.ndarray) else list(X)
        first = next((x for x in flat if not isinstance(x, (int, float, np.number))), None)
    except (TypeError, ValueError):
        pass
    what = type_with_article(X)
    if first is not None:
        text = repr(str(first)) if isinstance(first, str) else ""
        kind = "str" if isinstance(first, str) else type(first).__name__
        what += f" holding {kind} values{f' (e.g. {text[:40]})' if text else ''}"
        if isinstance(first, str):
            what += "; strings take a string kernel (e.g. 'text', or 'morgan_tanimoto' for SMILES)"
        elif isinstance(first, (list, tuple, np.ndarray)):
            what += " of different lengths (a ragged collection)"
        elif hasattr(first, "nodes") and hasattr(first, "edges"):
            what += "; graphs take a graph kernel (e.g. 'wl', or 'morgan_tanimoto' for molecule graphs)"
    return what


def fit_on_training_inputs(kernel: Kernel, X: Samples) -> Kernel:
    """The kernel a model uses on training inputs ``X``.

    A kernel with ``learns_from_data`` that has not been fitted yet is cloned (the user's
    object is never modified) and fitted on ``X``; any other kernel, or one the user
    fitted already (on other data, on purpose), is returned as is.

    Parameters
    ----------
    kernel : Kernel
        The model's kernel (never modified).
    X : samples
        The training inputs.

    Returns
    -------
    Kernel
        ``kernel`` itself, or a fitted clone of it.
    """
    from sklearn.base import clone
    from sklearn.utils.validation import check_is_fitted
    from sklearn.exceptions import NotFittedError

    if not getattr(kernel, "learns_from_data", False):
        return kernel
    try:
        check_is_fitted(kernel)
        return kernel
    except NotFittedError:
        return clone(kernel).fit(X)


def resolve_kernel(spec: str | Kernel, params: Mapping[str, Any] | None, side: str, dtype: np.dtype,
                   name: str | None = None) -> Kernel:
    """Kernel instance for one side of a model from a registered name (+ params) or an instance.

    Parameters
    ----------
    spec : str or Kernel
        Registered name (``sprokr plugins``) or a kernel instance (returned unchanged).
    params : dict or None
        Factory parameters (only with a name).
    side : {"input", "output"}
    dtype : numpy dtype
        Passed as ``dtype=`` to kernels given by name that take one (unless in ``params``).
    name : str, optional
        The caller's parameter holding ``spec`` (default ``f"{side}_kernel"``; ``"kernel"``
        for single-kernel estimators); errors name it and ``f"{name}_params"``.
    """
    kind = f"{side}_kernel"
    name = kind if name is None else name
    params = check_params_mapping(params, f"{name}_params")
    try:
        if isinstance(spec, str):
            reg = get_registry()
            accepted = reg.factory_parameters(reg.get(kind, spec))
            if accepted is not None and "dtype" in accepted:  # lazily registered kernels too
                params.setdefault("dtype", dtype.name)
        kernel = get_registry().create(kind, spec, params, base=Kernel)
    except (ValueError, TypeError) as exc:
        if name == kind:  # the registry's messages name the kind, which is then the parameter
            raise
        raise reword_error(exc, f"{name}: {exc}")
    try:
        kernel.check_params()
    except (ValueError, TypeError) as exc:
        raise reword_error(exc, f"{name} {spec if isinstance(spec, str) else type(spec).__name__!r}: {exc}")
    return kernel


def model_dtype(kernel: Kernel, dtype: Any) -> np.dtype:
    """The precision a model computes in: ``dtype`` (the model's parameter), or float32 when
    its input ``kernel`` computes in float32 (``dtype="float32"`` in the kernel's parameters
    or instance).

    Such a kernel is a float32 request like the model's own parameter: the model checks it
    and falls back to float64 kernel values when it costs accuracy.

    Parameters
    ----------
    kernel : Kernel
        The model's input kernel (its ``dtype`` attribute, if any, is read).
    dtype : numpy dtype or str
        The model's ``dtype`` parameter.

    Returns
    -------
    numpy.dtype
    """
    own = getattr(kernel, "dtype", None)
    try:
        if own is not None and np.dtype(own) == np.float32:
            return np.dtype(np.float32)
    except TypeError:  # a kernel attribute that is not a numpy dtype: the model's parameter
        pass
    return np.dtype(dtype)
