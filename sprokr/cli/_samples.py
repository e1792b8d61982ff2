"""``sprokr samples``: where the data samples shipped with sprokr are, and command-line-ready copies.

The samples live inside the installed package (``sprokr/data``, found from Python with
:func:`sprokr.datasets.sample_path`).  ``sprokr samples`` prints their paths;
``sprokr samples --export DIR`` writes, for each, a training file, a test file (and for
molecules a candidate pool) plus a model configuration, ready for ``sprokr fit``,
``predict``, ``evaluate`` and ``select``::

    sprokr samples --export demo && cd demo
    sprokr fit --config qm9.toml --train qm9_train.csv -o qm9.sprokr
    sprokr evaluate qm9.sprokr --test qm9_test.csv --candidates qm9_pool.smi
"""
from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any, Dict, List

import numpy as np

from ..datasets import load_bibtex_sample, sample_path
from ..io import check_output_dir

#: the shipped samples: file in sprokr/data, what it holds, the files ``--export`` writes
SAMPLES: Dict[str, Dict[str, Any]] = {
    "bibtex": {
        "file": "bibtex_sample.npz",
        "task": "multi-label: documents (1836 binary word features) -> sets of tags among 159; "
                "800 train / 400 test (sprokr.datasets.load_bibtex_sample)",
        "export": ["bibtex_train.npz", "bibtex_test.npz", "bibtex.toml"],
    },
    "qm9": {
        "file": "qm9_sample.csv",
        "task": "molecules: 300 QM9 molecules (SMILES) with 8 computed properties; properties -> molecule "
                "(the chem plugin's datasets.load_qm9)",
        "export": ["qm9_train.csv", "qm9_test.csv", "qm9_pool.smi", "qm9.toml"],
    },
}

QM9_PROPERTIES = ["mu", "alpha", "homo", "lumo", "gap", "r2", "zpve", "cv"]

# Bibtex: binary word features -> label sets.  Tanimoto (intersection over union of the
# words) needs no scaling of the 0/1 features; the label sets are compared with the same
# kernel.  Values chosen on a validation split of the 800 training documents
# (`sprokr select --config bibtex.toml --train bibtex_train.npz`), never on the test file.
BIBTEX_TOML = """# Bibtex sample: documents (binary word features, array X) -> sets of tags (tag_000 ... tag_158)
estimator = "SISOKR"
random_state = 0

[params]
lam = {lam}
input_kernel = "tanimoto"
output_kernel = "tanimoto"
input_sketch = "subsample"
m_x = 400

[input]
columns = ["X"]
type = "numeric"

[output]
columns = {labels}
type = "labels"

[select]
lams = [1e-5, 1e-4, 1e-3, 1e-2, 1e-1]
m_x_grid = [100, 200, 400]
"""

# QM9: 8 computed properties -> molecule.  The properties have very different scales
# (r2 ~ 10^3, homo ~ 10^-1): the configuration standardises them (`standardize = true`:
# the training file's means and deviations, stored with the model); the exported files
# also hold them standardised (columns z_<name>) for use outside the command line.
QM9_TOML = """# QM9 sample: 8 computed properties (mu ... cv), standardised -> the molecule (SMILES)
estimator = "SISOKR"
random_state = 0

[params]
lam = {lam}
input_kernel = "gaussian"
input_kernel_params = {{sigma2 = {sigma2}}}
output_kernel = "morgan_tanimoto"
input_sketch = "subsample"
m_x = 150
output_sketch = "psg"
m_y = 100
output_sketch_params = {{p = 0.05}}

[input]
columns = {columns}
type = "numeric"
standardize = true

[output]
column = "smiles"
type = "smiles"

[select]
lams = [1e-5, 1e-4, 1e-3, 1e-2, 1e-1]
m_y_grid = [25, 50, 100, 150]
m_x_grid = [50, 100, 150]
"""


def describe() -> List[Dict[str, Any]]:
    """One record per shipped sample: ``name``, ``path`` (in the installed package), ``task``, ``export``."""
    return [{"name": name, "path": str(sample_path(s["file"])), "task": s["task"], "export": s["export"]}
            for name, s in SAMPLES.items()]


