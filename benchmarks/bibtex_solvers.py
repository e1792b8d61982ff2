"""Bibtex SIOKR / SISOKR: the sketched ridge's routes compared in one process.

Interleaved pairs (``auto`` then ``cholesky``, the order alternating every repeat) so that
the load of a shared machine hits both alike; per pair the fit time of each route and the
yardstick (a float32 syrk of Bibtex's size), then the medians and the median of the
per-pair ratios.  Accuracy: the relative difference of each route's test coordinates
from the float64 whitened solution (seed 0).  Settings of ``benchmarks/bibtex.py``.

    python benchmarks/bibtex_solvers.py [--data PATH] [--reps 6] [--methods SIOKR SISOKR]
                                        [--dtype float32] [--max-train N] [--json]

``--max-train`` (with ``m_x`` scaled down to fit) is for smoke tests only.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.preprocessing import StandardScaler

from sprokr.datasets import default_data_dir, load_bibtex

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import reference_blas_seconds  # noqa: E402
from bibtex import methods  # noqa: E402

ROUTES = ("auto", "cholesky")


def make(name, n, dtype, solver, seed, m_x):
    model = methods(n, dtype, solver)[name][0](seed)
    return model.set_params(m_x=min(m_x, n // 2))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=default_data_dir() / "bibtex")
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--methods", nargs="*", default=["SIOKR", "SISOKR"])
    ap.add_argument("--dtype", default="float32", choices=["float64", "float32"])
    ap.add_argument("--max-train", type=int, default=None)
    ap.add_argument("--json", action="store_true", help="print one JSON object last")
    args = ap.parse_args(argv)
    log = (lambda s: print(s, file=sys.stderr)) if args.json else print
    Xtr, Ytr, Xte, _ = load_bibtex(args.data)
    if args.max_train:
        Xtr, Ytr, Xte = Xtr[: args.max_train], Ytr[: args.max_train], Xte[:100]
    scaler = StandardScaler(with_mean=False).fit(Xtr)
    Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte[:500])
    n = Xtr.shape[0]
    out = {}
    for name in args.methods:
        ref = make(name, n, "float64", "auto", 0, 2250).fit(Xtr, Ytr).predict_coordinates(Xte)
        rows = []
        for rep in range(args.reps):
            row = {"yardstick_s": reference_blas_seconds(repeats=2)}
            for solver in ROUTES if rep % 2 == 0 else ROUTES[::-1]:
                model = make(name, n, args.dtype, solver, rep, 2250)
                t = time.perf_counter()
                model.fit(Xtr, Ytr)
                row[solver] = time.perf_counter() - t
                if rep == 0:
                    H = model.predict_coordinates(Xte)
                    row[solver + "_error"] = float(np.abs(H - ref).max() / np.abs(ref).max())
                row[solver + "_precision"] = str(model.solver_precision_)
            rows.append(row)
            log(f"  {name} rep {rep}: auto {row['auto']:.3f} s ({row['auto_precision']}), cholesky "
                f"{row['cholesky']:.3f} s, yardstick {row['yardstick_s']:.3f} s")
        fits = {s: np.array([r[s] for r in rows]) for s in ROUTES}
        out[name] = {
            "fit_s": float(np.median(fits["auto"])), "cholesky_fit_s": float(np.median(fits["cholesky"])),
            "ratio": float(np.median(fits["auto"] / fits["cholesky"])),
            "error": rows[0]["auto_error"], "cholesky_error": rows[0]["cholesky_error"],
            "float64_fallbacks": sum(r["auto_precision"] != args.dtype for r in rows),
            "yardstick_s": float(np.median([r["yardstick_s"] for r in rows])), "reps": args.reps,
            "dtype": args.dtype, "decode_s": None,  # no decoding here
        }
    print(f"{'method':8s} {'auto s':>8s} {'chol s':>8s} {'ratio':>6s} {'auto err':>9s} {'chol err':>9s} {'fallbacks':>9s}")
    for k, v in out.items():
        print(f"{k:8s} {v['fit_s']:8.3f} {v['cholesky_fit_s']:8.3f} {v['ratio']:6.2f} {v['error']:9.2e} "
              f"{v['cholesky_error']:9.2e} {v['float64_fallbacks']:9d}")
    print("fit times: medians over interleaved pairs; ratio: median of the per-pair ratios; errors: relative "
          "difference of the test coordinates from the float64 whitened solution (seed 0)")
    if args.json:
        print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
