"""Sketches: random projections ``R`` (m x n) stored as ``R = W S`` (decomposition trick).

:class:`SketchMatrix` (the drawn ``R``) is defined in :mod:`sprokr.numerics` and re-exported here.
"""
from .base import Sketch, SketchMatrix, check_sketch_for, drawing_state, make_sketch, resolve_sketch
from .random import (
    PSG,
    PSR,
    Accumulation,
    CountSketch,
    GaussianSketch,
    IdentitySketch,
    PSparsified,
    SubSample,
)

BUILTIN_SKETCHES = {
    cls.name: cls
    for cls in (SubSample, GaussianSketch, PSparsified, PSR, PSG, Accumulation, CountSketch, IdentitySketch)
}
BUILTIN_SKETCHES["nystrom"] = SubSample

__all__ = ["Sketch", "SketchMatrix", "resolve_sketch", "make_sketch", "check_sketch_for", "drawing_state", "BUILTIN_SKETCHES", "SubSample", "GaussianSketch", "PSparsified",
           "PSR", "PSG", "Accumulation", "CountSketch", "IdentitySketch"]
