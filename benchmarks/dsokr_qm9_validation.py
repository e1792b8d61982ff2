"""DSOKR regressors compared on a validation split of QM9 training molecules (docs/dsokr.md).

The benchmark split of ``qm9_smiles_to_graph.py`` (seed 0: ``--n-train`` training molecules,
the rest held out) is drawn, and only TRAINING molecules are used here: ``--n-sub`` of them,
of which 20 % are validation queries ranked among the validation molecules plus the other
training molecules (distractors, never a held-out molecule).  Inputs ``smiles_spectrum``
(``--spectrum-n``), outputs ``wl``, p-SG output sketch (p = 20 / n).

Models (``--models``, each at every ``--m-y``):

* ``iokr``, ``sisokr`` (``--m-x``, ``--lam``): references;
* ``ridge``: DSOKR, scikit-learn ``Ridge`` (``--alpha``) on ``KernelFeatures`` (``--m-x``);
  ``ridge-ens``: the same over ``--n-ensemble`` output sketches (mean);
* ``mlp-loss``: ``MLPSurrogate`` (sklearn, ``--hidden``) on the features, early stopping on the
  validation kernel loss; ``mlp-mrr``: torch MLP on the features, ``monitor="mrr"``;
* ``residual``: torch residual MLP started at the ridge (``ridge_init=--alpha``);
* ``cnn``: ``torch_smiles`` (atom tokens, CNN) on the raw SMILES.

Metrics: validation top-1 / MRR, the validation kernel loss (DSOKR) and the fit time.

    python benchmarks/dsokr_qm9_validation.py [--data PATH] [--models ridge,mlp-mrr] [--m-y 800,1600] [--json]
"""
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _molecules import full_scores, rank_metrics, unseen_split
from _report import SeedTable

from sprokr import DSOKR, DSOKREnsemble, IOKR, SISOKR
from sprokr.kernels import KernelFeatures
from sprokr.utils import take


def split(smiles, graphs, args):
    """``(X_fit, Y_fit, X_val, Y_val, distractors)`` from the benchmark's training molecules only."""
    tr, _, _ = unseen_split(len(smiles), args.n_train, len(smiles) - args.n_train, np.random.default_rng(0))
    sub = tr if args.n_sub >= len(tr) else np.sort(np.random.default_rng(100).choice(tr, args.n_sub, replace=False))
    perm = np.random.default_rng(0).permutation(len(sub))
    n_val = int(round(0.2 * len(sub)))
    va, fit = np.sort(sub[perm[:n_val]]), np.sort(sub[perm[n_val:]])
    rest = np.setdiff1d(tr, sub)
    return take(smiles, fit), take(graphs, fit), take(smiles, va), take(graphs, va), take(graphs, rest)


def networks(args):
    """Regressor (name or instance) and parameters of each DSOKR model, on features or SMILES."""
    torch = {"num_threads": args.threads, "max_epochs": args.max_epochs, "lr_drops": 2, "batch_size": 128}
    return {
        "ridge": ("ridge", {"alpha": args.alpha}, True),
        "mlp-loss": ("mlp", {"hidden_layer_sizes": (args.hidden,), "lr_drops": 2, "max_epochs": args.max_epochs}, True),
        "mlp-mrr": ("torch_mlp", {**torch, "hidden_layer_sizes": (args.hidden,), "monitor": "mrr"}, True),
        "residual": ("torch_mlp", {**torch, "hidden_layer_sizes": (args.hidden,), "residual": True,
                                   "ridge_init": args.alpha}, True),
        "cnn": ("torch_smiles", {**torch, "batch_size": 64, "channels": 128, "n_iter_no_change": 8}, False),
    }


