"""The molecule section of ``sprokr demo`` (hook ``sprokr_demos``): QM9 properties ->
molecule on the 300-molecule sample shipped with sprokr, in a few seconds.

Components by registered name only: ``morgan_tanimoto`` and ``smiles_spectrum`` of this
plugin, and the ``wl`` graph kernel when a plugin registers it (sprokr-graphs).
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict

import numpy as np

__all__ = ["MoleculeDemo"]


class MoleculeDemo:
    """QM9 properties -> molecule (Morgan fingerprints; one candidate set per formula),
    and SMILES -> molecule graph with the ``wl`` output kernel when it is registered.

    ``MoleculeDemo()(out=print)`` prints a table of top-k accuracies against their chance
    levels and returns ``{task: {metric: value, "fit_s", "decode_s"}}`` for the tasks
    ``fingerprints``, ``same_formula`` and (with ``wl``) ``smiles_to_graph``.
    """

    def __call__(self, out: Callable[..., None] = print) -> Dict[str, Any]:
        """Run the demo, printing through ``out``; returns the results per task."""
        from sprokr import SISOKR, CandidateSets
        from sprokr.extras import install_hint
        from sprokr.datasets import sample_path
        from sprokr.metrics import top_k_accuracy
        from sprokr.registry import get_registry

        from . import molecular_formula
        from .datasets import load_qm9
        from .graphs import smiles_to_graph

        smiles, props, _ = load_qm9(sample_path("qm9_sample.csv"))
        rng = np.random.default_rng(0)
        perm = rng.permutation(len(smiles))
        tr, te = perm[:240], perm[240:]
        mu, sd = props[tr].mean(0), props[tr].std(0)
        X = (props - mu) / np.where(sd > 0, sd, 1)
        res: Dict[str, Any] = {}
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
        # 3) SMILES -> graph with the WL output kernel (when a plugin registers it: sprokr-graphs)
        if "wl" not in get_registry().names("output_kernel"):
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
            scores = "  ".join(f"{k}={v:.3f} (chance {chance[task][k]:.3f})" for k, v in r.items()
                               if k in chance[task])
            times = "  ".join(f"{k}={v:.3f}" for k, v in r.items() if k.endswith("_s"))
            out(f"  {task:16s} {scores}  {times}")
        out("  (12 QM9 properties rarely single out one of 300 molecules, hence top1 = 0 with fingerprints, but\n"
            "  the true one is often in the first ten; same_formula ranks only the few molecules of the query's\n"
            "  formula, an easier task, as its chance level shows)")
        return res
