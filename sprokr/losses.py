"""Losses of the sketched kernel machines (p-sparsified paper, Appendix G).

A loss compares predictions ``P`` and targets ``Y``, both of shape (n, d) (``d = 1`` for
scalar problems), and returns one value per sample:

``value(P, Y)``     -> ndarray (n,), ``l(p_i, y_i)``
``gradient(P, Y)``  -> ndarray (n, d), a (sub)gradient of ``l(., y_i)`` at ``p_i``

The solvers minimise ``(1/n) sum_i l(p_i, y_i) + lam/2 |f|^2``.  With the convention
``square = 1/2 |p - y|^2`` this is exactly kernel ridge regression
``alpha = (K + n lam I)^-1 Y`` (the ``closed_form`` flag tells the estimators so).

Multi-output forms follow the paper: Huber and epsilon-insensitive act on the Euclidean
norm of the residual vector ``r = p - y`` (``g(|r|)``), pinball and hinge are sums over the
outputs (pinball with one level ``tau_j`` per output: joint quantile regression).

Losses are extensible like kernels: a plugin returns ``{name: factory}`` from the
``sprokr_losses`` hook, and estimators accept ``loss="name"`` or a :class:`Loss` instance.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator

from .utils import is_real
from .utils import check_quantile_levels  # re-exported (metrics use it too: one layer down)

__all__ = [
    "Loss",
    "SquareLoss",
    "HuberLoss",
    "EpsilonInsensitiveLoss",
    "PinballLoss",
    "HingeLoss",
    "BUILTIN_LOSSES",
    "check_quantile_levels",
]


def _nonneg(value, name):
    if not is_real(value):  # (a bool is not a number here; a Fraction failed in np.isfinite)
        raise ValueError(f"{name} must be a real number >= 0, got {value!r}")
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


class Loss(BaseEstimator):
    """Base class: ``value`` and ``gradient`` on (n, d) predictions and targets.

    Subclasses set ``closed_form = True`` only when the minimiser of the regularised
    empirical risk is the ridge solution (the square loss).  ``validate(d, Y)`` is called
    by the estimators before any state changes, with the number of outputs and the targets.

    Two optional methods let the solvers certify their result (a duality gap) and handle
    non-smooth losses (the built-ins have both):

    ``conjugate(A, Y)`` -> ndarray (n,)
        the Fenchel conjugate ``l_i^*(a_i) = sup_p a_i . p - l(p, y_i)`` per sample
        (``inf`` outside its domain);
    ``smoothed(mu)`` -> Loss
        the Moreau envelope ``min_q l(q) + |p - q|^2 / (2 mu)``: differentiable, within
        ``mu/2 |grad|^2`` of the loss, and its gradients lie in the conjugate's domain;
    ``dual_box(A, Y)`` -> (lo, hi) or None
        per-entry bounds of the conjugate's domain (lets the solver refine the dual at the
        kinks).

    ``curvature(P, Y)`` -> ndarray (n, d), ndarray (n, d, d) or None
        the second derivative of ``l(., y_i)`` at ``p_i``: entry-wise, shape (n, d), when the
        loss is a sum of functions of single entries (pinball, hinge, any scalar loss;
        piecewise constant for the built-ins and their envelopes), or the per-sample
        Hessian blocks, shape (n, d, d), when it couples the outputs (Huber and the
        epsilon-insensitive envelope on a residual norm, ``d > 1``).  It lets the default
        solver take Newton steps (:func:`sprokr.numerics.newton_solve`); None when unknown.

    ``piecewise_linear(Y)`` -> (points (n, d, K), slopes (n, d, K + 1)) or None
        the loss as a convex piecewise-linear function of each prediction entry: its
        kinks in increasing order and the slopes of the pieces around them (broadcastable
        shapes).  Lets the default solver finish by an active-set method that lands on
        the exact optimum (pinball, hinge; epsilon-insensitive for ``d = 1``).

    ``smooth = True`` marks a differentiable loss (no smoothing needed); ``labels = True``
    a loss whose targets are class labels (the estimators then refuse ``normalize_y``).
    """

    name: Optional[str] = None
    closed_form = False
    smooth = False
    labels = False

    def validate(self, d: int, Y: np.ndarray | None = None) -> None:
        """Raise ``ValueError`` if the loss cannot be used with ``d`` outputs (targets ``Y``)."""

    def conjugate(self, A: np.ndarray, Y: np.ndarray) -> np.ndarray | None:
        """Fenchel conjugate per sample (see the class docstring); None when unknown."""
        return None

    def smoothed(self, mu: float) -> Loss | None:
        """The Moreau envelope with parameter ``mu`` (see the class docstring); None when unknown."""
        return None

    def curvature(self, P: np.ndarray, Y: np.ndarray) -> np.ndarray | None:
        """Second derivative, entry-wise (n, d) or per-sample blocks (n, d, d) (see the class
        docstring); None when unknown."""
        return None

    def piecewise_linear(self, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Kinks and slopes of an entry-wise piecewise-linear loss (see the class docstring)."""
        return None

    def dual_box(self, A: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """``(lo, hi)`` (n, d): a box around ``A`` inside the conjugate's domain on which the
        conjugate is linear, for the entries the solvers may move to tighten a duality
        gap; None when the loss has no such form."""
        return None

    def value(self, P: np.ndarray, Y: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def gradient(self, P: np.ndarray, Y: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


class SquareLoss(Loss):
    """``l(p, y) = 1/2 |p - y|^2`` (multi-output: squared Euclidean norm).  Closed form."""

    name = "square"
    closed_form = True
    smooth = True

    def value(self, P: np.ndarray, Y: np.ndarray) -> np.ndarray:
        R = P - Y
        return 0.5 * np.einsum("ij,ij->i", R, R)

    def gradient(self, P: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return P - Y

    def conjugate(self, A: np.ndarray, Y: np.ndarray) -> np.ndarray | None:
        return np.einsum("ij,ij->i", A, Y) + 0.5 * np.einsum("ij,ij->i", A, A)

    def curvature(self, P: np.ndarray, Y: np.ndarray) -> np.ndarray | None:
        return np.ones_like(P, dtype=np.float64)


class HuberLoss(Loss):
    """kappa-Huber on the residual norm: ``|r|^2/2`` if ``|r| <= kappa`` else ``kappa(|r| - kappa/2)``.

    Parameters
    ----------
    kappa : float > 0
        Transition point; the loss is ``kappa``-Lipschitz (robust to outliers).
    """

    name = "huber"
    smooth = True

    def __init__(self, kappa: float = 1.0) -> None:
        self.kappa = kappa

    def validate(self, d: int, Y: np.ndarray | None = None) -> None:
        if _nonneg(self.kappa, "kappa") == 0:
            raise ValueError("kappa must be > 0 (kappa = 0 is the zero loss)")

    def conjugate(self, A: np.ndarray, Y: np.ndarray) -> np.ndarray | None:
        s = np.linalg.norm(A, axis=1)
        out = np.einsum("ij,ij->i", A, Y) + 0.5 * s * s
        return np.where(s <= float(self.kappa) * (1 + 1e-12), out, np.inf)

    def value(self, P: np.ndarray, Y: np.ndarray) -> np.ndarray:
        k = float(self.kappa)
        r = np.linalg.norm(P - Y, axis=1)
        return np.where(r <= k, 0.5 * r * r, k * (r - 0.5 * k))

    def gradient(self, P: np.ndarray, Y: np.ndarray) -> np.ndarray:
        k = float(self.kappa)
        R = P - Y
        r = np.linalg.norm(R, axis=1, keepdims=True)
        # r beyond kappa: the gradient is the residual direction scaled to length kappa
        return R * np.minimum(1.0, k / np.maximum(r, 1e-300))

    def curvature(self, P: np.ndarray, Y: np.ndarray) -> np.ndarray | None:
        k = float(self.kappa)
        if P.shape[1] == 1:
            return (np.abs(P - Y) <= k).astype(np.float64)
        R = P - Y  # on the residual norm: Hessian blocks, I inside kappa, kappa/|r| across outside
        r = np.linalg.norm(R, axis=1)
        inside = r <= k
        return _radial_hessians(R, r, np.where(inside, 1.0, 0.0), np.where(inside, 1.0, k / np.maximum(r, 1e-300)))


class EpsilonInsensitiveLoss(Loss):
    """epsilon-insensitive l1 (SVR): ``max(|r| - epsilon, 0)`` on the residual norm.

    Parameters
    ----------
    epsilon : float >= 0
        Width of the insensitive tube.
    """

    name = "epsilon_insensitive"

    def __init__(self, epsilon: float = 0.1) -> None:
        self.epsilon = epsilon

    def validate(self, d: int, Y: np.ndarray | None = None) -> None:
        _nonneg(self.epsilon, "epsilon")

    def value(self, P: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return np.maximum(np.linalg.norm(P - Y, axis=1) - float(self.epsilon), 0.0)

    def gradient(self, P: np.ndarray, Y: np.ndarray) -> np.ndarray:
        R = P - Y
        r = np.linalg.norm(R, axis=1, keepdims=True)
        outside = r > float(self.epsilon)
        return np.where(outside, R / np.maximum(r, 1e-300), 0.0)

    def conjugate(self, A: np.ndarray, Y: np.ndarray) -> np.ndarray | None:
        s = np.linalg.norm(A, axis=1)
        return np.where(s <= 1 + 1e-12, np.einsum("ij,ij->i", A, Y) + float(self.epsilon) * s, np.inf)

    def smoothed(self, mu: float) -> Loss | None:
        return _SmoothedRadial(self, mu)

    def dual_box(self, A: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        if A.shape[1] != 1:
            return None  # a ball, not a box, for vector outputs
        return np.where(A >= 0, 0.0, -1.0), np.where(A >= 0, 1.0, 0.0)

    def piecewise_linear(self, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        if Y.shape[1] != 1:
            return None  # on the residual norm (a cone, not pieces), for vector outputs
        e = float(self.epsilon)
        if e == 0:
            return Y[..., None], np.array([-1.0, 1.0])
        return np.stack([Y - e, Y + e], axis=-1), np.array([-1.0, 0.0, 1.0])


class PinballLoss(Loss):
    """Pinball (quantile) loss, summed over outputs: ``sum_j rho_{tau_j}(y_j - p_j)``.

    ``rho_tau(u) = tau u`` for ``u >= 0`` and ``(tau - 1) u`` otherwise (Koenker, 2005);
    its minimiser over constants is the ``tau``-quantile.  With ``d`` levels and the target
    repeated over the outputs this is the joint quantile loss of Sangnier et al. (2016).

    Parameters
    ----------
    tau : float or sequence of float in (0, 1)
        One level, or one level per output.
    """

    name = "pinball"

    def __init__(self, tau: float | ArrayLike = 0.5) -> None:
        self.tau = tau

    def validate(self, d: int, Y: np.ndarray | None = None) -> None:
        t = check_quantile_levels(self.tau)
        if t.size not in (1, d):
            raise ValueError(f"pinball loss has {t.size} quantile levels but the targets have {d} outputs")

    def conjugate(self, A: np.ndarray, Y: np.ndarray) -> np.ndarray | None:
        t = check_quantile_levels(self.tau)
        tol = 1e-12
        ok = np.all((A >= -t - tol) & (A <= 1.0 - t + tol), axis=1)
        return np.where(ok, np.einsum("ij,ij->i", A, Y), np.inf)

    def smoothed(self, mu: float) -> Loss | None:
        return _SmoothedPinball(self, mu)

    def dual_box(self, A: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        t = check_quantile_levels(self.tau) * np.ones((1, A.shape[1]))
        return np.broadcast_to(-t, A.shape), np.broadcast_to(1.0 - t, A.shape)

    def piecewise_linear(self, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        t = check_quantile_levels(self.tau) * np.ones((1, Y.shape[1]))
        return Y[..., None], np.stack([-t, 1.0 - t], axis=-1)  # d/dp rho_tau(y - p)

    def value(self, P: np.ndarray, Y: np.ndarray) -> np.ndarray:
        t = check_quantile_levels(self.tau)
        U = Y - P
        return np.sum(np.where(U >= 0, t * U, (t - 1.0) * U), axis=1)

    def gradient(self, P: np.ndarray, Y: np.ndarray) -> np.ndarray:
        t = check_quantile_levels(self.tau)
        # d/dp rho_tau(y - p) = -tau if y > p, 1 - tau if y < p (sub-gradient at y = p)
        return np.where(Y > P, -t, 1.0 - t) * np.ones_like(P)


class HingeLoss(Loss):
    """Hinge loss ``sum_j max(0, 1 - y_j p_j)`` for labels ``y in {-1, +1}`` (SVM)."""

    name = "hinge"
    labels = True

    def validate(self, d: int, Y: np.ndarray | None = None) -> None:
        if Y is not None and not np.all(np.isin(np.asarray(Y), (-1.0, 1.0))):
            bad = np.unique(np.asarray(Y)[~np.isin(np.asarray(Y), (-1.0, 1.0))])[:5]
            raise ValueError(f"the hinge loss needs labels y in {{-1, +1}}; got values {bad.tolist()} "
                             f"(encode the classes as -1 and +1)")

    def value(self, P: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return np.sum(np.maximum(0.0, 1.0 - Y * P), axis=1)

    def gradient(self, P: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return np.where(Y * P < 1.0, -Y, 0.0)

    def conjugate(self, A: np.ndarray, Y: np.ndarray) -> np.ndarray | None:
        b = A * Y
        ok = np.all((b >= -1 - 1e-12) & (b <= 1e-12), axis=1)
        return np.where(ok, np.sum(b, axis=1), np.inf)

    def smoothed(self, mu: float) -> Loss | None:
        return _SmoothedHinge(self, mu)

    def dual_box(self, A: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        return np.where(Y > 0, -1.0, 0.0), np.where(Y > 0, 0.0, 1.0)

    def piecewise_linear(self, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        # the kink y p = 1 is at p = y for labels +-1; slopes -y below it (y = -1) or above (y = 1)
        return Y[..., None], np.stack([np.minimum(-Y, 0.0), np.maximum(-Y, 0.0)], axis=-1)


def _radial_hessians(R: np.ndarray, r: np.ndarray, along: np.ndarray, across: np.ndarray) -> np.ndarray:
    """Hessian blocks (n, d, d) of a function of the residual norm, ``g(|r_i|)``.

    ``along u u^T + across (I - u u^T)`` with ``u = r_i / |r_i|``: ``along = g''(|r_i|)``
    and ``across = g'(|r_i|) / |r_i|`` (n,), the curvature along the residual and across it.
    """
    U = R / np.maximum(r, 1e-300)[:, None]
    H = (along - across)[:, None, None] * (U[:, :, None] * U[:, None, :])
    idx = np.arange(R.shape[1])
    H[:, idx, idx] += across[:, None]
    return H


class _Smoothed(Loss):
    """Moreau envelope of a built-in loss (used by the solvers; see :meth:`Loss.smoothed`)."""

    smooth = True

    def __init__(self, base, mu):
        self.base, self.mu = base, float(mu)


class _SmoothedRadial(_Smoothed):
    """``env_mu g(|r|)`` for the epsilon-insensitive ``g(t) = max(t - eps, 0)``."""

    def value(self, P, Y):
        e, mu = float(self.base.epsilon), self.mu
        t = np.maximum(np.linalg.norm(P - Y, axis=1) - e, 0.0)
        return np.where(t <= mu, t * t / (2 * mu), t - mu / 2)

    def gradient(self, P, Y):
        e, mu = float(self.base.epsilon), self.mu
        R = P - Y
        r = np.linalg.norm(R, axis=1, keepdims=True)
        return R / np.maximum(r, 1e-300) * np.minimum(np.maximum(r - e, 0.0) / mu, 1.0)

    def curvature(self, P, Y):
        e, mu = float(self.base.epsilon), self.mu
        if P.shape[1] == 1:
            t = np.abs(P - Y) - e
            return ((t > 0) & (t < mu)) / mu
        R = P - Y  # on the residual norm: Hessian blocks (see _radial_hessians)
        r = np.linalg.norm(R, axis=1)
        t = r - e
        band = (t > 0) & (t < mu)
        # the envelope's derivative in |r| is min(max(t, 0) / mu, 1): its second derivative
        # 1/mu in the band, and across the residual the derivative over |r|
        return _radial_hessians(R, r, band / mu, np.minimum(np.maximum(t, 0.0) / mu, 1.0) / np.maximum(r, 1e-300))


class _SmoothedPinball(_Smoothed):
    """``sum_j env_mu rho_tau(y_j - p_j)``: quadratic within ``(tau - 1) mu .. tau mu``."""

    def __init__(self, base, mu):
        super().__init__(base, mu)
        self.tau = check_quantile_levels(base.tau)  # validated once: the solvers call these a lot

    def value(self, P, Y):
        t, mu = self.tau, self.mu
        U = Y - P
        return np.sum(np.where(U >= t * mu, t * U - mu * t * t / 2,
                               np.where(U <= (t - 1) * mu, (t - 1) * U - mu * (t - 1) ** 2 / 2, U * U / (2 * mu))),
                      axis=1)

    def gradient(self, P, Y):
        t, mu = self.tau, self.mu
        return -np.clip((Y - P) / mu, t - 1, t) * np.ones_like(P)

    def curvature(self, P, Y):
        t, mu = self.tau, self.mu
        U = Y - P
        return ((U > (t - 1) * mu) & (U < t * mu)) / mu


class _SmoothedHinge(_Smoothed):
    """``sum_j env_mu max(0, 1 - y_j p_j)``."""

    def value(self, P, Y):
        mu = self.mu
        T = 1.0 - Y * P
        return np.sum(np.where(T >= mu, T - mu / 2, np.where(T > 0, T * T / (2 * mu), 0.0)), axis=1)

    def gradient(self, P, Y):
        return -Y * np.clip((1.0 - Y * P) / self.mu, 0.0, 1.0)

    def curvature(self, P, Y):
        T = 1.0 - Y * P
        return ((T > 0) & (T < self.mu)) * (Y * Y) / self.mu


#: name -> factory, registered by :mod:`sprokr._builtins` through the ``sprokr_losses`` hook
BUILTIN_LOSSES = {
    "square": SquareLoss,
    "huber": HuberLoss,
    "epsilon_insensitive": EpsilonInsensitiveLoss,
    "pinball": PinballLoss,
    "hinge": HingeLoss,
}
