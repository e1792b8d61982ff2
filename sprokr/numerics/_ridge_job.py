"""The routes of the sketched ridge: whitened normal equations, refinement, fallbacks.

:class:`RidgeJob` holds one problem (features, row partitions, targets, ``n lam``) and
the routes :func:`sprokr.numerics.sketched_ridge` chooses between (see its docstring and
``docs/architecture.md``, "Solvers"): the whitened normal equations in the requested
precision, the mixed route (float32 products refined by float64 residuals,
:mod:`sprokr.numerics._refine`), the plain normal equations (:mod:`sprokr.numerics._ridge_plain`)
and the stable QR route; :class:`WhitenedSolution` is the factored whitened system.
"""
from __future__ import annotations

import logging
import time

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.linalg import get_blas_funcs

from ._checks import (
    Float64Features,
    float32_error_estimate,
    rounding_sensitivity,
    tolerance,
    whitened_error_bound,
)
from ._products import float64_kernel, upcast_samples
from ._crossprod import column_shift
from ._linalg import cholesky_factor_inplace, matmul
from ._refine import KeptBlocks, ResidualTask, prediction_rounding, refine
from ._ridge_common import (
    EARLY_FLOAT32_MAX,
    MIXED_MAX_FIRST_ERROR,
    PROBES,
    SAMPLE_ROWS,
    RidgeSolution,
    check_finite_sums,
    sandwich,
    spread,
    stable_ridge_solve,
)
from ._ridge_passes import CrossProductTask, QRTask
from ._ridge_plain import PlainRoutes, plain_promising
from ._whiten import Whitening

__all__ = ["RidgeJob", "WhitenedSolution"]

logger = logging.getLogger("sprokr.numerics")


class WhitenedSolution:
    """``w = (F F^T)^-1 Z^T T`` kept as ``y = F^-1 Z^T T`` (one triangular solve), the
    coefficients ``gamma = P_r L_11^-T F^-T y`` and the refinement's preconditioner.

    ``F`` and ``L_11`` are lower triangular (read in their lower triangle).  Many columns
    (``T = I_n``: n of them) go through the product ``L_11 F`` (one ``trmm``, r^3 flops,
    formed once for both uses): 2 instead of 3 or 4 triangular solves of r x r by r x width.
    """

    def __init__(self, F, ZtT, wh):
        self.F, self.wh = F, wh
        self.y = sla.solve_triangular(F, ZtT, lower=True, check_finite=False)
        self._LF = None

    def w(self, cols):
        """``w`` for a few columns: indices, or a (width x k) matrix of target combinations."""
        y = matmul(self.y, cols) if isinstance(cols, np.ndarray) and cols.ndim == 2 else self.y[:, cols]
        return sla.solve_triangular(self.F, y, lower=True, trans="T", check_finite=False)

    def _product(self):
        """``L_11 F`` (lower triangular), formed on first use."""
        if self._LF is None:
            trmm = get_blas_funcs("trmm", dtype=np.float64)
            self._LF = trmm(1.0, self.wh.L, np.array(np.tril(self.F), order="F"), side=0, lower=1)
        return self._LF

    def _scatter(self, y):
        out = np.zeros((self.wh.m,) + y.shape[1:])
        out[self.wh.sel] = y
        return out

    def coefficients(self):
        wh, r = self.wh, self.wh.rank
        if 3 * self.y.shape[1] <= r:
            return wh.coefficients(sla.solve_triangular(self.F, self.y, lower=True, trans="T", check_finite=False))
        return self._scatter(sla.solve_triangular(self._product(), self.y, lower=True, trans="T", check_finite=False))

    def preconditioner(self, width):
        """``r -> M^-1 r`` (m x width) with ``M^-1 = P_r L^-T F^-T F^-1 L^-1 P_r^T``.

        Few targets (``4 width < r``: Bibtex SISOKR, 200 of 2250): four triangular solves
        per step (``4 r^2 width`` flops); many: two solves with ``L_11 F`` -- cheaper once a
        refinement's two or three steps cost more than forming that product.
        """
        wh, F = self.wh, self.F

        def solve(A, y, trans="N"):
            return sla.solve_triangular(A, y, lower=True, trans=trans, check_finite=False, overwrite_b=True)

        def rows(r):  # the pivoted rows: a new array (fancy indexing), solved in place
            return np.asarray(r, dtype=np.float64)[wh.sel]

        if 4 * width < wh.rank:
            return lambda r: self._scatter(solve(wh.L, solve(F, solve(F, solve(wh.L, rows(r))), "T"), "T"))
        LF = self._product()
        return lambda r: self._scatter(solve(LF, solve(LF, rows(r)), "T"))


