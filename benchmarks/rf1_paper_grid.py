"""rf1: 5-fold CV of exact kernel ridge over the p-sparsified paper's own grid.

The paper's public code stores values chosen from ``gamma = logspace(-7, 2, 20)`` and
``lam = logspace(-8, 3, 20)`` for the model ``(K + n lam I)^-1 Y`` with
``K = exp(-gamma |x - x'|^2)`` on standardised inputs (``sigma2 = 1 / (2 gamma)``).  This
script runs 5-fold CV over that grid in float64, one exact eigendecomposition of the
fold's training Gram per (fold, gamma) serving every lam, for contiguous folds (rf1 is a
time series) and shuffled ones (``KFold(5, shuffle=True, random_state=0)``), selecting by
validation MSE and by validation ARRMSE (relative to the fold's training mean); each
selection is refitted on the whole training split and scored by test ARRMSE.

    OPENBLAS_NUM_THREADS=1 python benchmarks/rf1_paper_grid.py [--data PATH] [--json]
    python benchmarks/rf1_paper_grid.py --grid-size 3 3 --n-train 300   # a smoke run

The full grid makes 2 x 5 x 20 eigendecompositions of ~3300 x 3300 matrices (tens of
minutes on one core).  Table in docs/benchmarks.md ("rf1").
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np
from scipy.linalg import eigh, solve
from scipy.spatial.distance import cdist
from sklearn.model_selection import KFold

from sprokr.datasets import default_data_dir, load_rf1
from sprokr.metrics import arrmse


def gram(A, B, gamma):
    return np.exp(-gamma * cdist(A, B, "sqeuclidean"))


def cv_grid(X, Y, gammas, lams, folds):
    """Validation MSE and ARRMSE, shape (len(gammas), len(lams)), means over the folds."""
    mse = np.zeros((len(gammas), len(lams)))
    arr = np.zeros_like(mse)
    for tr, va in folds:
        n, mean = tr.size, Y[tr].mean(axis=0)
        D_tr, D_va = cdist(X[tr], X[tr], "sqeuclidean"), cdist(X[va], X[tr], "sqeuclidean")
        for i, g in enumerate(gammas):
            s, U = eigh(np.exp(-g * D_tr))
            UtY, KvU = U.T @ Y[tr], np.exp(-g * D_va) @ U
            for j, lam in enumerate(lams):
                P = KvU @ (UtY / (s + n * lam)[:, None])
                mse[i, j] += np.mean((Y[va] - P) ** 2) / len(folds)
                arr[i, j] += arrmse(Y[va], P, mean) / len(folds)
    return {"mse": mse, "arrmse": arr}


def run(data, grid_size=(20, 20), n_train=None, log=print):
    Xtr, Ytr, Xte, Yte = load_rf1(data)
    if n_train:
        Xtr, Ytr = Xtr[:n_train], Ytr[:n_train]
    mu, sd = Xtr.mean(axis=0), Xtr.std(axis=0)
    sd[sd == 0] = 1.0
    Xtr, Xte = (Xtr - mu) / sd, (Xte - mu) / sd
    gammas, lams = np.logspace(-7, 2, grid_size[0]), np.logspace(-8, 3, grid_size[1])
    out = {}
    for fold_kind, kf in (("contiguous", KFold(5)), ("shuffled", KFold(5, shuffle=True, random_state=0))):
        scores = cv_grid(Xtr, Ytr, gammas, lams, list(kf.split(Xtr)))
        for criterion, S in scores.items():
            i, j = np.unravel_index(np.nanargmin(S), S.shape)
            g, lam = float(gammas[i]), float(lams[j])
            n = Xtr.shape[0]
            K = gram(Xtr, Xtr, g)
            K[np.diag_indices(n)] += n * lam
            P = gram(Xte, Xtr, g) @ solve(K, Ytr, assume_a="pos")
            res = {"gamma": g, "sigma2": 1.0 / (2.0 * g), "lam": lam, f"cv_{criterion}": float(S[i, j]),
                   "test_arrmse": float(arrmse(Yte, P, Ytr.mean(axis=0)))}
            out[f"{fold_kind} {criterion}"] = res
            log(f"{fold_kind:10s} {criterion:6s}: sigma2 {res['sigma2']:.3g}, lam {lam:.3g} -> "
                f"test ARRMSE {res['test_arrmse']:.3f}")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(default_data_dir() / "rf1"), help="folder with rf1-{train,test}.arff")
    ap.add_argument("--grid-size", type=int, nargs=2, default=[20, 20], metavar=("N_GAMMA", "N_LAM"),
                    help="points of the two logspaces (the paper's: 20 20)")
    ap.add_argument("--n-train", type=int, default=None, help="first N training rows only (smoke runs)")
    ap.add_argument("--json", action="store_true", help="print one JSON object last")
    args = ap.parse_args(argv)
    log = (lambda *a: print(*a, file=sys.stderr, flush=True)) if args.json else print
    out = run(args.data, tuple(args.grid_size), args.n_train, log)
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
