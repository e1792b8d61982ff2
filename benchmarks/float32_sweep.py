"""The sweep behind the float32 / refinement claims of docs/architecture.md ("Solvers").

Two sweeps, each comparing the default solver (``solver="auto"``) with the stable float64
QR route (``solver="qr"``) on the same data and sketch, as relative max-difference of the
predictions on 20 held-out rows, against the tolerance of the dtype asked for (1e-4
float32, 1e-6 float64):

* ``--model siokr`` (the "648-case sweep"): SIOKR on 5 binary labels, seeds 0-2,
  n 200/600, d 3/10, Gaussian gamma 0.01/0.1/1, lam 1e-2/1e-4/1e-6, sub-sampling /
  Gaussian / 20 %-sparse Rademacher (p-SR) input sketches of m_x = n / 5, float32 and
  float64 (3 x 2 x 2 x 3 x 3 x 3 x 2 = 648 fits);
* ``--model krr`` (the "216-case sweep"): the sketched kernel ridge on 5 real targets,
  seed 0, the same grid (216 fits).

The data are those of ``tests/test_float32_policy.py`` (its ``HARD`` / ``REFINE_HARD``
cases came from these sweeps).  Prints, per dtype asked, how many solutions were kept in
that dtype, how many fell back to float64, the worst error / tolerance over all kept
solutions, and every case above its tolerance.

    OPENBLAS_NUM_THREADS=1 python benchmarks/float32_sweep.py --model siokr [--json]
    OPENBLAS_NUM_THREADS=1 python benchmarks/float32_sweep.py --model krr [--json]
    python benchmarks/float32_sweep.py --quick          # a few cases, seconds
"""
from __future__ import annotations

import argparse
import itertools
import json
import time
import warnings

import numpy as np

from sprokr import SIOKR
from sprokr.models import KernelRidgeRegressor

TOL = {"float32": 1e-4, "float64": 1e-6}
GRID = dict(n=(200, 600), d=(3, 10), gamma=(0.01, 0.1, 1.0), lam=(1e-2, 1e-4, 1e-6),
            sketch=("subsample", "gaussian", "psr"))


def _rel(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


def run_case(model, seed, n, d, gamma, lam, sketch, dtype):
    """Fit the default and the QR route on one case; return the record of the default."""
    rng = np.random.default_rng(seed)
    X, Xq = rng.normal(size=(n, d)), rng.normal(size=(20, d))
    sk = dict(input_sketch=sketch, m_x=n // 5, random_state=seed,
              input_sketch_params={"p": 0.2} if sketch == "psr" else None)
    if model == "siokr":
        Y = (X @ rng.normal(size=(d, 5)) + 0.3 * rng.normal(size=(n, 5)) > 0).astype(float)
        kw = dict(input_kernel_params={"gamma": gamma}, output_kernel_params={"gamma": 0.5}, lam=lam, **sk)
        make, target = SIOKR, Y
        predict = lambda m: m.predict_coordinates(Xq)  # noqa: E731
    else:
        T = np.sin(X @ rng.normal(size=(d, 5))) + 0.1 * rng.normal(size=(n, 5))
        kw = dict(kernel_params={"gamma": gamma}, lam=lam, **sk)
        make, target = KernelRidgeRegressor, T
        predict = lambda m: m.predict(Xq)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the float64 fallback warns; it is recorded below
        ref = predict(make(**kw, solver="qr").fit(X, target))
        t0 = time.perf_counter()
        m = make(**kw, dtype=dtype).fit(X, target)
        fit_s = time.perf_counter() - t0
    err = _rel(predict(m), ref)
    return {"seed": seed, "n": n, "d": d, "gamma": gamma, "lam": lam, "sketch": sketch, "dtype": dtype,
            "kept_dtype": str(np.dtype(m.dtype_)), "solver": getattr(m, "solver_", None),
            "estimate": getattr(m, "solver_error_estimate_", None), "error": err,
            "ratio": err / TOL[dtype], "fit_s": fit_s}


def cases(model, quick):
    if quick:
        return [(0, 200, 3, 0.1, 1e-2, "subsample"), (0, 200, 10, 0.01, 1e-4, "gaussian"),
                (0, 200, 3, 1.0, 1e-6, "psr")]
    seeds = (0, 1, 2) if model == "siokr" else (0,)
    return list(itertools.product(seeds, *GRID.values()))


def summarise(records):
    out = {}
    for dtype in TOL:
        rs = [r for r in records if r["dtype"] == dtype]
        if not rs:
            continue
        kept = [r for r in rs if r["kept_dtype"] == dtype]
        worst = max(rs, key=lambda r: r["ratio"])
        out[dtype] = {"cases": len(rs), "kept_in_dtype": len(kept), "fell_back_to_float64": len(rs) - len(kept),
                      "worst_error_over_tol": worst["ratio"],
                      "worst_kept_in_dtype_over_tol": max((r["ratio"] for r in kept), default=float("nan")),
                      "over_tol": sum(r["ratio"] > 1 for r in rs),
                      "fit_s": float(sum(r["fit_s"] for r in rs))}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="siokr", choices=["siokr", "krr"],
                    help="siokr: the 648-case sweep; krr: the 216-case one")
    ap.add_argument("--dtypes", nargs="+", default=["float32", "float64"], choices=list(TOL))
    ap.add_argument("--quick", action="store_true", help="three cases only (a smoke run)")
    ap.add_argument("--data", default=None,
                    help="unused: the data are generated (seeded); accepted as by every benchmark")
    ap.add_argument("--json", action="store_true", help="print one JSON object last")
    args = ap.parse_args(argv)

    records = []
    for case in cases(args.model, args.quick):
        for dtype in args.dtypes:
            records.append(run_case(args.model, *case, dtype))
    summary = summarise(records)
    print(f"{args.model}: {len(records)} fits, default solver vs the float64 QR route")
    for dtype, s in summary.items():
        print(f"  {dtype}: {s['kept_in_dtype']} kept in {dtype}, {s['fell_back_to_float64']} refitted in "
              f"float64; worst error / tolerance {s['worst_error_over_tol']:.3g} (kept in {dtype}: "
              f"{s['worst_kept_in_dtype_over_tol']:.3g}); {s['over_tol']} above tolerance")
    for r in records:
        if r["ratio"] > 1:
            print("  ABOVE TOLERANCE:", {k: r[k] for k in ("seed", "n", "d", "gamma", "lam", "sketch", "dtype",
                                                          "kept_dtype", "solver", "error", "estimate")})
    if args.json:
        print(json.dumps({f"{args.model} {dtype}": s for dtype, s in summary.items()}))


if __name__ == "__main__":
    main()
