"""Command line: ``sprokr plugins`` lists components, ``sprokr demo`` runs the shipped demo."""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings

__all__ = ["main"]


def cmd_plugins(args):
    from .registry import list_components

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = list_components()
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    if args.json:
        print(json.dumps(rows))
        return 0
    wn = max(len(r["name"]) for r in rows)
    wk = max(len(r["kind"]) for r in rows)
    print(f"{'name':{wn}s}  {'kind':{wk}s}  plugin")
    for r in rows:
        print(f"{r['name']:{wn}s}  {r['kind']:{wk}s}  {r['plugin']}")
    return 0


def _multilabel_demo(out):
    """SISOKR vs IOKR on the shipped Bibtex sample (800 train / 400 test)."""
    import numpy as np
    from sklearn.preprocessing import StandardScaler

    from .datasets import load_bibtex_sample
    from .metrics import f1_samples
    from .models import IOKR, SISOKR

    Xtr, Ytr, Xte, Yte = load_bibtex_sample()
    sc = StandardScaler(with_mean=False).fit(Xtr)
    Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
    n = Xtr.shape[0]
    out(f"Bibtex sample: {n} train / {Xte.shape[0]} test documents, {Xtr.shape[1]} features, "
        f"{Ytr.shape[1]} labels; candidates = distinct training label sets")
    models = {
        "IOKR (exact)": IOKR(lam=1e-4, input_kernel_params={"sigma2": 1e4}, output_kernel_params={"sigma2": 1.0}),
        "SISOKR (m_x=400, m_y=100)": SISOKR(
            lam=1e-4, input_kernel_params={"sigma2": 1e4}, output_kernel_params={"sigma2": 1e4},
            input_sketch="subsample", m_x=400, output_sketch="psg", m_y=100,
            output_sketch_params={"p": 20.0 / n}, random_state=0),
    }
    res = {}
    for name, model in models.items():
        t0 = time.perf_counter()
        model.fit(Xtr, Ytr)
        t1 = time.perf_counter()
        pred = model.predict(Xte)
        t2 = time.perf_counter()
        res[name] = {"f1": f1_samples(Yte, pred), "fit_s": t1 - t0, "decode_s": t2 - t1}
        out(f"  {name:28s} F1 {res[name]['f1']:.3f}   fit {t1 - t0:6.3f} s   decode {t2 - t1:6.3f} s")
    top = models["SISOKR (m_x=400, m_y=100)"].predict_topk(Xte[:1], k=3)
    out(f"  top-3 candidate scores for the first test document: {np.round(top.scores[0], 5).tolist()}")
    return res


def cmd_demo(args):
    out = print
    out("sprokr demo -- structured prediction with sketched kernel methods\n")
    res = {"multilabel": _multilabel_demo(out)}
    try:
        from . import _demo_molecules
    except ImportError:
        _demo_molecules = None
    if _demo_molecules is not None:
        out("")
        try:
            res["molecules"] = _demo_molecules.run(out=out)
        except ImportError as exc:
            out(f"(molecule demo skipped: {exc}; install the plugins with `pip install -r requirements.txt`)")
    if args.json:
        print(json.dumps(res))
    return 0


def main(argv=None):
    from . import __version__

    ap = argparse.ArgumentParser(prog="sprokr", description="Structured prediction with sketched kernel methods.")
    ap.add_argument("--version", action="version", version=f"sprokr {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plugins", help="list every registered component, its kind and plugin")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_plugins)
    d = sub.add_parser("demo", help="fit and predict on data shipped with the package")
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=cmd_demo)
    args = ap.parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:  # e.g. `sprokr plugins | head`: the reader left, stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
