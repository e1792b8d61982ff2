"""Joint quantile regression, sketched versus exact (p-sparsified paper, Table 1 setting).

Levels tau = (0.1, 0.3, 0.5, 0.7, 0.9), pinball loss, decomposable kernel ``k M`` with
``M_ij = exp(-gamma_tau (tau_i - tau_j)^2)``, Gaussian ``k``.  Data: scikit-learn's bundled
diabetes set (442 patients, 10 inputs; offline), ten random 70/30 splits; inputs and target
standardised with the training statistics, metrics in the original target units: pinball
loss (mean over test samples of the sum over levels), crossing loss (mean of
``sum_j max(0, q_j - q_{j+1})``) and fit time.  Sketches: 20/n-SR, 20/n-SG, accumulation
(m_acc = 20), CountSketch, all s = 50.

Hyper-parameters (sigma2, lam, gamma_tau) are chosen inside each split's training part by
5-fold CV of the exact machine's pinball loss (nested: the test part is never seen).

Solvers, timed in the same run on the same fits: the default (``optimizer="auto"``: Newton
with an active-set finish, stopped at a certified relative duality gap <= 1e-4) and the
former route, seeded mini-batch Adam (``optimizer="adam"``, learning rate 0.05, batches of
64, at most 200 epochs, step-halving stop).  Per method: ``fit_s`` / ``gap_max`` (largest
certified gap over the splits) / ``converged`` for the default, ``adam_fit_s`` /
``adam_gap_max`` / ``adam_converged`` / ``adam_pinball`` for Adam,
``fit_ratio = fit_s / adam_fit_s``, and ``solve_s`` / ``adam_solve_s``: the solvers' own
phases (square-loss start and iterations, ``fit_times_``), without the features.

    python benchmarks/quantiles.py [--splits 10] [--no-cv] [--json]

``--no-cv`` uses fixed hyper-parameters (``FIXED``: sigma2 = 10, lam = 1e-2, gamma_tau =
10, the CV choice of most splits) for quick runs.  ``--data`` is accepted for uniformity
(the data ship with scikit-learn).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections import Counter

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import KFold, train_test_split

from sprokr import get_registry
from sprokr.datasets import default_data_dir
from sprokr.metrics import crossing_loss, pinball_loss
from sprokr.models import JointQuantileRegressor

TAUS = (0.1, 0.3, 0.5, 0.7, 0.9)
#: hyper-parameters of ``--no-cv`` runs
FIXED = {"sigma2": 10.0, "lam": 1e-2, "gamma_tau": 10.0}
GRID = {"sigma2": (3.0, 10.0, 30.0), "lam": (1e-4, 1e-3, 1e-2), "gamma_tau": (1.0, 10.0)}
#: the default solver (certified relative duality gap <= tol) and the former Adam route
SOLVERS = {"default": {"tol": 1e-4},
           "adam": {"optimizer": "adam", "learning_rate": 0.05, "batch_size": 64, "max_epochs": 200, "tol": 1e-4}}


def methods(n):
    """name -> (sketch, m, params)."""
    return {"exact": (None, None, None),
            "20/n-SR s=50": ("psr", 50, {"p": 20.0 / n}),
            "20/n-SG s=50": ("psg", 50, {"p": 20.0 / n}),
            "Acc. m=20 s=50": ("accumulation", 50, {"m_acc": 20}),
            "CountSketch s=50": ("countsketch", 50, None)}


def make(hp, sketch, m, params, seed, solver="default"):
    return JointQuantileRegressor(taus=TAUS, gamma_tau=hp["gamma_tau"], kernel_params={"sigma2": hp["sigma2"]},
                                  lam=hp["lam"], input_sketch=sketch, m_x=m, input_sketch_params=params,
                                  random_state=seed, **SOLVERS[solver])


def standardise(Xtr, ytr, Xte):
    mx, sx = Xtr.mean(axis=0), Xtr.std(axis=0)
    my, sy = ytr.mean(), ytr.std()
    return (Xtr - mx) / sx, (ytr - my) / sy, (Xte - mx) / sx, my, sy


def cross_validate(X, y, log):
    """(sigma2, lam, gamma_tau) of the best 5-fold CV pinball of the exact machine on ``(X, y)``."""
    best = None
    for s2 in GRID["sigma2"]:
        for lam in GRID["lam"]:
            for g in GRID["gamma_tau"]:
                hp = {"sigma2": s2, "lam": lam, "gamma_tau": g}
                scores = []
                for k, (tr, va) in enumerate(KFold(5, shuffle=True, random_state=0).split(X)):
                    Xa, ya, Xb, my, sy = standardise(X[tr], y[tr], X[va])
                    Q = make(hp, None, None, None, k).fit(Xa, ya).predict(Xb) * sy + my
                    scores.append(pinball_loss(y[va], Q, TAUS))
                if best is None or np.mean(scores) < best[0]:
                    best = (np.mean(scores), hp)
    log(f"cv: selected {best[1]} (pinball {best[0]:.3f})")
    return best[1]


def solve_time(model):
    """Seconds of the solver's phases (square-loss start + iterations), without the features."""
    return model.fit_times_.get("init", 0.0) + model.fit_times_.get("solve", 0.0)


