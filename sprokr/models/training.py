"""Training helpers shared by DSOKR's iterative surrogate regressors (scikit-learn MLP, torch).

* :func:`kernel_induced_loss`: the loss the regressors are early-stopped on (default);
* :func:`self_retrieval_mrr`: the retrieval score they can be early-stopped on instead
  (``monitor="mrr"``), from the validation targets alone;
* :class:`EarlyStopping`: best-state tracking, patience (``n_iter_no_change``), learning-rate drops on a plateau
  and the progress lines;
* :func:`warn_not_converged`: the ``ConvergenceWarning`` when ``max_epochs`` runs out first;
* :func:`target_moments`, :func:`standardise`: the centring and scale of the training
  targets, applied a block or minibatch at a time (no standardised n x p copy);
* :func:`check_fit_targets`, :func:`check_sample_offsets`, :func:`check_eval_set`: the
  training data of a network, checked before anything is trained.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..progress import log_message
from ..utils import check_finite, check_integer, check_numeric_array, check_positive, iter_chunks, num_samples

__all__ = ["kernel_induced_loss", "self_retrieval_mrr", "check_monitor", "as_targets", "check_fit_targets",
           "check_sample_offsets", "check_eval_set", "check_lr_schedule", "check_early_stopping", "check_optimiser_params", "check_mlp_architecture",
           "MLP_ACTIVATIONS", "EarlyStopping",
           "warn_not_converged", "target_moments", "standardise", "TARGET_BLOCK_ROWS"]

#: rows per block of :func:`target_moments` and of ``MLPSurrogate``'s epochs (bounds its float64 temporaries: 256 MB at
#: 512 target columns)
TARGET_BLOCK_ROWS = 65536


def as_targets(T: Any) -> np.ndarray:
    """Targets as a 2-D array (n, p) (a 1-D array is one column)."""
    T = np.asarray(T)
    if T.ndim == 1:
        T = T[:, None]
    if T.ndim != 2:
        raise ValueError(f"targets must have shape (n, p), got {T.shape}")
    return T


def target_moments(T: np.ndarray, rows: int = TARGET_BLOCK_ROWS) -> tuple[np.ndarray, float]:
    """The centring and the one global scale a network's targets are standardised with.

    Parameters
    ----------
    T : ndarray (n, p), float32 or float64
    rows : int
        Rows per block: the float64 arithmetic runs block by block, no n x p array is made.

    Returns
    -------
    mu : ndarray (p,), float64
        The column means.
    scale : float
        The root mean square of ``T - mu`` over all entries (1.0 when it is zero): distances
        between targets are preserved up to this factor.
    """
    n, p = T.shape
    mu = np.zeros(p)
    for sl in iter_chunks(n, rows):  # T.mean(dtype=float64) would make a float64 copy of float32 T
        mu += T[sl].sum(axis=0, dtype=np.float64)
    mu /= max(n, 1)
    ss = 0.0
    for sl in iter_chunks(n, rows):
        D = T[sl] - mu
        ss += float(np.einsum("ij,ij->", D, D))
    scale = float(np.sqrt(ss / T.size)) if T.size else 0.0
    return mu, scale or 1.0


def standardise(T: np.ndarray, mu: np.ndarray, scale: float) -> np.ndarray:
    """``(T - mu) / scale`` in float64, returned as float32: rows ``T`` (b, p) of the targets
    (a block or a minibatch: the networks standardise as they go, so the fit never holds a
    standardised copy of all n x p targets)."""
    return ((T - mu) / scale).astype(np.float32, copy=False)


def kernel_induced_loss(G: Any, T: Any, offsets: Any = None) -> float:
    """Mean ``|g_i - t_i|^2 + r_i`` (= mean ``|h(x_i) - psi(y_i)|^2_H`` with ``r`` the offsets).

    ``G``, ``T``: (n, p); ``offsets``: (n,) or None.
    """
    d2 = np.einsum("ij,ij->i", G - T, G - T, dtype=np.float64)
    if offsets is not None:
        d2 = d2 + offsets
    return float(d2.mean()) if d2.size else 0.0


def self_retrieval_mrr(G: Any, T: Any, offsets: Any = None, chunk: int = 1024) -> float:
    """MRR of the validation pairs ranking their own outputs, from coordinates alone.

    Query ``i`` scores candidate ``j`` (the validation outputs) by the decoding rule
    ``g_i^T psi~(y_j) - k(y_j, y_j) / 2`` with ``k(y_j, y_j) = |psi~(y_j)|^2 + r_j`` (``T``
    the targets ``psi~``, ``offsets`` the ``r``), exactly the scores a DSOKR model gives
    those candidates; the truth of query ``i`` is candidate ``i``.  This is
    :func:`sprokr.model_selection.retrieval_scorer` without decoding through the model
    (ranks by :func:`sprokr.metrics.ranks_from_scores`).
    """
    from ..metrics import ranks_from_scores

    G, T = np.asarray(G, dtype=np.float64), np.asarray(T, dtype=np.float64)
    half = 0.5 * (np.einsum("ij,ij->i", T, T) + (0.0 if offsets is None else np.asarray(offsets, dtype=np.float64)))
    n = T.shape[0]
    inv = np.empty(n)
    for start in range(0, n, chunk):
        rows = np.arange(start, min(n, start + chunk))
        inv[rows] = 1.0 / ranks_from_scores(G[rows] @ T.T - half[None, :], rows)
    return float(inv.mean()) if n else 0.0


#: what the iterative regressors can be early-stopped on
MONITORS = ("loss", "mrr")


def check_monitor(monitor: Any) -> str:
    """``"loss"`` (validation kernel-induced loss) or ``"mrr"`` (:func:`self_retrieval_mrr`)."""
    if monitor not in MONITORS:
        raise ValueError(f"monitor must be one of {MONITORS}, got {monitor!r}")
    return monitor


def check_fit_targets(T: Any, name: str = "T") -> np.ndarray:
    """Training targets of a network, checked: a 2-D array (n, p) of finite real numbers.

    A NaN or infinite target would not stop the training: the loss, then every weight,
    becomes NaN (``best_loss_ = nan``, every prediction NaN), and a refit would replace a
    good model by that one.  So it is refused here, before anything is trained.

    Parameters
    ----------
    T : array-like of shape (n,) or (n, p)
        A 1-D array is one column.
    name : str
        The argument, named in the errors (``"T"``, ``"eval_set targets"``).

    Returns
    -------
    ndarray of shape (n, p)
        ``T`` itself when it is a float array (DSOKR's n x p targets are not copied), else
        its numbers as float64.
    """
    if isinstance(T, np.ndarray) and T.dtype.kind == "f":
        check_finite(T, name)
    else:  # lists, integers, objects, complex numbers: numbers or a clear error
        T = check_numeric_array(T, name, np.float64, ndim=None)
    return as_targets(T)


def check_sample_offsets(offsets: Any, n: int, name: str = "sample_offsets") -> Optional[np.ndarray]:
    """Sample offsets ``r_i = k(y_i, y_i) - |psi~(y_i)|^2`` of ``n`` samples, checked.

    Each is the squared norm of the part of ``psi(y_i)`` outside the sketched subspace:
    a finite number ``>= 0`` (DSOKR clips its rounding errors at 0), one per sample.  A NaN
    makes the training loss NaN, and a negative one can make a robust loss NaN
    (``cauchy``: ``log1p`` of less than -1).

    Parameters
    ----------
    offsets : array-like of shape (n,) or None
    n : int
        Number of samples (of the targets they go with).
    name : str
        The argument, named in the errors.

    Returns
    -------
    ndarray of shape (n,), float64, or None (no offsets)
    """
    if offsets is None:
        return None
    r = check_numeric_array(offsets, name, np.float64, ndim=1)
    if r.shape[0] != n:
        raise ValueError(f"{name} must hold one value per sample: got {r.shape[0]} for {n} samples")
    if r.size and r.min() < 0:
        raise ValueError(f"{name} must be >= 0 (squared norms k(y, y) - |psi~(y)|^2), got {r.min():.6g}")
    return r


def check_eval_set(eval_set: Any, p: int) -> Optional[tuple]:
    """``(X_val, T_val, offsets_val or None)`` from a 2- or 3-tuple, checked against ``p`` targets.

    The targets must be finite numbers (:func:`check_fit_targets`) and the offsets finite
    numbers ``>= 0``, one per validation sample (:func:`check_sample_offsets`): a NaN there
    would make every validation loss NaN, which early stopping cannot compare.
    The inputs are the regressor's to check.
    """
    if eval_set is None:
        return None
    if len(eval_set) == 2:
        Xv, Tv = eval_set
        rv = None
    elif len(eval_set) == 3:
        Xv, Tv, rv = eval_set
    else:
        raise ValueError("eval_set must be (X_val, T_val) or (X_val, T_val, offsets_val)")
    Tv = check_fit_targets(Tv, "eval_set targets")
    if Tv.shape[1] != p:
        raise ValueError(f"eval_set targets have {Tv.shape[1]} columns, training targets have {p}")
    if num_samples(Xv, "X_val") != Tv.shape[0]:
        raise ValueError("eval_set inputs and targets have different numbers of samples")
    if Tv.shape[0] == 0:  # every validation loss would be NaN (MLPSurrogate: no prediction of 0 rows yet)
        raise ValueError("eval_set is empty: give at least one validation sample, or eval_set=None")
    return Xv, Tv, check_sample_offsets(rv, Tv.shape[0], "eval_set offsets")


def check_lr_schedule(max_epochs: Any, lr_drops: Any, lr_factor: Any) -> None:
    """Clear errors for ``max_epochs`` (>= 1), ``lr_drops`` (int >= 0) and ``lr_factor`` (> 1)."""
    check_integer(max_epochs, "max_epochs")
    check_integer(lr_drops, "lr_drops", 0)
    if isinstance(lr_factor, bool) or not isinstance(lr_factor, (int, float, np.number)) \
            or not np.isfinite(lr_factor) or not lr_factor > 1:
        raise ValueError(f"lr_factor must be a number > 1, got {lr_factor!r}")


def check_early_stopping(n_iter_no_change: Any, tol: Any) -> None:
    """Clear errors for a network's ``n_iter_no_change`` (an integer >= 1) and ``tol`` (a
    finite number >= 0), before training: :class:`EarlyStopping` compares them as they are
    (``n_iter_no_change=0`` never reached a plateau, a negative one stopped after the first
    epoch as converged, and a NaN ``tol`` never counted an improvement)."""
    check_integer(n_iter_no_change, "n_iter_no_change")
    check_positive(tol, "tol", strict=False)


def check_optimiser_params(lam: Any, learning_rate: Any, batch_size: Any) -> None:
    """Clear errors for a network's ``lam`` (a finite number >= 0), ``learning_rate`` (> 0)
    and ``batch_size`` (an integer >= 1), named as the estimator's parameters (not as
    scikit-learn's ``alpha`` / ``learning_rate_init`` or torch's ``weight_decay``).

    Parameters
    ----------
    lam, learning_rate, batch_size : the estimator's parameters.

    Raises
    ------
    ValueError
        A value is out of its range or not a number (the message names the parameter).
    """
    check_positive(lam, "lam", strict=False)
    check_positive(learning_rate, "learning_rate")
    check_integer(batch_size, "batch_size")


#: the activations of scikit-learn's ``MLPRegressor``
MLP_ACTIVATIONS = ("identity", "logistic", "tanh", "relu")


def check_mlp_architecture(hidden_layer_sizes: Any, activation: Any) -> None:
    """Clear errors for scikit-learn ``MLPRegressor``'s architecture, before any data (it
    checks them only when it trains): ``hidden_layer_sizes`` an integer >= 1 or a sequence
    of them (empty: no hidden layer, a linear model), ``activation`` one of
    :data:`MLP_ACTIVATIONS`.

    Parameters
    ----------
    hidden_layer_sizes, activation : the estimator's parameters.

    Raises
    ------
    ValueError
        A value is not one the network can be built with (the message names the parameter).
    """
    sizes = [hidden_layer_sizes] if isinstance(hidden_layer_sizes, (int, np.integer)) else hidden_layer_sizes
    ok = not isinstance(sizes, (str, bytes)) and np.iterable(sizes)
    ok = ok and all(isinstance(u, (int, np.integer)) and not isinstance(u, (bool, np.bool_)) and u >= 1
                    for u in sizes)
    if not ok:
        raise ValueError(f"hidden_layer_sizes must be an integer >= 1 or a sequence of them (units per hidden "
                         f"layer), got {hidden_layer_sizes!r}")
    if not isinstance(activation, str) or activation not in MLP_ACTIVATIONS:
        raise ValueError(f"activation must be one of {MLP_ACTIVATIONS}, got {activation!r}")


class EarlyStopping:
    """Track the monitored loss, keep the best state, drop the learning rate on plateaus.

    ``update`` is called once per epoch; when the monitored loss (validation if given, else
    training) has not improved by the relative ``tol`` for more than ``n_iter_no_change`` epochs,
    it reports a plateau.  :meth:`plateau` then either allows one more learning-rate drop
    (training resumes from the best state, the caller divides its step size) or ends
    training (``converged = True``).
    """

    def __init__(self, n_iter_no_change: int, tol: float, verbose: int, name: str, max_epochs: int,
                 lr_drops: int = 0):
        self.n_iter_no_change, self.tol, self.verbose = n_iter_no_change, tol, verbose
        self.name, self.max_epochs, self.lr_drops = name, max_epochs, lr_drops
        self.best, self.best_epoch, self.bad = np.inf, -1, 0
        self.state: Any = None
        self.drops, self.converged = 0, False
        self.initial: tuple[Any, Any] = (None, None)
        self.history: list = []
        self.scores: list = []
        self.t0 = time.perf_counter()

    def update(self, epoch: int, train_loss: float, val_loss: Optional[float], get_state: Callable[[], Any],
               val_score: Optional[float] = None) -> bool:
        """Record one epoch; return True when the monitored value has reached a plateau.

        Monitored: minus ``val_score`` (greater is better) when given, else ``val_loss``
        when given, else ``train_loss``.
        """
        monitored = -val_score if val_score is not None else val_loss if val_loss is not None else train_loss
        self.history.append((train_loss, val_loss))
        self.scores.append(val_score)
        if monitored < self.best - self.tol * max(abs(self.best), 1e-12) or self.state is None:
            self.best, self.best_epoch, self.bad = monitored, epoch, 0
            self.state = get_state()
        else:
            self.bad += 1
        every = 1 if self.verbose > 1 else max(1, self.max_epochs // 10)
        if self.verbose and (epoch % every == 0 or self.bad > self.n_iter_no_change):
            v = "" if val_loss is None else f", val kernel loss {val_loss:.5g}"
            v += "" if val_score is None else f", val MRR {val_score:.4f}"
            log_message(f"epoch {epoch + 1}/{self.max_epochs}: train loss {train_loss:.5g}{v} "
                        f"(best epoch {self.best_epoch + 1}, {time.perf_counter() - self.t0:.1f} s)",
                        verbose=True, logger=self.name)
        return self.bad > self.n_iter_no_change

    def start_from(self, val_loss: float, val_score: Optional[float], state: Any) -> None:
        """Score the starting weights (``best_epoch = -1``): later epochs must beat them."""
        self.initial = (val_loss, val_score)
        self.best = -val_score if val_score is not None else val_loss
        self.state = state

    def best_values(self) -> tuple[Any, Any]:
        """``(val_loss, val_score)`` of the kept weights."""
        if self.best_epoch < 0:
            return self.initial
        return self.history[self.best_epoch][1], self.scores[self.best_epoch]

    def plateau(self) -> bool:
        """On a plateau: True to stop (no learning-rate drop left), else count one drop."""
        if self.drops >= self.lr_drops:
            self.converged = True
            return True
        self.drops += 1
        self.bad = 0
        return False


def warn_not_converged(name: str, stop: EarlyStopping) -> None:
    """``ConvergenceWarning``: ``max_epochs`` ran out before the monitored loss reached a plateau.

    Called from a ``fit`` decorated with :func:`sprokr.utils.atomic_fit`: the warning points
    at the code that called ``fit`` (this function, ``fit``, its wrapper, the caller).
    """
    warnings.warn(
        f"{name}: max_epochs={stop.max_epochs} reached before the monitored loss reached a plateau "
        f"(best epoch {stop.best_epoch + 1}, n_iter_no_change={stop.n_iter_no_change}); the best weights are kept, "
        f"increase max_epochs (or the learning rate) to train to convergence", ConvergenceWarning, stacklevel=4)
