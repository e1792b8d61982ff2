"""Input checks shared by the graph kernels (:mod:`sprokr_graphs.wl`,
:mod:`sprokr_graphs.grakel_kernel`)."""
from __future__ import annotations

from typing import Any, Sequence

import networkx as nx

__all__ = ["check_graph_sequence", "check_graph"]


def check_graph_sequence(X: Any) -> None:
    """Refuse a single networkx graph where a sequence of graphs is expected."""
    # a networkx graph iterates over its nodes: without this, its first node would be
    # reported as "sample 0 is of type int"
    if isinstance(X, nx.Graph):
        raise TypeError("expected a sequence of graphs, got a single networkx graph (pass [G] for one "
                        "graph)")


def check_graph(G: Any, i: int, node_label: str | Sequence[str]) -> None:
    """Sample ``i`` must be an undirected networkx graph whose nodes carry ``node_label``
    (an attribute name or several); errors name the sample and say what to do."""
    if not isinstance(G, nx.Graph):
        hint = ""
        if isinstance(G, str) or type(G).__name__ == "Mol":  # a molecule: say how to make its graph
            hint = (" (molecules: sprokr_chem.smiles_to_graph / mol_to_graph make their graphs; in a "
                    "sprokr config, [output] type = \"molecule\"; or use a molecule kernel such as "
                    "'morgan_tanimoto' on the SMILES)")
        raise TypeError(f"the samples must be networkx graphs (the graph kernels wl, core_wl and grakel "
                        f"take graphs): sample {i} is of type {type(G).__name__}{hint}")
    if G.is_directed():
        raise ValueError(f"graph {i}: the WL kernels here take undirected graphs")
    attrs = (node_label,) if isinstance(node_label, str) else tuple(node_label)
    for v, d in G.nodes(data=True):
        for a in attrs:
            if a not in d:
                raise ValueError(f"graph {i}: node {v!r} has no {a!r} attribute "
                                 f"(set node_label=... to the attribute(s) holding the labels)")
