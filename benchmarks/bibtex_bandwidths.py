"""Bibtex: the output bandwidths and lams of benchmarks/bibtex.py, chosen again by validation.

``benchmarks/bibtex.py`` fixes, per method, the output Gaussian kernel's ``sigma2``
(IOKR 1, SIOKR 1e7, ISOKR 1e6, SISOKR 1e4) and ``lam`` (1e-5, 1e-6, 1e-5, 1e-5); the
SISOKR paper's text does not give them.  This script chooses both again on a seeded
validation split (``--val-fraction``) of the TRAINING set only, for each method with
bibtex.py's own estimator (input kernel ``sigma2 = 1e4``, the same sketches and sizes):
:func:`sprokr.model_selection.select_model` over the output bandwidths ``--sigma2`` x
the lam path ``--lams`` (default 1e-7 ... 1e-4, two values per decade: a short grid,
as scoring by F1 decodes a fitted copy per ``lam``, for IOKR and SIOKR an ``n x n`` /
``m_x x n`` coefficient matrix each), scored by the per-sample F1 of the decoded label sets
(:func:`sprokr.metrics.f1_samples_scorer`; candidates: the distinct label vectors of the
training part).  The chosen setting is refitted on the whole training set; the test split
is only used to report its F1 next to the F1 of bibtex.py's fixed setting (same seed: same
sketches).  ``val_f1`` of the fixed setting is its score on the same split (NaN when its
``sigma2`` or ``lam`` is not on the grids).

    python benchmarks/bibtex_bandwidths.py [--data PATH] [--seeds 1] [--json]

``select_s`` is the time of the selection (all grid points and lams, without the final
refit), ``fit_s`` / ``decode_s`` those of the chosen setting's refit and test decode.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.base import clone

from sprokr.datasets import default_data_dir
from sprokr.metrics import f1_samples, f1_samples_scorer
from sprokr.model_selection import SelectionCache, select_model

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import CpuSteal, print_yardstick_and_json, reference_blas_seconds  # noqa: E402
from bibtex import methods, standardised_bibtex  # noqa: E402  (the estimators and fixed settings of bibtex.py)


def fixed_validation_score(sel, sigma2, lam):
    """Validation F1 of ``(sigma2, lam)`` on the selection's split, NaN if off the grids."""
    for g in sel["grid"]:
        if np.isclose(g["params"]["output_kernel_params"]["sigma2"], sigma2):
            hit = np.flatnonzero(np.isclose(g["lams"], lam, rtol=1e-9, atol=0.0))
            if hit.size:
                return float(g["scores"][hit[0]])
    return float("nan")


def test_f1(model, Xte, Yte):
    t0 = time.perf_counter()
    f1 = f1_samples(Yte, model.predict(Xte))
    return f1, time.perf_counter() - t0


def select_one(est, Xtr, Ytr, Xte, Yte, lams, sigma2s, args, seed, log):
    """Selection, refit of the choice and fit of the fixed setting for one method and seed."""
    fixed = {"sigma2": est.output_kernel_params["sigma2"], "lam": est.lam}
    t0 = time.perf_counter()
    sel = select_model(est, Xtr, Ytr, lams,
                       param_grid={"output_kernel_params": [{"sigma2": float(s)} for s in sigma2s]},
                       scoring=f1_samples_scorer(), validation_fraction=args.val_fraction,
                       random_state=seed, cache=SelectionCache())
    select_s = time.perf_counter() - t0
    best = sel["best_params"]
    chosen = {"sigma2": float(best["output_kernel_params"]["sigma2"]), "lam": float(best["lam"])}
    grid = {}
    for g in sel["grid"]:
        s = g["params"]["output_kernel_params"]["sigma2"]
        grid[f"{s:g}"] = {"best_lam": g["best_lam"], "val_f1": g["best_score"]}
        log(f"    sigma2_y={s:<8g} best lam {g['best_lam']:.3g}  val F1 {g['best_score']:.4f}  "
            f"(fit {g['fit_s']:.1f} s, path {g['path_s']:.1f} s)")
    t0 = time.perf_counter()
    model = clone(est).set_params(**best).fit(Xtr, Ytr)
    fit_s = time.perf_counter() - t0
    f1, decode_s = test_f1(model, Xte, Yte)
    if np.isclose(chosen["sigma2"], fixed["sigma2"]) and np.isclose(chosen["lam"], fixed["lam"]):
        fixed_f1 = f1  # the same estimator, the same seed: the same fit
    else:
        fixed_f1, _ = test_f1(clone(est).fit(Xtr, Ytr), Xte, Yte)
    return {"sigma2_y": chosen["sigma2"], "lam": chosen["lam"], "val_f1": float(sel["best_score"]), "f1": f1,
            "fixed_sigma2_y": float(fixed["sigma2"]), "fixed_lam": float(fixed["lam"]),
            "fixed_val_f1": fixed_validation_score(sel, fixed["sigma2"], fixed["lam"]), "fixed_f1": fixed_f1,
            "select_s": select_s, "fit_s": fit_s, "decode_s": decode_s, "grid": grid,
            "n_train": sel["n_train"], "n_val": sel["n_val"]}


