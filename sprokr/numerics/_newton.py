"""Newton / active-set solver of the kernel machines' linear problem (E1), the default for
non-square losses.

The problem of :mod:`sprokr.numerics._optim` (features ``Z`` (n x r), ``S = M^1/2``)

    min_Omega  F(Omega) = (1/n) sum_ij l(P_ij, y_ij) + lam/2 |Omega|_F^2,   P = Z Omega S,

for a loss with a known second derivative (``Loss.curvature``): entry-wise for a sum of
functions of single entries -- pinball and hinge for any ``d``, every built-in loss for
scalar targets -- or per-sample ``d x d`` blocks for a function of the residual norm (Huber
and epsilon-insensitive with ``d > 1``); piecewise quadratic (Huber) or made smooth by its
Moreau envelope (pinball, epsilon-insensitive, hinge: quadratic in a band of width ``~mu``
at each kink).

* **Newton stages.**  On a piecewise-quadratic function Newton's method with an exact
  line search identifies the quadratic pieces in a few steps, then lands on the minimiser
  (Huber: the solution, certified by its duality gap).
* **Active set (non-smooth, piecewise-linear losses).**  From a stage's solution, a
  primal-dual active-set iteration (the semismooth Newton method of Hintermueller, Ito &
  Kunisch, 2002) on the *exact* optimality conditions: each entry either sits at a kink
  (``P_ij`` = the kink, its dual variable ``a_ij`` free between the two slopes) or on a
  linear piece (``a_ij`` = its slope); given that guess, stationarity
  ``lam n Omega = -Z^T A S`` makes the kink entries' ``a`` the solution of a ``k x k``
  system with matrix ``(z_i.z_i' M_jj')`` (``k`` kink entries, at most ``r d`` at an
  optimum); the guess is updated from ``v = P + gamma A`` (an entry is at a kink when
  ``v`` falls in the kink's interval ``[kink + gamma s_left, kink + gamma s_right]``).
  It converges in a handful of iterations once the stage has found the pattern.  Not
  globally convergent: it is abandoned when the certified gap stops improving, and
  another stage with a tenth of ``mu`` runs before it is tried again.
* **Certificate.**  After every Newton step and active-set iteration, the duality gap of
  the ORIGINAL problem with the dual point ``A`` (the envelope's gradients, or the active
  set's ``A`` clipped to the conjugate's domain); the solver stops when it is below ``tol``
  relative to the objective, and returns the best-certified iterate.

Newton systems.  The Hessian of ``F`` is ``H = lam I + (1/n) U^T diag(h) U`` with one row
``u_ij = s_j (x) z_i`` (``vec(z_i s_j^T)``) per entry of curvature ``h_ij > 0``.  It is solved

* in the primal, ``r d x r d``: ``H = lam I + sum_j (s_j s_j^T) (x) Z^T diag(h_j) Z / n``
  (with ``Z^T Z / n`` computed once, a column with few entries *outside* its quadratic
  piece is formed from the complement), or
* by Woodbury on the ``k`` curved entries, ``k x k``:
  ``H^-1 g = (g - U^T (n lam diag(h)^-1 + U U^T)^-1 U g) / lam`` with
  ``(U U^T)_(ij),(i'j') = z_i.z_i' M_jj'`` -- for the exact machine (``r = n``) near the
  optimum only the entries at kinks are curved,

whichever costs fewer flops.  A step costs ``O(n r d)`` plus the smaller system.  Hessian
blocks ``C_i`` (a loss on the residual norm) give ``H = lam I + (1/n) sum_i (S C_i S) (x)
z_i z_i^T``, always in the primal: ``d (d + 1) / 2`` weighted Grams ``Z^T diag(C_:kl) Z / n``
and an ``r d x r d`` Cholesky.  Its steps cost more than L-BFGS's, so the kernel machines'
``optimizer="auto"`` runs L-BFGS on such a loss first and finishes with Newton (up to
``r d = BLOCK_NEWTON_MAX``) only when L-BFGS cannot certify its gap.
"""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np
import scipy.linalg as sla
from sklearn.exceptions import ConvergenceWarning

