"""Task 2 -- text -> molecule retrieval on ChEBI-20, unseen candidates, settings by validation (issue 11).

Data: the ``Description`` texts and molecules of ``chebi20/val.sdf.zip`` (3301 pairs).
Split per seed, by molecule: ``--n-train`` training pairs, the rest held out; the test
queries are the held-out descriptions and the candidate set is the held-out molecules
(never a training molecule), so MRR / Hits@k measure retrieval of molecules never seen.

Inputs: by default the raw descriptions with the registered ``text`` kernel (word + character
n-grams, sublinear tf x idf, fitted by the models on the training descriptions only; see
docs/molecules.md "Text inputs"); ``--input-kernel cosine --input-features tfidf`` gives the
earlier inputs (TF-IDF word 1-2 grams fitted on the training descriptions, cosine kernel).
Kernels are given by registered name, so a better text kernel drops in.
Outputs: Morgan fingerprints with a registered kernel; the output kernel among
``--output-kernels`` is chosen by validation.

Every setting is chosen by ``sprokr.model_selection`` on a validation split (20 %) of the
TRAINING pairs with the retrieval scorer (the validation molecules rank themselves, MRR):

* ``IOKR``: ``lam`` path x output kernel; refit on all training pairs;
* ``SISOKR``: kernels chosen for IOKR, ``m_y`` from the perfect-h curve, ``m_x`` grown until
  the validation MRR stops improving, ``lam`` per path; refit on all training pairs;
* ``DSOKR``: same output kernel and sketch type as SISOKR; the regressor works on Nystrom
  features of the input kernel (``sprokr.kernels.KernelFeatures``, SISOKR's ``m_x``); the
  ridge penalty, ``m_y`` (grown until the validation MRR stops improving) and the networks
  of ``--dsokr-networks`` are chosen by validation MRR (``_molecules.select_dsokr``);
  ``DSOKR-ens<T>``: the chosen configuration over ``--dsokr-ensemble`` output sketches;
* ``NN-text``: the issue's baseline -- the molecule of the most similar training description
  (cosine of TF-IDF), candidates ranked by Tanimoto (``--baseline-kernel``) to it;
  ``NN-textkernel``: the same with the input kernel (a stronger baseline when it is ``text``);
* ``Retriever-<method>`` (not in the default ``--methods``; e.g. ``Retriever-auto``,
  ``Retriever-iokr``, ``Retriever-sisokr``, ``Retriever-dsokr``): the one-line
  ``sprokr_chem.MoleculeRetriever(method=...)`` with its defaults (``--retriever-params``
  JSON overrides them), fitted on the raw training descriptions and molecules -- it
  chooses every setting itself; ``--selection-json`` records its ``selection_``.

Metrics from the full score matrix (``predict_scores``; ties at their expected rank): MRR,
Hits@1 (= top1), Hits@10 (= top10), fit and decode times.

    python benchmarks/chebi_text_to_molecule.py [--data PATH] [--seeds 1] [--json]
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np
from _molecules import (
    add_dsokr_arguments,
    full_scores,
    nearest_neighbour_scores,
    rank_metrics,
    run_dsokr,
    run_sisokr,
    select_iokr_family,
    unseen_split,
)
from _report import SeedTable
from sklearn.feature_extraction.text import TfidfVectorizer

from sprokr import DSOKR, IOKR, SISOKR
from sprokr.kernels import resolve_kernel

LAMS = np.logspace(-1, -7, 13)  # decreasing: ties go to the most regularised


def nn_text(X_tr, X_te, mol_tr, cands, kernel):
    """Nearest training description (cosine of l2-normalised TF-IDF rows); candidates scored
    by the output kernel to its molecule."""
    nn = np.asarray((X_te @ X_tr.T).toarray().argmax(axis=1)).ravel()
    k = resolve_kernel(kernel, None, "output", np.dtype(np.float64))
    return np.asarray(k.pairwise(k.prepare_outputs([mol_tr[i] for i in nn]), k.prepare_outputs(cands)))


def run_retriever(name, method, args, X_tr, mol_tr, X_te, cands, seed, log, finish):
    """``MoleculeRetriever(method=method)`` with its defaults on the raw descriptions."""
    from sprokr_chem import MoleculeRetriever

    t0 = time.perf_counter()
    model = MoleculeRetriever(method=method, random_state=seed, **json.loads(args.retriever_params)).fit(X_tr, mol_tr)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    S = model.predict_scores(X_te, candidates=cands)
    sel = model.selection_
    finish(name, S, fit_s, time.perf_counter() - t0,
           {"select_s": sel["time_s"] - sel["refit_s"], "val_MRR": model.best_score_})
    log[f"seed{seed}"][name] = {"method": model.method_, "best_params": model.best_params_,
                                "val_mrr": model.best_score_, "selection": sel}
    print(f"{name}: {model.method_} {model.best_params_} (validation MRR {model.best_score_:.4f}, fit {fit_s:.0f} s)",
          flush=True)


def run_seed(args, mols, texts, seed, table, log):
    rng = np.random.default_rng(seed)
    n_test = len(mols) - args.n_train if args.n_test is None else args.n_test
    tr, held, test_pos = unseen_split(len(mols), args.n_train, n_test, rng)
    tfidf = TfidfVectorizer(sublinear_tf=True, min_df=2, ngram_range=(1, 2), dtype=np.float64)
    T_tr = tfidf.fit_transform([texts[i] for i in tr])  # fitted on training descriptions only
    T_te = tfidf.transform([texts[held[p]] for p in test_pos])
    if args.input_features == "raw":
        X_tr, X_te = [texts[i] for i in tr], [texts[held[p]] for p in test_pos]
    else:
        X_tr, X_te = T_tr, T_te
    mol_tr, cands = [mols[i] for i in tr], [mols[i] for i in held]
    todo = args.methods.split(",")
    kxp = json.loads(args.input_params)
    out_grid = args.output_kernels.split(",")
    log[f"seed{seed}"] = {}

    def finish(name, S, fit_s, decode_s, extra=None):
        r = rank_metrics(S, test_pos)
        r = {"MRR": r["MRR"], "Hits@1": r["top1"], "Hits@10": r["top10"], "fit_s": fit_s, "decode_s": decode_s,
             **(extra or {})}
        table.add(name, seed, r)

    if "NN-text" in todo:
        t0 = time.perf_counter()
        S = nn_text(T_tr, T_te, mol_tr, cands, args.baseline_kernel)
        finish("NN-text", S, 0.0, time.perf_counter() - t0)
    if "NN-textkernel" in todo:
        t0 = time.perf_counter()
        S, _ = nearest_neighbour_scores(args.input_kernel, kxp, args.baseline_kernel, None, X_tr, mol_tr, X_te, cands)
        finish("NN-textkernel", S, 0.0, time.perf_counter() - t0)
    for name in [m for m in todo if m.startswith("Retriever-")]:
        run_retriever(name, name.split("-", 1)[1], args, [texts[i] for i in tr], mol_tr,
                      [texts[held[p]] for p in test_pos], cands, seed, log, finish)
    if not any(m in todo for m in ("IOKR", "SISOKR", "DSOKR")):
        return

    t0 = time.perf_counter()
    iokr, sel = select_iokr_family(IOKR(input_kernel=args.input_kernel, input_kernel_params=kxp),
                                   X_tr, mol_tr, LAMS, param_grid={"output_kernel": out_grid}, random_state=seed)
    sel_s = time.perf_counter() - t0
    ky = sel["best_params"]["output_kernel"]
    log[f"seed{seed}"]["IOKR"] = {"best_params": sel["best_params"], "val_mrr": sel["best_score"], "select_s": sel_s,
                                  "grid": [{k: g[k] for k in ("params", "best_lam", "best_score")} for g in sel["grid"]]}
    print(f"IOKR selection: {sel['best_params']} (validation MRR {sel['best_score']:.4f}, {sel_s:.0f} s)", flush=True)
    if "IOKR" in todo:
        t0 = time.perf_counter()
        iokr.fit(X_tr, mol_tr)
        fit_s = time.perf_counter() - t0
        S, dec_s = full_scores(iokr, X_te, cands)
        finish("IOKR", S, fit_s, dec_s, {"select_s": sel_s, "lam": iokr.lam})

    sketch_params = {"p": args.psg_p / args.n_train} if args.output_sketch == "psg" else None
    if "SISOKR" in todo or "DSOKR" in todo:
        base = SISOKR(input_kernel=args.input_kernel, input_kernel_params=kxp, output_kernel=ky,
                      input_sketch="subsample", m_x=args.m_x_grid[0], output_sketch=args.output_sketch,
                      m_y=args.m_y_grid[0], output_sketch_params=sketch_params, random_state=seed)
        run_sisokr(base, X_tr, mol_tr, X_te, cands, LAMS, args.m_y_grid, args.m_x_grid, seed, log, finish,
                   fit_it="SISOKR" in todo)

    # ---- DSOKR: on Nystrom features of the input kernel (SISOKR's m_x); ridge penalty, m_y and
    # the networks of --dsokr-networks chosen by validation MRR on the training pairs
    if "DSOKR" in todo:
        def make(m, reg, params, rs):
            return DSOKR(output_kernel=ky, output_sketch=args.output_sketch, m_y=m, output_sketch_params=sketch_params,
                         regressor=reg, regressor_params=params, random_state=rs)

        run_dsokr(args.input_kernel, kxp, make, X_tr, mol_tr, X_te, cands, args, seed, log, finish)


def main(argv=None):
    from sprokr.datasets import default_data_dir
    from sprokr_chem.datasets import load_chebi20

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(default_data_dir() / "chebi20" / "val.sdf.zip"))
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--subsample", type=int, default=None, help="use a seeded random subset of this many pairs")
    ap.add_argument("--n-train", type=int, default=2800)
    ap.add_argument("--n-test", type=int, default=None, help="test queries (default: every held-out pair)")
    ap.add_argument("--input-kernel", default="text")
    ap.add_argument("--input-params", default="{}", help="JSON parameters of the input kernel")
    ap.add_argument("--input-features", choices=["raw", "tfidf"], default="raw",
                    help="raw descriptions (for a text kernel) or TF-IDF vectors (for a vector kernel)")
    ap.add_argument("--output-kernels", default="morgan_cosine,morgan_tanimoto",
                    help="registered output kernels tried by validation")
    ap.add_argument("--baseline-kernel", default="morgan_tanimoto")
    ap.add_argument("--output-sketch", default="subsample")
    ap.add_argument("--psg-p", type=float, default=20.0)
    ap.add_argument("--m-y-grid", type=lambda s: [int(v) for v in s.split(",")], default="200,400,800,1600,2240",
                    help="SISOKR output sketch sizes (perfect h); 2240 = the training part of the default split")
    ap.add_argument("--m-x-grid", type=lambda s: [int(v) for v in s.split(",")], default="250,500,1000,2000",
                    help="SISOKR input sketch sizes, grown until the validation MRR stops improving")
    add_dsokr_arguments(ap, 1000, "1e-4,1e-3,1e-2,1e-1", "800,1600,2240")
    ap.add_argument("--methods", default="NN-text,NN-textkernel,IOKR,SISOKR,DSOKR",
                    help="also Retriever-auto, Retriever-iokr, Retriever-sisokr, Retriever-dsokr (MoleculeRetriever)")
    ap.add_argument("--retriever-params", default="{}", help="JSON parameters of MoleculeRetriever")
    ap.add_argument("--selection-json", help="write the model-selection details (per seed) there")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    mols, texts, report = load_chebi20(args.data)
    print(f"read {len(mols)} molecules with descriptions in {time.perf_counter() - t0:.1f} s "
          f"({len(report.skipped)} skipped)", flush=True)
    if args.subsample is not None and args.subsample < len(mols):
        keep = np.sort(np.random.default_rng(12345).choice(len(mols), args.subsample, replace=False))
        mols, texts = [mols[i] for i in keep], [texts[i] for i in keep]
    table, log = SeedTable(), {}
    for seed in range(args.seeds):
        run_seed(args, mols, texts, seed, table, log)
    if args.selection_json:
        with open(args.selection_json, "w") as fh:
            json.dump(log, fh, indent=1, default=float)
    n_held = len(mols) - args.n_train
    return table.report(f"ChEBI-20 text -> molecule, {args.n_train} train / {args.n_test or n_held} test queries, "
                        f"{n_held} unseen candidates (no training molecule), {args.seeds} seed(s); "
                        f"settings by validation on the training pairs",
                        ["MRR", "Hits@1", "Hits@10", "fit_s", "decode_s", "select_s", "val_MRR"], args.json)


if __name__ == "__main__":
    main()
