"""sprokr: plugin-based structured prediction with kernel-induced losses, scaled by sketching.

>>> from sprokr import SISOKR
>>> model = SISOKR(input_kernel="gaussian", output_kernel="gaussian",
...                input_sketch="subsample", m_x=200, output_sketch="psg", m_y=50,
...                output_sketch_params={"p": 0.01}, random_state=0)

Domain libraries (RDKit, GraKeL, POT, torch) are only imported by the plugins that need them.
"""
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

__version__ = "0.1.0"

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
