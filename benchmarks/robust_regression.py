"""Robust regression on the p-sparsified paper's synthetic set (Figure 1 and Appendix H.1).

n = 10000 training and 10000 test points: 99 % uniform on [0, 1]^10, 1 % from a
Gaussian blob around 1.5 * 1 with standard deviation 0.25 (the paper's code; its text writes
N(1.5 * 1, 0.25 I), which ``--blob-std 0.5`` reproduces) -- an inhomogeneous input
distribution that hurts Nystrom sub-sampling; ``y = f*(x) + N(0, 1)`` with Friedman's ``f*(x) = 0.1 e^{4 x1} +
4 / (1 + e^{-20 (x2 - 0.5)}) + 3 x3 + 2 x4 + x5``.  kappa-Huber and epsilon-SVR sketched
kernel machines (Gaussian kernel, float32 kernel values, the default solver from the
square-loss solution) for sketch sizes s = 40 .. 140: p-SR and p-SG for p = 5/n, 10/n,
30/n, 50/n, against Nystrom, Gaussian, accumulation (m_acc = 30), CountSketch and random
Fourier features (s features), as in the paper's Figure 1.

Solvers, timed in the same run on the same features: the default (``optimizer="auto"``:
Newton, smoothed and finished by an active set for epsilon-SVR, stopped at a certified
relative duality gap <= 1e-4) and the former route, mini-batch Adam (``optimizer="adam"``,
learning rate 0.1, batches of 256, at most 50 epochs, step-halving stop).  Per method:
``fit_s`` / ``gap_max`` / ``converged`` (default), ``adam_fit_s`` / ``adam_gap_max`` /
``adam_converged`` / ``adam_rel_mse_paper`` (Adam), ``fit_ratio = fit_s / adam_fit_s``, and
``solve_s`` / ``adam_solve_s``: the solvers' own phases (square-loss start and iterations,
``fit_times_``), without the features both compute alike.

Errors, over the test set:

- ``rel_mse_paper`` (plotted): the paper's "test relative MSE", as its code computes it:
  the MSE against the *noisy* test targets divided by their range, ``mean((f(x) - y)^2) /
  (max y - min y)``.  Published: <= 0.05 for the best sketches.
- ``rel_mse_all``: MSE against the noiseless target over its variance,
  ``mean((f(x) - f*(x))^2) / var(f*)`` -- the scale-free version (0 = perfect, 1 = the
  mean); ``rel_mse``: the same on the uniform component only.
  The 1 % of inputs in the Gaussian blob carry most of the
variance of f* (``0.1 e^{4 x1}`` reaches ~3e3 there), and a Nystrom sketch of s <= 140
uniformly drawn landmarks holds about one of them: that is where p-sparsified sketches,
which mix ~p n samples into every row, win.  Hyper-parameters (sigma2, lam, kappa or
epsilon) come from 5-fold CV on the training split with the validation MSE (``--cv``; the
stored values are its output).  Targets are centred by the training mean (the machines
have no intercept).

    python benchmarks/robust_regression.py [--seeds 5] [--sizes 40 60 ...] [--png PATH]
                                           [--out-json PATH] [--blob-std 0.5] [--cv] [--json]

Writes the accuracy / training-time figure (PNG) and the numbers (JSON file).  ``--data``
is accepted for uniformity; the data are generated (seeded), nothing is read.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import KFold

from sprokr import get_registry
from sprokr.datasets import default_data_dir
from sprokr.models import RFFKernelMachine, SketchedKernelMachine

#: sigma2, lam, loss params by blob standard deviation: output of ``--cv`` (5-fold,
#: validation MSE, 50/n-SR s=100; blob 0.25 re-selected with the certified default solver,
#: ``--cv``; blob 0.5 selected earlier with early-stopped Adam and not re-run)
SELECTED = {
    0.5: {"huber": {"sigma2": 16.0, "lam": 1e-6, "loss_params": {"kappa": 100.0}},
          "epsilon_insensitive": {"sigma2": 16.0, "lam": 1e-6, "loss_params": {"epsilon": 0.1}}},
    0.25: {"huber": {"sigma2": 16.0, "lam": 1e-6, "loss_params": {"kappa": 100.0}},
           "epsilon_insensitive": {"sigma2": 4.0, "lam": 1e-6, "loss_params": {"epsilon": 1.0}}},
}
GRID = {"sigma2": (1.0, 4.0, 16.0), "lam": (1e-6, 1e-5, 1e-4, 1e-3),
        "huber": [{"kappa": k} for k in (1.0, 10.0, 100.0)],
        "epsilon_insensitive": [{"epsilon": e} for e in (0.1, 1.0, 10.0)]}
#: the paper's p = 5/n, 10/n, 30/n, 50/n (n = 10000)
P_MULTIPLIERS = (5, 10, 30, 50)
#: the default solver from the square-loss solution of the same sketched problem, to a
#: certified relative duality gap of 1e-4; and the former Adam route, timed beside it
SOLVER = {"init": "ridge", "tol": 1e-4, "dtype": "float32"}
ADAM = {"optimizer": "adam", "learning_rate": 0.1, "init": "ridge", "batch_size": 256, "max_epochs": 50, "tol": 1e-4,
        "dtype": "float32"}


def friedman(X):
    return (0.1 * np.exp(4 * X[:, 0]) + 4.0 / (1.0 + np.exp(-20.0 * (X[:, 1] - 0.5)))
            + 3 * X[:, 2] + 2 * X[:, 3] + X[:, 4])


def make_data(n, rng, blob_std=0.25):
    """(X, y, f*(X), uniform-component mask) with 1 % of the inputs from N(1.5 * 1, blob_std^2 I)."""
    n_out = n // 100
    X = np.vstack([rng.uniform(0, 1, (n - n_out, 10)), rng.normal(1.5, blob_std, (n_out, 10))])
    main = np.r_[np.ones(n - n_out, bool), np.zeros(n_out, bool)]
    perm = rng.permutation(n)
    X, main = X[perm], main[perm]
    f = friedman(X)
    return X, f + rng.standard_normal(n), f, main


def methods(n, sizes):
    """name -> (family, s, builder(hp, seed, solver)); 'family' groups the curves of the figure."""
    out = {}
    for s in sizes:
        def sk(name, params=None, s=s):
            return lambda hp, seed, solver=SOLVER: SketchedKernelMachine(
                kernel_params={"sigma2": hp["sigma2"]}, lam=hp["lam"], loss=hp["loss"],
                loss_params=hp["loss_params"], input_sketch=name, m_x=s, input_sketch_params=params,
                random_state=seed, **solver)
        out[f"Nystrom s={s}"] = ("Nystrom", s, sk("subsample"))
        out[f"Gaussian s={s}"] = ("Gaussian", s, sk("gaussian"))
        out[f"Acc. m=30 s={s}"] = ("Acc. m=30", s, sk("accumulation", {"m_acc": 30}))
        out[f"CountSketch s={s}"] = ("CountSketch", s, sk("countsketch"))
        for k in P_MULTIPLIERS:
            out[f"{k}/n-SR s={s}"] = (f"{k}/n-SR", s, sk("psr", {"p": k / n}))
            out[f"{k}/n-SG s={s}"] = (f"{k}/n-SG", s, sk("psg", {"p": k / n}))
        out[f"RFF s={s}"] = ("RFF", s, lambda hp, seed, solver=SOLVER, s=s: RFFKernelMachine(
            kernel_params={"sigma2": hp["sigma2"]}, n_components=s, lam=hp["lam"], loss=hp["loss"],
            loss_params=hp["loss_params"], random_state=seed, **solver))
    return out


def fit_timed(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # reported in the 'converged' columns
        t0 = time.perf_counter()
        model.fit(X, y)
        return time.perf_counter() - t0


def solve_time(model):
    """Seconds of the solver's phases (square-loss start + iterations), without the features."""
    return model.fit_times_.get("init", 0.0) + model.fit_times_.get("solve", 0.0)