class RidgeJob(PlainRoutes):
    """One sketched ridge problem and the routes that solve it (see :func:`sketched_ridge`)."""

    def __init__(self, feats, parts, nlam, targets, width, chunk, executor, which, t0, rcond, try_plain=False,
                 mixed=None):
        self.feats, self.parts, self.nlam = feats, parts, nlam
        self.try_plain = try_plain
        self.mixed_choice = mixed  # None: when it pays (mixed_ok); True: whenever targets are given; False: never
        self.targets, self.width, self.identity = targets, width, targets is None
        self.chunk, self.executor = chunk, executor
        self.which = parts.column(which)  # the targets' column, as the tasks index the chunks
        self.t0, self.times, self.rcond = t0, {}, rcond
        self._f64 = self._rows = self._sup64 = None
        self.checks = []
        self.steps = 0  # refinement steps of the solution returned

    def features64(self):
        """The features with float64 kernel values and products (cached).

        Vector kernels compute in their inputs' precision: the support is upcast, so every
        block against it is float64 whatever the chunks' dtype.
        """
        f = self.feats
        if self._f64 is None:
            if f.dtype == np.float64:
                self._f64 = f
            else:
                self._f64 = Float64Features(float64_kernel(f.kernel), f.R, upcast_samples(f.Z_sel), np.float64, f.rcond)
        return self._f64

    def _solution(self, gamma, feats, method, est=None, rank=None, factors=None):
        """The :class:`RidgeSolution`; with ``factors = (whitening, F)`` its estimate adds the
        formula's :func:`rounding_sensitivity` (kept apart as ``RidgeSolution.sensitivity``: not
        a check of the route, which ``checks`` lists)."""
        sens = None
        if factors is not None:
            t = time.perf_counter()
            sens = rounding_sensitivity(factors[0], factors[1], gamma, self.nlam, rows=self._sensitivity_rows(factors[0]))
            est = sens if est is None else est + sens
            self.times["sensitivity"] = time.perf_counter() - t
        coef = feats.R.apply_left_transpose(gamma)
        return RidgeSolution(coef, feats.Z_sel, feats, self.times, method, est, rank, feats.dtype, self.checks,
                             self.steps, sensitivity=sens)

    @staticmethod
    def _factors(f, wh, sol):
        """``(whitening, F)`` for :func:`rounding_sensitivity` when ``K~`` came from float64
        kernel values; None for a float32 ``K~`` (its rounding is the float32 check's, and
        the dropped directions' part would measure float32 noise against a float64
        tolerance)."""
        return (wh, sol.F) if f.dtype == np.float64 else None

    def _sensitivity_rows(self, wh):
        """``(A_rows, T_rows, n)`` on the sample rows (:meth:`_sample`) for the dropped
        directions' part of :func:`rounding_sensitivity`; None when ``K~`` has full rank."""
        if wh.rank == wh.m or wh.rank == 0:
            return None
        idx, _, A64 = self._sample()
        n = self.parts.n
        if self.identity:  # T = I_n: the sample rows of the identity
            T_rows = sp.csr_matrix((np.ones(idx.size), (np.arange(idx.size), idx)), shape=(idx.size, n))
        else:
            T_rows = np.asarray(self.targets(self.executor.take_rows(self.parts, idx, which=self.which)),
                                dtype=np.float64)
        return A64, T_rows, n

    # ---- iterative refinement (float64 residuals of the un-squared problem, _refine.py)
    def mixed_ok(self):
        """Refinement pays off: targets given (not ``I_n``) and few next to the m columns.
        Two steps cost ``4 p m (n + m)`` float64 multiply-adds (residuals and preconditioner)
        against the ``n m^2 / 2`` saved by float32 products; with the refined route's other
        costs (the kept float64 rows, the sample, ``K~`` in float64) taken as that much
        again: ``16 p (n + m) <= n m``.  Bibtex SISOKR (n = 4880, m = 2250, p = 164: the
        output basis' rank) is on the other side, where the refined route took 1.26 s
        against 0.85 s for the whitened float64 pass (``benchmarks/solvers.py``)."""
        if self.identity or self.mixed_choice is False:
            return False
        n, m = self.parts.n, self.feats.m
        return self.mixed_choice or 16 * self.width * (n + m) <= n * m

    def refine_ok(self):
        """Refining a *rejected* solution pays off (``4 p <= m``): the alternative is one or
        two new ``n m^2`` passes, not the float32 products' saving."""
        if self.identity or self.mixed_choice is False:
            return False
        return self.mixed_choice or 4 * self.width <= self.feats.m

    def _keeper(self, f):
        """:class:`KeptBlocks` for the float64 rows of a pass when they fit (this process only)."""
        n, m = self.parts.n, f.m
        if f.dtype == np.float64 and self.executor.in_process and not self.identity and KeptBlocks.fits(n, m, self.width):
            return KeptBlocks(n, m, self.width)
        return None

    def support(self, f):
        """``(A_sup, K~)`` of features ``f``: the rows ``(K R^T)[support]`` and ``R K R^T``.

        Kept for the float64 features, which the early float32 check, the whitening, the
        passes and the refinement's residuals all start from (the support rows' kernel block
        was computed twice when a float32 request went to float64 kernel values: rf1, ~15 %
        of a fit)."""
        if f is not self.features64():
            A_sup = f.support_rows()
            return A_sup, sandwich(f, A_sup)
        if self._sup64 is None:
            A_sup = f.support_rows()
            self._sup64 = (A_sup, sandwich(f, A_sup))
        return self._sup64

    def Kt64(self):
        """``K~ = R K R^T`` from float64 kernel values (cached)."""
        return self.support(self.features64())[1]

    def residual(self, keep=None, probes=None, combine=None):
        """``gamma -> A^T (T - A gamma) - n lam K~ gamma`` in float64 (kept blocks or a pass).

        ``probes`` (n x k): targets ``omega`` instead of ``T = I_n``; ``combine`` (width x k):
        targets ``T omega``."""
        Kt = self.Kt64()

        def res(gamma):
            t = time.perf_counter()
            if keep is not None:
                r = keep.residual(gamma)
            else:
                targets = self.targets if combine is None else Combined(self.targets, combine)
                task = ResidualTask(self.features64(), targets, gamma, which=self.which, probes=probes)
                r = self.executor.map_reduce(self.parts, task, self.chunk)
            r -= self.nlam * matmul(Kt, gamma)
            self.times["refine"] = self.times.get("refine", 0.0) + time.perf_counter() - t
            return r
        return res

    def refined(self, gamma, precond, tol, rho_bound, keep, label):
        """:func:`refine` ``gamma`` (the solve of a cheap matrix, ``precond`` its solve)."""
        _, _, S = self._sample()

        def log(k, d, est):
            logger.info("sketched ridge: refinement step %d of the %s solution: correction %.2g, error "
                        "estimate %.2g", k, label, d, est)
        gamma, est, steps = refine(gamma, self.residual(keep), precond, S, tol, rho_bound, on_step=log,
                                   max_first=MIXED_MAX_FIRST_ERROR)
        self.steps = steps
        self.checks.append((f"{label} refined", est))
        return gamma, est

    def mixed(self, ref_targets, pre):
        """The whitened normal equations with float32 products, refined in float64.

        One pass in float32 (``trsm`` and ``syrk``; kernel values in the requested
        precision), then refinement steps with float64 residuals until the estimate is
        within the tolerance.  A float32 request keeps its solution when the measured
        float32 check passes (no refinement); otherwise the refined coefficients are
        float64-accurate, and the model predicts in float32 when the rounding of its
        predictions allows it (:func:`prediction_rounding`), else in float64.  None when
        the refinement does not converge (the caller falls back).
        """
        f = self.feats
        tol = tolerance(f.dtype)
        keep = self._keeper(f)
        t1 = time.perf_counter()
        acc, wh, _ = self.sums(f, ref_targets, pre, dtype=np.float32, keep=keep)
        if wh.rank == 0:
            return self._solution(np.zeros((wh.m, self.width)), f, "whitened", 0.0, 0)
        t3 = time.perf_counter()
        G, ZtT = acc.result(lower_only=True)
        check_finite_sums(G, ZtT)
        z2, zc2 = float(np.trace(G)), float(np.trace(acc.AtA))
        G.flat[:: wh.rank + 1] += self.nlam
        try:
            F = cholesky_factor_inplace(G)
        except np.linalg.LinAlgError:
            return None
        sol = WhitenedSolution(F, ZtT, wh)
        gamma = sol.coefficients()
        self.times.update({"pass_mixed": t3 - t1, "solve_mixed": time.perf_counter() - t3})
        rho_b = None
        if f.dtype == np.float32:  # the measured float32 check (256 sample rows) first: no residual pass
            e32 = whitened_error_bound(0.0, z2, self.nlam, np.float64) + self._measured(acc, sol)
            self.checks.append(("float32", e32))
            if e32 <= tol:
                return self._solution(gamma, f, "whitened", e32, wh.rank, self._factors(f, wh, sol))
        else:  # float64 kernel values: the formed matrix's float32 rounding bounds the contraction
            rho_b = whitened_error_bound(zc2, z2, self.nlam, np.float32)

        precond = sol.preconditioner(self.width)
        gamma, est = self.refined(gamma, precond, tol, rho_b, keep, "whitened")
        if not est <= tol:
            logger.info("sketched ridge: refinement of the whitened solution did not converge (estimate %.2g): "
                        "float64 pass", est)
            return None
        if f.dtype == np.float32:  # coefficients from float64 residuals: predict in float32 if it rounds little
            _, S32, S = self._sample()
            e_pred = prediction_rounding(S, gamma, np.float32, S32)
            self.checks.append(("float32 predictions", est + e_pred))
            if est + e_pred > tol:
                return self._solution(gamma, self.features64(), "whitened", est, wh.rank, self._factors(f, wh, sol))
            est += e_pred
        return self._solution(gamma, f, "whitened", est, wh.rank, self._factors(f, wh, sol))

    def plain_first(self, ref_targets, tol):
        """``"auto"``'s first try: the plain normal equations, refined when rejected (instead of
        a new ``n m^2`` pass); None when they fail."""
        sol = self.normal_equations("cholesky", ref_targets, measured=True)
        if sol is not None and not sol.error_estimate <= tol:
            logger.info("sketched ridge: plain normal equations rejected (error estimate %.2g)", sol.error_estimate)
            sol = self.refine_plain(sol, tol) if self.refine_ok() else None
        elif sol is None:
            logger.info("sketched ridge: plain normal equations rejected (not positive definite)")
        return sol

    def _shift(self, A_ref, ref_targets, dtype):
        c = column_shift(A_ref, dtype)
        d = None
        if not self.identity and ref_targets is not None:
            d = np.asarray(ref_targets, dtype=np.float64).mean(axis=0)
        return c, d

    # ---- the whitened normal equations (default)
    def whitened(self, ref_targets):
        feats, n = self.feats, self.parts.n
        tol = tolerance(feats.dtype)
        # a-priori: |Z|_F^2 <= trace(K) ~ n mean k(x, x); skip a pass whose check must fail
        z2_max = n * float(np.mean(np.asarray(feats.kernel.diag(feats.Z_sel), dtype=np.float64)))
        if whitened_error_bound(0.0, z2_max, self.nlam, np.float64) > tol:
            logger.info("sketched ridge: lam too small for the whitened normal equations (bound %.2g > %.0e): "
                        "stable QR pass", whitened_error_bound(0.0, z2_max, self.nlam, np.float64), tol)
            return self.stable()
        est, pre = None, None
        if feats.dtype == np.float32:
            e = self.early_float32()
            self.checks.append(("float32", e))
            if e > EARLY_FLOAT32_MAX:
                logger.info("sketched ridge: float32 kernel values perturb the whitened basis of K~ by %.2g "
                            "(support rows): float64 kernel values from the start", e)
                feats = self.feats = self.features64()
                tol = tolerance(np.float32)  # the request's tolerance
        if self.try_plain:
            t1 = time.perf_counter()
            A_sup, Kt = self.support(feats)
            wh = Whitening(Kt, self.rcond)
            pre = (A_sup, wh)
            self.times["whitening"] = time.perf_counter() - t1
            if plain_promising(wh):
                sol = self.plain_first(ref_targets, tol)
                if sol is not None:
                    return sol
        passes = (feats, self.features64())
        # float32 requests: the float32 pass as before, but refined rather than redone when rejected
        if self.mixed_ok() or (feats.dtype == np.float32 and self.refine_ok()):
            sol = self.mixed(ref_targets, pre)
            if sol is not None:
                return sol
            passes = (self.features64(),)  # the requested precision's pass was made
        for f in dict.fromkeys(passes):
            t1 = time.perf_counter()
            acc, wh, A_sup = self.sums(f, ref_targets, pre if f is feats else None)
            if wh.rank == 0:  # K~ = 0: every function in the span is zero
                return self._solution(np.zeros((wh.m, self.width)), f, "whitened", 0.0, 0)
            t3 = time.perf_counter()
            G, ZtT = acc.result(lower_only=True)
            check_finite_sums(G, ZtT)
            z2 = float(np.trace(G))
            est = whitened_error_bound(float(np.trace(acc.AtA)), z2, self.nlam, f.dtype)
            G.flat[:: wh.rank + 1] += self.nlam
            try:
                F = cholesky_factor_inplace(G)  # Z^T Z + n lam I = F F^T
            except np.linalg.LinAlgError:  # only if rounding swamped n lam
                F, est = None, np.inf
            sol = None if F is None else WhitenedSolution(F, ZtT, wh)
            if sol is not None and f.dtype == np.float32:
                # the bound covers the float32 products only, not the float32 kernel values
                # (on a flat kernel they alone lose the answer): measured on a sample
                est = whitened_error_bound(0.0, z2, self.nlam, np.float64) + self._measured(acc, sol)
            name = f.dtype.name
            self.checks.append((name, est))
            gamma = sol.coefficients() if est <= tol else None
            self.times.update({f"pass_{name}": t3 - t1, f"solve_{name}": time.perf_counter() - t3})
            if gamma is not None:
                return self._solution(gamma, f, "whitened", est, wh.rank, self._factors(f, wh, sol))
            logger.info("sketched ridge: whitened normal equations with %s kernel values and products: error "
                        "estimate %.2g > %.0e", name, est, tol)
        return self.stable()

    def sums(self, f, ref_targets, pre=None, dtype=None, keep=None):
        """``(acc, whitening, A_sup)``: the whitened sums of features ``f`` in one pass.

        ``A_sup = (K R^T)[support]`` gives ``K~`` (whitening, before the pass), the column
        shift and the support rows' contributions (the pass skips those rows when their
        targets are known).  ``acc`` is None when ``K~ = 0``.  ``pre``: ``(A_sup, whitening)``
        already computed.  ``dtype``: of the products (default: ``f``'s); ``keep``: a
        :class:`KeptBlocks` filled with the float64 rows of ``A`` and ``T``.
        """
        if pre is None:
            A_sup, Kt = self.support(f)
            wh = Whitening(Kt, self.rcond)
        else:
            A_sup, wh = pre
        if wh.rank == 0:
            return None, wh, A_sup
        dtype = f.dtype if dtype is None else np.dtype(dtype)
        c, d = self._shift(A_sup, ref_targets, dtype)
        known = self.identity or ref_targets is not None
        task = CrossProductTask(f, self.targets, self.width, c, d, self.identity, which=self.which, whiten=wh,
                                skip=f.R.indices if known else None, dtype=dtype, keep=keep)
        acc, _ = self.executor.map_reduce(self.parts, task, self.chunk)
        if keep is not None and known:  # the skipped support rows
            keep.put(f.R.indices, A_sup, np.asarray(ref_targets, dtype=np.float64))
        T_sup = None if self.identity or not known else np.asarray(ref_targets, dtype=np.float64)
        if known and f.R.scale is not None:  # sub-sampling: the support rows of A are K~, whitened by its own factor
            acc.add_own_rows(f.R.indices, A_sup, T_sup)
        elif known:
            acc.add(f.R.indices, A_sup, T_sup)
        return acc, wh, A_sup

    def _sample(self):
        """``(idx, A_32, A_64)``: up to 256 training rows spread over the data and their rows
        of ``A`` in the requested precision and in float64 (computed once per job).

        Not the sketch's support: its rows lie in the span of ``K~``'s factor, so their
        float32 triangular solves are accurate, while a general row's components along
        ``K~``'s smallest pivots carry float32 noise that the solve amplifies -- the error
        the checks must see.
        """
        if self._rows is None:
            n = self.parts.n
            idx = spread(n, SAMPLE_ROWS)
            Xs = self.executor.take_rows(self.parts, idx, which="inputs")
            A32 = self.feats.block(Xs)
            f64 = self.features64()
            A64 = A32 if f64.kernel is self.feats.kernel and A32.dtype == np.float64 else f64.block(Xs)
            self._rows = (idx, A32, A64)
        return self._rows

    def _probe_columns(self, idx):
        """Target columns probed: a few sample rows' own columns (``T = I_n``) or the first few."""
        if self.identity:
            return idx[spread(idx.size, PROBES)]
        return np.arange(min(self.width, PROBES))
    def _measured(self, acc, sol, parts=False):
        """:func:`float32_error_estimate` on the sample rows (:meth:`_sample`) and a few target columns
        (``parts``: its two parts, solution and predictions)."""
        idx, A32, A64 = self._sample()
        n = self.parts.n
        if self.identity:  # T = I_n: the columns of a few sample rows, e_j (Z^T e_j = z_j: one row's error)
            probe = spread(idx.size, PROBES)
            T_rows = np.eye(idx.size)[:, probe]
            return float32_error_estimate(acc, A32, A64, T_rows, sol.F, sol.w(idx[probe]),
                                          n, self.nlam, unit_targets=True, parts=parts)
        T = np.asarray(self.targets(self.executor.take_rows(self.parts, idx, which=self.which)), dtype=np.float64)
        rng = np.random.default_rng(0)
        Om = np.eye(self.width) if self.width <= PROBES else rng.standard_normal((self.width, PROBES))
        return float32_error_estimate(acc, A32, A64, T @ Om, sol.F, sol.w(Om), n, self.nlam, parts=parts)

    # ---- the plain normal equations (opt-in)

    def early_float32(self):
        """Before any pass: how much float32 kernel values perturb ``K~`` in its float64
        whitened basis, ``|L^-1 P^T (K~_32 - K~_64) P L^-T|_2`` probed by 8 random vectors
        (support rows only: O(m'^2) kernel values and O(8 m^2)).  The whitened problem's
        solution moves by about that much relatively; far above the float32 tolerance no
        float32 pass (nor its refinement) can succeed (rf1, sigma^2 = 1e4: 0.87; Bibtex
        3.6e-4; the scale data 4.5e-6)."""
        K64 = self.Kt64()
        K32 = self.support(self.feats)[1]
        wh = Whitening(K64, self.rcond)
        if wh.rank == 0:
            return 0.0
        D = (K32 - K64)[np.ix_(wh.sel, wh.sel)]
        V = np.random.default_rng(0).standard_normal((wh.rank, PROBES))
        W = sla.solve_triangular(wh.L, V, lower=True, trans="T", check_finite=False)
        W = sla.solve_triangular(wh.L, matmul(D, W), lower=True, check_finite=False)
        return float((np.linalg.norm(W, axis=0) / np.linalg.norm(V, axis=0)).max())

    def stable(self):
        """Tall-skinny QR over row chunks (float64 kernel values) and :func:`stable_ridge_solve`;
        its estimate is the formula's :func:`rounding_sensitivity` (the QR solve is stable:
        a rejected whitened estimate before it is in ``checks``, not in this one's)."""
        t2 = time.perf_counter()
        f = self.features64()
        task = QRTask(f, self.targets, self.width, self.identity, gather=f.R.indices, which=self.which)
        acc, A_sel = self.executor.map_reduce(self.parts, task, self.chunk)
        t3 = time.perf_counter()
        rhs = acc.AtT if self.identity else acc.QtT
        check_finite_sums(acc.R, rhs)
        gamma, rank, factors = stable_ridge_solve(acc.R, rhs, sandwich(f, A_sel), self.nlam, self.rcond,
                                                  semi_normal=self.identity, return_factors=True)
        self.times.update({"qr_pass": t3 - t2, "qr_solve": time.perf_counter() - t3})
        return self._solution(gamma, f, "qr", None, rank, factors if rank else None)


class Combined:
    """``chunk -> targets(chunk) omega``: a few combinations of many target columns."""

    def __init__(self, targets, omega):
        self.targets, self.omega = targets, omega

    def __call__(self, chunk):
        return matmul(np.asarray(self.targets(chunk), dtype=np.float64), self.omega)
