"""Type aliases used in the annotations of sprokr's public API (sprokr ships ``py.typed``).

>>> from sprokr.types import RandomStateLike
>>> def draw(n: int, random_state: RandomStateLike = None) -> float: ...
"""
from __future__ import annotations

import os
from typing import Any, Mapping, Optional, Union

import numpy as np

__all__ = ["Samples", "RandomStateLike", "PathLike", "ComponentParams"]

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
