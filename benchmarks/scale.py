"""Scaling benchmark: SISOKR from n = 1e4 to 1e6, local and Dask executors, against the
scikit-learn pipeline a user would pick instead, and decoding throughput.

Synthetic multilabel data is generated here (seeded): ``d = 50`` standard normal inputs,
20 labels from a noisy non-linear function of the inputs; SISOKR with ``m_x = 1000``
sub-sampling and ``m_y = 100`` p-SG (``p = 20/n``), float32, Gaussian kernels.  Every
configuration runs in its own process, so that its peak memory (the high-water mark of
the resident set, ``ru_maxrss``) is its own.  Reported per n:

* ``syrk`` -- the one product the method cannot avoid: the float32 ``A^T A`` of the
  n x m_x kernel block (chunk by chunk, as the fit forms it), timed in the same run;
* ``sisokr_local`` -- fit, decode (1000 test queries over the distinct training label
  sets), F1, peak memory, fit time / syrk time (the separate process's and the syrk timed
  again in the fit's own process, before and after the fit: ``fit_over_syrk_same_process``),
  time per point, the route of the sketched ridge, its error estimate and refinement steps;
* ``sisokr_dask`` -- the same on a 2-worker ``LocalCluster`` (processes; peak memory of
  the driver and the largest worker);
* ``sklearn`` -- ``Nystroem(n_components=m_x)`` + ``Ridge`` on the same output
  coordinates, decoded the same way (what a user would pick instead), same data;
* ``decode`` -- 1e3 queries x ``--candidates`` candidates (an index of random label sets):
  index build time, top-1 and top-10 search time, as a fraction of the float32 GEMM time
  of the same product (``gemm_fraction`` = GEMM time / search time, 1 = GEMM peak) and
  against faiss's exact inner-product index (``IndexFlatIP``) on the same embeddings.

    python benchmarks/scale.py [--max-n 1e6] [--no-dask] [--sklearn-max-n 1e6] [--lam 1e-5]
                               [--dtype float32] [--grid 1e6] [--json]

``--data PATH`` may name an ``.npz`` with arrays ``X`` (n, d) and ``Y`` (n, L) to use
instead of the synthetic data (the first ``n`` rows are used for each n).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

D, LABELS, N_TEST = 50, 20, 1000
SIGMA2_X, SIGMA2_Y, LAM = 50.0, 10.0, 1e-5


def make_data(n, seed=0, data=None):
    """``(X, Y, X_test, Y_test)``: n training and 1000 test pairs, float32 inputs."""
    if data is not None:
        z = np.load(data)
        X, Y = np.asarray(z["X"], dtype=np.float32), np.asarray(z["Y"])
        if X.shape[0] < n + N_TEST:
            raise SystemExit(f"--data {data} has {X.shape[0]} rows; n={n} needs {n + N_TEST}")
        return X[:n], Y[:n], X[-N_TEST:], Y[-N_TEST:]
    rng = np.random.default_rng(seed)
    W1 = rng.standard_normal((10, LABELS)).astype(np.float32)
    W2 = rng.standard_normal((D, LABELS)).astype(np.float32)
    out = []
    for m, s in ((n, seed + 1), (N_TEST, seed + 2)):  # the test set is the same for every n
        r = np.random.default_rng(s)
        X = r.standard_normal((m, D), dtype=np.float32)
        Z = np.tanh(X[:, :10]) @ W1 + 0.3 * (X @ W2) / np.sqrt(D)
        Y = (Z + 0.5 * r.standard_normal(Z.shape).astype(np.float32) > 1.0).astype(np.int8)
        out += [X, Y]
    return out[0], out[1], out[2], out[3]


def peak_gb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB


def sisokr(n, args, executor="local"):
    from sprokr import SISOKR

    return SISOKR(input_kernel_params={"sigma2": SIGMA2_X}, output_kernel_params={"sigma2": SIGMA2_Y}, lam=args.lam,
                  input_sketch="subsample", m_x=args.m_x, output_sketch="psg", m_y=args.m_y,
                  output_sketch_params={"p": args.p_factor / n}, dtype=args.dtype, random_state=args.seed,
                  executor=executor, solver=args.solver)


# ---------------------------------------------------------------------- one configuration
def run_syrk(n, args):
    """Chunked float32 syrk of an n x m_x block: the product the fit cannot avoid."""
    from scipy.linalg import get_blas_funcs

    from sprokr.numerics import default_chunk_size

    m = args.m_x
    chunk = default_chunk_size(max(m, 1), np.float32)
    A = np.random.default_rng(0).random((min(chunk, n), m), dtype=np.float32)
    C = np.zeros((m, m), dtype=np.float32, order="F")
    syrk = get_blas_funcs("syrk", dtype=np.float32)
    syrk(1.0, A.T, beta=1.0, c=C, trans=0, lower=1, overwrite_c=1)  # warm up
    t, c = time.perf_counter(), time.process_time()
    for start in range(0, n, chunk):
        rows = min(chunk, n - start)
        syrk(1.0, A[:rows].T, beta=1.0, c=C, trans=0, lower=1, overwrite_c=1)
    return {"syrk_s": time.perf_counter() - t, "syrk_cpu_s": time.process_time() - c}


def run_local(n, args, executor="local"):
    from sprokr.metrics import f1_samples

    X, Y, Xt, Yt = make_data(n, args.seed, args.data)
    base = peak_gb()
    client = cluster = None
    if executor == "dask":
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                               memory_limit=0)
        client = Client(cluster)
        executor = client
    model = sisokr(n, args, executor)
    before = run_syrk(n, args)  # the yardstick, in this process (before and after)
    t0, c0 = time.perf_counter(), time.process_time()
    model.fit(X, Y)
    t1, c1 = time.perf_counter(), time.process_time()
    P = model.predict(Xt)
    t2 = time.perf_counter()
    after = run_syrk(n, args)
    syrk = min(before["syrk_s"], after["syrk_s"])
    syrk_cpu = min(before["syrk_cpu_s"], after["syrk_cpu_s"])
    out = {"f1": float(f1_samples(Yt, P)), "fit_s": t1 - t0, "decode_s": t2 - t1, "peak_gb": peak_gb(),
           "data_gb": base, "n_distinct": len(model.default_index_), "per_point_us": (t1 - t0) / n * 1e6,
           "syrk_same_process_s": syrk, "fit_over_syrk_same_process": (t1 - t0) / syrk,
           # CPU seconds: the steadier ratio on a loaded machine (single-threaded BLAS)
           "fit_cpu_s": c1 - c0, "syrk_cpu_s": syrk_cpu, "fit_cpu_over_syrk_cpu": (c1 - c0) / syrk_cpu,
           "solver": getattr(model, "solver_", None), "solver_error_estimate": getattr(model, "solver_error_estimate_", None),
           "refinement_steps": getattr(model, "solver_refinement_steps_", None)}
    out.update({f"phase_{k}_s": v for k, v in model.fit_times_.items()})
    if client is not None:
        worker_peaks = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)
        out["worker_peak_gb"] = max(worker_peaks.values())
        client.close()
        cluster.close()
    return out


def run_sklearn(n, args):
    """Nystroem + Ridge on the same output coordinates, decoded over the same candidates."""
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import Ridge

    from sprokr.decoders import CandidateIndex
    from sprokr.metrics import f1_samples
    from sprokr.models.dsokr import sketched_output_targets
    from sprokr.kernels import resolve_kernel
    from sprokr.sketches import resolve_sketch
    from sprokr.utils import check_random_state, unique_inverse

    X, Y, Xt, Yt = make_data(n, args.seed, args.data)
    t0 = time.perf_counter()
    # the output coordinates psi~(y) of the same output sketch as SISOKR (drawn after R_x)
    rng = check_random_state(args.seed)
    resolve_sketch("subsample", args.m_x, None, n, "input").draw(n, rng)
    R = resolve_sketch("psg", args.m_y, {"p": args.p_factor / n}, n, "output").draw(n, rng)
    ky = resolve_kernel("gaussian", {"sigma2": SIGMA2_Y}, "output", np.dtype(np.float64))
    feats, Psi, _ = sketched_output_targets(ky, R, Y)
    t1 = time.perf_counter()
    nys = Nystroem(kernel="rbf", gamma=1.0 / (2 * SIGMA2_X), n_components=args.m_x, random_state=args.seed)
    Z = nys.fit_transform(X)
    ridge = Ridge(alpha=n * args.lam).fit(Z, Psi)  # alpha = n lam: the same objective
    t2 = time.perf_counter()
    first, _ = unique_inverse(Y)
    index = CandidateIndex(Y[first], Psi[first])
    P = index.take(index.search(ridge.predict(nys.transform(Xt)), 1).indices[:, 0])
    t3 = time.perf_counter()
    return {"f1": float(f1_samples(Yt, P)), "fit_s": t2 - t0, "output_coords_s": t1 - t0,
            "nystroem_ridge_s": t2 - t1, "decode_s": t3 - t2, "peak_gb": peak_gb()}


def run_decode(args):
    """Index build, top-1 / top-10 search vs the same float32 GEMM and faiss IndexFlatIP."""
    from sprokr.numerics import score_block_size

    n_fit, nc, nq = int(args.decode_fit_n), int(args.candidates), 1000
    X, Y, Xt, _ = make_data(n_fit, args.seed, args.data)
    model = sisokr(n_fit, args).fit(X, Y)
    rng = np.random.default_rng(7)
    C = (rng.random((nc, LABELS)) < 0.3).astype(np.int8)  # random label sets
    t0 = time.perf_counter()
    index = model.make_candidate_index(C, dtype="float32")
    t_index = time.perf_counter() - t0
    Xq = np.vstack([Xt] * (nq // len(Xt) + 1))[:nq]
    H = np.ascontiguousarray(model.predict_coordinates(Xq), dtype=index.embeddings.dtype)
    E = index.embeddings
    out = {"n_candidates": nc, "n_queries": nq, "dim": int(E.shape[1]), "dtype": str(E.dtype),
           "index_build_s": t_index}
    # the product alone, in the blocks the search uses
    from sprokr.numerics import matmul

    block = score_block_size(nq, 10, E.dtype.itemsize, 256)
    t = time.perf_counter()
    for s in range(0, nc, block):
        matmul(H, E[s:s + block].T)
    out["gemm_s"] = time.perf_counter() - t
    for k in (1, 10):
        t = time.perf_counter()
        res = index.search(H, k)
        out[f"top{k}_s"] = time.perf_counter() - t
        out[f"top{k}_gemm_fraction"] = out["gemm_s"] / out[f"top{k}_s"]
        try:
            import faiss

            fi = faiss.IndexFlatIP(E.shape[1])
            fi.add(np.ascontiguousarray(E, dtype=np.float32))
            t = time.perf_counter()
            Dv, _ = fi.search(np.ascontiguousarray(H, dtype=np.float32), k)
            out[f"faiss_top{k}_s"] = time.perf_counter() - t
            # equal scores (duplicate candidates tie; faiss breaks ties its own way)
            out[f"top{k}_max_score_diff_faiss"] = float(np.abs(Dv - res.scores).max())
        except ImportError:
            out[f"faiss_top{k}_s"] = None
    out["fit_s"], out["decode_s"] = out["index_build_s"], out["top1_s"]
    return out


# ---------------------------------------------------------------------- driver
def one(spec, args):
    kind, n = spec["kind"], spec.get("n")
    if kind == "syrk":
        return run_syrk(n, args)
    if kind == "local":
        return run_local(n, args)
    if kind == "dask":
        return run_local(n, args, "dask")
    if kind == "sklearn":
        return run_sklearn(n, args)
    if kind == "decode":
        return run_decode(args)
    raise ValueError(kind)


def spawn(spec, argv):
    """Run one configuration in a fresh process (its own peak memory); its JSON result."""
    cmd = [sys.executable, os.path.abspath(__file__), *argv, "--one", json.dumps(spec)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-3:]
        return {"error": f"exit {proc.returncode}: " + " | ".join(tail)}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=None, help=".npz with X (n, d) and Y (n, L) instead of synthetic data")
    ap.add_argument("--max-n", type=float, default=1e6)
    ap.add_argument("--grid", type=float, nargs="*", default=[1e4, 3e4, 1e5, 3e5, 1e6])
    ap.add_argument("--m-x", type=int, default=1000)
    ap.add_argument("--m-y", type=int, default=100)
    ap.add_argument("--p-factor", type=float, default=20.0, help="p = p_factor / n for the p-SG output sketch")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lam", type=float, default=LAM, help="ridge of SISOKR (and of the scikit-learn pipeline)")
    ap.add_argument("--solver", default="auto", choices=["auto", "whitened", "mixed", "cholesky", "qr", "eigh"],
                    help="SISOKR's sketched-ridge route (default: the whitened normal equations)")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--no-dask", action="store_true")
    ap.add_argument("--dask-max-n", type=float, default=1e6)
    ap.add_argument("--sklearn-max-n", type=float, default=1e6)
    ap.add_argument("--candidates", type=float, default=1e6, help="candidates of the decoding test (0: skip)")
    ap.add_argument("--decode-fit-n", type=float, default=1e5, help="training pairs of the model whose index is searched")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.one is not None:
        print(json.dumps(one(json.loads(args.one), args)))
        return 0
    passthrough = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--json"]
    try:
        import distributed  # noqa: F401

        dask_ok = not args.no_dask
    except ImportError:
        dask_ok = False
        print("dask.distributed is not installed: the Dask rows are skipped (pip install 'sprokr[dask]')")
    grid = [int(n) for n in args.grid if n <= args.max_n]
    results = {}
    for n in grid:
        row = {"syrk": spawn({"kind": "syrk", "n": n}, passthrough),
               "sisokr_local": spawn({"kind": "local", "n": n}, passthrough)}
        if dask_ok and n <= args.dask_max_n:
            row["sisokr_dask"] = spawn({"kind": "dask", "n": n}, passthrough)
        if n <= args.sklearn_max_n:
            row["sklearn"] = spawn({"kind": "sklearn", "n": n}, passthrough)
        syrk = row["syrk"].get("syrk_s")
        for name in ("sisokr_local", "sisokr_dask", "sklearn"):
            r = row.get(name)
            if r and "fit_s" in r and syrk:
                r["fit_over_syrk"] = r["fit_s"] / syrk
        if "sklearn" in row and "fit_s" in row["sklearn"] and "fit_s" in row["sisokr_local"]:
            row["sisokr_local"]["speedup_vs_sklearn"] = row["sklearn"]["fit_s"] / row["sisokr_local"]["fit_s"]
        for name, r in row.items():
            results[f"{name}@{n}"] = r
        print(_line(n, row), flush=True)
    if args.candidates:
        results["decode"] = spawn({"kind": "decode"}, passthrough)
        d = results["decode"]
        if "error" not in d:
            print(f"\ndecode {d['n_queries']} x {d['n_candidates']} (p={d['dim']}, {d['dtype']}): index build "
                  f"{d['index_build_s']:.2f} s, GEMM {d['gemm_s']:.2f} s, top-1 {d['top1_s']:.2f} s "
                  f"({100 * d['top1_gemm_fraction']:.0f} % of GEMM peak), top-10 {d['top10_s']:.2f} s "
                  f"({100 * d['top10_gemm_fraction']:.0f} %), faiss top-1 {d.get('faiss_top1_s')} s, "
                  f"top-10 {d.get('faiss_top10_s')} s")
        else:
            print(f"\ndecode: {d['error']}")
    # time per point from 1e5 on (the flat part of the curve)
    pp = [results[f"sisokr_local@{n}"].get("per_point_us") for n in grid if n >= 1e5]
    pp = [p for p in pp if p]
    if len(pp) > 1:
        results["summary"] = {"per_point_ratio_1e5_to_max": max(pp) / min(pp)}
        print(f"\ntime per point from 1e5 to {grid[-1]:.0e}: max/min = {max(pp) / min(pp):.2f}")
    if args.json:
        print(json.dumps(results))
    return 0


def _line(n, row):
    def f(r, key, fmt):
        v = (r or {}).get(key)
        return format(v, fmt) if isinstance(v, (int, float)) else "   -  "

    loc, dk, sk = row.get("sisokr_local"), row.get("sisokr_dask"), row.get("sklearn")
    head = (f"n={n:>8d}  syrk {f(row['syrk'], 'syrk_s', '7.2f')} s | local fit {f(loc, 'fit_s', '7.2f')} s "
            f"({f(loc, 'fit_over_syrk', '4.1f')}x syrk; {f(loc, 'fit_over_syrk_same_process', '4.1f')}x the syrk "
            f"timed in its process, CPU {f(loc, 'fit_cpu_over_syrk_cpu', '4.1f')}x) decode {f(loc, 'decode_s', '5.2f')} s "
            f"F1 {f(loc, 'f1', '.4f')} peak {f(loc, 'peak_gb', '.2f')} GB")
    if dk:
        head += f" | dask fit {f(dk, 'fit_s', '7.2f')} s F1 {f(dk, 'f1', '.4f')}"
    if sk:
        head += f" | sklearn fit {f(sk, 'fit_s', '7.2f')} s F1 {f(sk, 'f1', '.4f')} peak {f(sk, 'peak_gb', '.2f')} GB"
    for name, r in row.items():
        if "error" in r:
            head += f"\n    {name}: {r['error']}"
    return head


if __name__ == "__main__":
    sys.exit(main())
