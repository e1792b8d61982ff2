"""Task 2 -- text -> molecule retrieval on ChEBI-20 (issue 4).

Inputs: the ``Description`` texts of ``chebi20/val.sdf.zip`` as TF-IDF vectors (fitted on
the training descriptions only) with the cosine kernel.  Outputs: molecules with the
cosine kernel on Morgan count fingerprints (``morgan_cosine``, sprokr-chem).  2800 train
/ 501 test (random split per seed); candidates = all 3301 molecules; each test query's
whole candidate ranking gives MRR, Hits@1, Hits@10.

Methods (a dict name -> function; add one in a few lines):

* ``IOKR``: exact IOKR;
* ``SISOKR``: sub-sampling input sketch + p-SG output sketch;
* ``NN-text``: baseline, returns the molecule of the most similar training description
  (cosine of TF-IDF) and ranks the candidates by their fingerprint cosine to it (that
  training molecule itself comes first, so Hits@1 is 0 whenever test molecules are new).

    python benchmarks/chebi_text_to_molecule.py [--data PATH] [--seeds 3] [--json]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from _report import SeedTable
from sklearn.feature_extraction.text import TfidfVectorizer

from sprokr import DSOKR, IOKR, SISOKR
from sprokr.metrics import hits_at_k, mean_reciprocal_rank, ranks_from_scores


def _scores(res, n_c):
    """Full (n_q, n_c) score matrix from a Decoded covering every candidate."""
    S = np.full((res.indices.shape[0], n_c), -np.inf)
    np.put_along_axis(S, res.indices, res.scores, axis=1)
    return S


def model_method(make_model):
    def run(ctx, seed):
        m = make_model(seed)
        t0 = time.perf_counter()
        m.fit(ctx["X_tr"], ctx["mol_tr"])
        fit_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        index = m.make_candidate_index(ctx["mol_all"])
        res = m.predict_topk(ctx["X_te"], candidates=index, k=len(index))
        return _scores(res, len(index)), fit_s, time.perf_counter() - t0
    return run


def nn_text(ctx, seed):
    """Nearest training description; candidates ranked by similarity to its molecule."""
    from sprokr_chem import MorganCosineKernel

    t0 = time.perf_counter()
    sim = (ctx["X_te"] @ ctx["X_tr"].T).toarray()  # (n_te, n_tr) cosine (rows are l2-normalised)
    nn = sim.argmax(axis=1)
    k = MorganCosineKernel()
    S = k.pairwise(k.prepare([ctx["mol_tr"][i] for i in nn]), k.prepare(ctx["mol_all"]))
    return S, 0.0, time.perf_counter() - t0


def dsokr_regressor(seed):
    """DSOKR's network: an MLP on the tf-idf word 1-2 grams of the text (ctx["X_tr"]), CPU."""
    from sklearn.neural_network import MLPRegressor

    return MLPRegressor(hidden_layer_sizes=(256,), early_stopping=True, max_iter=100, random_state=seed)


def methods(args):
    return {
        "DSOKR": model_method(lambda s: DSOKR(output_kernel="morgan_cosine", output_sketch="subsample", m_y=args.m_y,
                                              regressor=dsokr_regressor(s), random_state=s)),
        "IOKR": model_method(lambda s: IOKR(input_kernel="cosine", output_kernel="morgan_cosine",
                                            lam=args.lam)),
        "SISOKR": model_method(lambda s: SISOKR(
            input_kernel="cosine", output_kernel="morgan_cosine", lam=args.lam,
            input_sketch="subsample", m_x=args.m_x, output_sketch="psg", m_y=args.m_y,
            output_sketch_params={"p": 20.0 / args.n_train}, random_state=s)),
        "NN-text": nn_text,
    }


def main(argv=None):
    from sprokr.datasets import default_data_dir
    from sprokr_chem.datasets import load_chebi20

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(default_data_dir() / "chebi20" / "val.sdf.zip"))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--n-train", type=int, default=2800)
    ap.add_argument("--lam", type=float, default=1e-3)
    ap.add_argument("--m-x", type=int, default=1000)
    ap.add_argument("--m-y", type=int, default=300)
    ap.add_argument("--methods", default="IOKR,SISOKR,NN-text,DSOKR")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    mols, texts, report = load_chebi20(args.data)
    print(f"read {len(mols)} molecules with descriptions in {time.perf_counter() - t0:.1f} s "
          f"({len(report.skipped)} skipped)", flush=True)
    n = len(mols)
    todo = {k: v for k, v in methods(args).items() if k in args.methods.split(",")}
    table = SeedTable()
    for seed in range(args.seeds):
        rng = np.random.default_rng(seed)
        perm = rng.permutation(n)
        tr, te = perm[: args.n_train], perm[args.n_train:]
        tfidf = TfidfVectorizer(sublinear_tf=True, min_df=2, ngram_range=(1, 2))
        X_tr = tfidf.fit_transform([texts[i] for i in tr])
        X_te = tfidf.transform([texts[i] for i in te])
        ctx = {"X_tr": X_tr, "X_te": X_te, "mol_tr": [mols[i] for i in tr], "mol_all": mols,
               "tr": tr, "n_all": n}
        for name, fn in todo.items():
            S, fit_s, decode_s = fn(ctx, seed)
            ranks = ranks_from_scores(S, te)
            ranked = np.argsort(-S, axis=1, kind="stable")[:, :10]
            r = {"MRR": mean_reciprocal_rank(None, ranks=ranks), "Hits@1": hits_at_k(te, ranked, 1),
                 "Hits@10": hits_at_k(te, ranked, 10), "fit_s": fit_s, "decode_s": decode_s}
            table.add(name, seed, r)
    return table.report(f"ChEBI-20 text -> molecule, {args.n_train} train / {n - args.n_train} test, "
                        f"{n} candidates, mean over {args.seeds} seed(s)",
                        ["MRR", "Hits@1", "Hits@10", "fit_s", "decode_s"], args.json)


if __name__ == "__main__":
    main()
