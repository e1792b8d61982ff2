"""sprokr's numerics: linear algebra, chunked passes, executors and top-k search, in one package.

Every estimator composes these; none writes its own solve or chunk loop.  The private
submodules are re-exported here (the public names are this package's ``__all__``):

* ``_executor``   -- the executor interface (map over row chunks, merge), the local executor;
* ``_dask``       -- the Dask executor (``dask.distributed``; the ``dask`` extra): partitions and passes;
* ``_dask_cluster`` -- its base: sending objects, bounded waits, retries, rebuilding lost partitions;
* ``_dask_client`` -- under that: the client, the workers it sees, ``dask_available``;
* ``_dask_tasks`` -- the tasks run on the workers (pure functions) and the sources lost partitions are rebuilt from;
* ``_resolve``    -- the executor an estimator is given (name, instance or Dask client);
* ``_sketch_matrix`` -- the factored sketch matrix ``R = W S`` the sketched passes take;
* ``_faults``     -- the errors of distributed passes, and the workers' import check;
* ``_linalg``     -- BLAS ``matmul``, PSD eigenpairs / solves, in-place Cholesky;
* ``_parallel``   -- row-block thread parallelism for the passes BLAS does not cover;
* ``_crossprod``  -- mergeable double-centred ``A^T A`` / ``A^T T`` sums (float32-accurate);
* ``_features``   -- sketched kernel features ``K R^T`` and the feature map ``D^-1/2 U^T R k``;
* ``_products``   -- kernel block x coefficients (the float32 policy), candidate offsets;
* ``_qr``         -- tall-skinny QR over row chunks (mergeable R factors and ``Q^T T``);
* ``_whiten``     -- the whitened basis of ``R K R^T`` (pivoted Cholesky) of the sketched ridge;
* ``_ridge``      -- exact and sketched kernel ridge solves: the entry points;
* ``_ridge_passes`` -- their passes over row chunks (cross products, tall-skinny QR);
* ``_ridge_common`` -- the sketched ridge's result, constants and stable QR solve;
* ``_ridge_job``  -- its routes: whitened normal equations, refinement, fallbacks;
* ``_ridge_plain`` -- its plain normal-equations routes (``"cholesky"``, ``"eigh"``, tried by ``"auto"``);
* ``_checks``     -- the error checks of those routes and the float64 twin of a float32 kernel;
* ``_optim``      -- solvers of the linear problem of the sketched kernel machines (closed
  form, L-BFGS, Adam) and its duality gap;
* ``_newton``     -- its default solver for non-square losses (Newton on Moreau envelopes);
* ``_topk``       -- chunked, mergeable top-k over ``H E^T + offsets``;
* ``_search``     -- the local exact search (float64 embeddings through a certified
  float32 screen);
* ``_screen``     -- exact top-k of millions of candidates through a low-dimensional bounded screen;
* ``_distinct``   -- distinct samples of a partitioned collection;
* ``_pool``       -- independent tasks in worker processes (the executors' ``map_tasks``).
"""
from ._parallel import for_row_blocks, in_fold_thread, n_workers
from ._linalg import (
    DEFAULT_RCOND,
    cholesky_factor_inplace,
    cholesky_factor_solve,
    cholesky_rcond,
    cholesky_solve,
    cholesky_solver,
    matmul,
    single_blas_thread,
    small_work_threads,
    SINGLE_THREAD_MAX_WORK,
    psd_eigh,
    psd_solve,
    sym_norm1,
    triangular_gram,
)
from ._executor import ChunkError, ChunkTask, Executor, LocalExecutor, RowPartitions, tree_reduce
from ._dask import DEFAULT_TIMEOUT, DaskExecutor
from ._dask_client import dask_available
from ._faults import (
    ClientClosedError,
    DistributedError,
    DistributedTimeoutError,
    WorkerImportError,
    WorkerLostError,
)
from ._resolve import is_dask_client, resolve_executor
from ._sketch_matrix import SketchMatrix
from ._pool import process_map, usable_cores
from ._crossprod import ShiftedCrossProducts, column_shift
from ._features import EIGH_BASIS_MAX_M, KernelRows, SketchedFeatures, default_chunk_size
from ._products import (
    KernelExpansion,
    candidate_offsets,
    check_finite_product,
    check_gram_block,
    check_kernel_sample,
    float64_kernel,
    upcast_samples,
)
from ._topk import (
    DEFAULT_MAX_MEMORY_MB,
    Decoded,
    TopKTask,
    RescoredTopKTask,
    RESCORE_EXTRA,
    topk_task,
    grouped_topk_search,
    merge_topk,
    score_block_size,
    select_topk,
    topk_rows,
)
from ._search import CentredTopKTask, topk_search
from ._screen import SCREEN_DIM, SCREEN_MIN_CANDIDATES, Screen, ScreenedTopKTask, build_screen, screened_topk_search
from ._distinct import DistinctTask, distinct_samples
from ._qr import TallSkinnyQR, stacked_qr, stacked_qr_apply_t
from ._whiten import Whitening, pivot_tolerance
from ._checks import (
    FLOAT32_TOL,
    NORMAL_EQUATIONS_TOL,
    float32_error_estimate,
    float64_probe_estimate,
    normal_equations_error,
    rounding_sensitivity,
    tolerance,
    whitened_error_bound,
)
from ._ridge_passes import CrossProductTask, QRTask, TargetRows
from ._ridge_common import SOLVERS, RidgeSolution, stable_ridge_solve
from ._ridge import (
    WORK_DTYPE,
    NotPositiveDefiniteError,
    WhitenedSystem,
    exact_ridge_factor,
    plain_system,
    sketched_ridge,
    whitened_system,
)
from ._refine import KeptBlocks, ResidualTask, refine
from ._optim import SolverResult, adam_solve, duality_gap, lbfgs_solve, ridge_by_eigengroups
from ._newton import BLOCK_NEWTON_MAX, curvature_kind, newton_applies, newton_solve