def export_bibtex(directory: Path) -> List[Path]:
    """Write ``bibtex_train.npz``, ``bibtex_test.npz`` (array ``X``, one 0/1 array per tag) and ``bibtex.toml``."""
    X_train, Y_train, X_test, Y_test = load_bibtex_sample()
    labels = [f"tag_{j:03d}" for j in range(Y_train.shape[1])]
    paths = []
    for split, X, Y in (("train", X_train, Y_train), ("test", X_test, Y_test)):
        arrays: Dict[str, Any] = {"X": np.asarray(X.toarray(), dtype=np.uint8)}
        arrays.update({name: np.asarray(Y[:, j], dtype=np.uint8) for j, name in enumerate(labels)})
        path = directory / f"bibtex_{split}.npz"
        np.savez_compressed(path, **arrays)
        paths.append(path)
    path = directory / "bibtex.toml"
    path.write_text(BIBTEX_TOML.format(lam=1e-3, labels=json.dumps(labels)), encoding="utf-8")
    return paths + [path]


def export_qm9(directory: Path) -> List[Path]:
    """Write ``qm9_train.csv`` (240 molecules), ``qm9_test.csv`` (60), ``qm9_pool.smi`` (all 300), ``qm9.toml``.

    The split is the molecule demo's (``numpy.random.default_rng(0)`` permutation).
    """
    with open(sample_path("qm9_sample.csv"), newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    perm = np.random.default_rng(0).permutation(len(rows))
    train, test = [rows[i] for i in perm[:240]], [rows[i] for i in perm[240:]]
    P = np.array([[float(r[c]) for c in QM9_PROPERTIES] for r in train])
    mean, sd = P.mean(0), P.std(0)
    sd[sd == 0] = 1.0
    zcols = [f"z_{c}" for c in QM9_PROPERTIES]
    paths = []
    for split, part in (("train", train), ("test", test)):
        path = directory / f"qm9_{split}.csv"
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(list(rows[0]) + zcols)
            for r in part:
                z = (np.array([float(r[c]) for c in QM9_PROPERTIES]) - mean) / sd
                w.writerow(list(r.values()) + [f"{v:.6g}" for v in z])
        paths.append(path)
    pool = directory / "qm9_pool.smi"
    pool.write_text("".join(f"{r['smiles']} {r['mol_id']}\n" for r in rows), encoding="utf-8")
    path = directory / "qm9.toml"
    path.write_text(QM9_TOML.format(lam=1e-3, sigma2=4.0, columns=json.dumps(list(QM9_PROPERTIES))), encoding="utf-8")
    return paths + [pool, path]


def cmd_samples(args: Any) -> int:
    """``sprokr samples [--export DIR] [--json]``."""
    stream = sys.stderr if args.json else sys.stdout
    records = describe()
    if args.export is None:
        for r in records:
            print(f"{r['name']:8s} {r['path']}\n         {r['task']}", file=stream)
        print("(sprokr samples --export DIR writes train/test files and a model configuration for each)",
              file=stream)
        if args.json:
            print(json.dumps(records))
        return 0
    directory = check_output_dir(args.export, "--export")  # an existing file, an unwritable place: before any work
    directory.mkdir(parents=True, exist_ok=True)
    written = {"bibtex": [str(p) for p in export_bibtex(directory)],
               "qm9": [str(p) for p in export_qm9(directory)]}
    for name, paths in written.items():
        print(f"{name}: " + ", ".join(Path(p).name for p in paths), file=stream)
    print(f"written to {directory}; e.g.\n  cd {directory}\n"
          "  sprokr fit --config bibtex.toml --train bibtex_train.npz -o bibtex.sprokr\n"
          "  sprokr evaluate bibtex.sprokr --test bibtex_test.npz\n"
          "  sprokr fit --config qm9.toml --train qm9_train.csv -o qm9.sprokr\n"
          "  sprokr predict qm9.sprokr --input qm9_test.csv --candidates qm9_pool.smi --top-k 5 -o top5.csv\n"
          "  sprokr evaluate qm9.sprokr --test qm9_test.csv --candidates qm9_pool.smi", file=stream)
    if args.json:
        print(json.dumps({"directory": str(directory), "files": written}))
    return 0


def add_samples_command(sub: Any) -> None:
    """Register ``sprokr samples`` on an argparse sub-parser set."""
    import argparse

    p = sub.add_parser("samples", help="where the shipped data samples are; export them as ready-to-use files",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="examples:\n  sprokr samples\n  sprokr samples --json\n"
                              "  sprokr samples --export demo   # then: cd demo && sprokr fit --config qm9.toml ...")
    p.add_argument("--export", metavar="DIR",
                   help="write train/test files (and a molecule candidate pool) and a model configuration (TOML) "
                        "for each sample into DIR")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout (text on stderr)")
    p.set_defaults(func=cmd_samples)
