"""Joint quantile regression, sketched versus exact (p-sparsified paper, Table 1 setting).

Levels tau = (0.1, 0.3, 0.5, 0.7, 0.9), pinball loss, decomposable kernel ``k M`` with
``M_ij = exp(-gamma_tau (tau_i - tau_j)^2)``, Gaussian ``k``, Adam.  Data: scikit-learn's
bundled diabetes set (442 patients, 10 inputs; offline), ten random 70/30 splits; inputs and
target standardised with the training statistics, metrics in the original target units:
pinball loss (mean over test samples of the sum over levels), crossing loss (mean of
``sum_j max(0, q_j - q_{j+1})``) and fit time.  Sketches: 20/n-SR, 20/n-SG, accumulation
(m_acc = 20), CountSketch, all s = 50.

    python benchmarks/quantiles.py [--splits 10] [--cv] [--json]

``--data`` is accepted for uniformity (the data ship with scikit-learn).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import KFold, train_test_split

from sprokr import get_registry
from sprokr.datasets import default_data_dir
from sprokr.metrics import crossing_loss, pinball_loss
from sprokr.models import JointQuantileRegressor

TAUS = (0.1, 0.3, 0.5, 0.7, 0.9)
#: (sigma2, lam, gamma_tau) from ``--cv`` (5-fold CV pinball on the first training split)
SELECTED = {"sigma2": 10.0, "lam": 1e-2, "gamma_tau": 10.0}
GRID = {"sigma2": (3.0, 10.0, 30.0), "lam": (1e-4, 1e-3, 1e-2), "gamma_tau": (1.0, 10.0)}
SOLVER = {"learning_rate": 0.05, "batch_size": 64, "max_epochs": 200, "tol": 1e-4}


def methods(n):
    """name -> (sketch, m, params)."""
    return {"exact": (None, None, None),
            "20/n-SR s=50": ("psr", 50, {"p": 20.0 / n}),
            "20/n-SG s=50": ("psg", 50, {"p": 20.0 / n}),
            "Acc. m=20 s=50": ("accumulation", 50, {"m_acc": 20}),
            "CountSketch s=50": ("countsketch", 50, None)}


def make(hp, sketch, m, params, seed):
    return JointQuantileRegressor(taus=TAUS, gamma_tau=hp["gamma_tau"], kernel_params={"sigma2": hp["sigma2"]},
                                  lam=hp["lam"], input_sketch=sketch, m_x=m, input_sketch_params=params,
                                  random_state=seed, **SOLVER)


def standardise(Xtr, ytr, Xte):
    mx, sx = Xtr.mean(axis=0), Xtr.std(axis=0)
    my, sy = ytr.mean(), ytr.std()
    return (Xtr - mx) / sx, (ytr - my) / sy, (Xte - mx) / sx, my, sy


def cross_validate(X, y, log):
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
                log(f"cv {hp}: pinball {np.mean(scores):.3f}")
                if best is None or np.mean(scores) < best[0]:
                    best = (np.mean(scores), hp)
    log(f"cv: selected {best[1]}")
    return best[1]


def run(splits, cv, log):
    X, y = load_diabetes(return_X_y=True)
    hp = SELECTED
    if cv:
        Xtr, _, ytr, _ = train_test_split(X, y, test_size=0.3, random_state=0)
        hp = cross_validate(Xtr, ytr, log)
    rows = {}
    for split in range(splits):
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=split)
        Xa, ya, Xb, my, sy = standardise(Xtr, ytr, Xte)
        for name, (sk, m, params) in methods(len(ytr)).items():
            model = make(hp, sk, m, params, split)
            t0 = time.perf_counter()
            model.fit(Xa, ya)
            fit_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            Q = model.predict(Xb) * sy + my
            pred_s = time.perf_counter() - t0
            rows.setdefault(name, []).append(
                (pinball_loss(yte, Q, TAUS), crossing_loss(Q, TAUS), fit_s, pred_s, model.converged_))
    results = {}
    for name, r in rows.items():
        a = np.array(r, dtype=float)
        results[name] = {"pinball": float(a[:, 0].mean()), "pinball_std": float(a[:, 0].std()),
                         "crossing": float(a[:, 1].mean()), "crossing_std": float(a[:, 1].std()),
                         "fit_s": float(a[:, 2].mean()), "predict_s": float(a[:, 3].mean()),
                         "converged": float(a[:, 4].mean())}
    return results, hp


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(default_data_dir()), help="unused: scikit-learn's diabetes data")
    ap.add_argument("--splits", type=int, default=10)
    ap.add_argument("--cv", action="store_true", help="recompute (sigma2, lam, gamma_tau) by 5-fold CV")
    ap.add_argument("--json", action="store_true", help="print one JSON object last")
    args = ap.parse_args(argv)
    log = (lambda *a: print(*a, file=sys.stderr, flush=True)) if args.json else print
    get_registry()  # build the plugin registry once, outside the timed fits
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # reported in the 'converged' column
        results, hp = run(args.splits, args.cv, log)
    print(f"diabetes joint quantiles {TAUS}, hyper-parameters {hp}")
    print(f"{'method':18s} {'pinball':>8s} {'+-':>6s} {'crossing':>9s} {'+-':>6s} {'fit_s':>7s} {'conv':>5s}")
    for name, r in results.items():
        print(f"{name:18s} {r['pinball']:8.3f} {r['pinball_std']:6.3f} {r['crossing']:9.4f} "
              f"{r['crossing_std']:6.4f} {r['fit_s']:7.3f} {r['converged']:5.2f}")
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
