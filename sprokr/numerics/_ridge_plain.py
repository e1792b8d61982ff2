"""The plain normal equations of the sketched ridge: ``(A^T A + n lam K~) gamma = A^T T``.

One ``syrk`` pass and one Cholesky factorisation: the fastest route, but ``A^T A`` has the
square of ``A``'s condition number.  ``"auto"`` tries it first only when ``K~``'s pivots
are not too spread (:func:`plain_promising`) and keeps it when its measured estimate
(:meth:`PlainRoutes._measured_plain`) is within the tolerance, else refines it; an explicit
``solver="cholesky"`` / ``"eigh"`` keeps it and warns with its measured error
(:meth:`PlainRoutes.probe_estimate`).  A mixin of :class:`sprokr.numerics._ridge_job.RidgeJob`.
"""
from __future__ import annotations

import logging
import time

import numpy as np

from ._checks import float64_probe_estimate, tolerance
from ._linalg import DEFAULT_RCOND, cholesky_factor_inplace, cholesky_factor_solve, matmul, psd_eigh, sym_norm1
from ._refine import prediction_rounding, sample_ratio
from ._whiten import Whitening
from ._ridge_common import PROBES, SAMPLE_ROWS, check_finite_sums, sandwich, spread
from ._ridge_passes import CrossProductTask
from ..progress import warn_accuracy
from ..utils import take

__all__ = ["PlainRoutes", "PlainSolution", "plain_promising", "PLAIN_FIRST_PIVOT_RATIO", "PLAIN_SAFETY"]

logger = logging.getLogger("sprokr.numerics")

#: "auto" tries the plain normal equations first when K~'s pivoted Cholesky has full rank and
#: its pivots span at most this squared ratio (a flatter K~ makes them fail their check)
PLAIN_FIRST_PIVOT_RATIO = 1e-8
#: extra safety factor of the plain route's measured estimate: G's conditioning amplifies
#: what the 256-row sample does not see (calibrated on a 648-case sweep and the reference
#: matrix, tests/test_float32_policy.py: worst accepted error 0.3x the tolerance)
PLAIN_SAFETY = 3.75


