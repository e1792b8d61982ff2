"""DSOKR on the synthetic least-squares problem of the thesis defence slides, scaled down.

Data (slides: n = 50000): ``x ~ N(0, C)`` in R^d_x with covariance eigenvalues ``j^-1/2``,
``H`` (d x d_x) standard normal, ``U`` (d_y x d) random orthonormal, ``d = 50``,
``y = U H x + eps``, ``eps ~ N(0, 0.01 I)``; linear output kernel, so ``H_Y = R^d_y`` and
DSOKR's prediction ``h(x) = g(x)^T E~`` is an explicit vector.

Reports the test MSE (mean over samples and the d_y coordinates) of

* ``MLP``: the same network regressing y in R^d_y directly (no output sketch);
* ``DSOKR(m_y=..)``: the network regressing the p <= m_y sketched coordinates;
* ``perfect_h(m_y=..)``: the validation MSE of the projection ``P~ y`` (no training),

and the plateau of both curves (expected at m_y = d = 50).

    python benchmarks/dsokr_synthetic.py                 # default: a few minutes on 2 cores
    python benchmarks/dsokr_synthetic.py --n 20000 --json
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

from sprokr import DSOKR
from sprokr.models.regressors import MLPSurrogate, TorchRegressor
from sprokr.model_selection import perfect_h_curve, plateau_index


def make_data(n, d_x, d_y, d, noise_var, rng):
    """(X, Y) of the slides' least-squares problem, shapes (n, d_x), (n, d_y)."""
    H = rng.standard_normal((d, d_x)).astype(np.float32)
    U = np.linalg.qr(rng.standard_normal((d_y, d)))[0].astype(np.float32)
    scale = (np.arange(1, d_x + 1, dtype=np.float32)) ** -0.25  # sqrt of eigenvalues j^-1/2
    X = rng.standard_normal((n, d_x), dtype=np.float32) * scale
    Y = (X @ H.T) @ U.T + np.sqrt(noise_var) * rng.standard_normal((n, d_y), dtype=np.float32)
    return X, Y.astype(np.float64)


def regressor(args, seed):
    if args.regressor == "torch":
        return TorchRegressor(hidden_layer_sizes=(args.hidden,), max_epochs=args.epochs,
                              n_iter_no_change=args.n_iter_no_change, learning_rate=args.learning_rate,
                              batch_size=128, random_state=seed)
    return MLPSurrogate(hidden_layer_sizes=(args.hidden,), max_epochs=args.epochs,
                        n_iter_no_change=args.n_iter_no_change, learning_rate=args.learning_rate,
                        batch_size=128, random_state=seed)


def run(args, seed):
    rng = np.random.default_rng(seed)
    n_tr, n_val, n_te = args.n, max(200, args.n // 10), max(500, args.n // 5)
    X, Y = make_data(n_tr + n_val + n_te, args.d_x, args.d_y, args.d, 0.01, rng)
    Xtr, Ytr = X[:n_tr], Y[:n_tr]
    Xv, Yv = X[n_tr:n_tr + n_val], Y[n_tr:n_tr + n_val]
    Xte, Yte = X[n_tr + n_val:], Y[n_tr + n_val:]
    res = {}

    t0 = time.perf_counter()
    base = regressor(args, seed).fit(Xtr, Ytr, eval_set=(Xv, Yv))
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    P = base.predict(Xte)
    res["MLP"] = {"test_mse": float(np.mean((P - Yte) ** 2)), "epochs": base.n_epochs_, "fit_s": fit_s,
                  "decode_s": time.perf_counter() - t0}

    for m in args.m_grid:
        ds = DSOKR(output_kernel="linear", output_sketch=args.sketch, m_y=m, regressor=regressor(args, seed),
                   random_state=seed, verbose=args.verbose)
        t0 = time.perf_counter()
        ds.fit(Xtr, Ytr, validation_data=(Xv, Yv))
        fit_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        P = ds.predict_features(Xte)
        res[f"DSOKR(m_y={m})"] = {"test_mse": float(np.mean((P - Yte) ** 2)), "rank": ds.output_rank_,
                                  "epochs": ds.regressor_.n_epochs_, "fit_s": fit_s,
                                  "decode_s": time.perf_counter() - t0}

    ph = perfect_h_curve(Ytr, Yv, "linear", args.m_grid, sketch=args.sketch, random_state=seed,
                         plot=args.plot)
    for m, err, t in zip(ph["m"], ph["projection_error"], ph["times"]):
        res[f"perfect_h(m_y={m})"] = {"val_mse": err / args.d_y, "fit_s": t, "decode_s": 0.0}
    res["plateau"] = {"perfect_h_m_y": ph["plateau_m"],
                      "dsokr_m_y": args.m_grid[plateau_index([res[f"DSOKR(m_y={m})"]["test_mse"]
                                                              for m in args.m_grid], rtol=args.rtol)],
                      "fit_s": 0.0, "decode_s": 0.0}
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=2000, help="training pairs (slides: 50000; up to 20000 here)")
    ap.add_argument("--d-x", type=int, default=2000)
    ap.add_argument("--d-y", type=int, default=1000)
    ap.add_argument("--d", type=int, default=50, help="dimension of the output subspace")
    ap.add_argument("--m-grid", type=int, nargs="+", default=[10, 25, 40, 50, 75, 100])
    ap.add_argument("--sketch", default="gaussian",
                    help="output sketch (gaussian: well conditioned at m_y = d; subsample needs m_y > d)")
    ap.add_argument("--regressor", choices=["mlp", "torch"], default="mlp",
                    help="sklearn MLP (default) or torch MLP (needs the torch extra)")
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--n-iter-no-change", "--patience", dest="n_iter_no_change", type=int, default=5,
                    help="early-stopping patience of the network (epochs; --patience: its former name)")
    ap.add_argument("--learning-rate", "--lr", dest="learning_rate", type=float, default=3e-3,
                    help="Adam's initial step size (--lr: its former name)")
    ap.add_argument("--rtol", type=float, default=0.05, help="plateau tolerance (fraction of the curve range)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--plot", default=None, help="PNG path for the perfect-h curve")
    ap.add_argument("--verbose", type=int, default=0)
    ap.add_argument("--data", default=None,
                    help="unused: the data are generated (seeded); accepted as by every benchmark")
    ap.add_argument("--json", action="store_true", help="print one JSON object last")
    args = ap.parse_args(argv)

    runs = [run(args, s) for s in args.seeds]
    out = {}
    for method in runs[0]:
        out[method] = {k: float(np.mean([r[method][k] for r in runs])) for k in runs[0][method]}
    print(f"n={args.n} d_x={args.d_x} d_y={args.d_y} d={args.d} sketch={args.sketch} "
          f"regressor={args.regressor} seeds={args.seeds}")
    print(f"{'method':<22}{'test_mse':>10}{'val_mse':>10}{'rank':>6}{'epochs':>8}{'fit_s':>9}{'decode_s':>10}")
    for method, v in out.items():
        if method == "plateau":
            continue
        f = lambda k, w, p: f"{v[k]:>{w}.{p}f}" if k in v else " " * w  # noqa: E731
        print(f"{method:<22}{f('test_mse', 10, 4)}{f('val_mse', 10, 4)}{f('rank', 6, 0)}{f('epochs', 8, 0)}"
              f"{f('fit_s', 9, 2)}{f('decode_s', 10, 3)}")
    print(f"plateau (m_y): perfect h {out['plateau']['perfect_h_m_y']:.0f}, "
          f"DSOKR test MSE {out['plateau']['dsokr_m_y']:.0f} (true subspace dimension {args.d})")
    if args.json:
        print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
