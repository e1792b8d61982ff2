"""Sketches: random projections ``R`` (m x n) stored as ``R = W S`` (decomposition trick)."""
from .base import Sketch, SketchMatrix
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

__all__ = ["Sketch", "SketchMatrix", "BUILTIN_SKETCHES", "SubSample", "GaussianSketch", "PSparsified",
           "PSR", "PSG", "Accumulation", "CountSketch", "IdentitySketch"]