class PlainRoutes:
    """The plain normal-equations routes of :class:`~sprokr.numerics._ridge_job.RidgeJob`
    (which provides the features, the pass and the measured checks they use)."""

    def _measured_plain(self, acc, L, gamma, G_norm):
        """Error estimate of a plain normal-equations solution ``G gamma = A^T T``: the measured
        float32 part (:meth:`_measured`, float32 products only) plus the float64 rounding of
        the formed ``G`` probed at random (:func:`float64_probe_estimate`, scale
        ``eps_64 (|A_c|_F^2 + |G|_1)``), times :data:`PLAIN_SAFETY`; plus the error of the
        float32 predictions made from the solution (their rounding and the float32 kernel
        values', measured), which ``G``'s conditioning does not amplify."""
        # G's conditioning amplifies the solution's error, not that of the predictions made from
        # it (their rounding, float32 kernel values): PLAIN_SAFETY scales the first only
        est, e_pred = self._measured(acc, PlainSolution(L, gamma), parts=True) if acc.dtype == np.float32 \
            else (0.0, 0.0)
        idx, _, A64 = self._sample()
        scale = np.finfo(np.float64).eps * (float(np.trace(acc.AtA)) + G_norm)
        return PLAIN_SAFETY * (est + float64_probe_estimate(L, A64, gamma[:, self._probe_columns(idx)], scale)) + e_pred

    def plain_sums(self, feats, ref_targets, keep=None):
        """``(acc, K~, kept)``: the plain sums ``A^T A``, ``A^T T`` of features ``feats`` in one
        pass (a :class:`ShiftedCrossProducts`) and ``R K R^T``; ``kept``: True when ``K~`` is
        the job's own (:meth:`support`), which must not be overwritten.

        With targets known at the support (``ref_targets``, or ``T = I_n``) the support rows
        of ``A`` come first (``K~`` is made from them; ``"auto"`` has them already) and the
        pass skips those rows, whose contribution is added from them: no kernel value is
        computed twice (rf1, 20/n-SR: 1580 of the 4108 rows).  Otherwise the pass gathers
        them.  ``keep``: a :class:`KeptBlocks` filled with the float64 rows of ``A`` and ``T``.
        """
        R = feats.R
        known = self.identity or ref_targets is not None
        ref = spread(R.indices.size, SAMPLE_ROWS)
        ref_T = None if ref_targets is None else np.asarray(ref_targets)[ref]
        # the centring shift, fixed before the pass: column means of A at (up to 256) support rows
        if known:
            A_sup, Kt = self.support(feats)
            c, d = self._shift(A_sup[ref], ref_T, feats.dtype)
            task = CrossProductTask(feats, self.targets, self.width, c, d, self.identity, skip=R.indices,
                                    which=self.which, keep=keep)
        else:
            c, d = self._shift(feats.block(take(feats.Z_sel, ref)), ref_T, feats.dtype)
            task = CrossProductTask(feats, self.targets, self.width, c, d, self.identity, gather=R.indices,
                                    which=self.which, keep=keep)
        acc, A_sel = self.executor.map_reduce(self.parts, task, self.chunk)
        if known:
            T_sup = None if self.identity else np.asarray(ref_targets, dtype=np.float64)
            if keep is not None:
                keep.put(R.indices, A_sup, T_sup)
            acc.add(R.indices, A_sup, T_sup)
        else:
            Kt = sandwich(feats, A_sel)
        return acc, Kt, known

    def normal_equations(self, solver, ref_targets, measured=False, tol=None):
        """The plain normal equations (``"cholesky"`` / ``"eigh"``).  ``measured`` ("auto"
        trying them first): no jitter, a Cholesky failure returns None, and the error
        estimate is measured (:meth:`_measured_plain`) instead of bounded.  Explicit routes:
        a float32 solution whose estimate exceeds the tolerance is redone with float64 kernel
        values and products (the same route), which warns above ``tol`` (default: the
        tolerance of the features' dtype; the redo keeps the float32 request's)."""
        feats, dtype = self.feats, self.feats.dtype
        keep = self._keeper(feats) if measured and self.refine_ok() else None
        t1 = time.perf_counter()
        acc, Kt, known = self.plain_sums(feats, ref_targets, keep)
        t2 = time.perf_counter()
        # disjoint phases: the support time excludes a whitening already timed ("auto")
        self.times.update({"support": t1 - self.t0 - self.times.get("whitening", 0.0), "pass": t2 - t1})
        # n lam K~ in G's lower triangle: K~'s upper one (the Fortran view of C-ordered K~;
        # K~ is symmetric to rounding), added in place
        G, AtT = acc.result(lower_only=True, plus=Kt.T, plus_scale=self.nlam)
        check_finite_sums(G, AtT)
        rc = DEFAULT_RCOND if self.rcond is None else self.rcond
        est = None
        if measured:
            # K~'s memory as scratch, unless it is the job's kept K~ (the residuals read it)
            G_norm = sym_norm1(G, lower_only=True, work=None if known else Kt)
            try:
                L = cholesky_factor_inplace(G)  # nothing added: a failure rejects the route
            except np.linalg.LinAlgError:
                return None
            gamma = cholesky_factor_solve(L, AtT)
            est = self._measured_plain(acc, L, gamma, G_norm)
            self.checks.append((f"plain {np.dtype(dtype).name}", est))
            self.times["solve"] = time.perf_counter() - t2
            self._plain = (L, gamma, keep)
            return self._solution(gamma, feats, "cholesky", est)
        if solver == "eigh":
            U, ev = psd_eigh(G, rc, lower_only=True)
            gamma = matmul(U, matmul(U.T, AtT) / ev[:, None])

            def precond(r):
                return matmul(U, matmul(U.T, r) / ev[:, None])
        else:
            # the explicit jitter: rcond * mean(diag G) on the diagonal (a relative ridge of
            # 1e-10 by default) keeps the factorisation of a numerically singular G
            G.flat[:: G.shape[0] + 1] += rc * float(np.mean(G.diagonal()))
            try:
                L = cholesky_factor_inplace(G)  # G is overwritten
            except np.linalg.LinAlgError:
                logger.warning("sketched ridge: A^T A + n lam R K R^T is numerically indefinite; solved "
                               "by its eigendecomposition pseudo-inverse (use solver='auto' or 'qr')")
                G = acc.result(lower_only=True, plus=Kt.T, plus_scale=self.nlam)[0]
                U, ev = psd_eigh(G, rc, lower_only=True)

                def precond(r):
                    return matmul(U, matmul(U.T, r) / ev[:, None])
                gamma = precond(AtT)
            else:
                def precond(r):
                    return cholesky_factor_solve(L, r)
                gamma = precond(AtT)
        t3 = time.perf_counter()
        self.times["solve"] = t3 - t2
        # measured: a float64 residual solved by the route's matrix (sees float32 kernel values
        # and products) and the float64 rounding of the formed G probed at random (sees what
        # that matrix cannot resolve: its own rounding, amplified by its conditioning)
        est = self.probe_estimate(gamma, precond)
        self.times["check"] = time.perf_counter() - t3
        tol = tolerance(dtype) if tol is None else tol
        if not est <= tol and feats is not self.features64():
            # float32 falls back to float64 when its check fails, whatever the route: the same
            # route again with float64 kernel values and products, judged at the float32
            # request's tolerance (its remaining error is the route's own, warned about there)
            name = np.dtype(dtype).name
            self.checks.append((name, est))
            logger.info("sketched ridge: solver=%r with %s kernel values and products: error estimate %.2g > %.0e; "
                        "float64 kernel values and products", solver, name, est, tol)
            for k in ("support", "pass", "solve", "check"):
                if k in self.times:
                    self.times[f"{k}_{name}"] = self.times.pop(k)
            self.t0 = time.perf_counter()
            self.feats = self.features64()
            return self.normal_equations(solver, ref_targets, tol=tol)
        self.checks.append((solver, est))
        if not est <= tol:
            warn_accuracy(f"sketched ridge: solver={solver!r} changes this solution by about {est:.2g} (measured "
                          f"estimate, relative; more than {tol:.0e}): use solver='auto' for an accurate solution",
                          logger=logger)
        return self._solution(gamma, feats, solver, est)

    def refine_plain(self, sol, tol):
        """Refine a rejected plain normal-equations solution (:meth:`normal_equations` with
        ``measured``) with float64 residuals; None when it does not converge."""
        L, gamma, keep = self._plain
        gamma, est = self.refined(gamma, lambda r: cholesky_factor_solve(L, r), tol, None, keep, "plain")
        if not est <= tol:
            logger.info("sketched ridge: refinement of the plain solution did not converge (estimate %.2g)", est)
            return None
        f = self.feats
        if f.dtype == np.float32:
            _, S32, S = self._sample()
            e_pred = prediction_rounding(S, gamma, np.float32, S32)
            self.checks.append(("float32 predictions", est + e_pred))
            if est + e_pred > tol:
                return self._solution(gamma, self.features64(), "cholesky", est)
            est += e_pred
        return self._solution(gamma, f, "cholesky", est)

    def probe_estimate(self, gamma, precond):
        """Measured relative error of an explicitly requested route's solution: one float64
        residual of the un-squared problem for a few target combinations ``omega`` (``T = I_n``:
        random ``n x 8`` probes; else the targets themselves when few, random combinations
        otherwise), solved by the route's own matrix (``precond``): ``max |A_s M^-1 r| /
        max |A_s gamma omega|`` on the sample rows, times 2.  One float64 kernel pass."""
        rng = np.random.default_rng(0)
        _, _, S = self._sample()
        if self.identity:
            probes = rng.standard_normal((self.parts.n, PROBES))
            res, g = self.residual(probes=probes), matmul(gamma, probes)
        elif self.width <= PROBES:
            res, g = self.residual(), gamma
        else:
            om = rng.standard_normal((self.width, PROBES))
            res, g = self.residual(combine=om), matmul(gamma, om)
        r = res(g)
        # the residual bounds the prediction error of any solution: A (gamma* - gamma) =
        # Z (Z^T Z + n lam I)^-1 L^-1 P^T r with |Z (Z^T Z + n lam I)^-1| <= 1 / (2 sqrt(n lam))
        # (whitened basis of K~): what the route's own matrix cannot resolve (its jitter,
        # its dropped eigenvalues, its rounding) shows here; relative to |A gamma|_2 over the
        # n rows (estimated from the sample), times 4: the error is judged in the max norm on
        # any rows, where it exceeds this 2-norm ratio (rf1, 20/n-SR: up to 8.5x)
        wh = Whitening(self.Kt64(), self.rcond)
        hn = np.sqrt(self.parts.n / S.shape[0]) * np.linalg.norm(matmul(S, g), axis=0)
        en = 4.0 * np.linalg.norm(wh.apply_inverse(r), axis=0) / (2.0 * np.sqrt(self.nlam))
        bound = float(np.max(np.where(hn > 0, en / np.maximum(hn, 1e-300), 0.0), initial=0.0))
        return max(2.0 * sample_ratio(S, precond(r), g), bound)

    # ---- the stable route


class PlainSolution:
    """A plain normal-equations solution as :meth:`RidgeJob._measured` reads it: the
    Cholesky factor ``F`` of ``G`` and ``w(cols)`` (columns of ``gamma``, or ``gamma @ cols``)."""

    def __init__(self, F, gamma):
        self.F, self.gamma = F, gamma

    def w(self, cols):
        return matmul(self.gamma, cols) if isinstance(cols, np.ndarray) and cols.ndim == 2 else self.gamma[:, cols]


def plain_promising(wh):
    """A-priori: ``K~`` of full numerical rank whose pivots span at most
    :data:`PLAIN_FIRST_PIVOT_RATIO` (squared) -- else the plain route would fail its check."""
    if wh.rank < wh.m or wh.rank == 0:
        return False
    d = np.abs(np.diagonal(wh.L))
    return float(d.min() / d.max()) ** 2 >= PLAIN_FIRST_PIVOT_RATIO
