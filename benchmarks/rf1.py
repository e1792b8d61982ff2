"""rf1 multi-target regression: exact KRR versus sketched KRR (p-sparsified paper, Table 2).

Gaussian kernel on standardised inputs, square loss, ``M = I`` (independent targets),
ARRMSE on the official test split (RRMSE relative to the training mean of each target,
as in the paper's code).  Sketches: 20/n-SR, 20/n-SG, accumulation (m_acc = 20) and
CountSketch at s = 100 and 200, five seeds each; the exact machine is the baseline.

    python benchmarks/rf1.py [--data PATH] [--seeds 5] [--sizes 100 200] [--cv] [--json]

Hyper-parameters (sigma2, lam) were selected by 5-fold cross-validation on the training
split, contiguous folds, validation MSE (``--cv`` recomputes them in ~2 minutes; the
defaults below are its output; ``--criterion arrmse`` selects by validation ARRMSE).
Published: exact 0.575 (fit 1.73 s), 20/n-SR s=100 0.584 (0.22 s).

The exact machine's test ARRMSE lies in a long, flat valley ``lam * sigma2 ~ 0.1``: CV
errors along it differ by < 1 % while the test ARRMSE ranges over 0.562 .. 0.571 (e.g.
(1e4, 1e-5): 0.564, picked by ARRMSE-CV; (1e6, 1e-7): 0.571, picked by MSE-CV).  The
MSE-CV point reproduces the paper's per-target RRMSEs to 0.006 on average (printed).
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
from sklearn.model_selection import KFold

from sprokr import get_registry
from sprokr.datasets import default_data_dir, load_rf1
from sprokr.metrics import arrmse, rrmse
from sprokr.models import SketchedKernelMachine

#: (sigma2, lam) from ``--cv`` (5-fold CV on the training split, ARRMSE)
SELECTED = {"exact": (1e6, 1e-7), "sketched": (1e4, 1e-5)}
#: sigma2 stops at 1e6: beyond, 1 - k(x, x') falls below float32 resolution
SIGMA2_GRID = (1e3, 3e3, 1e4, 3e4, 1e5, 3e5, 1e6)
LAM_GRID = (1e-8, 1e-7, 1e-6, 1e-5, 1e-4)
#: the paper's Table 6, exact machine, per target (chsi2 nasi2 eadm7 sclm7 clkm7 vali2 napm7 dldi4)
PUBLISHED_PER_TARGET = (0.351, 1.085, 0.388, 0.660, 0.283, 0.614, 0.593, 0.629)
PUBLISHED = {"exact": 0.575, "20/n-SR s=100": 0.584, "20/n-SG s=100": 0.583,
             "Acc. m=20 s=100": 0.592, "CountSketch s=100": 0.575}


def sketch_specs(n, sizes):
    """name -> (sketch name, m, sketch params)."""
    specs = {}
    for s in sizes:
        specs[f"20/n-SR s={s}"] = ("psr", s, {"p": 20.0 / n})
        specs[f"20/n-SG s={s}"] = ("psg", s, {"p": 20.0 / n})
        specs[f"Acc. m=20 s={s}"] = ("accumulation", s, {"m_acc": 20})
        specs[f"CountSketch s={s}"] = ("countsketch", s, None)
    return specs


def make(sigma2, lam, sketch=None, m=None, params=None, seed=None):
    # float64 kernel values for every machine: float32 ones are refused by the machines' own
    # checks here (exact, sigma2 = 1e6, lam = 1e-7: the float32 Gram's rounding moves the
    # predictions by ~2e-3, measured; sketched, sigma2 = 1e4: it perturbs R K R^T's whitened
    # basis by 0.87), so a float32 request would only add the check and a float64 refit
    return SketchedKernelMachine(kernel="gaussian", kernel_params={"sigma2": sigma2}, lam=lam, input_sketch=sketch,
                                 m_x=m, input_sketch_params=params, random_state=seed)


def cv_score(criterion, Y_val, P, Y_train_mean):
    """Validation error: ``mse`` (the square loss the machines minimise, averaged over
    targets) or ``arrmse`` (the reported metric)."""
    if criterion == "mse":
        return float(np.mean((Y_val - P) ** 2))
    return arrmse(Y_val, P, Y_train_mean)


def cross_validate(X, Y, n_splits=5, criterion="mse", log=print):
    """Grid search of (sigma2, lam) by k-fold CV, exact and 20/n-SR s=100 machines."""
    # contiguous folds (scikit-learn's default, no shuffling): rf1 is a time series, and
    # shuffled folds let neighbouring hours leak into validation (they pick a tiny bandwidth
    # that interpolates in time and fails on the later test period)
    folds = list(KFold(n_splits).split(X))
    out = {}
    for kind in ("exact", "sketched"):
        best = None
        for s2 in SIGMA2_GRID:
            for lam in LAM_GRID:
                scores = []
                for k, (tr, va) in enumerate(folds):
                    sk = ("psr", 100, {"p": 20.0 / tr.size}) if kind == "sketched" else (None, None, None)
                    mdl = make(s2, lam, *sk, seed=k).fit(X[tr], Y[tr])
                    scores.append(cv_score(criterion, Y[va], mdl.predict(X[va]), Y[tr].mean(axis=0)))
                score = float(np.mean(scores))
                log(f"cv {kind:8s} sigma2={s2:g} lam={lam:g}: {criterion} {score:.4f}")
                if best is None or score < best[0]:
                    best = (score, s2, lam)
        out[kind] = best[1:]
        log(f"cv {kind}: selected sigma2={best[1]:g} lam={best[2]:g} ({criterion} {best[0]:.4f})")
    return out


def evaluate(model, Xtr, Ytr, Xte, Yte):
    t0 = time.perf_counter()
    model.fit(Xtr, Ytr)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    P = model.predict(Xte)
    predict_s = time.perf_counter() - t0
    per_target = rrmse(Yte, P, Ytr.mean(axis=0))
    return {"arrmse": float(per_target.mean()), "fit_s": fit_s, "predict_s": predict_s,
            "rrmse_per_target": per_target.tolist()}


def mean_rows(rows):
    """Means over repeated runs (per-target RRMSEs averaged elementwise)."""
    out = {k: float(np.mean([r[k] for r in rows])) for k in rows[0] if k != "rrmse_per_target"}
    out["rrmse_per_target"] = np.mean([r["rrmse_per_target"] for r in rows], axis=0).tolist()
    return out


def run(data, seeds, sizes, cv, repeats_exact, log, criterion="mse"):
    Xtr, Ytr, Xte, Yte = load_rf1(data)
    mu, sd = Xtr.mean(axis=0), Xtr.std(axis=0)
    sd[sd == 0] = 1.0
    Xtr, Xte = (Xtr - mu) / sd, (Xte - mu) / sd
    n = Xtr.shape[0]
    hp = cross_validate(Xtr, Ytr, criterion=criterion, log=log) if cv else SELECTED
    results = {}
    # every model is fitted once untimed first: the first fit of a route pays one-off costs
    # (imports, thread pools, the first touch of its memory) that would flatter the ratios
    evaluate(make(*hp["exact"]), Xtr, Ytr, Xte, Yte)
    # the exact machine is deterministic: repeat it only to average the timing
    rows = [evaluate(make(*hp["exact"]), Xtr, Ytr, Xte, Yte) for _ in range(repeats_exact)]
    results["exact"] = mean_rows(rows)
    for name, (sk, m, params) in sketch_specs(n, sizes).items():
        evaluate(make(*hp["sketched"], sk, m, params, seeds), Xtr, Ytr, Xte, Yte)  # untimed warm-up
        rows = [evaluate(make(*hp["sketched"], sk, m, params, seed), Xtr, Ytr, Xte, Yte)
                for seed in range(seeds)]
        res = mean_rows(rows)
        res["arrmse_std"] = float(np.std([r["arrmse"] for r in rows]))
        # the target's measure: the fit's time as a ratio of the exact fit's, same run
        res["fit_ratio"] = res["fit_s"] / results["exact"]["fit_s"]
        results[name] = res
    return results, hp


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(default_data_dir() / "rf1"), help="folder with rf1-{train,test}.arff")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 200])
    ap.add_argument("--repeats-exact", type=int, default=3, help="timing repeats of the exact fit")
    ap.add_argument("--cv", action="store_true", help="recompute (sigma2, lam) by 5-fold CV")
    ap.add_argument("--criterion", default="mse", choices=["mse", "arrmse"],
                    help="CV validation error (default: mse, the loss the machines minimise)")
    ap.add_argument("--json", action="store_true", help="print one JSON object last")
    args = ap.parse_args(argv)
    log = (lambda *a: print(*a, file=sys.stderr, flush=True)) if args.json else print
    get_registry()  # build the plugin registry once, outside the timed fits
    results, hp = run(args.data, args.seeds, args.sizes, args.cv, args.repeats_exact, log, args.criterion)
    print(f"rf1, hyper-parameters (sigma2, lam): {hp}")
    print(f"{'method':22s} {'ARRMSE':>8s} {'+-':>6s} {'fit_s':>8s} {'x exact':>7s} {'predict_s':>9s} "
          f"{'published':>9s}")
    for name, r in results.items():
        pub = PUBLISHED.get(name)
        print(f"{name:22s} {r['arrmse']:8.4f} {r.get('arrmse_std', 0.0):6.4f} {r['fit_s']:8.3f} "
              f"{r.get('fit_ratio', 1.0):7.2f} {r['predict_s']:9.3f} {pub if pub is not None else '':>9}")
    ours = np.array(results["exact"]["rrmse_per_target"])
    print("exact, per target: ours " + " ".join(f"{v:.3f}" for v in ours))
    print("                   paper " + " ".join(f"{v:.3f}" for v in PUBLISHED_PER_TARGET)
          + f"   (mean |difference| {np.mean(np.abs(ours - PUBLISHED_PER_TARGET)):.4f})")
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
