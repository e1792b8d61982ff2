"""Model selection on Bibtex: SISOKR's lam (and input bandwidth) chosen on a validation split.

Everything is chosen on a seeded validation split (``--val-fraction``) of the TRAINING
set; the test split is only used to report the F1 of the chosen model (refitted on the
whole training set).  Settings of benchmarks/bibtex.py (SISOKR paper: lam = 1e-5,
sigma2 = 1e4, m_x = 2250, p-SG m_y = 200).

Rows:

* ``paper``: the paper's lam and sigma2, fitted once (the reference fit time);
* ``path-kl/eigh``, ``path-kl/chol``: :class:`sprokr.model_selection.LambdaSearchCV` with
  the validation kernel-induced loss, eigen route and per-lam Cholesky route;
* ``path-f1``: the same path scored by the task metric (F1 of decoded label sets);
* ``grid-f1``: :func:`sprokr.model_selection.select_model` over the input bandwidths
  ``--sigma2`` x the lam grid (F1);
* ``brute-f1`` (``--brute-force``): one refit per lam on the same split (the reference
  the path must agree with; exactly so with the default ``--dtype float64``; with
  ``--dtype float32`` the refits' coordinates are 5e-6 off the path's, one validation
  document decodes differently at some lams, and on Bibtex that moved brute-f1's choice).

``select_s`` is the time of the selection (without the final refit), ``fit_s`` the time
of the final fit on the whole training set.

    python benchmarks/model_selection_bibtex.py [--data PATH] [--brute-force] [--json]
"""
from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.base import clone

from sprokr import SISOKR
from sprokr.datasets import default_data_dir
from sprokr.metrics import f1_samples, f1_samples_scorer
from sprokr.model_selection import LambdaSearchCV, select_model
from sprokr.models.dsokr import validation_split

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import CpuSteal, print_yardstick_and_json, reference_blas_seconds  # noqa: E402
from bibtex import standardised_bibtex  # noqa: E402


def make_estimator(n, args, sigma2=1e4, lam=1e-5):
    return SISOKR(lam=lam, input_kernel_params={"sigma2": sigma2}, output_kernel_params={"sigma2": 1e4},
                  input_sketch="subsample", m_x=args.m_x, output_sketch="psg", m_y=args.m_y,
                  output_sketch_params={"p": 20.0 / n}, random_state=args.seed, dtype=args.dtype)


def evaluate(model, Xte, Yte):
    t0 = time.perf_counter()
    f1 = f1_samples(Yte, model.predict(Xte))
    return f1, time.perf_counter() - t0


