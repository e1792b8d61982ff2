"""MoleculeRetriever on QM9 SMILES -> molecule: the one-line estimator, three methods, unseen candidates.

What a chemist gets from ``MoleculeRetriever(method=...).fit(smiles, molecules)`` with the
defaults -- every setting (output kernel ``wl`` or ``morgan_count_tanimoto``, the
``smiles_spectrum`` length ``n``, ``lam``, ``m_x``, ``m_y``, the network) chosen by the
estimator on a validation split (20 %) of the TRAINING molecules, never on the test split.

Split (per seed, by molecule, ``benchmarks/_molecules.unseen_split``): ``--n-train``
training molecules; the other molecules of the file are held out; ``--n-test`` test queries
are drawn from them; the candidate pool of every query is **all held-out molecules** (never
a training molecule).  Baseline ``NN``: the molecule of the nearest training SMILES
(``smiles_spectrum`` with the ``n`` IOKR chose, else 4), candidates ranked by the output
kernel IOKR chose (else ``morgan_count_tanimoto``).

Metrics from the full score matrix (``predict_scores``; ties at their expected rank):
top-1/5/10 and MRR; ``fit_s`` (the whole ``fit``: selection and refit), ``select_s`` (the
selection), ``decode_s`` (candidate embedding and scores), the validation MRR of the chosen
settings (``val_MRR``) and ``load`` (the 1-minute load average when the fit started: the
machine is shared, compare timings of one run).  Methods: ``auto`` (the default: exact
IOKR or a sketched model, see ``MoleculeRetriever``), ``iokr``, ``sisokr``, ``dsokr``;
``NN`` the baseline.  ``--n-test 0``: fit only (timing and choices on ``--n-train``
molecules, e.g. all 10000).

    python benchmarks/qm9_retriever.py [--data PATH] [--n-train 2000] [--n-test 500] [--methods ...] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
from _molecules import nearest_neighbour_scores, rank_metrics, unseen_split
from _report import SeedTable

METHODS = ("auto", "iokr", "sisokr", "dsokr")


def run_seed(args, smiles, seed, table, log):
    from sprokr_chem import MoleculeRetriever
    from sprokr_chem.retriever import molecules_for_kernel

    rng = np.random.default_rng(seed)
    tr, held, test_pos = unseen_split(len(smiles), args.n_train, args.n_test, rng)
    smi_tr, cands = [smiles[i] for i in tr], [smiles[i] for i in held]
    smi_te = [cands[p] for p in test_pos]
    todo = args.methods.split(",")
    params = json.loads(args.params)
    chosen = {"output_kernel": "morgan_count_tanimoto", "input_kernel_params": {"n": 4}}
    log[f"seed{seed}"] = {}
    for method in [m for m in METHODS if m in todo]:
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        model = MoleculeRetriever(method=method, random_state=seed, **params).fit(smi_tr, smi_tr)
        fit_s = time.perf_counter() - t0
        r = {"fit_s": fit_s, "select_s": model.selection_["time_s"] - model.selection_["refit_s"],
             "val_MRR": model.best_score_, "load": load}
        if len(smi_te):
            t0 = time.perf_counter()
            S = model.predict_scores(smi_te, candidates=cands)
            r.update(rank_metrics(S, test_pos), decode_s=time.perf_counter() - t0)
        bp = model.best_params_
        table.add(method.upper(), seed, r)
        log[f"seed{seed}"][method] = {"method": model.method_, "best_params": bp, "selection": model.selection_}
        print(f"  {method} chose {model.method_} {bp} (validation MRR {model.best_score_:.4f}, fit {fit_s:.1f} s, "
              f"load {load:.1f})", flush=True)
        if model.method_ == "iokr":
            chosen = bp
    if "NN" in todo and len(smi_te):
        t0 = time.perf_counter()
        ky = chosen["output_kernel"]
        S, _ = nearest_neighbour_scores("smiles_spectrum", chosen["input_kernel_params"], ky, None, smi_tr,
                                        molecules_for_kernel(smi_tr, ky), smi_te, molecules_for_kernel(cands, ky))
        r = rank_metrics(S, test_pos)
        r.update(fit_s=0.0, decode_s=time.perf_counter() - t0)
        table.add("NN", seed, r)


def main(argv=None):
    from sprokr.datasets import default_data_dir
    from sprokr_chem.datasets import load_qm9

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(default_data_dir() / "qm9" / "qm9_dev.csv"))
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--n-train", type=int, default=2000)
    ap.add_argument("--n-test", type=int, default=500, help="test queries, drawn from the held-out molecules")
    ap.add_argument("--methods", default="NN,auto,iokr,sisokr,dsokr")
    ap.add_argument("--params", default="{}", help="JSON parameters of MoleculeRetriever (default: its defaults)")
    ap.add_argument("--selection-json", help="write each model's selection_ (per seed) there")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    smiles, _, _ = load_qm9(args.data)
    table, log = SeedTable(), {}
    for seed in range(args.seeds):
        run_seed(args, smiles, seed, table, log)
    if args.selection_json:
        with open(args.selection_json, "w") as fh:
            json.dump(log, fh, indent=1, default=float)
    n_cand = len(smiles) - args.n_train
    return table.report(
        f"QM9 SMILES -> molecule with MoleculeRetriever (defaults), {args.n_train} train / {args.n_test} test "
        f"queries, {n_cand} unseen candidates, {args.seeds} seed(s); settings chosen on the training molecules",
        ["top1", "top5", "top10", "MRR", "val_MRR", "fit_s", "select_s", "decode_s", "load"], args.json, width=9)


if __name__ == "__main__":
    main()