def fit_timed(model, X, y):
    t0 = time.perf_counter()
    model.fit(X, y)
    return time.perf_counter() - t0


def run(splits, cv, log):
    X, y = load_diabetes(return_X_y=True)
    rows, chosen = {}, Counter()
    for split in range(splits):
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=split)
        hp = cross_validate(Xtr, ytr, log) if cv else FIXED  # inside the training part only
        chosen[tuple(hp.values())] += 1
        Xa, ya, Xb, my, sy = standardise(Xtr, ytr, Xte)
        for name, (sk, m, params) in methods(len(ytr)).items():
            model, adam = make(hp, sk, m, params, split), make(hp, sk, m, params, split, "adam")
            # alternate the order over splits: neither solver always runs on a warm cache
            first, second = (model, adam) if split % 2 == 0 else (adam, model)
            t_first, t_second = fit_timed(first, Xa, ya), fit_timed(second, Xa, ya)
            fit_s, adam_s = (t_first, t_second) if first is model else (t_second, t_first)
            t0 = time.perf_counter()
            Q = model.predict(Xb) * sy + my
            pred_s = time.perf_counter() - t0
            Qa = adam.predict(Xb) * sy + my
            rows.setdefault(name, []).append(
                (pinball_loss(yte, Q, TAUS), crossing_loss(Q, TAUS), fit_s, pred_s, model.converged_,
                 model.objective_gap_, adam_s, adam.objective_gap_, adam.converged_, pinball_loss(yte, Qa, TAUS),
                 solve_time(model), solve_time(adam)))
    results = {}
    for name, r in rows.items():
        a = np.array(r, dtype=float)
        results[name] = {"pinball": float(a[:, 0].mean()), "pinball_std": float(a[:, 0].std()),
                         "crossing": float(a[:, 1].mean()), "crossing_std": float(a[:, 1].std()),
                         "fit_s": float(a[:, 2].mean()), "predict_s": float(a[:, 3].mean()),
                         "converged": float(a[:, 4].mean()), "gap_max": float(a[:, 5].max()),
                         "adam_fit_s": float(a[:, 6].mean()), "adam_gap_max": float(a[:, 7].max()),
                         "adam_converged": float(a[:, 8].mean()), "adam_pinball": float(a[:, 9].mean()),
                         "fit_ratio": float(a[:, 2].mean() / a[:, 6].mean()),
                         "solve_s": float(a[:, 10].mean()), "adam_solve_s": float(a[:, 11].mean())}
    return results, chosen


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(default_data_dir()), help="unused: scikit-learn's diabetes data")
    ap.add_argument("--splits", type=int, default=10)
    ap.add_argument("--no-cv", action="store_true",
                    help="fixed (sigma2, lam, gamma_tau) instead of 5-fold CV inside each split's training part")
    ap.add_argument("--json", action="store_true", help="print one JSON object last")
    args = ap.parse_args(argv)
    log = (lambda *a: print(*a, file=sys.stderr, flush=True)) if args.json else print
    get_registry()  # build the plugin registry once, outside the timed fits
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # reported in the 'converged' columns
        results, chosen = run(args.splits, not args.no_cv, log)
    print(f"diabetes joint quantiles {TAUS}; (sigma2, lam, gamma_tau) chosen per split: "
          + ", ".join(f"{k} x{v}" for k, v in chosen.most_common()))
    print(f"{'method':18s} {'pinball':>8s} {'+-':>6s} {'crossing':>9s} {'fit_s':>7s} {'gap_max':>8s} {'conv':>5s}"
          f" | {'adam_s':>7s} {'adam_gap':>8s} {'conv':>5s} {'pinball':>8s} | {'ratio':>5s}")
    for name, r in results.items():
        print(f"{name:18s} {r['pinball']:8.3f} {r['pinball_std']:6.3f} {r['crossing']:9.4f} {r['fit_s']:7.3f} "
              f"{r['gap_max']:8.1e} {r['converged']:5.2f} | {r['adam_fit_s']:7.3f} {r['adam_gap_max']:8.1e} "
              f"{r['adam_converged']:5.2f} {r['adam_pinball']:8.3f} | {r['fit_ratio']:5.2f}")
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
