"""Output matrices ``M`` of decomposable matrix-valued kernels ``K(x, x') = k(x, x') M``.

p-sparsified paper, Examples 1 and 2:

* independent outputs: ``M = I_d``;
* task-graph prior (Evgeniou et al., 2005): ``M = (mu L_P + (1 - mu) I_d)^-1`` with
  ``L_P`` the Laplacian of the task graph ``P`` and ``mu in [0, 1]``;
* joint quantile regression (Sangnier et al., 2016): ``M_ij = exp(-gamma (tau_i - tau_j)^2)``.

The estimators use ``M`` through its eigendecomposition ``M = V diag(e) V^T``
(:func:`check_output_matrix`): the feature map of the equivalent linear problem is
``z(x) (x) M^1/2`` and every closed-form solve splits over the eigen-directions of ``M``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike
import scipy.linalg as sla

from ..losses import check_quantile_levels

if TYPE_CHECKING:  # imported for the annotations only
    import networkx as nx

__all__ = ["graph_laplacian_matrix", "joint_quantile_matrix", "check_output_matrix"]


def _adjacency(graph):
    """Dense symmetric adjacency matrix from a networkx graph or an array."""
    if hasattr(graph, "nodes") and hasattr(graph, "edges"):  # networkx, imported lazily
        import networkx as nx

        return nx.to_numpy_array(graph, nodelist=list(graph.nodes), dtype=float)
    P = np.array(graph, dtype=float)  # a copy: the caller's array is never modified
    if P.ndim != 2 or P.shape[0] != P.shape[1]:
        raise ValueError(f"the task graph adjacency must be a square matrix, got shape {P.shape}")
    if not np.all(np.isfinite(P)) or np.any(P < 0):
        raise ValueError("the task graph adjacency must hold finite non-negative weights")
    if not np.allclose(P, P.T):
        raise ValueError("the task graph adjacency must be symmetric (an undirected graph)")
    return P


def graph_laplacian_matrix(graph: nx.Graph | ArrayLike, mu: float = 0.5) -> np.ndarray:
    """``M = (mu L + (1 - mu) I)^-1`` for a task graph (networkx graph or (d, d) adjacency).

    ``mu = 0`` gives independent tasks (``M = I``); ``mu = 1`` uses only the graph (then
    ``L`` is singular and ``mu`` must be < 1).  Solved by Cholesky, never inverted.

    Parameters
    ----------
    graph : networkx.Graph or array-like of shape (d, d)
        The task graph, or its (weighted) adjacency matrix; ``L`` is its Laplacian.
    mu : float in [0, 1), default 0.5
        Weight of the graph against independent tasks.

    Returns
    -------
    M : ndarray of shape (d, d), symmetric positive definite
    """
    mu = float(mu)
    if not 0 <= mu < 1:
        raise ValueError(f"mu must lie in [0, 1) (mu = 1 makes the Laplacian singular), got {mu!r}")
    P = _adjacency(graph)
    d = P.shape[0]
    L = np.diag(P.sum(axis=1)) - P
    A = mu * L + (1.0 - mu) * np.eye(d)
    M = sla.cho_solve(sla.cho_factor(A, lower=True), np.eye(d))
    return 0.5 * (M + M.T)


def joint_quantile_matrix(taus: ArrayLike, gamma: float = 1.0) -> np.ndarray:
    """``M_ij = exp(-gamma (tau_i - tau_j)^2)`` for quantile levels ``taus`` in (0, 1).

    Parameters
    ----------
    taus : array-like of shape (d,)
        The quantile levels, in (0, 1).
    gamma : float >= 0, default 1.0
        Coupling of the levels (0: ``M`` is all ones).

    Returns
    -------
    M : ndarray of shape (d, d), PSD (a Gaussian kernel on the levels)
    """
    t = check_quantile_levels(taus)
    if not np.isfinite(gamma) or gamma < 0:
        raise ValueError(f"gamma must be a finite number >= 0, got {gamma!r}")
    return np.exp(-float(gamma) * (t[:, None] - t[None, :]) ** 2)


def check_output_matrix(M: Any, d: int,
                        rtol: float = 1e-10) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate ``M`` (None or "identity" mean ``I_d``) and return ``(M, V, e)``.

    Raises ``ValueError`` unless ``M`` is a finite, symmetric, positive semi-definite
    (d, d) matrix that is not zero.  ``V`` (d, d) and ``e`` (d,) are its eigenpairs, with
    eigenvalues below ``rtol * max(e)`` set to 0.
    """
    if M is None or (isinstance(M, str) and M == "identity"):
        return np.eye(d), np.eye(d), np.ones(d)
    if isinstance(M, str):
        raise ValueError(f"output_matrix must be None, 'identity' or a (d, d) array, got {M!r}")
    M = np.array(M, dtype=float)
    if M.shape != (d, d):
        raise ValueError(f"output_matrix must have shape ({d}, {d}) for {d} outputs, got {M.shape}")
    if not np.all(np.isfinite(M)):
        raise ValueError("output_matrix contains NaN or infinite values")
    if not np.allclose(M, M.T, rtol=1e-8, atol=1e-12 * max(1.0, np.abs(M).max())):
        raise ValueError("output_matrix must be symmetric")
    M = 0.5 * (M + M.T)
    e, V = np.linalg.eigh(M)
    top = e.max()
    if top <= 0:
        raise ValueError("output_matrix must be positive semi-definite and non-zero")
    if e.min() < -1e-8 * top:
        raise ValueError(
            f"output_matrix must be positive semi-definite; its smallest eigenvalue is {e.min():.3g}"
        )
    e = np.where(e > rtol * top, e, 0.0)
    return M, V, e
