"""MOSES at scale: 1.58 million training molecules, 1.76 million candidates, 10,000 queries.

Two tasks on the MOSES benchmark molecules (``<data>/moses/train.csv.gz``, 1,584,663
SMILES; ``test.csv.gz``, 176,074), through sprokr's public API:

* ``--task smiles``: SMILES -> molecule.  Input kernel: the normalised spectrum kernel
  (cosine of hashed character 1..4-gram counts of the canonical SMILES); output kernel:
  Tanimoto of Morgan count fingerprints (radius 2, 2048 bits) or the chemistry-aware WL
  kernel, chosen by validation;
* ``--task properties``: cheap RDKit descriptors (exact mass, element counts, logP, TPSA,
  H-bond donors / acceptors, rotatable bonds, ring and aromatic ring counts, fraction sp3,
  formal charge; ``sprokr_chem.featurize.DESCRIPTOR_NAMES``), standardised on the training
  rows -> molecule; Gaussian input kernel, output kernel as above.

Queries: 10,000 molecules of ``test.csv.gz`` (a seeded sample).  Candidates: every distinct
MOSES molecule of both files (1,760,737: the files share none), embedded once per model
into a float32 candidate index built on disk and memory-mapped.  Each query's molecule is
among the candidates; reported: top-1, top-10, MRR and the rank of the truth (median,
mean, 90th percentile) over all candidates.

Methods, per training size ``n`` (the first ``n`` rows of ``train.csv.gz``):

* ``sisokr``: SISOKR, sub-sampling sketches (``m_x`` inputs, ``m_y`` outputs), float32;
* ``dsokr``: DSOKR, an MLP (scikit-learn) onto the same kind of output basis, early stopping
  on the validation molecules;
* ``iokr``: the exact input ridge (Cholesky of ``K + n lam I``; outputs in the sketched
  basis of the index, as ISOKR: exact output coordinates would need ``n x 1.76 M`` output
  kernel values per decode), at the largest ``n`` whose ``n x n`` Gram fits the memory
  budget (``--iokr-n``), once;
* ``nn``: nearest training input (input kernel), then the candidates ranked by output
  kernel similarity to its molecule (in the sketched output basis of the SISOKR model);
* ``knn``: the mean output coordinates of the ``k`` nearest training inputs (k-NN
  regression of the output features, ``k`` chosen by validation);
* ``dsokr_local``: DSOKR with one sketched Gaussian ridge per k-means region of the inputs
  (``regressor="local_kernel_ridge"``, :class:`sprokr.models.LocalKernelRidgeRegressor`:
  ``n / --local-region-size`` regions, ``--local-m-x`` support points each), the width and
  ``lam`` chosen by validation at every ``n`` (``--local-gammas`` x ``--local-lams``, one fit
  each, the output targets shared).  SISOKR's ``m_x`` support points make a smooth map; on
  21 descriptors of a million molecules the nearest training molecule is often an isomer of
  the truth, structure that only a local model (``R m_x`` support points for the cost of
  ``m_x``) follows.
* ``dsokr_neighbours``: DSOKR with a Gaussian ridge on each query's nearest training inputs
  (``regressor="neighbour_kernel_ridge"``, :class:`sprokr.models.NeighbourKernelRidgeRegressor`),
  the number of neighbours, width and ``lam`` chosen by validation (``--neighbours-k`` x
  ``--neighbours-gammas`` x ``--neighbours-lams``).  The local models' validation ranks the
  validation molecules among all candidates (``--local-validate``) and grows the grid past
  an edge while validation improves there (``--local-extend``).

Settings are chosen by validation on training molecules only: the last 2,000 rows of
``train.csv.gz`` are validation queries (never fitted on) ranked among themselves and the
50,000 rows before them.  Chosen once at ``--select-n`` (default 1e5): the output kernel,
the output basis size ``m_y``, the Gaussian width (properties), the MLP, and the index
precision; at every ``n``: ``lam`` (a ``sprokr.model_selection.lambda_path``: one fit and
one pass for the whole grid) and the ``k`` of k-NN.

Featurisation (``sprokr_chem.featurize.featurize_molecules``): parsing, descriptors and
fingerprints of both files in worker processes (``--executor local``) or on the Dask
workers (``--executor dask``: a ``LocalCluster`` of 2 worker processes, which also runs
the fits' passes and holds the candidate index, each worker memory-mapping its rows), cached
on disk (``--cache``) under the files' sha256 and the featuriser's parameters.

Memory: the peak of the resident *anonymous* memory (``RssAnon``) of this process and all
its children (pool workers, Dask workers), sampled every 0.2 s (``benchmarks/_memory.py``);
memory-mapped features and indexes are page cache and do not count.

``gemm_s``: the float32 GEMM of the decode's shapes (10,000 x d by d x 1.76 M), chunked as
the search chunks it, timed in the same process right after the decode.  The candidate index
is built with a bounded screen (``CandidateIndex.build_screen``: a 128-dimensional principal
projection of the embeddings and the norms of the rest), so the exact top-10 search scores
only the pairs whose upper bound reaches the running 10th best and can take less time than
that GEMM (``index_s`` includes the screen's two passes).  ``rank_s``: the rank of each
query's truth among all candidates, through the same screen (only candidates whose bound
reaches the truth's score are scored; a block of truths ranked far down is counted from its
float32 GEMM block).  Without a screen (small candidate sets) the top-10 and the ranks are one
pass and ``decode_s`` includes the ranking.

    python benchmarks/moses.py --task smiles [--n 1e4,1e5] [--executor local|dask] [--json]
        [--data ../shared/data/moses] [--cache DIR] [--workdir DIR] [--methods sisokr,dsokr,iokr,nn,knn]
        [--smoke 3000]

``--smoke N`` runs the whole pipeline on the first N training rows and N // 4 test rows (the
tests use it).  ``--json`` prints one JSON object last: ``{"task", "runs": [{"n", "method",
"executor", "top1", "top10", "MRR", "featurise_s", "fit_s", "index_s", "decode_s", "gemm_s",
"peak_rss_mb", ...}], "settings", "featurise", "load"}``.
"""
from __future__ import annotations

import argparse
import functools
import gc
import itertools
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _memory import PeakMemory  # noqa: E402
from _moses import metrics_from, neighbours, ranks_of_truth, topk_and_ranks, validation_mrr  # noqa: E402

