"""Text kernels for text -> molecule on ChEBI-20: plain TF-IDF vs the ``text`` kernel.

The ChEBI-20 validation split is cut in two halves per seed: A (train) and B (held out).
Everything is chosen on A only: A is split again 80 / 20, every configuration of the
``text`` kernel (weighting x share of character n-grams) is scored there, the best one
is refitted on all of A and scored once on B.  Retrieval on B: the candidates are the
molecules of B (unseen), each held-out description is a query, and MRR / Hits@1 / Hits@10
of its true molecule are reported for

* ``NN``: the molecule of the nearest training description, candidates ranked by Morgan
  Tanimoto to it (the nearest-description baseline of issue 11);
* ``kNN``: candidates scored by ``sum_j k(q, t_j) T(m_j, c)`` over the 10 nearest
  training descriptions (a smoother use of the same text similarity);
* ``IOKR``: exact IOKR (output kernel ``morgan_tanimoto``), ``lam`` chosen on A's split.

Methods: ``tfidf`` (scikit-learn ``TfidfVectorizer()`` defaults, cosine),
``tfidf12`` (``sublinear_tf=True, min_df=2, ngram_range=(1, 2)``, the ChEBI benchmark's
features), ``text`` (the selected configuration of :class:`sprokr.kernels.TextKernel`,
fitted on A) and ``text-nofit`` (the same, unfitted: what ``input_kernel="text"`` by name gives).

    python benchmarks/text_kernel_chebi.py [--data PATH] [--seeds 2] [--json]
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from sprokr import IOKR
from sprokr.datasets import default_data_dir
from sprokr.kernels import TextKernel
from sprokr.metrics import hits_at_k, mean_reciprocal_rank, ranks_from_scores

GRID = [dict(weighting=w, char_weight=c) for w in ("bm25", "sublinear", "tf") for c in (0.0, 0.3, 0.5, 0.7)]
LAMS = (1e-4, 1e-3, 1e-2, 1e-1)


class TfidfFeatures:
    """A fitted TfidfVectorizer as a featuriser with the TextKernel interface (cosine)."""

    def __init__(self, **params):
        self.params = params

    def fit(self, texts):
        self.vec_ = TfidfVectorizer(**self.params).fit(texts)
        return self

    def prepare(self, texts):
        return self.vec_.transform(texts)  # l2-normalised rows


class Unfitted:
    """A TextKernel used by name, never fitted (no idf, no length statistics)."""

    def __init__(self, kernel):
        self.kernel = kernel

    def fit(self, texts):
        return self

    def prepare(self, texts):
        return self.kernel.prepare(texts)


def retrieval_scores(S_text, T_train_cand, k):
    """Candidate scores of each query from its k nearest training texts (k=1: NN baseline)."""
    if k == 1:
        return T_train_cand[S_text.argmax(axis=1)]
    idx = np.argpartition(-S_text, k, axis=1)[:, :k]
    w = np.take_along_axis(S_text, idx, axis=1)
    return np.einsum("qk,qkc->qc", w, T_train_cand[idx])


def metrics(S, truth):
    ranks = ranks_from_scores(S, truth)
    top = np.argsort(-S, axis=1, kind="stable")[:, :10]
    return {"MRR": mean_reciprocal_rank(None, ranks=ranks), "Hits@1": hits_at_k(truth, top, 1),
            "Hits@10": hits_at_k(truth, top, 10)}


def evaluate(feat, texts_tr, texts_q, mols_tr, mols_c, truth, tanimoto, lams):
    """NN / kNN / IOKR scores of the queries over the candidates with featuriser ``feat``."""
    from sprokr.kernels import LinearKernel

    t0 = time.perf_counter()
    F_tr = feat.prepare(texts_tr)
    F_q = feat.prepare(texts_q)
    S_text = (F_q @ F_tr.T).toarray()
    T = tanimoto(mols_tr, mols_c)
    out = {"NN": metrics(retrieval_scores(S_text, T, 1), truth),
           "kNN": metrics(retrieval_scores(S_text, T, 10), truth)}
    best = None
    for lam in lams:
        m = IOKR(input_kernel=LinearKernel(), output_kernel="morgan_tanimoto", lam=lam).fit(F_tr, mols_tr)
        idx = m.make_candidate_index(mols_c)
        res = m.predict_topk(F_q, candidates=idx, k=len(idx))
        S = np.full((res.indices.shape[0], len(idx)), -np.inf)
        np.put_along_axis(S, res.indices, res.scores, axis=1)
        r = metrics(S, truth)
        if best is None or r["MRR"] > best[1]["MRR"]:
            best = (lam, r)
    out["IOKR"] = dict(best[1], lam=best[0])
    out["time_s"] = time.perf_counter() - t0
    return out


def main(argv=None):
    from sprokr_chem import MorganTanimotoKernel
    from sprokr_chem.datasets import load_chebi20

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=default_data_dir() / "chebi20" / "val.sdf.zip")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--limit", type=int, default=None, help="only the first N records (smoke runs)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    mols, texts, _ = load_chebi20(args.data)
    if args.limit:
        mols, texts = mols[: args.limit], texts[: args.limit]
    kt = MorganTanimotoKernel()

    def tanimoto(a, b):
        return kt.pairwise(kt.prepare(a), kt.prepare(b))

    rows = {}
    for seed in range(args.seeds):
        rng = np.random.default_rng(seed)
        perm = rng.permutation(len(mols))
        A, B = perm[: len(perm) // 2], perm[len(perm) // 2:]
        n_fit = int(0.8 * len(A))
        A_fit, A_val = A[:n_fit], A[n_fit:]

        def sub(idx):
            return [texts[i] for i in idx], [mols[i] for i in idx]

        # ---- selection on A only: the nearest-description MRR on A's 20 %
        t_fit, m_fit = sub(A_fit)
        t_val, m_val = sub(A_val)
        sel = []
        for params in GRID:
            feat = TextKernel(**params).fit(t_fit)
            S_text = (feat.prepare(t_val) @ feat.prepare(t_fit).T).toarray()
            T = tanimoto(m_fit, m_val)
            sel.append((metrics(retrieval_scores(S_text, T, 1), np.arange(len(A_val)))["MRR"], params))
        sel.sort(key=lambda r: -r[0])
        print(f"seed {seed}: selection on A (NN MRR on A's 20 %): "
              + ", ".join(f"{p['weighting']}/c={p['char_weight']}: {v:.3f}" for v, p in sel[:5]), flush=True)
        chosen = sel[0][1]
        # lam of IOKR chosen on A's split for each featuriser
        t_A, m_A = sub(A)
        t_B, m_B = sub(B)
        methods = {"tfidf": TfidfFeatures(), "tfidf12": TfidfFeatures(sublinear_tf=True, min_df=2, ngram_range=(1, 2)),
                   "text": TextKernel(**chosen), "text-nofit": Unfitted(TextKernel(**chosen))}
        for name, feat in methods.items():
            lam_sel = evaluate(feat.fit(t_fit), t_fit, t_val, m_fit, m_val, np.arange(len(A_val)), tanimoto,
                               LAMS)["IOKR"]["lam"]
            res = evaluate(feat.fit(t_A), t_A, t_B, m_A, m_B, np.arange(len(B)), tanimoto, (lam_sel,))
            for how in ("NN", "kNN", "IOKR"):
                r = rows.setdefault(f"{name}/{how}", {})
                for key, v in res[how].items():
                    r.setdefault(key, []).append(v)
                r.setdefault("fit_s", []).append(0.0)
                r.setdefault("decode_s", []).append(res["time_s"])
            print(f"seed {seed} {name}: " + ", ".join(f"{h} MRR={res[h]['MRR']:.3f}" for h in ("NN", "kNN", "IOKR"))
                  + (f"  ({chosen})" if name == "text" else ""), flush=True)
        rows.setdefault("text/chosen", {}).setdefault("weighting", []).append(chosen["weighting"])
        rows["text/chosen"].setdefault("char_weight", []).append(chosen["char_weight"])
    out = {}
    for name, r in rows.items():
        out[name] = {k: (float(np.mean(v)) if not isinstance(v[0], str) else ",".join(v)) for k, v in r.items()}
    print(f"\nChEBI-20 val, halves A (train) / B (held out, candidates = B's molecules), {args.seeds} seed(s)")
    print(f"{'method':14s} {'MRR':>7s} {'Hits@1':>7s} {'Hits@10':>8s}")
    for name, r in out.items():
        if "MRR" in r:
            print(f"{name:14s} {r['MRR']:7.3f} {r['Hits@1']:7.3f} {r['Hits@10']:8.3f}")
    print("chosen text configurations:", out.get("text/chosen"))
    if args.json:
        print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
