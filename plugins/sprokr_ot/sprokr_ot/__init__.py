"""sprokr-ot: fused Gromov-Wasserstein tools for sprokr (POT).

Registered through the ``sprokr`` entry-point group (module :mod:`sprokr_ot.plugin`) as
the decoder ``fgw_barycenter``: predicts new graphs as FGW barycenters of the training
graphs weighted by alpha(x).  Also :func:`fgw_distance` between labelled graphs.
"""
from .fgw import FGWBarycenterDecoder, fgw_distance, fgw_to_graph, graph_to_fgw, label_alphabet

__all__ = ["FGWBarycenterDecoder", "fgw_distance", "graph_to_fgw", "fgw_to_graph", "label_alphabet"]