CURVE = (10_000, 30_000, 100_000, 300_000, 1_000_000, 1_584_663)
TASKS = {"smiles": ("spectrum", "canonical", "morgan"), "properties": ("descriptors", "morgan")}
N_VAL, N_DISTRACT = 2_000, 50_000
LAMS = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9)
KS = (1, 3, 10, 30, 100)
LAMS_USED = LAMS


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.1f}] {msg}", flush=True)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--task", choices=sorted(TASKS), default="smiles")
    p.add_argument("--n", default="curve", help="training sizes, comma separated (1e4,1e5) or 'curve'")
    p.add_argument("--executor", choices=("local", "dask"), default="local")
    p.add_argument("--json", action="store_true")
    p.add_argument("--data", default=str(Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "moses"))
    p.add_argument("--cache", default=None, help="feature cache directory (default $SPROKR_CACHE or ~/.cache/sprokr)")
    p.add_argument("--workdir", default="/tmp/sprokr-moses", help="where the candidate indexes are written")
    p.add_argument("--methods", default="sisokr,dsokr,iokr,nn,knn")
    p.add_argument("--queries", type=int, default=10_000)
    p.add_argument("--select-n", type=float, default=1e5)
    p.add_argument("--m-x", type=int, default=2000)
    p.add_argument("--m-y", default="256,512",
                   help="output basis sizes tried by validation (the largest, 512, is a cost cap: the float32 "
                        "GEMM of 10,000 queries against 1.76 M candidates is ~80 s at 512 on 2 cores, ~160 s at "
                        "1024)")
    p.add_argument("--iokr-n", type=float, default=12_000,
                   help="n of the exact IOKR reference (12,000: the whole reference, Cholesky lam path "
                        "included, peaked at 3.8 GB of anonymous memory)")
    p.add_argument("--iokr-lam-path", choices=("auto", "cholesky", "eigh"), default="cholesky",
                   help="route of the exact reference's lam path: 'cholesky' (one factorisation per lam, "
                        "the Gram and one copy in memory) or 'eigh' (one eigendecomposition: the Gram, "
                        "its eigenvectors and LAPACK's workspace, ~4 n^2 doubles)")
    p.add_argument("--dsokr-max-n", type=float, default=3e5, help="largest n for DSOKR (memory)")
    p.add_argument("--dsokr-epochs", type=int, default=20)
    p.add_argument("--local-region-size", type=int, default=2000,
                   help="dsokr_local: training molecules per input region (n_regions = n / this)")
    p.add_argument("--local-m-x", type=int, default=1000, help="dsokr_local: support points per region")
    p.add_argument("--local-gammas", default="0.3,1", help="dsokr_local: Gaussian widths tried (validation)")
    p.add_argument("--local-lams", default="1e-5,1e-7", help="dsokr_local: ridges tried (validation)")
    p.add_argument("--neighbours-k", default="4,16", help="dsokr_neighbours: neighbours per query tried")
    p.add_argument("--neighbours-gammas", default="3,30", help="dsokr_neighbours: Gaussian widths tried")
    p.add_argument("--neighbours-lams", default="1e-5", help="dsokr_neighbours: ridges tried")
    p.add_argument("--local-validate", choices=("candidates", "pool"), default="candidates",
                   help="the local models: validation molecules ranked among all candidates (as the test queries) "
                        "or among the 52,000 of the validation pool")
    p.add_argument("--local-val-top", type=int, default=100,
                   help="the local models' validation score: MRR@k over all candidates (0: the full MRR)")
    p.add_argument("--local-extend", type=int, default=4,
                   help="the local models: fits past the grid's edge at most, while validation improves there")
    p.add_argument("--baseline-n", default=None, help="training sizes at which the baselines run (default: all)")
    p.add_argument("--mlp-columns", type=int, default=4096, help="input columns of the MLP (smiles task)")
    p.add_argument("--no-wl", action="store_true", help="do not try the WL output kernel in validation")
    p.add_argument("--lams", default=",".join(f"{v:g}" for v in LAMS), help="ridge grid (lam paths)")
    p.add_argument("--gammas", default="0.001,0.003,0.01,0.03,0.1", help="Gaussian widths tried (properties)")
    p.add_argument("--featurise-only", default=None, metavar="OUTPUT_BLOCK",
                   help="only featurise both files for the task with this output block (morgan or wl): "
                        "time, memory and the sha256 of every feature file (to compare executors)")
    p.add_argument("--settings", default=None, help="JSON of settings chosen earlier (by a run of this script): "
                   "the selection steps whose result it holds are skipped")
    p.add_argument("--smoke", type=int, default=None)
    p.add_argument("--processes", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def head_rows(X, n):
    """The first ``n`` rows of a CSR matrix or array as a view (CSR row slicing copies)."""
    if sp.issparse(X):
        nnz = int(X.indptr[n])
        return sp.csr_matrix((X.data[:nnz], X.indices[:nnz], X.indptr[:n + 1]), shape=(n, X.shape[1]))
    return X[:n]


def rows_of(X, idx):
    idx = np.asarray(idx)
    return X[idx]


# ---------------------------------------------------------------------------- data
class Data:
    """SMILES, splits and features of one task."""

    def __init__(self, args):
        from sprokr_chem.datasets import load_moses

        data = Path(args.data)
        self.args = args
        self.task = args.task
        self.paths = {f: data / f"{f}.csv.gz" for f in ("train", "test")}
        self.limit = {"train": args.smoke, "test": None if args.smoke is None else max(args.smoke // 4, 200)}
        self.smiles = {f: load_moses(p, n_rows=self.limit[f]) for f, p in self.paths.items()}
        if set(self.smiles["train"]).intersection(self.smiles["test"]):
            raise SystemExit("train and test share molecules; the candidate set would hold duplicates")
        self.n_train_file = len(self.smiles["train"])
        self.labels = self.smiles["train"] + self.smiles["test"]
        self.n_candidates = len(self.labels)
        n_val = min(N_VAL, self.n_train_file // 10)
        n_dis = min(N_DISTRACT, self.n_train_file // 4)
        self.val = np.arange(self.n_train_file - n_val, self.n_train_file)
        self.distract = np.arange(self.n_train_file - n_val - n_dis, self.n_train_file - n_val)
        self.workdir = Path(args.workdir)
        self.tables, self.feat, self.Yc = {}, {}, None
        self.featurise_s = None

    # ------------------------------------------------------------------ features
    def featurise_subset(self, rows, blocks, executor):
        """Features of some training rows (the selection subset), cached by their content."""
        from sprokr_chem.featurize import featurize_molecules

        smi = [self.smiles["train"][i] for i in rows]
        return featurize_molecules(smi, blocks, cache_dir=self.args.cache, executor=executor,
                                   processes=self.args.processes)

    def featurise(self, blocks, executor):
        """Features of both files (``featurise_s``: their wall time; 0-ish when cached)."""
        from sprokr.persistence import file_checksum
        from sprokr_chem.featurize import featurize_molecules

        cpu0 = _cpu()
        for f, p in self.paths.items():
            src = "sha256:" + file_checksum(p) + ("" if self.limit[f] is None else f":first{self.limit[f]}")
            t = time.perf_counter()
            T = featurize_molecules(self.smiles[f], blocks, cache_dir=self.args.cache, source=src,
                                    executor=executor, processes=self.args.processes)
            self.tables[f] = T
            self.feat[f] = {"rows": T.n_rows, "wall_s": time.perf_counter() - t, "compute_s": T.compute_s,
                            "from_cache": T.from_cache, "invalid": len(T.errors), "blocks": list(blocks)}
            if "canonical" in T.blocks:
                self.feat[f]["non_canonical"] = int(T.n_rows - int(np.asarray(T["canonical"]).sum()))
            for r, text, why in T.errors[:20]:
                log(f"invalid molecule in {f} row {r}: {text!r} ({why})")
        self.feat["cpu_s"] = _cpu() - cpu0
        self.featurise_s = sum(self.feat[f]["wall_s"] for f in self.paths)
        tr, te = self.tables["train"], self.tables["test"]
        self.output_block = "wl" if "wl" in blocks else "morgan"
        # invalid molecules: never fitted on, never queried (they stay candidates, reported)
        self.valid_train = tr.valid
        self.val = self.val[self.valid_train[self.val]]
        self.distract = self.distract[self.valid_train[self.distract]]
        rng = np.random.default_rng(self.args.seed)
        ok = np.flatnonzero(te.valid)
        q = np.sort(rng.choice(ok, min(self.args.queries, ok.size), replace=False))
        self.query_rows, self.truth = q, self.n_train_file + q
        log(f"features: {self.n_train_file} training rows, {te.n_rows} test rows, {self.n_candidates} candidates, "
            f"{len(tr.errors) + len(te.errors)} invalid; {self.featurise_s:.1f} s wall, {self.feat['cpu_s']:.0f} s CPU "
            f"(cached: {tr.from_cache and te.from_cache})")

    def candidates_Y(self):
        """Output features of every candidate (train rows, then test rows): a CSR matrix
        over memory-mapped files in the work directory (written once, not held in memory)."""
        if self.Yc is None:
            tr, te = self.tables["train"], self.tables["test"]
            self.workdir.mkdir(parents=True, exist_ok=True)
            B = self.output_block
            self.Yc = concat_csr_on_disk([tr[B], te[B]], self.workdir / f"candidates-{B}-{tr.key[:12]}-{te.key[:12]}")
        return self.Yc

    def inputs(self, which, rows=None, scaler=None):
        T = self.tables[which]
        X = T["spectrum"] if self.task == "smiles" else T["descriptors"]
        return _rows(X, rows, scaler)

    def outputs(self, which, rows):
        return _rows(self.tables[which][self.output_block], rows)


def _rows(X, rows, scaler=None):
    if rows is not None:
        if isinstance(rows, slice):
            X = head_rows(X, rows.stop) if rows.start in (0, None) else X[rows]
        else:
            X = X[np.asarray(rows)]
    return scaler(X) if scaler is not None else X


def concat_csr_on_disk(parts, prefix):
    """Row concatenation of CSR matrices into memory-mapped ``.npy`` files (reused if present)."""
    from numpy.lib.format import open_memmap

    nnz = sum(int(P.nnz) for P in parts)
    n = sum(P.shape[0] for P in parts)
    files = {k: Path(f"{prefix}.{k}.npy") for k in ("data", "indices", "indptr")}
    if not all(f.exists() for f in files.values()):
        data = open_memmap(str(files["data"]) + ".tmp", "w+", parts[0].dtype, (nnz,))
        ind = open_memmap(str(files["indices"]) + ".tmp", "w+", np.int32, (nnz,))
        ptr = open_memmap(str(files["indptr"]) + ".tmp", "w+", np.int64, (n + 1,))
        p0 = r0 = 0
        ptr[0] = 0
        for P in parts:
            for a in range(0, P.shape[0], 200_000):
                b = min(a + 200_000, P.shape[0])
                lo, hi = int(P.indptr[a]), int(P.indptr[b])
                data[p0 + lo:p0 + hi] = P.data[lo:hi]
                ind[p0 + lo:p0 + hi] = P.indices[lo:hi]
                ptr[r0 + a + 1:r0 + b + 1] = np.asarray(P.indptr[a + 1:b + 1]) + p0
            p0 += int(P.nnz)
            r0 += P.shape[0]
        for m in (data, ind, ptr):
            m.flush()
        del data, ind, ptr
        for k, f in files.items():
            os.replace(str(f) + ".tmp", f)
    arr = {k: np.load(f, mmap_mode="r") for k, f in files.items()}
    return sp.csr_matrix((arr["data"], arr["indices"], arr["indptr"]), shape=(n, parts[0].shape[1]))


def _cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


class Scaler:
    """Standardisation of the descriptors on training rows (constant columns left at 0)."""

    def __init__(self, X):
        X = np.asarray(X, dtype=np.float64)
        self.mu = X.mean(axis=0)
        sd = X.std(axis=0)
        sd[sd == 0] = 1.0
        self.sd = sd

    def __call__(self, X):
        return ((np.asarray(X, dtype=np.float64) - self.mu) / self.sd).astype(np.float32)


# ---------------------------------------------------------------------------- models
def input_kernel(task, s):
    if task == "smiles":
        return "cosine", {}
    return "gaussian", {"gamma": s["gamma"]}


def output_kernel(s):
    return ("morgan_count_tanimoto", {}) if s["output"] == "morgan" else ("cosine", {})


def sisokr(args, s, n, executor, lam=None, exact=False):
    from sprokr import ISOKR, SISOKR

    ik, ikp = input_kernel(args.task, s)
    ok, okp = output_kernel(s)
    common = dict(input_kernel=ik, input_kernel_params=ikp, output_kernel=ok, output_kernel_params=okp,
                  lam=lam if lam is not None else s.get("lam", 1e-4), output_sketch="subsample", m_y=s["m_y"],
                  random_state=args.seed, default_index=False, executor=_by_name(executor))
    if exact:
        return ISOKR(dtype="float64", **common)
    return SISOKR(input_sketch="subsample", m_x=min(args.m_x, n), dtype=s["dtype"], **common)


def _by_name(executor):
    """Estimators get the executor by name (they are cloned; a Dask client is not copied):
    ``"dask"`` finds the client this script made the default one."""
    return getattr(executor, "name", None) or "local"


def dsokr(args, s, executor):
    from sprokr import DSOKR

    ok, okp = output_kernel(s)
    return DSOKR(output_kernel=ok, output_kernel_params=okp, output_sketch="subsample", m_y=s["m_y"],
                 regressor="mlp", regressor_params={"hidden_layer_sizes": s["mlp"], "lam": 1e-5,
                                                    "max_epochs": args.dsokr_epochs, "n_iter_no_change": 3,
                                                    "batch_size": 256},
                 random_state=args.seed, default_index=False, executor=_by_name(executor))


def dsokr_local(args, s, n, gamma, lam):
    """DSOKR whose regressor is one sketched Gaussian ridge per k-means region of the inputs
    (:class:`sprokr.models.LocalKernelRidgeRegressor`): the properties task's local model."""
    from sprokr import DSOKR

    ok, okp = output_kernel(s)
    regions = max(1, int(np.ceil(n / args.local_region_size)))
    return DSOKR(output_kernel=ok, output_kernel_params=okp, output_sketch="subsample", m_y=s["m_y"],
                 regressor="local_kernel_ridge",
                 regressor_params={"n_regions": regions, "kernel": "gaussian", "kernel_params": {"gamma": gamma},
                                   "lam": lam, "input_sketch": "subsample", "m_x": args.local_m_x},
                 random_state=args.seed, default_index=False)


def dsokr_neighbours(args, s, n_neighbors, gamma, lam):
    """DSOKR whose regressor is a Gaussian ridge on each query's nearest training inputs
    (:class:`sprokr.models.NeighbourKernelRidgeRegressor`): the properties task's other local model."""
    from sprokr import DSOKR

    ok, okp = output_kernel(s)
    return DSOKR(output_kernel=ok, output_kernel_params=okp, output_sketch="subsample", m_y=s["m_y"],
                 regressor="neighbour_kernel_ridge",
                 regressor_params={"n_neighbors": int(n_neighbors), "kernel": "gaussian",
                                   "kernel_params": {"gamma": gamma}, "lam": lam},
                 random_state=args.seed, default_index=False)


#: how a grid grows past an edge: parameter -> (lower neighbour, upper neighbour) of a value
GRID_STEPS = {"gamma": (lambda v: v / 3, lambda v: v * 3), "lam": (lambda v: v / 100, lambda v: v * 100),
              "n_neighbors": (lambda v: max(1, v // 2), lambda v: v * 2)}


def select_grid(args, s, D, name, make, grid, X, Y, Xv, Yv, Yd):
    """``(model, point, curve, fit_s, select_s)``: the model ``make(**point)`` of the best
    validation MRR over the grid ``{parameter: values}`` (the fits share the output targets).

    ``--local-validate candidates`` (default): the validation molecules are ranked among all
    the candidates, as the test queries are (their own molecules are training rows, so
    candidates; no test molecule is a query), through one index built with the first fit
    (every fit has the same output basis: same molecules, sketch and seed -- checked).  At
    52,000 candidates (``pool``: the validation molecules and the distractors) smoother
    models look better than they are at 1.76 M: there, top-10 rewards a sharp prediction.
    The score is the MRR@``--local-val-top`` (default 100: a truth further down counts 0;
    ``0``: the full MRR, whose ranking of sharp predictions costs a GEMM of all pairs).

    A best point on an edge of the grid is not a choice: the grid then grows one step past
    that edge (:data:`GRID_STEPS`, from the best point) while validation improves, at most
    ``--local-extend`` more fits.  Only one model is in memory at a time: the best so far
    waits on disk (a regional model holds ``n_regions m_x p`` float64 coefficients, 3.2 GB
    at 1.58 M; two in memory and the targets peaked at 12.5 GB)."""
    import sprokr
    from sprokr.utils import concat_samples

    pool = concat_samples([Yv, Yd])
    t0 = time.perf_counter()
    full = {}  # the index of all candidates and the validation truths' embedding (first fit)

    def val_mrr(model):
        if args.local_validate == "pool":
            return _val_mrr_model(model, Xv, pool)
        probe = model.make_candidate_index(Yv).embeddings
        if not full:
            path = Path(args.workdir) / f"{args.task}-{name}-validation.sprokr"
            model.make_candidate_index(D.candidates_Y(), dtype=s["index_dtype"], path=path, labels=D.labels)
            full.update(index=sprokr.load(path, mmap=True), probe=probe, path=path)
        elif not np.array_equal(probe, full["probe"]):
            raise RuntimeError(f"{name} fits with different output bases: the validation index does not apply")
        H = model.predict_coordinates(Xv)
        if not args.local_val_top:
            return float(np.mean(1.0 / ranks_of_truth(H, full["index"], D.val)))
        # MRR@k: a truth outside the first k counts 0 (the whole ranking of sharp predictions,
        # whose truths are often far down, is a float32 GEMM of all pairs)
        top = full["index"].search(H, args.local_val_top).indices
        hit = top == D.val[:, None]
        return float(np.sum(1.0 / (1 + np.argmax(hit[hit.any(axis=1)], axis=1))) / len(D.val))

    keys = list(grid)
    values = {k: sorted(grid[k]) for k in keys}
    best_path = Path(args.workdir) / f"{args.task}-{name}-best.model"
    curve, fits, best = {}, {}, None

    def trial(point):
        nonlocal best
        t = time.perf_counter()
        model = make(**dict(zip(keys, point))).fit(X, Y)
        fits[point] = time.perf_counter() - t
        curve[point] = val_mrr(model)
        log(f"  {name} {' '.join(f'{k}={v:g}' for k, v in zip(keys, point))}: validation MRR {curve[point]:.4f} "
            f"(fit {fits[point]:.1f} s)")
        if best is None or curve[point] > curve[best]:
            best = point
            model.save(best_path)
        del model
        gc.collect()

    for point in itertools.product(*(values[k] for k in keys)):
        trial(point)
    extra = 0
    while extra < args.local_extend:
        start, steps = best, []
        for j, k in enumerate(keys):
            v, vs = start[j], values[k]
            if len(vs) > 1 and v in (vs[0], vs[-1]):
                out = GRID_STEPS[k][0 if v == vs[0] else 1](v)
                steps.append(start[:j] + (out,) + start[j + 1:])
        steps = [p for p in steps if p not in curve][: args.local_extend - extra]
        if not steps:
            break
        for point in steps:
            for j, k in enumerate(keys):
                values[k] = sorted(set(values[k]) | {point[j]})
            trial(point)
            extra += 1
        if best == start:  # no step past the edge improved: the edge point is the choice
            break
    model = sprokr.load(best_path)
    best_path.unlink()
    if full:
        del full["index"]
        gc.collect()
        full["path"].unlink()
    return model, dict(zip(keys, best)), curve, fits[best], time.perf_counter() - t0 - fits[best]


def _floats(text):
    """``"0.3,1"`` -> ``[0.3, 1.0]`` (a grid given on the command line)."""
    return [float(v) for v in text.split(",")]


def select_lam(est, X, Y, Xv, Yv, Yd, method="auto"):
    """``lam`` by validation MRR (lambda path: one fit, one pass); the fitted model at it,
    the lam, the validation curve, the fit's and the path's seconds, and the fit's phases
    (``fit_times_``).
    ``method``: the lam path's route (``"cholesky"`` keeps one n x n copy besides the Gram,
    where the eigendecomposition needs three)."""
    from sprokr.model_selection import lambda_path, retrieval_scorer

    t = time.perf_counter()
    path = lambda_path(est, X, Y, LAMS_USED, method=method)
    fit_s = path.times_["fit"]
    scores = path.scores(Xv, Yv, retrieval_scorer("mrr", extra_candidates=Yd))
    best = float(path.lams[int(np.argmax(scores))])
    model = path.estimator_at(best)
    # the phases of the path's one state fit (fit_times_: where the fit's time goes)
    phases = {k: float(v) for k, v in getattr(path.state_, "fit_times_", {}).items()}
    return (model, best, dict(zip(map(float, path.lams), map(float, scores))), fit_s,
            time.perf_counter() - t - fit_s, phases)


# ---------------------------------------------------------------------------- settings
def select_settings(args, D, executor, known=None):
    """Output kernel, m_y, Gaussian width, MLP and index precision, on training molecules.

    Runs on a subset of the training file featurised with every candidate block: the first
    ``select_n`` rows (fitted), the validation rows and the distractors.
    """
    val0 = int(D.val[0])
    n_sel = int(min(args.select_n, max(100, int(D.distract[0]) if D.distract.size else val0 // 2)))
    rows = np.concatenate([np.arange(n_sel), D.val, D.distract])
    blocks = TASKS[args.task] + (() if args.no_wl else ("wl",))
    t = time.perf_counter()
    T = D.featurise_subset(rows, blocks, executor)
    log(f"selecting settings at n = {n_sel} on {D.val.size} validation molecules + {D.distract.size} distractors "
        f"(subset featurised in {time.perf_counter() - t:.1f} s)")
    ok = T.valid
    fit_rows = np.flatnonzero(ok[:n_sel])
    v_rows = n_sel + np.flatnonzero(ok[n_sel:n_sel + D.val.size])
    d_rows = n_sel + D.val.size + np.flatnonzero(ok[n_sel + D.val.size:])
    known = dict(known or {})
    s = {"dtype": "float32", "output": "morgan", "m_y": None, "mlp": (256,), "gamma": None, "select_n": n_sel}
    # what this run measures (select_n, lam_select, index_dtype) is never taken from the file
    s.update({k: (tuple(v) if k == "mlp" else v) for k, v in known.items()
              if k not in ("curves", "select_n", "lam_select", "index_dtype")})
    Xall = T["spectrum"] if args.task == "smiles" else T["descriptors"]
    scaler = Scaler(Xall[fit_rows]) if args.task == "properties" else None
    X, Xv = _rows(Xall, fit_rows, scaler), _rows(Xall, v_rows, scaler)
    outs = {b: (_rows(T[b], fit_rows), _rows(T[b], v_rows), _rows(T[b], d_rows)) for b in ("morgan", "wl") if b in T.blocks}
    curves = dict(known.get("curves", {}))
    m_ys = [int(v) for v in args.m_y.split(",")]
    s["m_y"] = s["m_y"] or m_ys[len(m_ys) // 2]

    def mrr(st, n_sub=None):
        Y, Yv, Yd = outs["wl" if st["output"] == "wl" else "morgan"]
        Xs, Ys = (X, Y) if n_sub is None else (X[:n_sub], Y[:n_sub])
        model, lam, sc, _, _, _ = select_lam(sisokr(args, st, Xs.shape[0], executor), Xs, Ys, Xv, Yv, Yd)
        return max(sc.values()), lam, model

    if args.task == "properties" and "gamma" not in known:  # Gaussian width on standardised descriptors
        res = {}
        for g in [float(v) for v in args.gammas.split(",")]:
            s["gamma"] = g
            res[g], lam, _ = mrr(s)
            log(f"  gamma={g}: validation MRR {res[g]:.4f} (lam {lam:g})")
        s["gamma"] = max(res, key=res.get)
        curves["gamma"] = res
    if "wl" in outs and "output" not in known:
        res = {}
        for name in ("morgan", "wl"):
            res[name], lam, _ = mrr(dict(s, output=name))
            log(f"  output kernel {name}: validation MRR {res[name]:.4f} (lam {lam:g})")
        s["output"] = max(res, key=res.get)
        curves["output_kernel"] = res
    res = {}
    for m_y in ([] if "m_y" in known else m_ys):
        res[m_y], lam, _ = mrr(dict(s, m_y=m_y))
        log(f"  m_y={m_y}: validation MRR {res[m_y]:.4f} (lam {lam:g})")
    if res:
        best = max(res.values())
        # the smallest basis within 2 % of the best: the index and the decoding grow with it
        s["m_y"] = min(m for m, v in res.items() if v >= 0.98 * best)
        curves["m_y"] = res
    # index precision: float32 (screen + float64 rescoring) against float64 top-10 lists
    val_mrr, lam, model = mrr(s)
    s["lam_select"] = lam
    from sprokr.utils import concat_samples

    _, Yv, Yd = outs["wl" if s["output"] == "wl" else "morgan"]
    pool = concat_samples([Yv, Yd])
    H = model.predict_coordinates(Xv)
    a = model.make_candidate_index(pool).search(H, 10)
    b = model.make_candidate_index(pool, dtype="float32").search(H, 10)
    agree = float(np.mean((a.indices == b.indices).all(axis=1)))
    s["index_dtype"] = "float32" if agree >= 0.999 else "float64"
    curves["index_top10_agreement_float32"] = agree
    log(f"  float32 index: identical top-10 lists for {100 * agree:.2f} % of validation queries")
    if "dsokr" in args.methods and "mlp" not in known:
        Y, Yv, _ = outs["wl" if s["output"] == "wl" else "morgan"]
        cols = mlp_columns(X, args.mlp_columns) if args.task == "smiles" else None
        s["mlp_columns"] = None if cols is None else int(cols.size)
        Xm, Xvm = (X, Xv) if cols is None else (X[:, cols], Xv[:, cols])
        res = {}
        for h in ((256,), (512,)):
            m = dsokr(args, dict(s, mlp=h), executor).fit(Xm, Y, validation_data=(Xvm, Yv))
            res[str(h)] = _val_mrr_model(m, Xvm, pool)
            log(f"  DSOKR MLP {h}: validation MRR {res[str(h)]:.4f} ({m.regressor_.n_epochs_} epochs)")
        s["mlp"] = max(((256,), (512,)), key=lambda h: res[str(h)])
        curves["mlp"] = res
    s["curves"] = curves
    return s


def mlp_columns(X, k):
    """The ``k`` input columns present in most training rows (the MLP's inputs)."""
    counts = np.bincount(np.asarray(X.indices), minlength=X.shape[1])
    cols = np.argsort(-counts, kind="stable")[:k]
    return np.sort(cols[counts[cols] > 0])


def _val_mrr_model(model, Xv, pool):
    idx = model.make_candidate_index(pool)
    return validation_mrr(model.predict_coordinates(Xv), idx.embeddings, idx.offsets)


# ---------------------------------------------------------------------------- one run
def gemm_seconds(H, E):
    """The float32 GEMM ``H E^T`` in the score blocks the search uses (same process)."""
    from sprokr.numerics import DEFAULT_MAX_MEMORY_MB, matmul, score_block_size

    H32 = np.asarray(H, dtype=np.float32)
    block = score_block_size(H.shape[0], 10, 8, DEFAULT_MAX_MEMORY_MB)
    t = time.perf_counter()
    for a in range(0, E.shape[0], block):
        matmul(H32, np.asarray(E[a:a + block]).T)
    return time.perf_counter() - t


def evaluate(args, D, model, Xq, name, n, executor, peak, extra, H=None, index=None, gemm=None):
    """Index (built on disk, memory-mapped), decode, ranks; one result row."""
    import sprokr

    row = {"n": int(n), "method": name, "executor": args.executor, "featurise_s": D.featurise_s}
    row.update(extra)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    if index is None:
        path = work / f"{args.task}-{name}-{n}.sprokr"
        t = time.perf_counter()
        index = model.make_candidate_index(D.candidates_Y(), dtype=extra.get("index_dtype", "float32"), path=path,
                                           labels=D.labels)
        row["index_s"] = time.perf_counter() - t
        t = time.perf_counter()
        index = sprokr.load(path, model=model, mmap=True)
        row["index_load_s"] = time.perf_counter() - t
        row["index_mb"] = path.stat().st_size / 2**20
    searched = index.distribute(executor) if args.executor == "dask" else index
    if gemm is None:  # the method whose decode is timed: the API, then the GEMM, then the ranks
        t = time.perf_counter()
        if H is None:
            top = model.predict_topk(Xq, 10, candidates=searched)
            H = model.predict_coordinates(Xq)
        else:
            top = searched.search(H, 10)
        row["decode_s"] = time.perf_counter() - t
        row["gemm_s"] = gemm_seconds(H, index.embeddings)
        t = time.perf_counter()
        ranks = ranks_of_truth(H, index, D.truth)
        row["rank_s"] = time.perf_counter() - t
    elif index.screen is not None:  # the others: the screened search, then the screened ranks
        t = time.perf_counter()
        if H is None:
            H = model.predict_coordinates(Xq)
        top = searched.search(H, 10)
        row["decode_s"] = time.perf_counter() - t
        t = time.perf_counter()
        ranks = ranks_of_truth(H, index, D.truth)
        row["rank_s"] = time.perf_counter() - t
        row["gemm_s"] = gemm  # same shapes as the timed method's GEMM at this n
    else:  # a small index without a screen: top-10 and ranks in one pass (decode_s includes the ranking)
        t = time.perf_counter()
        if H is None:
            H = model.predict_coordinates(Xq)
        top, ranks = topk_and_ranks(H, index, D.truth)
        row["decode_s"] = time.perf_counter() - t
        row["decode_includes_ranks"] = True
        row["gemm_s"] = gemm  # same shapes as the timed method's GEMM at this n
    row["decode_over_gemm"] = row["decode_s"] / row["gemm_s"]
    row.update(metrics_from(ranks, top.indices, D.truth))
    row["peak_rss_mb"] = peak.sample()
    row["load"] = os.getloadavg()[0]
    row["top1_scores"] = top.scores[:, 0].tolist() if args.smoke else None
    row["top1_indices"] = top.indices[:, 0].tolist() if args.smoke else None
    # the top-10 of every query, for comparing executors (benchmarks/moses_compare.py)
    np.savez(work / f"predictions-{args.task}-{name}-{n}-{args.executor}.npz", indices=top.indices,
             scores=top.scores, truth=D.truth)
    log(f"{name} n={n}: top1 {row['top1']:.4f} top10 {row['top10']:.4f} MRR {row['MRR']:.4f} "
        f"median rank {row['rank_median']:.0f}; fit {row.get('fit_s', 0):.1f} s, index {row.get('index_s', 0):.1f} s, "
        f"decode {row['decode_s']:.1f} s ({row['decode_over_gemm']:.2f} x GEMM {row['gemm_s']:.1f} s), "
        f"ranks {row.get('rank_s', 0):.1f} s, "
        f"peak {row['peak_rss_mb']:.0f} MB")
    return row, index, H


def run_n(args, D, s, n, executor, peak, methods, results):
    """Every method at training size ``n``."""
    n_fit = min(n, int(D.val[0]))  # the validation rows (the file's last) are never fitted
    rows = slice(0, n_fit)
    scaler = Scaler(head_rows(D.inputs("train"), n_fit)) if args.task == "properties" else None
    X, Y = D.inputs("train", rows, scaler), D.outputs("train", rows)
    Xv, Yv, Yd = D.inputs("train", D.val, scaler), D.outputs("train", D.val), D.outputs("train", D.distract)
    Xq = D.inputs("test", D.query_rows, scaler)
    base = {"index_dtype": s["index_dtype"], "n_fit": n_fit}
    if "iokr" in methods and n == max(args.ns):
        # the exact reference first: its n x n Gram is the run's largest allocation, so it
        # runs before the sketched models, their index and the full training block exist
        # (a whole curve with it last peaked 0.8 GB above the reference alone)
        results.append(run_reference(args, D, s, n_fit, scaler, (Xv, Yv, Yd), executor, peak, base))
        gc.collect()
    sis_index = sis_model = gemm = sis_p = None
    if methods & {"sisokr", "nn", "knn"}:
        model, lam, curve, fit_s, sel_s, phases = select_lam(sisokr(args, s, n_fit, executor), X, Y, Xv, Yv, Yd)
        log(f"sisokr n={n_fit}: lam {lam:g} (validation MRR {max(curve.values()):.4f}); fit {fit_s:.1f} s, "
            f"lam path {sel_s:.1f} s, solver {model.solver_}, precision {model.solver_precision_}")
        extra = dict(base, fit_s=fit_s, select_s=sel_s, lam=lam, m_x=int(model.input_sketch_matrix_.m),
                     p=int(model.output_rank_), solver=model.solver_, val_mrr=max(curve.values()),
                     fit_times=phases)
        row, sis_index, _ = evaluate(args, D, model, Xq, "sisokr", n_fit, executor, peak, extra)
        sis_model, gemm, sis_p = model, row["gemm_s"], model.output_rank_
        if "sisokr" in methods:
            results.append(row)
    if methods & {"nn", "knn"} and (not args.baseline_n or n in args.baseline_ns):
        from sprokr.kernels import resolve_kernel

        ik, ikp = input_kernel(args.task, s)
        kx = resolve_kernel(ik, ikp, "input", np.dtype(np.float32))
        t = time.perf_counter()
        Q = kx.prepare(sp.vstack([Xv, Xq]) if sp.issparse(Xq) else np.vstack([Xv, Xq]))
        nb = neighbours(kx, Q, kx.prepare(X), max(KS), executor=None)
        nb_s = time.perf_counter() - t
        nv = Xv.shape[0]
        Hs = knn_coordinates(sis_model, Y, nb, KS)
        from sprokr.utils import concat_samples

        pool_idx = sis_model.make_candidate_index(concat_samples([Yv, Yd]))
        res = {}
        for k in KS:
            res[k] = validation_mrr(Hs[k][:nv], pool_idx.embeddings, pool_idx.offsets)
        k_best = max((k for k in KS if k > 1), key=res.get)
        log(f"neighbours of {Q.shape[0]} queries among {n_fit} in {nb_s:.1f} s; validation MRR by k: {res}")
        for name, k in (("nn", 1), ("knn", k_best)):
            if name not in methods:
                continue
            H = Hs[k][nv:]
            extra = dict(base, fit_s=0.0, index_s=0.0, index_of="sisokr", neighbours_s=nb_s, k=k, val_mrr=res[k],
                         p=int(sis_model.output_rank_))
            row, _, _ = evaluate(args, D, sis_model, Xq, name, n_fit, executor, peak, extra, H=H, index=sis_index,
                                 gemm=gemm)
            row["decode_s"] += nb_s  # the neighbour search is the baselines' prediction
            row["decode_over_gemm"] = row["decode_s"] / row["gemm_s"]
            results.append(row)
    if "dsokr" in methods and n_fit <= args.dsokr_max_n:
        t = time.perf_counter()
        cols = mlp_columns(X, args.mlp_columns) if args.task == "smiles" else None
        pick = (lambda A: A) if cols is None else (lambda A: A[:, cols])
        model = dsokr(args, s, executor).fit(pick(X), Y, validation_data=(pick(Xv), Yv))
        fit_s = time.perf_counter() - t
        extra = dict(base, fit_s=fit_s, p=int(model.output_rank_), epochs=int(model.regressor_.n_epochs_),
                     mlp=list(s["mlp"]), mlp_columns=None if cols is None else int(cols.size))
        row, _, _ = evaluate(args, D, model, pick(Xq), "dsokr", n_fit, executor, peak, extra,
                             gemm=gemm if model.output_rank_ == sis_p else None)
        results.append(row)
    for name in ("dsokr_local", "dsokr_neighbours"):
        if name not in methods:
            continue
        if name == "dsokr_local":
            make = functools.partial(dsokr_local, args, s, X.shape[0])
            grid = {"gamma": _floats(args.local_gammas), "lam": _floats(args.local_lams)}
        else:
            make = functools.partial(dsokr_neighbours, args, s)
            grid = {"n_neighbors": [int(v) for v in args.neighbours_k.split(",")],
                    "gamma": _floats(args.neighbours_gammas), "lam": _floats(args.neighbours_lams)}
        model, point, curve, fit_s, sel_s = select_grid(args, s, D, name, make, grid, X, Y, Xv, Yv, Yd)
        best = tuple(point.values())
        log(f"{name} n={n_fit}: {point} (validation MRR {curve[best]:.4f}); fit {fit_s:.1f} s, "
            f"selection {sel_s:.1f} s")
        reg = model.regressor_
        extra = dict(base, fit_s=fit_s, select_s=sel_s, **point, p=int(model.output_rank_), val_mrr=curve[best],
                     val_curve={"/".join(f"{v:g}" for v in k): v for k, v in curve.items()},
                     validate=args.local_validate, val_top=args.local_val_top)
        if name == "dsokr_local":
            extra.update(n_regions=int(reg.n_regions_), m_x=args.local_m_x, fit_times=reg.fit_times_)
        row, _, _ = evaluate(args, D, model, Xq, name, n_fit, executor, peak, extra,
                             gemm=gemm if model.output_rank_ == sis_p else None)
        results.append(row)
        del model
        gc.collect()
    for p in Path(args.workdir).glob(f"{args.task}-*.sprokr"):  # the indexes of this n (GBs each)
        p.unlink()


def run_reference(args, D, s, n_fit, scaler, val, executor, peak, base):
    """The exact IOKR reference on the first ``--iokr-n`` training pairs: one result row
    (its decode timed against its own float32 GEMM)."""
    n_ex = int(min(args.iokr_n, n_fit))
    Xe, Ye = D.inputs("train", slice(0, n_ex), scaler), D.outputs("train", slice(0, n_ex))
    model, lam, curve, fit_s, sel_s, _ = select_lam(sisokr(args, s, n_ex, executor, exact=True), Xe, Ye, *val,
                                                 method=args.iokr_lam_path)
    log(f"iokr n={n_ex}: lam {lam:g}; fit {fit_s:.1f} s, lam path {sel_s:.1f} s")
    extra = dict(base, n_fit=n_ex, fit_s=fit_s, select_s=sel_s, lam=lam, p=int(model.output_rank_),
                 val_mrr=max(curve.values()))
    row, _, _ = evaluate(args, D, model, D.inputs("test", D.query_rows, scaler), "iokr", n_ex, executor, peak, extra)
    return row


def knn_coordinates(model, Y, nb, ks):
    """``{k: mean of psi~(y_j) over the k nearest neighbours j}``, one neighbour rank at a
    time (never more than one (n_q x p) block of output coordinates in memory)."""
    f, ky = model.output_features_, model.output_kernel_
    total = np.zeros((nb.shape[0], f.rank))
    out = {}
    for j in range(max(ks)):
        total += f.transform(ky.prepare_outputs(Y[nb[:, j]]))
        if j + 1 in ks:
            out[j + 1] = total / (j + 1)
    return out


def save_partial(args, out):
    """The results so far, rewritten after every run (a long run leaves its rows behind)."""
    path = Path(args.workdir) / f"results-{args.task}-{args.executor}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(out, default=_jsonable))
    os.replace(tmp, path)


def main(argv=None):
    global LAMS_USED
    args = parse_args(argv)
    LAMS_USED = tuple(float(v) for v in args.lams.split(","))
    peak = PeakMemory().start()
    ns = CURVE if args.n == "curve" else tuple(int(float(v)) for v in args.n.split(","))
    methods = set(args.methods.split(","))
    cluster = client = None
    from sprokr.numerics import DaskExecutor, LocalExecutor

    if args.executor == "dask":
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
        executor = DaskExecutor(client)
    else:
        executor = LocalExecutor()
    try:
        D = Data(args)
        if args.featurise_only:
            blocks = tuple(b for b in TASKS[args.task] if b != "morgan") + (args.featurise_only,)
            D.featurise(blocks, executor)
            sums = {f: {name: meta["sha256"] for name, meta in
                        json.loads((T.path / "manifest.json").read_text())["blocks"].items()}
                    for f, T in D.tables.items()}
            out = {"task": args.task, "executor": args.executor, "featurise": D.feat, "featurise_s": D.featurise_s,
                   "peak_rss_mb": peak.stop(), "sha256": sums, "load": os.getloadavg()}
            print(json.dumps(out))
            return out
        ns = tuple(dict.fromkeys(min(n, int(D.val[0])) for n in ns))
        args.ns = ns
        args.baseline_ns = set() if not args.baseline_n else {min(int(float(v)), int(D.val[0]))
                                                                for v in args.baseline_n.split(",")}
        known = json.loads(Path(args.settings).read_text()) if args.settings else {}
        s = select_settings(args, D, executor, known)
        Path(args.workdir).mkdir(parents=True, exist_ok=True)
        (Path(args.workdir) / f"settings-{args.task}.json").write_text(json.dumps(s, default=_jsonable))
        log(f"settings: { {k: v for k, v in s.items() if k != 'curves'} }")
        blocks = tuple(b for b in TASKS[args.task] if b != "morgan") + ("wl" if s["output"] == "wl" else "morgan",)
        D.featurise(blocks, executor)
        results = []
        for n in ns:
            run_n(args, D, s, n, executor, peak, methods, results)
            peak.sample()
            save_partial(args, {"task": args.task, "runs": results, "settings": s, "featurise": D.feat,
                                "n_candidates": D.n_candidates})
    finally:
        if client is not None:
            client.close()
            cluster.close()
    out = {"task": args.task, "runs": results, "settings": s, "featurise": D.feat, "peak_rss_mb": peak.stop(),
           "n_candidates": D.n_candidates, "n_queries": int(D.query_rows.size), "load": os.getloadavg(),
           "cores": os.cpu_count()}
    print(f"\n{'n':>9s} {'method':8s} {'top1':>7s} {'top10':>7s} {'MRR':>7s} {'rank':>8s} {'fit_s':>8s} "
          f"{'index_s':>8s} {'decode_s':>8s} {'gemm_s':>7s} {'peak_MB':>8s}")
    for r in results:
        print(f"{r['n']:9d} {r['method']:8s} {r['top1']:7.4f} {r['top10']:7.4f} {r['MRR']:7.4f} "
              f"{r['rank_median']:8.0f} {r.get('fit_s', 0):8.1f} {r.get('index_s', 0):8.1f} {r['decode_s']:8.1f} "
              f"{r['gemm_s']:7.1f} {r['peak_rss_mb']:8.0f}")
    if args.json:
        print(json.dumps(out, default=_jsonable))
    return out


def _jsonable(x):
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, tuple):
        return list(x)
    return str(x)


if __name__ == "__main__":
    main()
