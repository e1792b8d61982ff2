"""sprokr's numerics: linear algebra, chunked passes and top-k search, in one package.

Every estimator composes these; none writes its own solve or chunk loop.  The private
submodules are re-exported here (the public names are this package's ``__all__``):

* ``_linalg``     -- BLAS ``matmul``, PSD eigenpairs / solves, in-place Cholesky;
* ``_parallel``   -- row-block thread parallelism for the passes BLAS does not cover;
* ``_crossprod``  -- double-centred ``A^T A`` / ``A^T T`` accumulators (float32-accurate);
* ``_features``   -- sketched kernel features ``K R^T`` and the feature map ``D^-1/2 U^T R k``;
* ``_ridge``      -- exact and sketched kernel ridge solves;
* ``_optim``      -- solvers of the linear problem of the sketched kernel machines;
* ``_topk``       -- chunked top-k over ``H E^T + offsets`` and its merge.
"""
from ._parallel import for_row_blocks, n_workers
from ._linalg import (
    DEFAULT_RCOND,
    cholesky_factor_inplace,
    cholesky_factor_solve,
    cholesky_solve,
    cholesky_solver,
    matmul,
    psd_eigh,
    psd_solve,
)
from ._crossprod import ShiftedCrossProducts
from ._features import RowGatherer, SketchedFeatures, default_chunk_size
from ._topk import DEFAULT_MAX_MEMORY_MB, Decoded, grouped_topk_search, topk_rows, topk_search
from ._ridge import WORK_DTYPE, exact_ridge_factor, sketched_ridge_coef
from ._optim import AdamResult, adam_solve, ridge_by_eigengroups

__all__ = [
    # dense linear algebra
    "matmul", "psd_eigh", "psd_solve", "cholesky_solve", "cholesky_solver",
    "cholesky_factor_inplace", "cholesky_factor_solve", "DEFAULT_RCOND", "WORK_DTYPE",
    # parallel passes
    "for_row_blocks", "n_workers",
    # chunked accumulations and sketched features
    "ShiftedCrossProducts", "RowGatherer", "SketchedFeatures", "default_chunk_size",
    # ridge solves and kernel-machine solvers
    "exact_ridge_factor", "sketched_ridge_coef", "ridge_by_eigengroups", "adam_solve", "AdamResult",
    # top-k search
    "Decoded", "DEFAULT_MAX_MEMORY_MB", "topk_rows", "topk_search", "grouped_topk_search",
]
