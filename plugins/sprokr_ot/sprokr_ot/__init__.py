"""sprokr-ot: fused Gromov-Wasserstein tools for sprokr (POT).

Registered through the ``sprokr`` entry-point group (module :mod:`sprokr_ot.plugin`) as
the decoder ``fgw_barycenter``: predicts new graphs as FGW barycenters of the training
graphs weighted by alpha(x).  Also :func:`fgw_distance` between labelled graphs.
"""

# Submodules are imported on first attribute access (PEP 562), so that loading the
# plugin's entry point while the registry is built does not import the domain library.
from sprokr.registry import lazy_exports

_EXPORTS = {
    "FGWBarycenterDecoder": ".fgw",
    "fgw_distance": ".encoding",
    "graph_to_fgw": ".encoding",
    "fgw_to_graph": ".encoding",
    "label_alphabet": ".encoding",
    "edge_order_weights": ".fgw",
    "decode_edges": ".fgw",
    "repair_molecule": ".fgw",
    "ModelScore": ".search",
    "molecule_edits": ".search",
    "model_guided_search": ".search",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