from ..progress import log_message
from ._linalg import matmul
from ._optim import (
    F64_COPY_BYTES,
    SolverResult,
    duality_gap,
    feature_gram,
    feature_predict,
    feature_t_dot,
    output_matrix_sqrt,
)

if TYPE_CHECKING:  # imported for the annotations only
    from ..types import LossLike as Loss  # the protocol: numerics names no component class

__all__ = ["newton_solve", "newton_applies", "curvature_kind", "BLOCK_NEWTON_MAX"]

#: the largest ``r d`` at which ``optimizer="auto"`` finishes a loss with Hessian blocks (on
#: a residual norm) by Newton: its primal system is ``r d x r d``, ``(r d)^3 / 3`` flops a step
BLOCK_NEWTON_MAX = 2048

#: active-set iterations per attempt, and how many without a better certificate end one
_ACTIVE_SET_ITERATIONS, _ACTIVE_SET_PATIENCE = 25, 3
#: relative Newton decrement that ends the first (pattern-finding) stage, and the largest
#: and smallest factors between successive smoothing parameters (a 100x cut left stages of
#: thousands of steps near interpolation: a 10x cut certified those in a few dozen, and was
#: 1.5-3x faster in all on random pinball / hinge / epsilon-SVR problems)
_PATTERN_DECREMENT, _MAX_RATIO, _MIN_RATIO = 1e-3, 0.2, 0.1
#: the first smoothing band is never narrower than this fraction of the targets' spread: a
#: square-loss start that nearly interpolates sits ~0 from every kink, and a band ~1000x
#: below the optimum's residuals made the first stage crawl (3000 steps, uncertified)
_SCALE_FLOOR = 0.01
#: the active set's ``gamma`` relative to the typical distance of the initial predictions to
#: a kink (0.2 to 3 work on the benchmarks' problems; 0.8 needed the fewest iterations)
_GAMMA = 0.8


def curvature_kind(loss: Loss, d: int) -> str | None:
    """``"entries"`` or ``"blocks"``: the form of the curvature Newton uses for ``loss`` with
    ``d`` outputs -- that of the loss (if ``loss.smooth``) or of its Moreau envelope, entry-wise
    (n, d) or per-sample blocks (n, d, d) -- or None when the loss gives none.

    Parameters
    ----------
    loss : sprokr.losses.Loss
        The loss.
    d : int
        Number of outputs.
    """
    f = loss if getattr(loss, "smooth", False) else loss.smoothed(1.0)
    if f is None:
        return None
    h = f.curvature(np.zeros((1, d)), np.ones((1, d)))
    return None if h is None else "entries" if np.ndim(h) == 2 else "blocks"


def newton_applies(loss: Loss, d: int) -> bool:
    """Whether :func:`newton_solve` can minimise ``loss`` with ``d`` outputs: the loss or its
    Moreau envelope has a ``curvature`` (:func:`curvature_kind`; every built-in loss).

    Parameters
    ----------
    loss : sprokr.losses.Loss
        The loss.
    d : int
        Number of outputs.
    """
    return curvature_kind(loss, d) is not None


def _curvature_form(h: np.ndarray, Q: np.ndarray) -> float:
    """``sum_i q_i^T C_i q_i`` for curvature ``h``: entry-wise (n, d) or blocks (n, d, d)."""
    if h.ndim == 2:
        return float(np.sum(h * Q * Q))
    return float(np.einsum("ijk,ij,ik->", h, Q, Q, optimize=True))


def _cholesky_or_lstsq(W, b):
    try:
        return sla.cho_solve(sla.cho_factor(W, lower=True, check_finite=False), b, check_finite=False)
    except np.linalg.LinAlgError:  # singular (rank-deficient sketch): least squares
        return np.linalg.lstsq(W, b, rcond=None)[0]


