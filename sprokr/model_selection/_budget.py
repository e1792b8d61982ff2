"""Whether exact IOKR fits a time and memory budget: its cost from the sizes and this machine's speed.

Exact IOKR stores ``n x n`` arrays and costs ``O(n^3)``: below a few thousand pairs it is
the most accurate model and cheap, beyond it a sketched model is the only one that fits.
:func:`exact_iokr_cost` counts the linear algebra that a selection with lam paths
(:func:`select_model`) and the refit on all pairs compute -- the ``O(n^3)`` part; kernel
evaluations (``O(n^2)``, which sketched models pay too) are not counted -- so that an
estimator can choose before fitting.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..numerics import matmul

__all__ = ["ExactCost", "exact_iokr_cost", "measured_flop_rate", "EIGH_TIME_RATIO", "ASSUMED_FLOP_RATE"]

#: the speed :func:`exact_iokr_cost` assumes by default (flop/s), for the whole machine (BLAS
#: uses every core): on the 2-core development machine, quiet, exact IOKR's selection and
#: refit on 10,000 QM9 SMILES -- 1.16e13 flops as counted here -- took 146-167 s (7-8e10
#: flop/s; a 8000 x 8000 Cholesky factorisation ran at 7.4e10).  The constant is 2/3 of
#: that, for a machine that is somewhat busy; a constant keeps a choice made from the
#: estimate reproducible (the measured speed varies with the load), and
#: :func:`measured_flop_rate` gives this machine's speed now.  (It was 1e10, a single core
#: under heavy load: an 8x overestimate on that machine, which kept ``method="auto"`` from
#: exact IOKR where IOKR took half the time budget.)
ASSUMED_FLOP_RATE = 5e10

#: time of the eigendecomposition of a large Gram (n = 3000 ... 8000) in Cholesky
#: factorisations of it: measured 14-22 on the shared 2-core development machine (the
#: tridiagonal reduction is memory-bound; a Cholesky runs at the matrix-product speed)
EIGH_TIME_RATIO = 20.0


@dataclass(frozen=True)
class ExactCost:
    """The estimated cost of selecting and fitting exact IOKR.

    Made by :func:`exact_iokr_cost`; each parameter is kept as the attribute of the same name.

    Parameters
    ----------
    memory_mb : float
        The ``n x n`` float64 Gram of the refit and its Cholesky factor (MB).
    flops : float
        Floating-point operations of the selection and the refit (see :func:`exact_iokr_cost`).
    rate : float
        The machine's measured speed (flop/s).
    seconds : float
        ``flops / rate``.
    """

    memory_mb: float
    flops: float
    rate: float
    seconds: float

    def fits(self, time_budget_s: float, memory_budget_mb: float) -> bool:
        """Whether both estimates are within the budgets."""
        return self.memory_mb <= memory_budget_mb and self.seconds <= time_budget_s

    def as_dict(self) -> dict:
        return {"memory_mb": self.memory_mb, "flops": self.flops, "rate_gflops": self.rate / 1e9,
                "seconds": self.seconds}


def measured_flop_rate(size: int = 1024, repeats: int = 2) -> float:
    """The speed of a ``size x size`` matrix product on this machine now (flop/s, best of
    ``repeats``): what the BLAS gives this process under the current load.

    Parameters
    ----------
    size : int, default=1024
        The order of the square float64 matrices multiplied.  The default exceeds the
        caches (a 384 x 384 product runs 10x faster than the large factorisations; at 1024
        it ran at the speed of a 3000 x 3000 Cholesky factorisation).
    repeats : int, default=2
        Products timed; the fastest counts.

    Returns
    -------
    float
        flop/s (``2 size^3`` flops per product).
    """
    rng = np.random.default_rng(0)
    A = rng.standard_normal((size, size))
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        matmul(A, A)
        best = min(best, time.perf_counter() - t0)
    return 2.0 * size**3 / max(best, 1e-9)


def exact_iokr_cost(n_fit: int, n_train: int, n_val: int, n_points: int = 1, n_outputs: int = 1,
                    n_lams: int = 8, rate: float | None = None) -> ExactCost:
    """Estimated memory and time of choosing and fitting exact IOKR.

    Counted in Cholesky flops (an eigendecomposition as :data:`EIGH_TIME_RATIO` of them):

    * per input-kernel point, on the ``n_train`` training part: one eigendecomposition of
      the Gram (the lam path) and one Cholesky factorisation (the fit that gives the
      model's state), ``(EIGH_TIME_RATIO + 1) n_train^3 / 3``;
    * per point and output kernel, the validation scores: the ``n_val`` validation rows and
      the candidates (the ``n_val`` validation outputs) in the eigenbasis,
      ``4 n_val n_train^2``, then ``2 n_val^2 n_train`` per ``lam``;
    * the refit on the ``n_fit`` pairs: ``n_fit^3 / 3``.

    Parameters
    ----------
    n_fit : int
        Pairs of the refit (all the training pairs).
    n_train, n_val : int
        Training and validation parts of the selection.
    n_points, n_outputs, n_lams : int
        Input-kernel parameter points, output kernels and ``lam`` values compared.
    rate : float, optional
        flop/s (default :data:`ASSUMED_FLOP_RATE`; :func:`measured_flop_rate` measures it).

    Returns
    -------
    ExactCost
    """
    from ..utils import check_integer, check_positive

    counts = {"n_fit": n_fit, "n_train": n_train, "n_val": n_val, "n_points": n_points, "n_outputs": n_outputs,
              "n_lams": n_lams}
    for name, v in counts.items():
        check_integer(v, name, 0)
    rate = ASSUMED_FLOP_RATE if rate is None else check_positive(rate, "rate")  # (0: ZeroDivisionError)
    nt, nv, nf = float(n_train), float(n_val), float(n_fit)
    flops = n_points * (EIGH_TIME_RATIO + 1) * nt**3 / 3
    flops += n_points * n_outputs * (4 * nv * nt**2 + n_lams * 2 * nv**2 * nt)
    flops += nf**3 / 3
    memory_mb = 2 * nf**2 * 8 / 2**20
    return ExactCost(memory_mb=memory_mb, flops=flops, rate=rate, seconds=flops / rate)