def rel_mse(pred, f):
    """MSE against the noiseless target over its variance."""
    return float(np.mean((pred - f) ** 2) / np.var(f))


def paper_rel_mse(pred, y):
    """The paper's test relative MSE: MSE against the noisy targets over their range."""
    return float(np.mean((pred - y) ** 2) / (np.max(y) - np.min(y)))


def cross_validate(X, y, loss, log):
    """5-fold CV of (sigma2, lam, kappa or epsilon) with p-SR (s=100, p=50/n), validation MSE."""
    best = None
    for s2 in GRID["sigma2"]:
        for lam in GRID["lam"]:
            for lp in GRID[loss]:
                hp = {"sigma2": s2, "lam": lam, "loss": loss, "loss_params": lp}
                errs = []
                for k, (tr, va) in enumerate(KFold(5, shuffle=True, random_state=0).split(X)):
                    ym = np.mean(y[tr])
                    m = methods(tr.size, [100])["50/n-SR s=100"][2](hp, k).fit(X[tr], y[tr] - ym)
                    errs.append(np.mean((m.predict(X[va]) + ym - y[va]) ** 2))
                log(f"cv {loss} sigma2={s2} lam={lam} {lp}: MSE {np.mean(errs):.4f}")
                if best is None or np.mean(errs) < best[0]:
                    best = (np.mean(errs), {"sigma2": s2, "lam": lam, "loss_params": lp})
    log(f"cv {loss}: selected {best[1]}")
    return best[1]