def _jittered_solve(W, b):
    """``W^-1 b`` for a PSD ``W``, possibly rank-deficient (a kink count above the sketch's
    rank): Cholesky with a relative jitter ``1e-12 tr(W) / k`` on the diagonal, and one step
    of iterative refinement on ``W`` itself.

    The jitter alone moves the solution by ~1e-12 of its size: the active set's kink
    entries then missed their kinks by ~1e-12 |y|, which is the whole objective when it is
    ~lam |y|^2 with a tiny ``lam`` (relative gaps 1e-3 - 1e-1 at lam = 1e-8, targets ~1e-3).
    A refinement step costs ``O(k^2)`` beside the factorisation's ``k^3 / 3``; along a null
    direction of ``W`` it changes nothing (the error there is not amplified).
    """
    Wj = W.copy()
    Wj.flat[:: W.shape[0] + 1] += 1e-12 * max(float(np.trace(W)) / W.shape[0], 1e-300)
    try:
        c = sla.cho_factor(Wj, lower=True, check_finite=False)
    except np.linalg.LinAlgError:  # singular even with the jitter: least squares
        return np.linalg.lstsq(Wj, b, rcond=None)[0]
    x = sla.cho_solve(c, b, check_finite=False)
    return x + sla.cho_solve(c, b - W @ x, check_finite=False)


class _NewtonSystem:
    """The linear algebra of the iterations: ``H x = g`` for a curvature ``h`` (n x d), and
    the active set's kink system."""

    def __init__(self, Z, S, lam):
        self.Z, self.S, self.lam = Z, S, lam
        self.M = S @ S
        self.n, self.r = Z.shape
        self.d = S.shape[0]
        self._gram = None  # Z^T Z / n, formed on first use

    def gram(self):
        if self._gram is None:
            self._gram = feature_gram(self.Z)
        return self._gram

    def rows(self, idx):
        return np.asarray(self.Z[idx], dtype=np.float64)

    def entry_gram(self, curved):
        """``(rows, Z[rows], ii, jj, W)``: the curved entries ``(rows[ii], jj)`` and
        ``W = (z_i.z_i' M_jj')`` over them."""
        rows = np.flatnonzero(curved.any(axis=1))
        ii, jj = np.nonzero(curved[rows])
        Zr = self.rows(rows)
        Q = matmul(Zr, Zr.T)
        return rows, Zr, ii, jj, Q[np.ix_(ii, ii)] * self.M[np.ix_(jj, jj)]

    def solve(self, h, g):
        n, r, d = self.n, self.r, self.d
        if h.ndim == 3:
            return self._blocks(h, g)
        curved = h > 0
        counts = curved.sum(axis=0)
        k = int(counts.sum())
        if k == 0:
            return g / self.lam
        woodbury = k ** 3 / 3 + np.count_nonzero(curved.any(axis=1)) ** 2 * r + 2 * k * r * d
        primal = (r * d) ** 3 / 3 + d ** 3 * r * r
        for j in range(d):  # the curved rows, or (uniform curvature) the others with Z^T Z
            primal += min(counts[j], n - counts[j] + (0 if self._gram is not None else n / d)) * r * r
        if woodbury <= primal:
            return self._woodbury(h, curved, g)
        return self._primal(h, curved, g)

    def _woodbury(self, h, curved, g):
        n, lam = self.n, self.lam
        rows, Zr, ii, jj, W = self.entry_gram(curved)
        W.flat[:: W.shape[0] + 1] += n * lam / h[rows[ii], jj]
        w = _cholesky_or_lstsq(W, matmul(matmul(Zr, g), self.S)[ii, jj])
        Wm = np.zeros((rows.size, self.d))
        Wm[ii, jj] = w
        return (g - matmul(matmul(Zr.T, Wm), self.S)) / lam

    def _primal(self, h, curved, g):
        n, r, d = self.n, self.r, self.d
        blocks = np.empty((d, r, r))
        for j in range(d):
            hj = h[:, j]
            on = np.flatnonzero(curved[:, j])
            c = hj[on[0]] if on.size else 0.0
            if on.size > n // 2 and np.all(hj[on] == c):
                Zo = self.rows(np.flatnonzero(~curved[:, j]))
                blocks[j] = c * (self.gram() - matmul(Zo.T, Zo) / n)
            else:
                Zo = self.rows(on)
                blocks[j] = matmul(Zo.T, Zo * hj[on, None]) / n
        if d == 1:
            H = self.M[0, 0] * blocks[0]
        else:  # block (k, l) = sum_j S_kj S_lj G_j, for vec(Omega) stacking the columns
            H = np.einsum("kj,lj,jab->kalb", self.S, self.S, blocks).reshape(r * d, r * d)
        H.flat[:: r * d + 1] += self.lam
        return _cholesky_or_lstsq(H, g.T.reshape(-1)).reshape(d, r).T


    def _blocks(self, h, g):
        """The primal system with Hessian blocks ``h`` (n, d, d): block (j, l) of ``H`` is
        ``sum_kk' S_jk S_lk' Z^T diag(h_:kk') Z / n``."""
        n, r, d = self.n, self.r, self.d
        G = np.zeros((d, d, r, r))
        for k in range(d):
            for m in range(k, d):
                c = h[:, k, m]
                on = np.flatnonzero(c)
                if on.size:
                    Zo = self.rows(on)
                    G[k, m] = matmul(Zo.T, Zo * c[on, None]) / n
                    G[m, k] = G[k, m]
        H = np.einsum("jk,lm,kmab->jalb", self.S, self.S, G, optimize=True).reshape(r * d, r * d)
        H.flat[:: r * d + 1] += self.lam
        return _cholesky_or_lstsq(H, g.T.reshape(-1)).reshape(d, r).T