def run(args, log):
    Xtr, Ytr, Xte, Yte = standardised_bibtex(args.data, args.n_train)
    n = Xtr.shape[0]
    lams = np.logspace(args.lams[0], args.lams[1], int(args.lams[2]))
    res = {}
    for name, (make, _) in methods(n, args.dtype).items():
        if args.methods and name not in args.methods:
            continue
        runs = []
        for seed in range(args.seeds):
            est = make(seed)  # bibtex.py's estimator, sketches seeded by ``seed``
            for size in ("m_x", "m_y"):
                if getattr(args, size) is not None and est.get_params().get(size) is not None:
                    est.set_params(**{size: getattr(args, size)})
            log(f"{name} seed {seed}:")
            r = select_one(est, Xtr, Ytr, Xte, Yte, lams, args.sigma2, args, seed, log)
            log(f"  chosen sigma2_y={r['sigma2_y']:g} lam={r['lam']:.3g} (val F1 {r['val_f1']:.4f}): test F1 "
                f"{r['f1']:.4f}; fixed sigma2_y={r['fixed_sigma2_y']:g} lam={r['fixed_lam']:.3g} "
                f"(val F1 {r['fixed_val_f1']:.4f}): test F1 {r['fixed_f1']:.4f}; select {r['select_s']:.1f} s")
            runs.append(r)
        mean = {k: float(np.mean([r[k] for r in runs]))
                for k in ("val_f1", "f1", "fixed_val_f1", "fixed_f1", "select_s", "fit_s", "decode_s")}
        res[name] = {**mean, "f1_std": float(np.std([r["f1"] for r in runs])),
                     "fixed_f1_std": float(np.std([r["fixed_f1"] for r in runs])),
                     "sigma2_y": [r["sigma2_y"] for r in runs], "lam": [r["lam"] for r in runs],
                     "fixed_sigma2_y": runs[0]["fixed_sigma2_y"], "fixed_lam": runs[0]["fixed_lam"],
                     "grid": [r["grid"] for r in runs], "seeds": len(runs), "dtype": args.dtype,
                     "n_train": runs[0]["n_train"], "n_val": runs[0]["n_val"]}
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=default_data_dir() / "bibtex")
    ap.add_argument("--seeds", type=int, default=1,
                    help="seeds 0..N-1 (each: its own validation split and sketches)")
    ap.add_argument("--methods", nargs="*", default=None, help="subset of IOKR SIOKR ISOKR SISOKR")
    ap.add_argument("--sigma2", type=float, nargs="+", default=[1.0, 1e2, 1e4, 1e6, 1e7],
                    help="output Gaussian bandwidths sigma2 of the grid")
    ap.add_argument("--lams", type=float, nargs=3, default=[-7, -4, 7], metavar=("LOG10_MIN", "LOG10_MAX", "NUM"),
                    help="lam grid: numpy.logspace(LOG10_MIN, LOG10_MAX, NUM) (default 1e-7 ... 1e-4, two "
                         "per decade: IOKR and SIOKR, without output sketch, form n x n / m_x x n "
                         "coefficients per lam to decode, ~4 s each on one core)")
    ap.add_argument("--val-fraction", type=float, default=0.2)
    ap.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    ap.add_argument("--n-train", type=int, default=None, help="first N training documents only (smoke runs)")
    ap.add_argument("--m-x", type=int, default=None, help="override bibtex.py's m_x (smoke runs)")
    ap.add_argument("--m-y", type=int, default=None, help="override bibtex.py's m_y (smoke runs)")
    ap.add_argument("--json", action="store_true", help="print one JSON object last")
    args = ap.parse_args(argv)
    log = (lambda s: print(s, file=sys.stderr)) if args.json else print
    ref_before = reference_blas_seconds()
    with CpuSteal() as steal:
        res = run(args, log)
    ref = min(ref_before, reference_blas_seconds())
    print(f"{'method':7s} {'sigma2_y':>9s} {'lam':>8s} {'val F1':>7s} {'test F1':>8s} | {'fixed':>5s} {'sigma2_y':>9s} "
          f"{'lam':>8s} {'val F1':>7s} {'test F1':>8s} | {'select s':>8s}")
    for k, v in res.items():
        s2 = ",".join(f"{s:g}" for s in v["sigma2_y"])
        lam = ",".join(f"{x:.2g}" for x in v["lam"])
        print(f"{k:7s} {s2:>9s} {lam:>8s} {v['val_f1']:7.4f} {v['f1']:8.4f} | {'':5s} {v['fixed_sigma2_y']:9g} "
              f"{v['fixed_lam']:8.2g} {v['fixed_val_f1']:7.4f} {v['fixed_f1']:8.4f} | {v['select_s']:8.1f}")
    print_yardstick_and_json(res, ref, steal, args.json)
    return res


if __name__ == "__main__":
    main()
