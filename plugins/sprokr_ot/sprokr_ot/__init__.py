"""sprokr-ot: fused Gromov-Wasserstein tools for sprokr (POT).

Registered through the ``sprokr`` entry-point group (module :mod:`sprokr_ot.plugin`) as
the decoder ``fgw_barycenter``: predicts new graphs as FGW barycenters of the training
graphs weighted by alpha(x).  Also :func:`fgw_distance` between labelled graphs.
"""

# Submodules are imported on first attribute access (PEP 562), so that loading the
# plugin's entry point while the registry is built does not import the domain library.
_EXPORTS = {
    "FGWBarycenterDecoder": ".fgw",
    "fgw_distance": ".fgw",
    "graph_to_fgw": ".fgw",
    "fgw_to_graph": ".fgw",
    "label_alphabet": ".fgw",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_EXPORTS))