def _objective(f_loss, P, Y, Omega, lam):
    return float(np.mean(f_loss.value(P, Y))) + 0.5 * lam * float(np.sum(Omega * Omega))


def _line_search(f_loss, Y, P, Q, Omega, D, lam, slope):
    """The minimiser over ``t`` in (0, 1] of the convex ``F(Omega + t D)`` (``Q = Z D S``;
    ``slope`` its derivative at 0 < 0): safeguarded Newton on the derivative, which is
    piecewise linear for a piecewise-quadratic loss.

    A Newton step that leaves the bracket is replaced by the Illinois variant of regula
    falsi (Dowell & Jarratt, 1971): when the same end of the bracket moved twice in a row,
    the derivative stored at the retained end is halved.  Plain regula falsi on a
    derivative with a jump (entries crossing their narrow smoothing bands) moved one end by
    a few percent of the bracket per evaluation: after 30, ``t`` was far from the minimiser
    (past it, even uphill), and a hinge fit of one sample spent its 3000 steps uncertified.
    Bisecting instead cured that but made the pinball benchmarks ~25x slower; the Illinois
    weights keep the secant's superlinear convergence.

    A small derivative ends the search, but past a kink it does not mean a small value: a
    step far too long (no entry in a band, ``D = -grad / lam``) put the minimiser 1e-10
    into ``(0, 1]``, and ``t = 1e-3`` with a derivative 1e-3 of the slope was 3000x uphill.
    So a ``t`` past the minimiser with no evaluated point before it (a descent point) is
    accepted only with a sufficient decrease (Armijo's, ``1e-4 t slope``), and such a
    search goes on past 30 evaluations (the Illinois weights only bisect across a jump), up
    to 100 (``2^-100`` of the step); finding none, it returns 0 (the stage ends).
    """
    n = P.shape[0]
    od, dd = float(np.sum(Omega * D)), float(np.sum(D * D))

    def deriv(t):
        Pt = P + t * Q
        return float(np.sum(f_loss.gradient(Pt, Y) * Q)) / n + lam * (od + t * dd), Pt

    base: list[float] = []  # the loss's mean at t = 0, computed when first needed

    def descends(t):  # Armijo: F(Omega + t D) - F(Omega) <= 1e-4 t slope, the ridge term expanded
        if not base:
            base.append(float(np.mean(f_loss.value(P, Y))))
        change = float(np.mean(f_loss.value(P + t * Q, Y))) - base[0] + lam * t * (od + t * dd / 2)
        return change <= 1e-4 * t * slope

    g1, P1 = deriv(1.0)
    if g1 <= 0:
        return 1.0
    lo, hi, glo, ghi, t, gt, Pt = 0.0, 1.0, slope, g1, 1.0, g1, P1
    moved = 0  # the end that moved last: -1 lo, 1 hi
    for it in range(100):
        if it >= 30 and lo > 0:
            break
        curv = _curvature_form(f_loss.curvature(Pt, Y), Q) / n + lam * dd
        t_new = t - gt / curv if curv > 0 else np.nan
        if not lo < t_new < hi:  # outside the bracket: the secant of the bracket's ends
            t_new = lo - glo * (hi - lo) / (ghi - glo)
            if not lo < t_new < hi:
                t_new = 0.5 * (lo + hi)
        t = t_new
        gt, Pt = deriv(t)
        if gt > 0:
            hi, ghi = t, gt
            if moved == 1:  # lo retained twice: its weight in the next secant halves
                glo *= 0.5
            moved = 1
        else:
            lo, glo = t, gt
            if moved == -1:
                ghi *= 0.5
            moved = -1
        if hi - lo <= 1e-10 * hi:
            break
        if abs(gt) <= 1e-3 * abs(slope):
            if gt <= 0 or lo > 0:
                break
            if descends(t):  # past the minimiser, no descent point evaluated: Armijo's test
                return t
    if gt <= 0:
        return t
    # past the minimiser: the bracket's lower end (a descent point), else t if it descends
    return lo if lo > 0 else t if descends(t) else 0.0


