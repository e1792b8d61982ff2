"""Type aliases used in the annotations of sprokr's public API (sprokr ships ``py.typed``).

>>> from sprokr.types import RandomStateLike
>>> def draw(n: int, random_state: RandomStateLike = None) -> float: ...

Also the small protocols through which the lower layers (``sprokr.numerics``) name the
components of the higher ones without importing them (``docs/architecture.md``):
:class:`KernelLike` (what a chunked pass needs of a :class:`sprokr.kernels.Kernel`) and
:class:`LossLike` (what the machines' solvers need of a :class:`sprokr.losses.Loss`).
"""
from __future__ import annotations

import os
from typing import Any, Mapping, Optional, Protocol, Union

import numpy as np

__all__ = ["Samples", "RandomStateLike", "PathLike", "ComponentParams", "KernelLike", "LossLike"]

#: A collection of samples, indexable by row: a NumPy array or SciPy sparse matrix (rows
#: are samples), or a sequence of objects (strings, graphs, molecules ...).  What a model
#: accepts is decided by its kernels, so the annotation cannot be narrower than ``Any``.
Samples = Any

#: Seed of a random draw: ``None`` (fresh entropy), an int, a ``numpy.random.Generator``
#: or a legacy ``numpy.random.RandomState`` (see :func:`sprokr.utils.check_random_state`).
RandomStateLike = Union[None, int, np.integer, np.random.Generator, np.random.RandomState]

#: A file system path.
PathLike = Union[str, "os.PathLike[str]"]

#: Parameters of a component given by registered name (``input_kernel_params`` ...).
ComponentParams = Optional[Mapping[str, Any]]


class KernelLike(Protocol):
    """A kernel as the numerics use it (:class:`sprokr.kernels.Kernel` is one).

    ``pairwise(A, B)`` is the Gram block (len(A), len(B)) of two prepared collections,
    ``diag(A)`` the values ``k(a, a)``; ``normalized`` is True when ``k(x, x) = 1``;
    ``prepare_support(A)`` the form of a model's support points as right operand.
    """

    normalized: bool

    def pairwise(self, A: Any, B: Any) -> Any: ...

    def diag(self, A: Any) -> Any: ...

    def prepare_outputs(self, Y: Any) -> Any: ...

    def prepare_support(self, A: Any) -> Any: ...

    def get_params(self, deep: bool = True) -> dict[str, Any]: ...


class LossLike(Protocol):
    """A loss as the kernel machines' solvers use it (:class:`sprokr.losses.Loss` is one).

    ``value(P, Y)`` (n,) and ``gradient(P, Y)`` (n, d) of predictions ``P`` (n, d) against
    targets ``Y``; ``conjugate`` / ``dual_box`` / ``smoothed`` return None when the loss
    has no such form (see :class:`sprokr.losses.Loss`).
    """

    smooth: bool

    def value(self, P: np.ndarray, Y: np.ndarray) -> np.ndarray: ...

    def gradient(self, P: np.ndarray, Y: np.ndarray) -> np.ndarray: ...

    def conjugate(self, A: np.ndarray, Y: np.ndarray) -> np.ndarray | None: ...

    def dual_box(self, A: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None: ...

    def smoothed(self, mu: float) -> LossLike | None: ...

    def curvature(self, P: np.ndarray, Y: np.ndarray) -> np.ndarray | None: ...

    def piecewise_linear(self, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None: ...
