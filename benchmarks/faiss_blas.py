"""How fast is the BLAS that faiss-cpu's wheel bundles, next to numpy's, on the same GEMM?

The decoding comparison of ``benchmarks/scale.py`` times faiss' exact ``IndexFlatIP``,
which computes its scores with the OpenBLAS shipped inside the faiss-cpu wheel
(``faiss_cpu.libs/libopenblas*.so``), not numpy's.  This script calls ``cblas_sgemm`` of
that bundled library directly (ctypes) and numpy's float32 GEMM on the same shapes
(queries x candidates x p, the scores ``Q E^T``), plus faiss' top-1 search, and prints
GFLOP/s (2 q n p flops per product), best of ``--repeats``.  Run it single-threaded so
that both libraries get the same core:

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/faiss_blas.py [--json]
"""
from __future__ import annotations

import argparse
import ctypes
import glob
import json
import os
import time

import numpy as np


def bundled_openblas():
    """The OpenBLAS shared library inside the faiss-cpu wheel (loaded by ``import faiss``)."""
    import faiss

    libs = glob.glob(os.path.join(os.path.dirname(os.path.dirname(faiss.__file__)), "faiss_cpu.libs",
                                  "libopenblas*.so*"))
    if not libs:
        raise SystemExit("faiss-cpu's bundled OpenBLAS was not found (faiss_cpu.libs/libopenblas*.so)")
    return ctypes.CDLL(libs[0]), libs[0]


def best(f, repeats):
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return min(ts)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--candidates", type=int, default=200_000)
    ap.add_argument("--p", type=int, default=100, help="embedding dimension (scale.py: m_y = 100)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--data", default=None,
                    help="unused: the matrices are generated (seeded); accepted as by every benchmark")
    ap.add_argument("--json", action="store_true", help="print one JSON object last")
    args = ap.parse_args(argv)

    import faiss

    lib, path = bundled_openblas()
    lib.openblas_get_config.restype = ctypes.c_char_p
    config = lib.openblas_get_config().decode()
    rng = np.random.default_rng(0)
    q, n, p = args.queries, args.candidates, args.p
    Q = rng.standard_normal((q, p), dtype=np.float32)
    E = rng.standard_normal((n, p), dtype=np.float32)
    C = np.empty((q, n), dtype=np.float32)
    flops = 2.0 * q * n * p

    # C (q x n, row-major) = Q (q x p) E^T: CblasRowMajor=101, CblasNoTrans=111, CblasTrans=112
    f32p = ctypes.POINTER(ctypes.c_float)
    lib.cblas_sgemm.argtypes = [ctypes.c_int] * 6 + [ctypes.c_float, f32p, ctypes.c_int, f32p, ctypes.c_int,
                                                     ctypes.c_float, f32p, ctypes.c_int]

    def faiss_blas():
        lib.cblas_sgemm(101, 111, 112, q, n, p, 1.0, Q.ctypes.data_as(f32p), p, E.ctypes.data_as(f32p), p,
                        0.0, C.ctypes.data_as(f32p), n)

    def numpy_blas():
        np.matmul(Q, E.T, out=C)

    faiss_blas()
    ref = Q[:5] @ E.T
    assert np.allclose(C[:5], ref, rtol=1e-4, atol=1e-3), "bundled cblas_sgemm gave a wrong product"
    index = faiss.IndexFlatIP(p)
    index.add(E)
    res = {
        "numpy sgemm": {"s": best(numpy_blas, args.repeats)},
        "faiss-bundled OpenBLAS sgemm": {"s": best(faiss_blas, args.repeats)},
        "faiss IndexFlatIP top-1": {"s": best(lambda: index.search(Q, 1), args.repeats)},
    }
    for r in res.values():
        r["gflops"] = flops / r["s"] / 1e9
    print(f"shapes {q} x {n} x {p} (float32), best of {args.repeats}; faiss {faiss.__version__}, "
          f"bundled {os.path.basename(path)} ({config})")
    for name, r in res.items():
        print(f"  {name:32s} {r['s']:.3f} s  {r['gflops']:.1f} GFLOP/s")
    if args.json:
        print(json.dumps(res))


if __name__ == "__main__":
    main()