def run(args, log):
    Xtr, Ytr, Xte, Yte = standardised_bibtex(args.data, args.n_train)
    n = Xtr.shape[0]
    lams = np.logspace(args.lams[0], args.lams[1], int(args.lams[2]))
    res = {}

    def record(name, lam, sigma2, select_s, model, fit_s, val_score):
        f1, dec = evaluate(model, Xte, Yte)
        res[name] = {"lam": float(lam), "sigma2": float(sigma2), "f1": f1, "val_score": val_score,
                     "select_s": select_s, "fit_s": fit_s, "decode_s": dec}
        log(f"{name:14s} lam={lam:.3g} sigma2={sigma2:.3g} test F1 {f1:.4f}  select {select_s:.1f} s  "
            f"fit {fit_s:.1f} s")

    t0 = time.perf_counter()
    paper = make_estimator(n, args).fit(Xtr, Ytr)
    record("paper", 1e-5, 1e4, 0.0, paper, time.perf_counter() - t0, float("nan"))

    for name, scoring, method in (("path-kl/eigh", None, "eigh"), ("path-kl/chol", None, "cholesky"),
                                  ("path-f1", f1_samples_scorer(), "auto")):
        t0 = time.perf_counter()
        search = LambdaSearchCV(make_estimator(n, args), lams, scoring=scoring, validation_fraction=args.val_fraction,
                                refit=True, method=method, random_state=args.seed).fit(Xtr, Ytr)
        total = time.perf_counter() - t0
        log(f"  scores ({search.method_}): " + " ".join(f"{s:.5g}" for s in search.scores_))
        record(name, search.best_lam_, 1e4, total - search.times_["refit"], search.best_estimator_,
               search.times_["refit"], search.best_score_)

    if args.sigma2:
        t0 = time.perf_counter()
        sel = select_model(make_estimator(n, args), Xtr, Ytr, lams,
                           param_grid={"input_kernel_params": [{"sigma2": s} for s in args.sigma2]},
                           scoring=f1_samples_scorer(), validation_fraction=args.val_fraction, random_state=args.seed)
        select_s = time.perf_counter() - t0
        for g in sel["grid"]:
            log(f"  sigma2={g['params']['input_kernel_params']['sigma2']:.3g}: best lam {g['best_lam']:.3g}, "
                f"F1 {g['best_score']:.4f} (fit {g['fit_s']:.1f} s, path {g['path_s']:.1f} s)")
        best = sel["best_params"]
        t0 = time.perf_counter()
        model = clone(make_estimator(n, args)).set_params(**best).fit(Xtr, Ytr)
        record("grid-f1", best["lam"], best["input_kernel_params"]["sigma2"], select_s, model,
               time.perf_counter() - t0, sel["best_score"])

    if args.brute_force:
        # the same split as LambdaSearchCV(random_state=seed): one refit per lam
        (Xa, Ya), (Xv, Yv) = validation_split(Xtr, Ytr, args.val_fraction, np.random.default_rng(args.seed))
        t0 = time.perf_counter()
        scores = [f1_samples(Yv, make_estimator(n, args, lam=lam).fit(Xa, Ya).predict(Xv)) for lam in lams]
        select_s = time.perf_counter() - t0
        log("  scores (refits): " + " ".join(f"{s:.5g}" for s in scores))
        best = float(lams[int(np.argmax(scores))])
        t0 = time.perf_counter()
        model = make_estimator(n, args, lam=best).fit(Xtr, Ytr)
        record("brute-f1", best, 1e4, select_s, model, time.perf_counter() - t0, float(np.max(scores)))
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=default_data_dir() / "bibtex")
    ap.add_argument("--lams", type=float, nargs=3, default=[-8, -2, 13], metavar=("LOG10_MIN", "LOG10_MAX", "NUM"),
                    help="lam grid: numpy.logspace(LOG10_MIN, LOG10_MAX, NUM)")
    ap.add_argument("--sigma2", type=float, nargs="*", default=[1e3, 1e4, 1e5],
                    help="input bandwidths of the grid-f1 row (none: skip it)")
    ap.add_argument("--m-x", type=int, default=2250)
    ap.add_argument("--m-y", type=int, default=200)
    ap.add_argument("--val-fraction", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-train", type=int, default=None, help="first N training documents only (smoke runs)")
    ap.add_argument("--dtype", default="float64", choices=["float64", "float32"],
                    help="precision of the model's kernel blocks (default float64, as benchmarks/bibtex.py): "
                         "in float32 the path (float64 solves) and the float32 refits decode one "
                         "validation document differently at some lams, so brute-f1 is the path's "
                         "exact reference in float64 only")
    ap.add_argument("--brute-force", action="store_true", help="also refit once per lam (slow)")
    ap.add_argument("--verbose", action="store_true", help="log every candidate (logger sprokr)")
    ap.add_argument("--json", action="store_true", help="print one JSON object last")
    args = ap.parse_args(argv)
    if args.verbose:
        logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    log = (lambda s: print(s, file=sys.stderr)) if args.json else print
    ref_before = reference_blas_seconds()
    with CpuSteal() as steal:
        res = run(args, log)
    ref = min(ref_before, reference_blas_seconds())
    print(f"{'method':14s} {'lam':>8s} {'sigma2':>8s} {'test F1':>8s} {'select s':>9s} {'fit s':>7s}")
    for k, v in res.items():
        print(f"{k:14s} {v['lam']:8.2g} {v['sigma2']:8.2g} {v['f1']:8.4f} {v['select_s']:9.1f} {v['fit_s']:7.1f}")
    print_yardstick_and_json(res, ref, steal, args.json)
    return res


if __name__ == "__main__":
    main()
