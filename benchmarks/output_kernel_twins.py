"""Twins of the molecule output kernels: different molecules with identical features.

Two molecules are *twins* for an output kernel when their canonical SMILES differ (RDKit,
without stereo: no graph kernel sees stereo) but their explicit feature vectors are equal,
so every decoder ties them.  The script featurises every distinct molecule of a QM9 CSV
once per kernel and reports the share of molecules that have at least one twin (and the
number of twin groups, the largest group, the featurisation time):

* ``wl plain`` / ``core_wl plain``: element (+ charge) node labels, unlabelled edges
  (the default before bond orders were used: ``node_label="label", edge_label=None``);
* ``wl bonds``: the same atom labels, bond orders as edge labels;
* ``wl chem`` / ``core_wl chem``: the default on molecule graphs (atom labels element +
  charge + aromaticity + H count, bond orders as edge labels);
* ``morgan bits`` / ``morgan counts``: Morgan fingerprints (radius 2, 2048 bits).

    python benchmarks/output_kernel_twins.py [--data PATH] [--n-iter 3] [--limit N] [--json]
"""
from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from rdkit import Chem

from sprokr.datasets import default_data_dir
from sprokr_chem import morgan_fingerprints, smiles_to_graph
from sprokr_chem.datasets import load_qm9
from sprokr_graphs import wl_features


def canonical(smiles):
    """Canonical SMILES without stereo (the identity of a molecular graph)."""
    return Chem.MolToSmiles(Chem.MolFromSmiles(smiles), isomericSmiles=False)


def row_keys(indptr, ids, values):
    """One hashable key per row of a sparse feature matrix (ids sorted within the row)."""
    keys = []
    for i in range(indptr.size - 1):
        sl = slice(indptr[i], indptr[i + 1])
        order = np.argsort(ids[sl], kind="stable")
        keys.append((ids[sl][order].tobytes(), np.round(values[sl][order], 9).tobytes()))
    return keys


def twins(keys, names):
    """Share of molecules sharing their feature key with another molecule, group stats."""
    groups = defaultdict(set)
    for k, s in zip(keys, names):
        groups[k].add(s)
    tw = [g for g in groups.values() if len(g) > 1]
    n_tw = sum(len(g) for g in tw)
    examples = [sorted(g)[:3] for g in sorted(tw, key=len, reverse=True)[:3]]
    return {"twins_frac": n_tw / len(names), "n_twins": n_tw, "n_groups": len(tw),
            "largest_group": max((len(g) for g in tw), default=0)}, examples


def wl_method(n_iter, core, node_label, edge_label):
    def run(smiles, graphs):
        F = wl_features(graphs, n_iter, node_label=node_label, core=core, normalize=False,
                        edge_label=edge_label)
        return F.indptr, F.ids, F.values
    return run


def morgan_method(counts):
    def run(smiles, graphs):
        X = morgan_fingerprints(smiles, radius=2, n_bits=2048, counts=counts)
        return X.indptr, X.indices.astype(np.int64), X.data
    return run


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=default_data_dir() / "qm9" / "qm9_dev.csv")
    ap.add_argument("--n-iter", type=int, default=3, help="WL relabelling rounds (the kernels' default)")
    ap.add_argument("--limit", type=int, default=None, help="only the first N molecules")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    smiles, _, _ = load_qm9(args.data, properties=[])
    if args.limit:
        smiles = smiles[: args.limit]
    # one entry per distinct molecule: duplicates of the file are not twins
    by_name = {}
    for s in smiles:
        by_name.setdefault(canonical(s), s)
    names = list(by_name)
    uniq = [by_name[c] for c in names]
    graphs = [smiles_to_graph(s) for s in uniq]
    print(f"{len(smiles)} molecules in {args.data}, {len(uniq)} distinct")

    h = args.n_iter
    methods = {
        "wl plain": wl_method(h, False, "label", None),
        "core_wl plain": wl_method(h, True, "label", None),
        "wl bonds": wl_method(h, False, "label", "bond_order"),
        "wl chem": wl_method(h, False, "auto", "auto"),
        "core_wl chem": wl_method(h, True, "auto", "auto"),
        "morgan bits": morgan_method(False),
        "morgan counts": morgan_method(True),
    }
    out = {}
    print(f"\n{'kernel':15s} {'twins %':>8s} {'n_twins':>8s} {'groups':>7s} {'largest':>8s} {'feat_s':>7s}  examples")
    for name, run in methods.items():
        t0 = time.perf_counter()
        indptr, ids, values = run(uniq, graphs)
        dt = time.perf_counter() - t0
        res, ex = twins(row_keys(indptr, ids, values), names)
        res["featurise_s"] = dt
        out[name] = res
        print(f"{name:15s} {100 * res['twins_frac']:8.2f} {res['n_twins']:8d} {res['n_groups']:7d} "
              f"{res['largest_group']:8d} {dt:7.2f}  {ex[:2]}")
    if args.json:
        print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
