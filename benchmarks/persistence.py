"""Safe model format vs pickle: file size, save/load time and single-bit corruption outcomes.

Fits a SISOKR on synthetic multi-label data, then for each format (``model.save`` /
``sprokr.load`` and ``pickle``): the file size, the best of ``--repeats`` save and load
times, and the outcome of ``--flips`` random single-bit flips of the file (refused at
load, loaded as the identical model, loaded as a *different* model, or loaded but failing
at predict).

    python benchmarks/persistence.py [--n 20000] [--flips 400] [--repeats 3] [--json]
"""
from __future__ import annotations

import argparse
import json
import pickle
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import sprokr


def fit_model(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 50))
    Y = (X @ rng.standard_normal((50, 40)) > 1.5).astype(np.int8)
    model = sprokr.SISOKR(input_kernel_params={"gamma": 0.01}, input_sketch="subsample", m_x=min(1000, n // 4),
                          output_sketch="psg", m_y=min(200, n // 8), output_sketch_params={"p": 0.01},
                          random_state=seed).fit(X, Y)
    return model, X[:200]


def best_time(f, repeats):
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000, help="training pairs")
    ap.add_argument("--flips", type=int, default=400, help="single-bit corruptions per format")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", default=None,
                    help="unused: the data are generated (seeded); accepted as by every benchmark")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    model, Xq = fit_model(args.n, args.seed)
    ref = model.predict_topk(Xq, k=3)
    folder = Path(tempfile.mkdtemp())
    path, bad = folder / "model.sprokr", folder / "bad.sprokr"

    def load_safe(data):
        bad.write_bytes(data)
        return sprokr.load(bad)

    formats = {
        "safe": (lambda: model.save(path), lambda: sprokr.load(path), lambda: path.read_bytes(), load_safe),
        "pickle": (lambda: pickle.dumps(model), lambda: pickle.loads(blob), lambda: blob, pickle.loads),
    }
    blob = pickle.dumps(model)
    model.save(path)
    results = {}
    rng = np.random.default_rng(args.seed)
    for name, (dump, load, data_of, load_bytes) in formats.items():
        data = data_of()
        res = {"size_mb": len(data) / 1e6, "save_s": best_time(dump, args.repeats),
               "load_s": best_time(load, args.repeats), "refused": 0, "identical": 0, "different": 0,
               "fails_at_predict": 0}
        for pos in rng.integers(0, len(data), args.flips):
            flipped = bytearray(data)
            flipped[pos] ^= 1 << int(rng.integers(8))
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    loaded = load_bytes(bytes(flipped))
            except Exception:
                res["refused"] += 1
                continue
            try:
                out = loaded.predict_topk(Xq, k=3)
            except Exception:
                res["fails_at_predict"] += 1
                continue
            same = np.array_equal(out.indices, ref.indices) and np.array_equal(out.scores, ref.scores)
            res["identical" if same else "different"] += 1
        results[name] = res
    cols = ["size_mb", "save_s", "load_s", "refused", "identical", "different", "fails_at_predict"]
    print(f"SISOKR n={args.n}, {args.flips} single-bit flips per format")
    print(f"{'format':8s} " + " ".join(f"{c:>16s}" for c in cols))
    for name, res in results.items():
        print(f"{name:8s} " + " ".join(f"{res[c]:16.4g}" for c in cols))
    if args.json:
        print(json.dumps(results))
    return results


if __name__ == "__main__":
    main()
