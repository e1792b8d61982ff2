"""Task 3 -- properties -> molecule identification on QM9 (issue 4).

Shaped like metabolite identification: the input is a vector of measured properties (the
QM9 quantum properties of ``qm9_dev.csv``, standardised on the training set, Gaussian
kernel), the output a molecule (Gaussian-Tanimoto kernel on Morgan bits, sprokr-chem),
and each query is ranked against ITS OWN candidate set: the held-out molecules of the file
with the same molecular formula as the truth -- molecules never seen in training
(``CandidateSets.from_pool``: the pool is embedded once, the sets decoded in batches with no
loop over pairs).  The variant whose sets also hold the training molecules of that formula
is reported separately (``*_incl_train``).  8000 train / 2000 test per seed.  Metrics:
top-1/5/10 accuracy.

Settings by ``sprokr.model_selection`` on a validation split (20 %) of the TRAINING
molecules, with the retrieval scorer (the validation molecules rank themselves, MRR):
IOKR -- ``lam`` x the input bandwidth ``--gamma-x-grid``; SISOKR -- the same kernels,
``m_y`` by perfect h (Nystrom output sketch), ``m_x`` grown until the validation MRR stops
improving, ``lam`` per path.  ``--lam`` skips the selection (hand-set values).

Methods (a dict): ``IOKR`` (exact), ``SISOKR`` (sub-sampling input and output sketches),
``random`` (a uniformly random ranking of each candidate set: the chance level).

    python benchmarks/qm9_properties_to_molecule.py [--data PATH] [--seeds 1] [--json]
"""
from __future__ import annotations

import argparse
import time
from collections import defaultdict

import json

import numpy as np
from _molecules import select_iokr_family
from _report import SeedTable

from sprokr import IOKR, SISOKR, CandidateSets
from sprokr.metrics import top_k_accuracy


LAMS = np.logspace(-1, -9, 17)  # decreasing: ties go to the most regularised


def model_method(make_model):
    def run(ctx, seed):
        m = make_model(ctx, seed)
        t0 = time.perf_counter()
        m.fit(ctx["X_tr"], ctx["smi_tr"])
        fit_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        out = {key: m.predict_topk(ctx["X_te"], candidates=ctx[key], k=10).indices for key in ("sets", "sets_all")}
        return out, fit_s, time.perf_counter() - t0
    return run


def selected(ctx, name, base, **grids):
    """``base`` with the settings chosen on the training molecules (logged in ``ctx``)."""
    if ctx["args"].lam is not None:
        return base
    t0 = time.perf_counter()
    est, sel = select_iokr_family(base, ctx["X_tr"], ctx["smi_tr"], LAMS, random_state=ctx["seed"], **grids)
    ctx["chosen"][name] = {k: v for k, v in est.get_params(deep=False).items()
                           if k in ("lam", "input_kernel_params", "m_x", "m_y")}
    print(f"{name} selection: {sel['best_params']} (validation MRR {sel['best_score']:.4f}, "
          f"{time.perf_counter() - t0:.0f} s)", flush=True)
    return est


def random_method(ctx, seed):
    rng = np.random.default_rng(1000 + seed)
    sizes = ctx["sets"].sizes
    t0 = time.perf_counter()
    out = {}
    for key in ("sets", "sets_all"):
        sizes = ctx[key].sizes
        out[key] = np.full((sizes.size, 10), -1)
        for q, n in enumerate(sizes):  # one permutation per query (no pair loop)
            p = rng.permutation(n)[:10]
            out[key][q, : p.size] = p
    return out, 0.0, time.perf_counter() - t0


