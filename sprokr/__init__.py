"""sprokr: plugin-based structured prediction with kernel-induced losses, scaled by sketching.

>>> from sprokr import SISOKR
>>> model = SISOKR(input_kernel="gaussian", output_kernel="gaussian",
...                input_sketch="subsample", m_x=200, output_sketch="psg", m_y=50,
...                output_sketch_params={"p": 0.01}, random_state=0)

Domain libraries (RDKit, GraKeL, POT, torch) are only imported by the plugins that need them.

``import sprokr`` is cheap: the public names below (and the subpackages, ``sprokr.kernels``
...) are imported on first access (PEP 562), so the command line and plugin discovery do
not pay for scikit-learn or SciPy's statistics.  This package is the top of the layers of
``docs/architecture.md``.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .version import __version__

if TYPE_CHECKING:  # for type checkers only: at run time the names are imported on first use
    from .decoders import CandidateIndex, CandidateSets, Decoded
    from .hookspecs import hookimpl
    from .kernels import Kernel
    from .models import (
        DSOKR,
        IOKR,
        ISOKR,
        SIOKR,
        SISOKR,
        DSOKREnsemble,
        JointQuantileRegressor,
        RFFKernelMachine,
        SketchedKernelMachine,
    )
    from .persistence import load
    from .registry import get_registry, list_components
    from .sketches import Sketch, SketchMatrix

__all__ = [
    # structured prediction
    "IOKR", "SIOKR", "ISOKR", "SISOKR", "DSOKR", "DSOKREnsemble",
    # sketched kernel machines
    "SketchedKernelMachine", "JointQuantileRegressor", "RFFKernelMachine",
    # building blocks
    "Kernel", "Sketch", "SketchMatrix", "CandidateIndex", "CandidateSets", "Decoded",
    # the safe model format (model.save(path) / sprokr.load(path))
    "load",
    # plugin host
    "hookimpl", "get_registry", "list_components", "__version__",
]

#: public name -> the submodule that defines it (imported on first access)
_EXPORTS = {
    **dict.fromkeys(("IOKR", "SIOKR", "ISOKR", "SISOKR", "DSOKR", "DSOKREnsemble", "SketchedKernelMachine",
                     "JointQuantileRegressor", "RFFKernelMachine"), ".models"),
    "Kernel": ".kernels",
    "Sketch": ".sketches",
    "SketchMatrix": ".sketches",
    "CandidateIndex": ".decoders",
    "CandidateSets": ".decoders",
    "Decoded": ".decoders",
    "load": ".persistence",
    "hookimpl": ".hookspecs",
    "get_registry": ".registry",
    "list_components": ".registry",
}

#: submodules reachable as attributes (``sprokr.kernels``) without importing them first
_SUBMODULES = frozenset({
    "cli", "datasets", "decoders", "hookspecs", "io", "kernels", "losses", "metrics", "model_selection",
    "models", "numerics", "persistence", "plotting", "progress", "registry", "selection", "sketches",
    "types", "utils", "version",
})


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later accesses skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | _SUBMODULES)
