"""Estimators: the IOKR family (IOKR, SIOKR, ISOKR, SISOKR)."""
from .sisokr import IOKR, ISOKR, SIOKR, SISOKR
from .sketched_features import SketchedFeatures

__all__ = ["IOKR", "SIOKR", "ISOKR", "SISOKR", "SketchedFeatures"]
