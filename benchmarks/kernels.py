"""Kernel blocks: sprokr's vector kernels against the equivalent scikit-learn pairwise call.

Times one Gram block ``k(A, B)`` (A: n_a x d, B: n_b x d) for dense and sparse inputs, in
float64 and float32, for sprokr and for ``sklearn.metrics.pairwise``, in the same run.
The sparse case uses the Bibtex inputs (scaled binary features) when they are available.

    python benchmarks/kernels.py [--data PATH] [--repeats 3] [--json]
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import pairwise as skp
from sklearn.preprocessing import StandardScaler

from sprokr.kernels import (
    CosineKernel,
    GaussianKernel,
    LaplacianKernel,
    LinearKernel,
    PolynomialKernel,
)
from sprokr.datasets import default_data_dir, load_bibtex

CASES = {
    "linear": (LinearKernel, {}, lambda a, b: skp.linear_kernel(a, b)),
    "polynomial": (PolynomialKernel, {"degree": 3, "gamma": 0.01, "coef0": 1.0},
                   lambda a, b: skp.polynomial_kernel(a, b, degree=3, gamma=0.01, coef0=1.0)),
    "gaussian": (GaussianKernel, {"gamma": 0.01}, lambda a, b: skp.rbf_kernel(a, b, gamma=0.01)),
    "cosine": (CosineKernel, {}, lambda a, b: skp.cosine_similarity(a, b)),
    "laplacian": (LaplacianKernel, {"gamma": 0.01}, lambda a, b: skp.laplacian_kernel(a, b, gamma=0.01)),
}


def best_times(fs, repeats):
    """Best time of each callable, interleaved so that allocation and BLAS warm-up effects
    do not favour the one that runs second."""
    times = [[] for _ in fs]
    for r in range(repeats):
        order = range(len(fs)) if r % 2 == 0 else reversed(range(len(fs)))
        for i in order:
            t0 = time.perf_counter()
            fs[i]()
            times[i].append(time.perf_counter() - t0)
    return [min(t) for t in times]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=default_data_dir() / "bibtex")
    ap.add_argument("--repeats", type=int, default=6)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    inputs = {"dense 4000x2000, d=200": (rng.standard_normal((4000, 200)), rng.standard_normal((2000, 200)))}
    try:
        Xtr, _, _, _ = load_bibtex(args.data)
        Xs = StandardScaler(with_mean=False).fit_transform(Xtr)
        inputs["sparse Bibtex 4880x2250, d=1836"] = (Xs, Xs[:2250])
    except FileNotFoundError:
        pass
    results = {}
    print(f"{'case':34s} {'kernel':11s} {'dtype':8s} {'sprokr s':>9s} {'sklearn s':>9s} {'speed-up':>8s}")
    for case, (A, B) in inputs.items():
        sparse = hasattr(A, "tocsr")
        for name, (cls, params, ref) in CASES.items():
            if sparse and name == "laplacian":
                continue  # sklearn densifies; not a like-for-like comparison
            for dtype in ("float64", "float32"):
                k = cls(dtype=dtype, **params)
                Ap, Bp = k.prepare(A), k.prepare(B)
                Ar, Br = A.astype(dtype), B.astype(dtype)
                ours, theirs = best_times([lambda: k.pairwise(Ap, Bp), lambda: ref(Ar, Br)], args.repeats)
                key = f"{name}/{dtype}/{'sparse' if sparse else 'dense'}"
                results[key] = {"sprokr_s": ours, "sklearn_s": theirs, "speedup": theirs / ours}
                print(f"{case:34s} {name:11s} {dtype:8s} {ours:9.4f} {theirs:9.4f} {theirs / ours:7.2f}x")
    if args.json:
        print(json.dumps(results))
    return results


if __name__ == "__main__":
    main()