__all__ = [
    # executors
    "Executor", "LocalExecutor", "DaskExecutor", "dask_available", "ChunkTask", "ChunkError",
    "RowPartitions", "tree_reduce", "resolve_executor", "is_dask_client", "process_map", "usable_cores",
    # the sketch matrix R = W S
    "SketchMatrix",
    # faults of distributed passes
    "DistributedError", "WorkerLostError", "ClientClosedError", "DistributedTimeoutError", "WorkerImportError",
    "DEFAULT_TIMEOUT",
    # dense linear algebra
    "matmul", "psd_eigh", "psd_solve", "cholesky_solve", "cholesky_solver",
    "cholesky_factor_inplace", "cholesky_factor_solve", "cholesky_rcond", "sym_norm1", "triangular_gram", "DEFAULT_RCOND",
    "WORK_DTYPE", "TallSkinnyQR", "stacked_qr", "stacked_qr_apply_t",
    # parallel passes
    "for_row_blocks", "in_fold_thread", "n_workers", "single_blas_thread", "small_work_threads", "SINGLE_THREAD_MAX_WORK",
    # chunked sums, sketched features, products
    "ShiftedCrossProducts", "column_shift", "SketchedFeatures", "EIGH_BASIS_MAX_M", "KernelRows", "default_chunk_size",
    "KernelExpansion", "candidate_offsets", "check_finite_product", "check_gram_block", "check_kernel_sample",
    "upcast_samples", "DistinctTask", "distinct_samples",
    # ridge solves and kernel-machine solvers
    "NotPositiveDefiniteError", "exact_ridge_factor", "sketched_ridge", "CrossProductTask", "TargetRows", "QRTask",
    "RidgeSolution",
    "stable_ridge_solve", "normal_equations_error", "pivot_tolerance", "NORMAL_EQUATIONS_TOL", "SOLVERS",
    "Whitening", "whitened_error_bound", "float32_error_estimate", "float64_probe_estimate", "rounding_sensitivity", "float64_kernel", "tolerance", "FLOAT32_TOL",
    "whitened_system", "WhitenedSystem", "plain_system", "refine", "ResidualTask", "KeptBlocks",
    "ridge_by_eigengroups", "adam_solve", "lbfgs_solve", "newton_solve", "newton_applies", "curvature_kind", "BLOCK_NEWTON_MAX", "duality_gap", "SolverResult",
    # top-k search
    "Decoded", "DEFAULT_MAX_MEMORY_MB", "TopKTask", "RescoredTopKTask", "RESCORE_EXTRA", "topk_task", "topk_rows", "select_topk", "merge_topk",
    "topk_search", "CentredTopKTask", "grouped_topk_search", "score_block_size",
    "SCREEN_DIM", "SCREEN_MIN_CANDIDATES", "Screen", "ScreenedTopKTask", "build_screen", "screened_topk_search",
]
