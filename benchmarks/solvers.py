"""The sketched ridge's routes side by side: fit time and measured error on four data sets.

For each data set and route (``solver`` x ``dtype``) the fit is timed (wall and CPU time of
this process: on a loaded machine the CPU time of a single-threaded run is the steadier
figure) and its error measured against a stable float64 reference (the QR route, fitted
once): the relative difference of the predicted coordinates on held-out rows,
``max |H - H_ref| / max |H_ref|``, next to the route's own estimate
(``solver_error_estimate_``), the route it resolved to, the precision it predicts in and
its refinement steps.  Routes run interleaved (the order rotates every repeat) so that the
load of a shared machine hits them alike; the float32 syrk yardstick
(``_report.reference_blas_seconds``) is timed before every repeat.

Data sets (``--datasets``):

* ``bibtex`` -- SISOKR and SIOKR with the settings of ``benchmarks/bibtex.py``;
* ``rf1`` -- the sketched kernel ridge of ``benchmarks/rf1.py`` (Gaussian sigma^2 = 1e4,
  lam = 1e-5, 20/n-SR s = 100; ``KernelRidgeRegressor``, the square-loss machine's
  objective with ``M = I``);
* ``qm9`` -- SISOKR SMILES spectrum kernel -> WL graph kernel (``--qm9-n`` molecules,
  m_x = n/4, m_y = 200, lam = 1e-7; as ``benchmarks/qm9_fit_speed.py`` with fewer
  output coordinates);
* ``scale`` -- SISOKR on the synthetic data of ``benchmarks/scale.py`` (``--n`` pairs,
  m_x = 1000, m_y = 100, ``--scale-lam``).

    OPENBLAS_NUM_THREADS=1 python benchmarks/solvers.py [--datasets bibtex rf1 qm9 scale]
        [--routes auto whitened mixed cholesky eigh qr auto:float32 ...] [--reps 2]
        [--n 1e5] [--json]

JSON: ``{"<dataset>/<route>": {"fit_s", "cpu_s", "error", "estimate", "solver", "precision",
"steps", "yardstick_s", "decode_s": null}}``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import reference_blas_seconds  # noqa: E402

ROUTES = ("auto", "whitened", "mixed", "cholesky", "eigh", "qr", "auto:float32", "whitened:float32",
          "cholesky:float32")


def _bibtex(args, which):
    from sklearn.preprocessing import StandardScaler

    from bibtex import methods
    from sprokr.datasets import load_bibtex

    Xtr, Ytr, Xte, _ = load_bibtex(args.data_dir / "bibtex" if args.data_dir else None)
    if args.max_train:
        Xtr, Ytr = Xtr[: args.max_train], Ytr[: args.max_train]
    scaler = StandardScaler(with_mean=False).fit(Xtr)
    Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte[:300])
    n = Xtr.shape[0]

    def make(solver, dtype):
        return methods(n, dtype, solver)[which][0](0).set_params(m_x=min(2250, n // 2))
    return make, Xtr, Ytr, Xte


def _rf1(args):
    from sprokr.datasets import load_rf1
    from sprokr.models import KernelRidgeRegressor

    Xtr, Ytr, Xte, _ = load_rf1(args.data_dir / "rf1" if args.data_dir else None)
    if args.max_train:
        Xtr, Ytr = Xtr[: args.max_train], Ytr[: args.max_train]
    mu, sd = Xtr.mean(axis=0), Xtr.std(axis=0)
    sd[sd == 0] = 1.0
    Xtr, Xte = (Xtr - mu) / sd, (Xte[:300] - mu) / sd
    n = Xtr.shape[0]

    def make(solver, dtype):
        return KernelRidgeRegressor(kernel_params={"sigma2": 1e4, "dtype": dtype}, lam=1e-5, input_sketch="psr",
                                    m_x=min(100, n // 4), input_sketch_params={"p": 20.0 / n}, dtype=dtype,
                                    solver=solver, random_state=0)
    return make, Xtr, Ytr, Xte


def _qm9(args):
    from _molecules import unseen_split
    from sprokr import SISOKR
    from sprokr_chem import smiles_to_graph
    from sprokr_chem.datasets import load_qm9

    smiles, _, _ = load_qm9(args.data_dir / "qm9" / "qm9_dev.csv" if args.data_dir else None)
    n = int(args.qm9_n)
    tr, held, _ = unseen_split(len(smiles), n, 100, np.random.default_rng(0))
    X = [smiles[i] for i in tr]
    Y = [smiles_to_graph(s) for s in X]
    Xq = [smiles[i] for i in held[:200]]

    def make(solver, dtype):
        return SISOKR(input_kernel="smiles_spectrum", output_kernel="wl", lam=1e-7, input_kernel_params={"n": 6},
                      input_sketch="subsample", m_x=n // 4, output_sketch="subsample", m_y=min(200, n // 10),
                      random_state=0, solver=solver, dtype=dtype)
    return make, X, Y, Xq


def _scale(args):
    import scale as sc
    from sprokr import SISOKR

    n = int(args.n)
    X, Y, Xt, _ = sc.make_data(n, 0)

    def make(solver, dtype):
        return SISOKR(input_kernel_params={"sigma2": sc.SIGMA2_X}, output_kernel_params={"sigma2": sc.SIGMA2_Y},
                      lam=args.scale_lam, input_sketch="subsample", m_x=min(args.m_x, n // 4), output_sketch="psg",
                      m_y=min(args.m_y, n // 10), output_sketch_params={"p": 20.0 / n}, dtype=dtype,
                      random_state=0, solver=solver)
    return make, X, Y, Xt[:300]


DATASETS = {"bibtex-SISOKR": lambda a: _bibtex(a, "SISOKR"), "bibtex-SIOKR": lambda a: _bibtex(a, "SIOKR"),
            "rf1": _rf1, "qm9": _qm9, "scale": _scale}
ALIASES = {"bibtex": ["bibtex-SISOKR", "bibtex-SIOKR"]}


def _coords(model, Xq):
    if hasattr(model, "predict_coordinates"):
        return model.predict_coordinates(Xq)
    return model.predict(Xq)


def run_dataset(name, args, log):
    make, X, Y, Xq = DATASETS[name](args)
    ref_model = make("qr", "float64")
    ref_model.fit(X, Y)
    ref = np.asarray(_coords(ref_model, Xq), dtype=np.float64)
    routes = list(args.routes)
    rows = {r: [] for r in routes}
    for rep in range(args.reps):
        yard = reference_blas_seconds(repeats=2)
        order = routes[rep % len(routes):] + routes[:rep % len(routes)]
        for route in order:
            solver, dtype = (route.split(":") + ["float64"])[:2]
            model = make(solver, dtype)
            w, c = time.perf_counter(), time.process_time()
            model.fit(X, Y)
            w, c = time.perf_counter() - w, time.process_time() - c
            row = {"fit_s": w, "cpu_s": c, "yardstick_s": yard}
            if rep == 0:
                H = np.asarray(_coords(model, Xq), dtype=np.float64)
                row.update(error=float(np.abs(H - ref).max() / np.abs(ref).max()),
                           estimate=getattr(model, "solver_error_estimate_", None),
                           solver=getattr(model, "solver_", None),
                           precision=str(getattr(model, "solver_precision_", getattr(model, "dtype_", ""))),
                           steps=getattr(model, "solver_refinement_steps_", None))
            rows[route].append(row)
            log(f"  {name} rep {rep} {route:18s} fit {w:7.3f} s (cpu {c:7.3f} s, yardstick {yard:.3f} s)")
    out = {}
    for route, rs in rows.items():
        first = dict(rs[0])
        first.update(fit_s=float(np.median([r["fit_s"] for r in rs])), cpu_s=float(np.median([r["cpu_s"] for r in rs])),
                     yardstick_s=float(np.median([r["yardstick_s"] for r in rs])), reps=len(rs), decode_s=None)
        out[f"{name}/{route}"] = first
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=None, dest="data_dir",
                    help="folder holding bibtex/, rf1/ and qm9/ (default: the shared data folder)")
    ap.add_argument("--datasets", nargs="*", default=["bibtex", "rf1", "qm9", "scale"])
    ap.add_argument("--routes", nargs="*", default=list(ROUTES), help="solver[:dtype], dtype float64 by default")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--n", type=float, default=1e5, help="pairs of the scale data")
    ap.add_argument("--m-x", type=int, default=1000)
    ap.add_argument("--m-y", type=int, default=100)
    ap.add_argument("--scale-lam", type=float, default=1e-5)
    ap.add_argument("--qm9-n", type=float, default=4000)
    ap.add_argument("--max-train", type=int, default=None, help="first rows of bibtex / rf1 only (smoke tests)")
    ap.add_argument("--json", action="store_true", help="print one JSON object last")
    args = ap.parse_args(argv)
    log = (lambda s: print(s, file=sys.stderr, flush=True)) if args.json else (lambda s: print(s, flush=True))
    names = [d for name in args.datasets for d in ALIASES.get(name, [name])]
    from sprokr import get_registry
    get_registry()  # outside the timed fits
    res = {}
    for name in names:
        res.update(run_dataset(name, args, log))
    print(f"{'data/route':30s} {'fit s':>8s} {'cpu s':>8s} {'error':>9s} {'estimate':>9s} {'route':>9s} "
          f"{'precision':>9s} {'steps':>5s} {'yardstick':>9s}")
    for k, v in res.items():
        est = "-" if v.get("estimate") is None else f"{v['estimate']:.1e}"
        print(f"{k:30s} {v['fit_s']:8.3f} {v['cpu_s']:8.3f} {v['error']:9.1e} {est:>9s} {str(v['solver']):>9s} "
              f"{v['precision']:>9s} {str(v['steps']):>5s} {v['yardstick_s']:9.3f}")
    print("fit/cpu: medians over interleaved repeats; error: max |H - H_qr| / max |H_qr| on held-out rows (float64 "
          "QR reference); yardstick: float32 syrk 4880 x 2250 (0.13 s on a quiet run, two threads)")
    if args.json:
        print(json.dumps(res))
    return res


if __name__ == "__main__":
    main()
