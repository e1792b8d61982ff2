"""Task 3 -- properties -> molecule identification on QM9 (issue 4).

Shaped like metabolite identification: the input is a vector of measured properties (the
QM9 quantum properties of ``qm9_dev.csv``, standardised on the training set, Gaussian
kernel), the output a molecule (Gaussian-Tanimoto kernel on Morgan bits, sprokr-chem),
and each query is ranked against ITS OWN candidate set: every molecule of the file with
the same molecular formula as the truth (``CandidateSets.from_pool``: the 10000 molecules
are embedded once, the sets decoded in batches with no loop over pairs).  8000 train /
2000 test per seed.  Metrics: top-1/5/10 accuracy.

Methods (a dict): ``IOKR`` (exact), ``SISOKR`` (sub-sampling input + p-SG output sketch),
``random`` (a uniformly random ranking of each candidate set: the chance level).

    python benchmarks/qm9_properties_to_molecule.py [--data PATH] [--seeds 3] [--json]
"""
from __future__ import annotations

import argparse
import time
from collections import defaultdict

import numpy as np
from _report import SeedTable

from sprokr import IOKR, SISOKR, CandidateSets
from sprokr.metrics import top_k_accuracy


def model_method(make_model):
    def run(ctx, seed):
        m = make_model(seed)
        t0 = time.perf_counter()
        m.fit(ctx["X_tr"], ctx["smi_tr"])
        fit_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        res = m.predict_topk(ctx["X_te"], candidates=ctx["sets"], k=10)
        return res.indices, fit_s, time.perf_counter() - t0
    return run


def random_method(ctx, seed):
    rng = np.random.default_rng(1000 + seed)
    sizes = ctx["sets"].sizes
    t0 = time.perf_counter()
    out = np.full((sizes.size, 10), -1)
    for q, n in enumerate(sizes):  # one permutation per query (no pair loop)
        p = rng.permutation(n)[:10]
        out[q, : p.size] = p
    return out, 0.0, time.perf_counter() - t0


def methods(args):
    gx = {"gamma": args.gamma_x}
    gy = {"gamma": args.gamma_y}
    return {
        "IOKR": model_method(lambda s: IOKR(input_kernel="gaussian", output_kernel="morgan_gaussian_tanimoto",
                                            lam=args.lam, input_kernel_params=gx, output_kernel_params=gy)),
        "SISOKR": model_method(lambda s: SISOKR(
            input_kernel="gaussian", output_kernel="morgan_gaussian_tanimoto", lam=args.lam,
            input_kernel_params=gx, output_kernel_params=gy, input_sketch="subsample", m_x=args.m_x,
            output_sketch="psg", m_y=args.m_y, output_sketch_params={"p": 20.0 / args.n_train},
            random_state=s)),
        "random": random_method,
    }


def main(argv=None):
    from sprokr.datasets import default_data_dir
    from sprokr_chem import molecular_formula
    from sprokr_chem.datasets import load_qm9

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(default_data_dir() / "qm9" / "qm9_dev.csv"))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--n-train", type=int, default=8000)
    ap.add_argument("--lam", type=float, default=1e-4)
    ap.add_argument("--gamma-x", type=float, default=0.05)
    ap.add_argument("--gamma-y", type=float, default=1.0)
    ap.add_argument("--m-x", type=int, default=1000)
    ap.add_argument("--m-y", type=int, default=200)
    ap.add_argument("--methods", default="IOKR,SISOKR,random")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    smiles, props, names = load_qm9(args.data)
    formulas = [molecular_formula(s) for s in smiles]
    by_formula = defaultdict(list)
    for i, f in enumerate(formulas):
        by_formula[f].append(i)
    n = len(smiles)
    todo = {k: v for k, v in methods(args).items() if k in args.methods.split(",")}
    table = SeedTable()
    for seed in range(args.seeds):
        rng = np.random.default_rng(seed)
        perm = rng.permutation(n)
        tr, te = perm[: args.n_train], perm[args.n_train:]
        mu, sd = props[tr].mean(0), props[tr].std(0)
        sd[sd == 0] = 1.0
        idx_sets = [np.asarray(by_formula[formulas[i]]) for i in te]
        truth = np.array([int(np.flatnonzero(s == i)[0]) for s, i in zip(idx_sets, te)])
        ctx = {"X_tr": (props[tr] - mu) / sd, "X_te": (props[te] - mu) / sd,
               "smi_tr": [smiles[i] for i in tr],
               "sets": CandidateSets.from_pool(smiles, idx_sets)}
        sizes = ctx["sets"].sizes
        print(f"seed {seed}: candidate sets of {sizes.min()}..{sizes.max()} molecules "
              f"(mean {sizes.mean():.1f}, {sizes.sum()} pairs)", flush=True)
        for name, fn in todo.items():
            ranked, fit_s, decode_s = fn(ctx, seed)
            r = {f"top{k}": top_k_accuracy(truth, ranked, k) for k in (1, 5, 10)}
            r.update(fit_s=fit_s, decode_s=decode_s)
            table.add(name, seed, r)
    return table.report(f"QM9 properties -> molecule, {args.n_train} train / {n - args.n_train} test, "
                        f"candidates = same molecular formula, mean over {args.seeds} seed(s)",
                        ["top1", "top5", "top10", "fit_s", "decode_s"], args.json)


if __name__ == "__main__":
    main()
