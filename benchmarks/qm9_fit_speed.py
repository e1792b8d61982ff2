"""Fit time of SISOKR against IOKR on QM9 SMILES -> graph, alternating in one process (issue 11).

The settings are those ``qm9_smiles_to_graph.py`` chose by validation (seed 0: spectrum
n = 6, IOKR lam 3.2e-6; SISOKR m_x 2000, m_y 1600, lam 1e-7) plus a cheaper SISOKR
(``--m-y-fast``); each model is fitted ``--repeats`` times in turn on the same 8000 training
molecules and the best time is kept (the machine is shared: the minimum is the least
disturbed run).  Reports each fit time and the speed-up over IOKR, a ratio of the same run.

    OPENBLAS_NUM_THREADS=1 python benchmarks/qm9_fit_speed.py [--data PATH] [--repeats 3] [--json]
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np
from _molecules import unseen_split

from sprokr import IOKR, SISOKR


def main(argv=None):
    from sprokr.datasets import default_data_dir
    from sprokr_chem import smiles_to_graph
    from sprokr_chem.datasets import load_qm9

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(default_data_dir() / "qm9" / "qm9_dev.csv"))
    ap.add_argument("--n-train", type=int, default=8000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--spectrum-n", type=int, default=6)
    ap.add_argument("--iokr-lam", type=float, default=3.16e-6)
    ap.add_argument("--sisokr-lam", type=float, default=1e-7)
    ap.add_argument("--m-x", type=int, default=2000)
    ap.add_argument("--m-y", type=int, default=1600)
    ap.add_argument("--m-y-fast", type=int, default=800)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    smiles, _, _ = load_qm9(args.data)
    tr, _, _ = unseen_split(len(smiles), args.n_train, 0, np.random.default_rng(0))
    X = [smiles[i] for i in tr]
    Y = [smiles_to_graph(s) for s in X]
    kx = {"n": args.spectrum_n}

    def sisokr(m_y):
        return lambda: SISOKR(input_kernel="smiles_spectrum", output_kernel="wl", lam=args.sisokr_lam,
                              input_kernel_params=kx, input_sketch="subsample", m_x=args.m_x,
                              output_sketch="subsample", m_y=m_y, random_state=0)

    makers = {"IOKR": lambda: IOKR(input_kernel="smiles_spectrum", output_kernel="wl", lam=args.iokr_lam,
                                   input_kernel_params=kx),
              f"SISOKR m_y={args.m_y}": sisokr(args.m_y), f"SISOKR m_y={args.m_y_fast}": sisokr(args.m_y_fast)}
    times = {k: [] for k in makers}
    for rep in range(args.repeats):
        for name, make in makers.items():
            t0 = time.perf_counter()
            make().fit(X, Y)
            times[name].append(time.perf_counter() - t0)
        print(f"repeat {rep}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()), flush=True)
    best = {k: min(v) for k, v in times.items()}
    out = {k: {"fit_s": v, "fit_speedup_vs_IOKR": best["IOKR"] / v, "decode_s": float("nan")} for k, v in best.items()}
    print(f"\nQM9 fit time, {args.n_train} molecules, best of {args.repeats} (alternating)")
    for k, v in out.items():
        print(f"{k:18s} {v['fit_s']:8.2f} s  {v['fit_speedup_vs_IOKR']:5.2f}x")
    if args.json:
        print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