def _stage(Z, Y, f_loss, lam, S, Omega, system, budget, stationary, decrement=0.0, certify=None, tol=0.0):
    """Newton iterations on one (smoothed) objective from ``Omega``.

    Stops when ``|grad|^2 / (2 lam) <= stationary F`` (the share of the duality gap that
    comes from the iterate not being the stage's minimiser, relative to the current
    objective ``F``: the solver's tolerance is relative to the objective at the solution,
    which can be far below the starting one), when the Newton decrement
    ``grad^T H^-1 grad / 2`` (the predicted decrease) is below ``decrement``, when no step
    decreases the objective, after ``budget`` steps, or when ``certify(Omega, G, P, Z^T G)``
    (``(primal, relative gap or None)`` of the original problem, called at every iterate)
    certifies a gap ``<= tol``.  Returns ``(Omega, P, G, Z^T G, steps, |grad|^2 / (2 lam),
    cert, best)`` with ``G`` the loss gradient at ``P``, ``cert`` the last iterate's
    certificate (None without ``certify``) and ``best`` the ``(relative gap, Omega)`` of the
    best-certified iterate (``(inf, Omega)`` without one).

    Every iterate is certified, not only the last: the gap is not monotone along a stage
    (the smoothed gradients are a poor dual point far from the stage's minimiser), and a
    certificate at the stage's end only made ``max_iter=2`` return a worse solution than
    ``max_iter=1``.  It costs ``O(n d)`` a step, beside the step's ``O(n r d)``.

    ``Z^T G`` is updated from the rows whose gradient changed (the entries in a quadratic
    band and those that changed piece): one pass over ``Z`` per step instead of two (a
    full pass every 20 steps, or when a quarter of the rows changed).
    """
    n = Z.shape[0]
    P = feature_predict(Z, Omega @ S)
    G = f_loss.gradient(P, Y)
    ZtG = feature_t_dot(Z, G)
    steps, cert, best = 0, None, (np.inf, Omega)
    while True:
        grad = ZtG @ S / n + lam * Omega
        g2 = float(np.sum(grad * grad)) / (2 * lam)
        if certify is not None:
            cert = certify(Omega, G, P, ZtG)
            if cert[1] is not None and cert[1] < best[0]:
                best = (cert[1], Omega)
            if best[0] <= tol:
                break
        if steps >= budget:
            break
        # the stationarity test's scale: the certificate's primal (the original objective,
        # within the smoothing's share of the stage's own) when one was computed -- one
        # loss evaluation a step, not two
        scale = cert[0] if cert is not None else _objective(f_loss, P, Y, Omega, lam)
        if g2 <= stationary * max(abs(scale), 1e-300):
            break
        D = -system.solve(f_loss.curvature(P, Y), grad)
        slope = float(np.sum(grad * D))
        if not slope < 0 or -0.5 * slope <= decrement:
            break  # converged enough (or rounding: no descent direction left)
        Q = feature_predict(Z, D @ S)
        t = _line_search(f_loss, Y, P, Q, Omega, D, lam, slope)
        steps += 1
        if t <= 0:
            break
        Omega, P = Omega + t * D, P + t * Q
        G_new = f_loss.gradient(P, Y)
        rows = np.flatnonzero((G_new != G).any(axis=1))
        if rows.size > n // 4 or steps % 20 == 0:  # (a full pass now and then: no drift)
            ZtG = feature_t_dot(Z, G_new)
        elif rows.size:
            ZtG = ZtG + matmul(np.asarray(Z[rows], dtype=np.float64).T, G_new[rows] - G[rows])
        G = G_new
    return Omega, P, G, ZtG, steps, g2, cert, best


