"""Properties -> molecule, one candidate set per query (same molecular formula), QM9 sample.

    python examples/molecules_same_formula.py
"""
import numpy as np

from sprokr import SISOKR, CandidateSets
from sprokr.datasets import sample_path
from sprokr.metrics import top_k_accuracy
from sprokr_chem import molecular_formula
from sprokr_chem.datasets import load_qm9

smiles, props, _ = load_qm9(sample_path("qm9_sample.csv"))
X = (props - props[:240].mean(0)) / props[:240].std(0)
model = SISOKR(input_kernel="gaussian", output_kernel="morgan_gaussian_tanimoto", lam=1e-3,
               input_kernel_params={"gamma": 0.05}, output_sketch="psg", m_y=100,
               output_sketch_params={"p": 0.05}, random_state=0).fit(X[:240], smiles[:240])
formulas = np.array([molecular_formula(s) for s in smiles])
te = np.arange(240, 300)
sets = [np.flatnonzero(formulas == formulas[i]) for i in te]
truth = np.array([np.flatnonzero(s == i)[0] for s, i in zip(sets, te)])
top = model.predict_topk(X[te], candidates=CandidateSets.from_pool(smiles, sets), k=5).indices
print("top-1", top_k_accuracy(truth, top, 1), "top-5", top_k_accuracy(truth, top, 5))
