"""Molecule demo for ``sprokr demo``: QM9 properties -> molecule on the shipped sample.

Uses the first-party plugins by registered name only (``morgan_tanimoto`` from sprokr-chem,
``wl`` from sprokr-graphs); runs in a few seconds.
"""
from __future__ import annotations

import time

import numpy as np


class MissingPlugin(ImportError):
    """A first-party plugin the molecule demo needs is not installed (message: how to install it)."""


def run(out=print) -> dict:
    from . import SISOKR, CandidateSets
    from .cli import install_hint
    from .datasets import sample_path
    from .metrics import top_k_accuracy

    try:
        from sprokr_chem import molecular_formula, smiles_to_graph
        from sprokr_chem.datasets import load_qm9
    except ImportError as exc:  # depends on the installation
        raise MissingPlugin(f"the molecule demo needs the sprokr-chem plugin (RDKit): {install_hint('chem')}") from exc
    smiles, props, _ = load_qm9(sample_path("qm9_sample.csv"))
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(smiles))
    tr, te = perm[:240], perm[240:]
    mu, sd = props[tr].mean(0), props[tr].std(0)
    X = (props - mu) / np.where(sd > 0, sd, 1)
    res = {}
    # 1) properties -> molecule, Tanimoto on Morgan bits, candidates = all sample molecules
    m = SISOKR(input_kernel="gaussian", output_kernel="morgan_tanimoto", lam=1e-3,
               input_kernel_params={"gamma": 0.05}, output_sketch="psg", m_y=100,
               output_sketch_params={"p": 0.05}, random_state=0)
    t0 = time.perf_counter()
    m.fit(X[tr], [smiles[i] for i in tr])
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    top = m.predict_topk(X[te], candidates=smiles, k=10).indices
    dec_s = time.perf_counter() - t0
    res["fingerprints"] = {"top1": top_k_accuracy(te, top, 1), "top10": top_k_accuracy(te, top, 10),
                           "fit_s": fit_s, "decode_s": dec_s}
    # what a random ranking of the candidates scores: the baselines the numbers compare to
    chance = {"fingerprints": {"top1": 1 / len(smiles), "top10": 10 / len(smiles)}}
    # 2) same task, one candidate set per query: the molecules with the true formula
    formulas = [molecular_formula(s) for s in smiles]
    sets = [np.flatnonzero(np.array(formulas) == formulas[i]) for i in te]
    truth = np.array([int(np.flatnonzero(s == i)[0]) for s, i in zip(sets, te)])
    t0 = time.perf_counter()
    top = m.predict_topk(X[te], candidates=CandidateSets.from_pool(smiles, sets), k=5).indices
    res["same_formula"] = {"top1": top_k_accuracy(truth, top, 1), "top5": top_k_accuracy(truth, top, 5),
                           "decode_s": time.perf_counter() - t0}
    sizes = np.array([s.size for s in sets], dtype=float)
    chance["same_formula"] = {"top1": float(np.mean(1 / sizes)), "top5": float(np.mean(np.minimum(5 / sizes, 1)))}
    # 3) SMILES -> graph with the WL output kernel (if sprokr-graphs is installed)
    try:
        import sprokr_graphs  # noqa: F401
    except ImportError:
        sprokr_graphs = None  # type: ignore[assignment]
    if sprokr_graphs is None:
        out(f"(SMILES -> graph part skipped: it needs the sprokr-graphs plugin: {install_hint('graphs')})")
    else:
        graphs = [smiles_to_graph(s) for s in smiles]
        g = SISOKR(input_kernel="smiles_spectrum", output_kernel="wl", lam=1e-4, output_sketch="psg",
                   m_y=100, output_sketch_params={"p": 0.05}, random_state=0)
        t0 = time.perf_counter()
        g.fit([smiles[i] for i in tr], [graphs[i] for i in tr])
        fit_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        idx = g.predict_topk([smiles[i] for i in te], candidates=graphs, k=1).indices[:, 0]
        res["smiles_to_graph"] = {"top1": float(np.mean(idx == te)), "fit_s": fit_s,
                                  "decode_s": time.perf_counter() - t0}
        chance["smiles_to_graph"] = {"top1": 1 / len(smiles)}
    out(f"molecules (QM9 sample: {len(tr)} train / {len(te)} test, {len(smiles)} candidates; "
        "top-k = fraction of test molecules ranked in the first k)")
    for task, r in res.items():
        scores = "  ".join(f"{k}={v:.3f} (chance {chance[task][k]:.3f})" for k, v in r.items() if k in chance[task])
        times = "  ".join(f"{k}={v:.3f}" for k, v in r.items() if k.endswith("_s"))
        out(f"  {task:16s} {scores}  {times}")
    out("  (12 QM9 properties rarely single out one of 300 molecules, hence top1 = 0 with fingerprints, but\n"
        "  the true one is often in the first ten; same_formula ranks only the few molecules of the query's\n"
        "  formula, an easier task, as its chance level shows)")
    return res