class _ActiveSet:
    """Primal-dual active-set iterations for an entry-wise piecewise-linear loss (see the module)."""

    def __init__(self, Z, Y, loss, lam, S, system, kinks):
        self.Z, self.Y, self.loss, self.lam, self.S, self.system = Z, Y, loss, lam, S, system
        pts, slopes = kinks
        shape = Y.shape + (np.shape(pts)[-1],)
        self.pts = np.broadcast_to(pts, shape)
        self.slopes = np.broadcast_to(slopes, Y.shape + (shape[-1] + 1,))
        self.lo, self.hi = self.slopes[..., 0], self.slopes[..., -1]

    def states(self, P, A, gamma):
        """0, 2, ..: on the piece left of kink 0, 1, ..; 1, 3, ..: at kink 0, 1, .."""
        K = self.pts.shape[-1]
        T = np.empty(self.pts.shape[:-1] + (2 * K,))
        T[..., 0::2] = self.pts + gamma * self.slopes[..., :-1]
        T[..., 1::2] = self.pts + gamma * self.slopes[..., 1:]
        return np.sum((P + gamma * A)[..., None] > T, axis=-1)

    def solve(self, st):
        """``(Omega, P, A)`` of the guess ``st``: kink entries interpolate their kink."""
        n, lam, S, Z = self.Z.shape[0], self.lam, self.S, self.Z
        kink = st % 2 == 1
        A = np.where(kink, 0.0, np.take_along_axis(self.slopes, (st // 2)[..., None], -1)[..., 0])
        Omega = -(feature_t_dot(Z, A) @ S) / (lam * n)
        if kink.any():
            P0 = feature_predict(Z, Omega @ S)
            rows, Zr, ii, jj, W = self.system.entry_gram(kink)
            target = np.take_along_axis(self.pts, ((st - 1) // 2)[..., None], -1)[..., 0]
            a = _jittered_solve(W, lam * n * (P0[rows[ii], jj] - target[rows[ii], jj]))
            Wm = np.zeros((rows.size, self.Y.shape[1]))
            Wm[ii, jj] = a
            Omega = Omega - matmul(matmul(Zr.T, Wm), S) / (lam * n)
            A[rows[ii], jj] = a
        return Omega, feature_predict(Z, Omega @ S), A

    def run(self, P, A, gamma, tol, iterations):
        """Iterate from ``(P, A)``; returns ``(best relative gap, Omega, iterations used)``."""
        best, best_Omega, stall, prev = np.inf, None, 0, None
        it = 0
        for it in range(1, iterations + 1):
            st = self.states(P, A, gamma)
            if prev is not None and np.array_equal(st, prev):
                break  # a fixed point: the optimum up to rounding (certified below)
            prev = st
            Omega, P, A = self.solve(st)
            primal, _, gap = duality_gap(self.Z, self.Y, self.loss, self.lam, self.S, Omega,
                                         np.clip(A, self.lo, self.hi))
            rel = np.inf if gap is None else gap / max(abs(primal), 1e-300)
            if rel < best:
                best, best_Omega, stall = rel, Omega, 0
            else:
                stall += 1
            if best <= tol or stall >= _ACTIVE_SET_PATIENCE:
                break
        return best, best_Omega, it


def _duality_gap(Y, loss, lam, S, Omega, A, P, ZtA):
    """:func:`duality_gap` from known predictions ``P = Z Omega S`` and ``Z^T A``."""
    n = Y.shape[0]
    primal = float(np.mean(loss.value(P, Y))) + 0.5 * lam * float(np.sum(Omega * Omega))
    conj = loss.conjugate(A, Y)
    if conj is None or not np.all(np.isfinite(conj)):
        return primal, None, None
    W = ZtA @ S
    dual = -float(np.mean(conj)) - float(np.sum(W * W)) / (2.0 * lam * n * n)
    return primal, dual, max(primal - dual, 0.0)


def _residual_scale(Y, P, kinks):
    """Median distance of the predictions to their nearest kink (or to the targets), at
    least ``_SCALE_FLOOR`` times the targets' spread: their standard deviation, or when
    that is 0 (one sample, equal targets) their root mean square, or 1 (all zero)."""
    if kinks is None:
        dist = np.abs(Y - P)
    else:
        dist = np.min(np.abs(P[..., None] - np.broadcast_to(kinks[0], Y.shape + (np.shape(kinks[0])[-1],))), axis=-1)
    # equal targets have no spread, but the start still sits ~lam |y| from its kinks: a band
    # that narrow put the envelope's minimiser below the targets' rounding (|P - y| = mu |a|,
    # a ~ lam y): one pinball sample y = 1.6e-3 with lam = 1e-6 spent 3000 steps, uncertified
    spread = float(np.std(Y)) or float(np.sqrt(np.mean(Y * Y))) or 1.0
    s = float(np.median(dist))
    if s <= 0:
        return spread
    return max(s, _SCALE_FLOOR * spread)


def newton_solve(Z: np.ndarray, Y: np.ndarray, loss: Loss, lam: float, V: np.ndarray, e: np.ndarray,
                 coef0: np.ndarray | None = None, tol: float = 1e-4, max_iter: int = 3000,
                 verbose: bool = False) -> SolverResult:
    """Minimise (E1) by Newton's method (on Moreau envelopes for non-smooth losses, finished
    by an active-set iteration for piecewise-linear ones), stopped on a certified duality gap.

    Parameters
    ----------
    Z : ndarray of shape (n, r)
        Features (float32 features are copied to float64 up to 512 MB).
    Y : ndarray of shape (n, d)
        Float64 targets.
    loss : sprokr.losses.Loss
        The loss, with :func:`newton_applies` true.
    lam : float
        Regularisation (> 0).
    V, e : ndarray of shape (d, d) and (d,)
        Eigenpairs of the output matrix ``M``.
    coef0 : ndarray of shape (r, d), optional
        Initial output coefficients ``C = Omega M^1/2`` (default zeros).
    tol : float, default=1e-4
        Relative duality gap at which the solution is accepted.
    max_iter : int, default=3000
        Newton steps and active-set iterations in total.
    verbose : bool, default=False
        Log each stage.

    Returns
    -------
    SolverResult
        ``n_epochs``: Newton steps plus active-set iterations; ``objective``: the original
        objective after each stage; ``gap``: the certified relative duality gap of the
        returned solution (None when the loss has no conjugate; ``converged`` then means
        the last stage reached a stationary point).
    """
    d = Y.shape[1]
    if not newton_applies(loss, d):
        raise ValueError(f"the Newton solver needs an entry-wise curvature of {type(loss).__name__} "
                         f"with {d} outputs (Loss.curvature); use optimizer='lbfgs'")
    n, r = Z.shape
    S, S_pinv = output_matrix_sqrt(V, e)
    Omega = np.zeros((r, d)) if coef0 is None else np.asarray(coef0, dtype=np.float64) @ S_pinv
    if Z.dtype != np.float64 and Z.size * 8 <= F64_COPY_BYTES:
        Z = Z.astype(np.float64)  # one copy instead of a conversion per product
    has_conj = loss.conjugate(np.zeros((1, d)), Y[:1]) is not None
    smooth = bool(getattr(loss, "smooth", False))
    kinks = None if smooth or not has_conj else loss.piecewise_linear(Y)
    system = _NewtonSystem(Z, S, lam)
    P = feature_predict(Z, Omega @ S)
    scale = _residual_scale(Y, P, kinks)
    # the first envelope: a band of a tenth of the typical distance to a kink
    mu = None if smooth else 0.1 * scale
    active = None if kinks is None else _ActiveSet(Z, Y, loss, lam, S, system, kinks)
    history: list[float] = []
    used, converged, gap = 0, False, None
    best = (np.inf, Omega)  # (relative gap, Omega): the best-certified iterate is returned

    def certify(Om, A, P, ZtA):
        primal, _, gap_abs = _duality_gap(Y, loss, lam, S, Om, A, P, ZtA)
        return primal, None if gap_abs is None else gap_abs / max(abs(primal), 1e-300)

    while True:
        f_loss = loss if mu is None else loss.smoothed(mu)
        assert f_loss is not None  # (newton_applies)
        obj = max(abs(_objective(loss, P, Y, Omega, lam)), 1e-300)
        # the first stage of a non-smooth loss only looks for the pattern (which entries sit
        # at kinks): it stops once a Newton step would gain less than 1e-3 of the objective
        first = not history and mu is not None
        # the stage's gradients are the dual point: Z^T A is known, no pass over Z.  A smoothed
        # stage stops at its first iterate certified within tol (the next stages would only
        # trade smoothing for steps); a smooth loss's one stage runs on to stationarity, where
        # Newton's quadratic convergence gives a gap at rounding level for a step or two
        Omega, P, G, ZtG, steps, g2, cert, stage_best = _stage(
            Z, Y, f_loss, lam, S, Omega, system, max(1, max_iter - used), 0.1 * tol,
            _PATTERN_DECREMENT * obj if first else 0.0, certify if has_conj else None,
            tol if mu is not None else 0.0)
        used += steps
        if has_conj:
            primal, gap = cert
            if stage_best[0] < best[0]:
                best = stage_best
        else:
            primal = _objective(loss, P, Y, Omega, lam)
        history.append(primal)
        log_message(f"Newton mu={mu}: {steps} steps, objective {primal:.8g}, gap {gap}", verbose=verbose,
                    logger="optim")
        if best[0] <= tol:
            converged = True
            break
        Om_as = None
        # an optimum has at most ~r d entries at kinks: with many more in the band the
        # stage's pattern is still far from it
        if active is not None and used < max_iter and np.count_nonzero(np.asarray(f_loss.curvature(P, Y))) <= 2 * r * d:
            rel, Om_as, its = active.run(P, G, _GAMMA * scale, tol,
                                         min(_ACTIVE_SET_ITERATIONS, max_iter - used))
            used += its
            log_message(f"active set from mu={mu}: {its} iterations, gap {rel}", verbose=verbose, logger="optim")
            if rel < best[0]:
                best = (rel, Om_as)
            if best[0] <= tol:
                converged = True
                break
        if gap is None and mu is None:  # no certificate: the stage's stationarity decides
            converged = used < max_iter
            break
        if used >= max_iter or mu is None:
            break
        # the gap's smoothing share (the rest is the stage's stationarity, |grad|^2 / 2 lam)
        # shrinks at least linearly with mu: aim the next stage a little below the
        # tolerance; larger cuts cost more Newton steps than an extra stage
        bias = np.inf if gap is None else max(gap * abs(primal) - g2, 1e-300)
        mu *= min(_MAX_RATIO, max(_MIN_RATIO, 3.0 * tol * abs(primal) / bias))
        if mu < 1e-12 * scale:
            break
        if Om_as is not None:  # the next stage starts from the better of the two iterates
            f_next = loss.smoothed(mu)
            P_as = feature_predict(Z, Om_as @ S)
            if _objective(f_next, P_as, Y, Om_as, lam) < _objective(f_next, P, Y, Omega, lam):
                Omega, P = Om_as, P_as
    if np.isfinite(best[0]):
        if best[1] is not Omega:  # an active-set or earlier iterate: its objective closes the history
            history.append(_objective(loss, feature_predict(Z, best[1] @ S), Y, best[1], lam))
        gap, Omega = best
    if not converged:
        why = (f"within max_iter={max_iter} steps (relative gap {gap}); increase max_iter" if used >= max_iter else
               f"(relative gap {gap} after {used} steps: no further descent in floating point)")
        warnings.warn(f"Newton did not reach the duality gap tol={tol} {why}", ConvergenceWarning, stacklevel=3)
    return SolverResult(Omega @ S, converged, used, history, gap)