def main(argv=None):
    from sprokr.datasets import default_data_dir
    from sprokr_chem import smiles_to_graph
    from sprokr_chem.datasets import load_qm9

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(default_data_dir() / "qm9" / "qm9_dev.csv"))
    ap.add_argument("--n-train", type=int, default=8000)
    ap.add_argument("--n-sub", type=int, default=4000)
    ap.add_argument("--models", default="iokr,sisokr,ridge")
    ap.add_argument("--m-y", type=lambda s: [int(v) for v in s.split(",")], default="800")
    ap.add_argument("--m-x", type=int, default=2000)
    ap.add_argument("--spectrum-n", type=int, default=6)
    ap.add_argument("--lam", type=float, default=3e-6, help="IOKR / SISOKR penalty")
    ap.add_argument("--alpha", type=float, default=1e-2, help="ridge penalty on the features")
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--max-epochs", type=int, default=300)
    ap.add_argument("--n-ensemble", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    smiles, _, _ = load_qm9(args.data)
    graphs = [smiles_to_graph(s) for s in smiles]
    Xtr, Ytr, Xv, Yv, Yx = split(smiles, graphs, args)
    cands = list(Yv) + list(Yx)
    kxp = {"n": args.spectrum_n}
    m_x = min(args.m_x, len(Xtr))
    t0 = time.perf_counter()
    feats = KernelFeatures("smiles_spectrum", kxp, m_x=m_x, random_state=0).fit(Xtr)
    Ztr, Zv = feats.transform(Xtr), feats.transform(Xv)
    feat_s = time.perf_counter() - t0
    table, nets = SeedTable(), networks(args)
    for name in args.models.split(","):
        for m_y in (args.m_y if name != "iokr" else [0]):
            psg = {"p": 20 / len(Xtr)}
            t0 = time.perf_counter()
            extra, X_fit, X_val = {}, Ztr, Zv
            if name == "iokr":
                model = IOKR(input_kernel="smiles_spectrum", input_kernel_params=kxp, output_kernel="wl", lam=args.lam)
                X_fit, X_val = Xtr, Xv
            elif name == "sisokr":
                model = SISOKR(input_kernel="smiles_spectrum", input_kernel_params=kxp, output_kernel="wl",
                               input_sketch="subsample", m_x=m_x, output_sketch="psg", m_y=m_y, output_sketch_params=psg,
                               lam=args.lam, random_state=0)
                X_fit, X_val = Xtr, Xv
            else:
                reg, params, on_features = nets["ridge" if name == "ridge-ens" else name]
                model = DSOKR(output_kernel="wl", output_sketch="psg", m_y=m_y, output_sketch_params=psg, regressor=reg,
                              regressor_params=params, random_state=0)
                if name == "ridge-ens":
                    model = DSOKREnsemble(model, n_estimators=args.n_ensemble, random_state=0)
                if not on_features:
                    X_fit, X_val = Xtr, Xv
                extra["features_s"] = feat_s if on_features else 0.0
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                if isinstance(model, (DSOKR, DSOKREnsemble)):
                    model.fit(X_fit, Ytr, validation_data=(X_val, Yv))
                else:
                    model.fit(X_fit, Ytr)
            fit_s = time.perf_counter() - t0
            S, dec_s = full_scores(model, X_val, cands)
            r = rank_metrics(S, np.arange(len(Yv)))
            if isinstance(model, DSOKR):
                reg = model.regressor_
                extra.update(val_loss=model.validation_loss_, epochs=getattr(reg, "n_epochs_", 0) or 0,
                             convergence_warnings=sum("Convergence" in w.category.__name__ for w in caught))
            table.add(f"{name}@{m_y}" if m_y else name, 0, {"top1": r["top1"], "MRR": r["MRR"], "fit_s": fit_s,
                                                            "decode_s": dec_s, **extra})
    return table.report(f"QM9 validation ({len(Xtr)} fit / {len(Xv)} validation queries among {len(cands)} training "
                        f"molecules; smiles_spectrum n={args.spectrum_n} -> wl)",
                        ["top1", "MRR", "val_loss", "fit_s", "decode_s"], args.json, width=9)


if __name__ == "__main__":
    main()
