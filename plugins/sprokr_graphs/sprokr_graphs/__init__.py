"""sprokr-graphs: Weisfeiler-Lehman graph kernels for sprokr.

Registered through the ``sprokr`` entry-point group (module :mod:`sprokr_graphs.plugin`)
as input and output kernels ``wl`` (WL subtree), ``core_wl`` (its core variant) and
``grakel`` (any GraKeL kernel, evaluated by GraKeL).  ``wl``/``core_wl`` use explicit
sparse feature vectors computed once per graph, equal to GraKeL's values.
"""

# Submodules are imported on first attribute access (PEP 562), so that loading the
# plugin's entry point while the registry is built does not import the domain library.
from sprokr.registry import lazy_exports

_EXPORTS = {
    "WLKernel": ".wl",
    "CoreWLKernel": ".wl",
    "GrakelKernel": ".grakel_kernel",
    "WLFeatures": ".wl",
    "wl_features": ".wl",
    "resolve_labels": ".wl",
    "CHEM_NODE_LABELS": ".wl",
    "CHEM_EDGE_LABEL": ".wl",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