def methods(args):
    gy = {"gamma": args.gamma_y}
    grid = [{"gamma": g} for g in args.gamma_x_grid]

    def iokr(ctx, seed):
        base = IOKR(input_kernel="gaussian", output_kernel="morgan_gaussian_tanimoto", lam=args.lam or 1e-4,
                    input_kernel_params=grid[0], output_kernel_params=gy)
        return selected(ctx, "IOKR", base, param_grid={"input_kernel_params": grid})

    def sisokr(ctx, seed):
        gx = ctx["chosen"].get("IOKR", {}).get("input_kernel_params", grid[0])
        base = SISOKR(input_kernel="gaussian", output_kernel="morgan_gaussian_tanimoto", lam=args.lam or 1e-4,
                      input_kernel_params=gx, output_kernel_params=gy, input_sketch="subsample",
                      m_x=args.m_x_grid[-1], output_sketch="subsample", m_y=args.m_y_grid[-1], random_state=seed)
        return selected(ctx, "SISOKR", base, m_y_grid=args.m_y_grid, m_x_grid=args.m_x_grid)

    return {"IOKR": model_method(iokr), "SISOKR": model_method(sisokr), "random": random_method}


def main(argv=None):
    from sprokr.datasets import default_data_dir
    from sprokr_chem import molecular_formula
    from sprokr_chem.datasets import load_qm9

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(default_data_dir() / "qm9" / "qm9_dev.csv"))
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--n-train", type=int, default=8000)
    ap.add_argument("--lam", type=float, default=None,
                    help="hand-set lam (skips the selection; then the first grid values are used)")
    ints = lambda s: [int(v) for v in s.split(",")]  # noqa: E731
    ap.add_argument("--gamma-x-grid", type=lambda s: [float(v) for v in s.split(",")], default="0.005,0.01,0.02,0.05",
                    help="input bandwidths tried by validation")
    ap.add_argument("--gamma-y", type=float, default=1.0, help="output kernel bandwidth (fixed)")
    ap.add_argument("--m-x-grid", type=ints, default="250,500,1000,2000")
    ap.add_argument("--m-y-grid", type=ints, default="200,400,800")
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
        is_test = np.zeros(n, dtype=bool)
        is_test[te] = True
        sets_all = [np.asarray(by_formula[formulas[i]]) for i in te]
        sets = [s[is_test[s]] for s in sets_all]  # unseen molecules only
        truth = {key: np.array([int(np.flatnonzero(s == i)[0]) for s, i in zip(ss, te)])
                 for key, ss in (("sets", sets), ("sets_all", sets_all))}
        ctx = {"X_tr": (props[tr] - mu) / sd, "X_te": (props[te] - mu) / sd,
               "smi_tr": [smiles[i] for i in tr], "args": args, "seed": seed, "chosen": {},
               "sets": CandidateSets.from_pool(smiles, sets), "sets_all": CandidateSets.from_pool(smiles, sets_all)}
        for key in ("sets", "sets_all"):
            sizes = ctx[key].sizes
            print(f"seed {seed}: {key}: candidate sets of {sizes.min()}..{sizes.max()} molecules "
                  f"(mean {sizes.mean():.1f}, {sizes.sum()} pairs)", flush=True)
        for name, fn in todo.items():
            ranked, fit_s, decode_s = fn(ctx, seed)
            r = {f"top{k}": top_k_accuracy(truth["sets"], ranked["sets"], k) for k in (1, 5, 10)}
            r.update({f"top{k}_incl_train": top_k_accuracy(truth["sets_all"], ranked["sets_all"], k) for k in (1, 10)})
            r.update(fit_s=fit_s, decode_s=decode_s)
            table.add(name, seed, r)
        if ctx["chosen"]:
            print("chosen: " + json.dumps(ctx["chosen"], default=str), flush=True)
    return table.report(f"QM9 properties -> molecule, {args.n_train} train / {n - args.n_train} test, "
                        f"candidates = unseen molecules of the same molecular formula (*_incl_train: and the "
                        f"training ones), settings by validation, mean over {args.seeds} seed(s)",
                        ["top1", "top5", "top10", "top1_incl_train", "top10_incl_train", "fit_s", "decode_s"],
                        args.json)


if __name__ == "__main__":
    main()
