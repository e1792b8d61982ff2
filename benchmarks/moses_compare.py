"""Compare the predictions of two ``benchmarks/moses.py`` runs (e.g. local and Dask).

    python benchmarks/moses.py --task smiles --n 1e4,1e5 --methods sisokr --workdir W
    python benchmarks/moses.py --task smiles --n 1e4,1e5 --methods sisokr --workdir W --executor dask
    python benchmarks/moses_compare.py W --task smiles --method sisokr [--json]

Each run saves the top-10 of every query (``predictions-<task>-<method>-<n>-<executor>.npz``
in its work directory).  For every ``n`` present for both executors: the fraction of
queries with the same top-1 candidate and of identical top-10 lists, and the largest
absolute difference of the top-1 and top-10 scores.
"""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("workdir")
    p.add_argument("--task", default="smiles")
    p.add_argument("--method", default="sisokr")
    p.add_argument("--a", default="local")
    p.add_argument("--b", default="dask")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    pat = re.compile(rf"predictions-{args.task}-{args.method}-(\d+)-{args.a}\.npz")
    out = {}
    for f in sorted(Path(args.workdir).iterdir()):
        m = pat.fullmatch(f.name)
        other = f.with_name(f.name.replace(f"-{args.a}.npz", f"-{args.b}.npz"))
        if not m or not other.exists():
            continue
        a, b = np.load(f), np.load(other)
        n = int(m.group(1))
        out[n] = {"top1_identical": float(np.mean(a["indices"][:, 0] == b["indices"][:, 0])),
                  "top10_identical": float(np.mean((a["indices"] == b["indices"]).all(axis=1))),
                  "top1_score_max_abs_diff": float(np.abs(a["scores"][:, 0] - b["scores"][:, 0]).max()),
                  "top10_score_max_abs_diff": float(np.abs(a["scores"] - b["scores"]).max()),
                  "queries": int(a["indices"].shape[0])}
        print(f"n={n}: " + ", ".join(f"{k} {v:.3g}" for k, v in out[n].items()))
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
