"""sprokr-graphs: Weisfeiler-Lehman graph kernels for sprokr.

Registered through the ``sprokr`` entry-point group (module :mod:`sprokr_graphs.plugin`)
as input and output kernels ``wl`` (WL subtree), ``core_wl`` (its core variant) and
``grakel`` (any GraKeL kernel, evaluated by GraKeL).  ``wl``/``core_wl`` use explicit
sparse feature vectors computed once per graph, equal to GraKeL's values.
"""
from .wl import CoreWLKernel, GrakelKernel, WLFeatures, WLKernel, wl_features

__all__ = ["WLKernel", "CoreWLKernel", "GrakelKernel", "WLFeatures", "wl_features"]