def run(n, seeds, sizes, cv, log, blob_std=0.25, losses=("huber", "epsilon_insensitive")):
    rng = np.random.default_rng(0)
    Xtr, ytr, _, _ = make_data(n, rng, blob_std)
    Xte, yte, fte, main = make_data(n, rng, blob_std)
    ym = float(np.mean(ytr))
    results, curves = {}, {}
    for loss in losses:
        hp = dict(cross_validate(Xtr, ytr, loss, log) if cv else SELECTED[blob_std][loss], loss=loss)
        for name, (family, s, build) in methods(n, sizes).items():
            rows = []
            for seed in range(seeds):
                model, adam = build(hp, seed), build(hp, seed, ADAM)
                # alternate the order over seeds: neither solver always runs on a warm cache
                first, second = (model, adam) if seed % 2 == 0 else (adam, model)
                t_first, t_second = fit_timed(first, Xtr, ytr - ym), fit_timed(second, Xtr, ytr - ym)
                fit_s, adam_s = (t_first, t_second) if first is model else (t_second, t_first)
                t0 = time.perf_counter()
                pred = model.predict(Xte) + ym
                pred_s = time.perf_counter() - t0
                rows.append((rel_mse(pred[main], fte[main]), fit_s, pred_s, model.converged_,
                             rel_mse(pred, fte), paper_rel_mse(pred, yte), model.objective_gap_, adam_s,
                             adam.objective_gap_, adam.converged_, paper_rel_mse(adam.predict(Xte) + ym, yte),
                             solve_time(model), solve_time(adam)))
            r = np.array(rows, dtype=float)
            key = f"{loss}/{name}"
            results[key] = {"rel_mse": float(r[:, 0].mean()), "rel_mse_std": float(r[:, 0].std()),
                            "fit_s": float(r[:, 1].mean()), "predict_s": float(r[:, 2].mean()),
                            "converged": float(r[:, 3].mean()),
                            "rel_mse_all": float(r[:, 4].mean()),
                            "rel_mse_paper": float(r[:, 5].mean()), "gap_max": float(r[:, 6].max()),
                            "adam_fit_s": float(r[:, 7].mean()), "adam_gap_max": float(r[:, 8].max()),
                            "adam_converged": float(r[:, 9].mean()), "adam_rel_mse_paper": float(r[:, 10].mean()),
                            "fit_ratio": float(r[:, 1].mean() / r[:, 7].mean()),
                            "solve_s": float(r[:, 11].mean()), "adam_solve_s": float(r[:, 12].mean())}
            curves.setdefault(loss, {}).setdefault(family, []).append((s, results[key]))
            log(f"{key:40s} paper relMSE {r[:, 5].mean():.4f}  all {r[:, 4].mean():.4f}  "
                f"uniform {r[:, 0].mean():.4f}  fit {r[:, 1].mean():.3f} s (gap <= {r[:, 6].max():.1e})  "
                f"Adam {r[:, 7].mean():.3f} s (gap <= {r[:, 8].max():.1e})  ratio {results[key]['fit_ratio']:.2f}")
    return results, curves


