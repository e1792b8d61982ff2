"""SMILES -> molecular graph on the shipped QM9 sample: candidate decoding and FGW barycenters.

    python examples/molecules_smiles_to_graph.py
"""
import numpy as np

from sprokr import IOKR
from sprokr.datasets import sample_path
from sprokr.metrics import mean_graph_edit_distance
from sprokr_chem import smiles_to_graph
from sprokr_chem.datasets import load_qm9

smiles, _, _ = load_qm9(sample_path("qm9_sample.csv"))
graphs = [smiles_to_graph(s) for s in smiles]
tr, te = np.arange(250), np.arange(250, 300)
model = IOKR(input_kernel="smiles_spectrum", output_kernel="wl", lam=1e-4)
model.fit([smiles[i] for i in tr], [graphs[i] for i in tr])
idx = model.predict_topk([smiles[i] for i in te], candidates=graphs, k=1).indices[:, 0]
print("candidate decoding top-1:", np.mean(idx == te))
fgw = model.set_params(decoder="fgw_barycenter", decoder_params={"n_neighbors": 3}).fit(
    [smiles[i] for i in tr], [graphs[i] for i in tr])
pred = fgw.predict([smiles[i] for i in te[:10]])
print("FGW barycenters:", [g.graph["smiles"] for g in pred])
print("GED (edge labels):", mean_graph_edit_distance([graphs[i] for i in te[:10]], pred, timeout=0.5)["mean"])