def plot(curves, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(curves), 3, figsize=(16, 4.8 * len(curves)), squeeze=False)
    for row, (loss, fams) in zip(axes, curves.items()):
        colors = plt.cm.tab20(np.linspace(0, 1, 20))[:: max(1, 20 // len(fams))]
        for color, (fam, pts) in zip(colors, fams.items()):
            s = [p[0] for p in pts]
            err = [p[1]["rel_mse_paper"] for p in pts]
            t = [p[1]["fit_s"] for p in pts]
            style = "-o" if "SR" in fam or "SG" in fam else "--s"
            for ax, (a, b) in zip(row, ((s, err), (s, t), (t, err))):
                ax.plot(a, b, style, label=fam, ms=4, color=color)
        label = "kappa-Huber" if loss == "huber" else "epsilon-SVR"
        ylabel = "test relative MSE (MSE / range of y)"
        row[0].set(xlabel="sketch size s", ylabel=ylabel, title=f"(a) error vs s, {label}")
        row[1].set(xlabel="sketch size s", ylabel="training time (s)", title=f"(b) time vs s, {label}")
        row[2].set(xlabel="training time (s)", ylabel=ylabel, title=f"(c) error vs time, {label}")
        for ax in row:
            ax.set_yscale("log")
            ax.grid(alpha=0.3)
        row[2].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(default_data_dir()), help="unused: the data are generated")
    ap.add_argument("--n", type=int, default=10000, help="training (and test) size")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--sizes", type=int, nargs="+", default=[40, 60, 80, 100, 120, 140])
    ap.add_argument("--png", default="robust_regression.png")
    ap.add_argument("--out-json", default="robust_regression.json")
    ap.add_argument("--cv", action="store_true", help="recompute hyper-parameters by 5-fold CV")
    ap.add_argument("--losses", nargs="+", default=["huber", "epsilon_insensitive"],
                    choices=["huber", "epsilon_insensitive"])
    ap.add_argument("--blob-std", type=float, default=0.25,
                    help="standard deviation of the 1 %% Gaussian component (paper's code: 0.25; "
                         "its text, covariance 0.25 I: 0.5)")
    ap.add_argument("--json", action="store_true", help="print one JSON object last")
    args = ap.parse_args(argv)
    if not args.cv and args.blob_std not in SELECTED:
        ap.error(f"no stored hyper-parameters for --blob-std {args.blob_std} (stored: "
                 f"{sorted(SELECTED)}); add --cv to select them")
    log = (lambda *a: print(*a, file=sys.stderr, flush=True)) if args.json else print
    get_registry()  # build the plugin registry once, outside the timed fits
    results, curves = run(args.n, args.seeds, args.sizes, args.cv, log, args.blob_std, tuple(args.losses))
    plot(curves, args.png)
    Path(args.out_json).write_text(json.dumps(results, indent=1))
    print(f"{'method':40s} {'paper':>7s} {'all pts':>7s} {'uniform':>7s} {'fit_s':>6s} {'gap_max':>7s} | "
          f"{'adam_s':>6s} {'adam_gap':>8s} {'paper':>7s} | {'ratio':>5s}")
    for name, r in results.items():
        print(f"{name:40s} {r['rel_mse_paper']:7.4f} {r['rel_mse_all']:7.4f} {r['rel_mse']:7.4f} "
              f"{r['fit_s']:6.3f} {r['gap_max']:7.1e} | {r['adam_fit_s']:6.3f} {r['adam_gap_max']:8.1e} "
              f"{r['adam_rel_mse_paper']:7.4f} | {r['fit_ratio']:5.2f}")
    print(f"figure: {args.png}  numbers: {args.out_json}")
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
