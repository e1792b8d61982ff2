"""Surrogate regressors for DSOKR: ``g_W: X -> R^p`` trained on targets ``psi~(y_i)``.

DSOKR reduces structured prediction to a vector regression onto the ``p`` coordinates of
the output-sketch basis.  Any scikit-learn style regressor (``fit(X, T)``,
``predict(X) -> (n_q, p)``) works; the built-ins below additionally accept

``fit(X, T, sample_offsets=None, eval_set=None)``

* ``sample_offsets`` ``r_i = k(y_i, y_i) - |psi~(y_i)|^2 >= 0``: the part of ``psi(y_i)``
  outside the sketched subspace, so that the *kernel-induced* loss of a prediction is
  ``|g(x_i) - psi~(y_i)|^2 + r_i = |h(x_i) - psi(y_i)|^2_H``;
* ``eval_set = (X_val, T_val, r_val)``: validation data for early stopping on that loss.

Built-ins (registered through the ``sprokr_regressors`` hook, see :mod:`sprokr._builtins`):

* :class:`KernelRidgeRegressor` (``"kernel_ridge"``): kernel ridge with a sprokr kernel and
  an optional input sketch.  DSOKR with it is exactly ISOKR (or SISOKR) on the same output
  sketch.
* :class:`MLPSurrogate` (``"mlp"``): scikit-learn's ``MLPRegressor`` trained epoch by epoch
  with validation-based early stopping on the kernel-induced loss (square loss only).
* :class:`TorchRegressor` (``"torch_mlp"``, only when ``torch`` is installed: the ``torch``
  extra): any ``torch.nn.Module`` (an MLP by default, :func:`token_cnn` for token
  sequences) trained with a loss ``c(|h(x) - psi(y)|^2)``: ``square``, ``huber``,
  ``cauchy`` or a callable.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, Self

import copy
import time
import warnings

import numpy as np
from numpy.typing import ArrayLike, DTypeLike
import scipy.linalg as sla
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from ..numerics import (
    DEFAULT_RCOND,
    KernelExpansion,
    LocalExecutor,
    default_chunk_size,
    exact_ridge_factor,
    sketched_ridge,
)
from ..persistence import SaveMixin
from ..registry import resolve_kernel, resolve_sketch
from .base import check_n_features, set_n_features
from ..progress import log_message
from ..utils import (
    copy_with_coef,
    NamedPrepare,
    check_paired,
    check_positive,
    check_random_state,
    iter_chunks,
    num_samples,
    resolve_dtype,
    take,
)

if TYPE_CHECKING:  # imported for the annotations only
    from ..kernels.base import Kernel
    from ..losses import Loss
    from ..sketches.base import Sketch
    from ..types import RandomStateLike

__all__ = [
    "KernelRidgeRegressor",
    "MLPSurrogate",
    "TorchRegressor",
    "token_cnn",
    "kernel_induced_loss",
    "torch_available",
    "ROBUST_LOSSES",
]


def torch_available() -> bool:
    """True when ``torch`` can be imported (without importing it)."""
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def _as_targets(T):
    T = np.asarray(T)
    if T.ndim == 1:
        T = T[:, None]
    if T.ndim != 2:
        raise ValueError(f"targets must have shape (n, p), got {T.shape}")
    return T


def kernel_induced_loss(G: np.ndarray, T: np.ndarray, offsets: np.ndarray | None = None) -> float:
    """Mean ``|g_i - t_i|^2 + r_i`` (= mean ``|h(x_i) - psi(y_i)|^2_H`` with ``r`` the offsets).

    ``G``, ``T``: (n, p); ``offsets``: (n,) or None.
    """
    d2 = np.einsum("ij,ij->i", G - T, G - T, dtype=np.float64)
    if offsets is not None:
        d2 = d2 + offsets
    return float(d2.mean()) if d2.size else 0.0


def _check_eval_set(eval_set, p):
    if eval_set is None:
        return None
    if len(eval_set) == 2:
        Xv, Tv = eval_set
        rv = None
    elif len(eval_set) == 3:
        Xv, Tv, rv = eval_set
    else:
        raise ValueError("eval_set must be (X_val, T_val) or (X_val, T_val, offsets_val)")
    Tv = _as_targets(Tv)
    if Tv.shape[1] != p:
        raise ValueError(f"eval_set targets have {Tv.shape[1]} columns, training targets have {p}")
    if num_samples(Xv, "X_val") != Tv.shape[0]:
        raise ValueError("eval_set inputs and targets have different numbers of samples")
    return Xv, Tv, (None if rv is None else np.asarray(rv, dtype=np.float64))


class _EarlyStopping:
    """Track the monitored loss, keep the best state, report progress."""

    def __init__(self, patience, tol, verbose, name, max_epochs):
        self.patience, self.tol, self.verbose = patience, tol, verbose
        self.name, self.max_epochs = name, max_epochs
        self.best, self.best_epoch, self.bad, self.state = np.inf, -1, 0, None
        self.history = []
        self.t0 = time.perf_counter()

    def update(self, epoch, train_loss, val_loss, get_state):
        """Record one epoch; return True when training should stop."""
        monitored = val_loss if val_loss is not None else train_loss
        self.history.append((train_loss, val_loss))
        if monitored < self.best - self.tol * max(abs(self.best), 1e-12) or self.state is None:
            self.best, self.best_epoch, self.bad = monitored, epoch, 0
            self.state = get_state()
        else:
            self.bad += 1
        every = 1 if self.verbose > 1 else max(1, self.max_epochs // 10)
        if self.verbose and (epoch % every == 0 or self.bad > self.patience):
            v = "" if val_loss is None else f", val kernel loss {val_loss:.5g}"
            log_message(f"epoch {epoch + 1}/{self.max_epochs}: train loss {train_loss:.5g}{v} "
                        f"(best epoch {self.best_epoch + 1}, {time.perf_counter() - self.t0:.1f} s)",
                        verbose=True, logger=self.name)
        return self.bad > self.patience


# --------------------------------------------------------------------------- kernel ridge
class KernelRidgeRegressor(SaveMixin, RegressorMixin, BaseEstimator):
    """Kernel ridge regression of vector targets with a sprokr kernel (optionally sketched).

    Minimises ``1/n sum_i |g(x_i) - t_i|^2 + lam |g|^2``.  Exact: ``g(x) = k_x^T (K + n lam
    I)^-1 T`` (Cholesky).  With an input sketch ``R`` (m x n) and ``A = K R^T``:
    ``g(x) = k_x^T R^T (A^T A + n lam R K R^T)^+ A^T T`` accumulated over row chunks.

    Parameters
    ----------
    kernel : str or Kernel
    kernel_params : dict, optional
    lam : float
    input_sketch : str, Sketch or None
    m_x : int, optional
    input_sketch_params : dict, optional
    dtype : {"float64", "float32"}
    rcond : float, optional
    chunk_size : int, optional
    random_state : None, int or numpy.random.Generator

    Attributes
    ----------
    kernel_ : Kernel
    coef_ : ndarray of shape (n_support, p)
    X_support_ : prepared support inputs
    sketch_matrix_ : SketchMatrix or None
    """

    def __init__(self, kernel: str | Kernel = "gaussian", kernel_params: Mapping[str, Any] | None = None,
                 lam: float = 1e-5, input_sketch: str | Sketch | None = None, m_x: int | None = None,
                 input_sketch_params: Mapping[str, Any] | None = None, dtype: DTypeLike = "float64",
                 rcond: float | None = None, chunk_size: int | None = None,
                 random_state: RandomStateLike = None) -> None:
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.lam = lam
        self.input_sketch = input_sketch
        self.m_x = m_x
        self.input_sketch_params = input_sketch_params
        self.dtype = dtype
        self.rcond = rcond
        self.chunk_size = chunk_size
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        return tags

    def fit(self, X: Any, y: Any) -> Self:
        """Fit on inputs ``X`` (n samples) and targets ``y`` (n,) or (n, p).  Returns self."""
        from .kernel_machine import check_targets
        from .sisokr import check_chunk_size

        n = num_samples(X, "X")
        if n < 1:
            raise ValueError("cannot fit on 0 samples: X is empty")
        T64, scalar = check_targets(y, n, type(self).__name__)
        lam = check_positive(self.lam, "lam")
        dtype = resolve_dtype(self.dtype)
        rcond = self.rcond if self.rcond is not None else DEFAULT_RCOND
        chunk = check_chunk_size(self.chunk_size)
        k = resolve_kernel(self.kernel, self.kernel_params, "input", dtype)
        sk = resolve_sketch(self.input_sketch, self.m_x, self.input_sketch_params, n, "input")
        ex = LocalExecutor()
        parts = ex.partition(X, T64, prepare=(NamedPrepare(k.prepare, "X"), None))
        Xp = parts.blocks[0][0]
        if sk is None:
            cho = exact_ridge_factor(k, parts, Xp, lam, chunk or default_chunk_size(n, dtype), ex)
            coef, support, R = sla.cho_solve(cho, T64, check_finite=False), Xp, None
        else:
            R = sk.draw(n, check_random_state(self.random_state))
            support = take(Xp, R.indices)
            sol = sketched_ridge(k, R, support, parts, lam, np.asarray, T64.shape[1], rcond,
                                 chunk or default_chunk_size(R.indices.size, dtype), ex,
                                 dtype=dtype, ref_targets=T64[R.indices])
            coef = sol.coef
        # ---- validated and solved: learned state
        self.kernel_, self.sketch_matrix_ = k, R
        self.X_support_ = k.prepare_support(support)
        set_n_features(self, Xp)
        self.coef_ = np.asarray(coef, dtype=np.float64)  # float64 whatever the dtype (one policy)
        self._expansion = KernelExpansion(k, self.X_support_, self.coef_, dtype)
        self.n_outputs_, self._scalar = T64.shape[1], scalar
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predicted targets, (n_q,) for 1-D training targets, else (n_q, p)."""
        check_is_fitted(self, "coef_")
        ex = LocalExecutor()
        prepare = NamedPrepare(self.kernel_.prepare, "X")

        def checked(Xq):
            Xp = prepare(Xq)
            check_n_features(self, Xp)
            return Xp

        P = ex.map_rows(ex.partition(X, prepare=(checked,)), self._expansion,
                        default_chunk_size(num_samples(self.X_support_), np.float64), name="predictions")
        return P[:, 0] if getattr(self, "_scalar", False) else P

    def with_coef(self, coef: ArrayLike, lam: float | None = None) -> Self:
        """A fitted copy with other coefficients on ``X_support_`` (kernel and support shared).

        For model selection: the solutions of a ``lam`` path are scored as models.
        ``coef``: shape (n_support, ``n_outputs_``); ``lam`` is recorded as the copy's parameter.
        """
        check_is_fitted(self, "coef_")
        new, coef = copy_with_coef(self, coef, self.coef_.shape, lam)
        new.coef_ = coef
        new._expansion = KernelExpansion(self.kernel_, self.X_support_, coef, resolve_dtype(self.dtype))
        return new


# --------------------------------------------------------------------------- sklearn MLP
class MLPSurrogate(SaveMixin, RegressorMixin, BaseEstimator):
    """scikit-learn ``MLPRegressor`` (Adam) with early stopping on the kernel-induced loss.

    Trained one epoch at a time (``partial_fit``); after each epoch the loss
    ``mean |g(x) - psi~(y)|^2 + r`` is evaluated on ``eval_set`` (or on the training set when
    none is given) and the best weights are kept.  Targets are centred and divided by one
    global scale (distances are preserved up to that factor).

    Parameters
    ----------
    hidden_layer_sizes : tuple of int
    activation : str
    alpha : float
        L2 penalty.
    learning_rate_init : float
    batch_size : int
    max_epochs : int
    patience : int
        Epochs without improvement (relative ``tol``) before stopping.
    tol : float
    lr_drops : int
        Learning-rate reductions on a plateau: when ``patience`` runs out, training resumes
        from the best weights with the learning rate divided by ``lr_factor`` (a fresh Adam
        state), at most ``lr_drops`` times; then it stops.  0: stop at the first plateau.
    lr_factor : float > 1
    random_state : None, int or numpy.random.Generator
    verbose : int

    Attributes
    ----------
    model_ : MLPRegressor
    n_epochs_ : int
    best_epoch_ : int
        Epoch (0-based) of the kept weights.
    best_loss_ : float
    converged_ : bool
        True when training stopped on a plateau of the monitored loss; False when
        ``max_epochs`` ran out first (a ``ConvergenceWarning`` is then issued).
    history_ : list of (train_loss, val_loss)
    """

    def __init__(self, hidden_layer_sizes: tuple[int, ...] = (256,), activation: str = "relu", alpha: float = 1e-4,
                 learning_rate_init: float = 1e-3, batch_size: int = 200, max_epochs: int = 200, patience: int = 10,
                 tol: float = 1e-4, lr_drops: int = 0, lr_factor: float = 10.0, random_state: RandomStateLike = None,
                 verbose: bool | int = 0) -> None:
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.alpha = alpha
        self.learning_rate_init = learning_rate_init
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.patience = patience
        self.tol = tol
        self.lr_drops = lr_drops
        self.lr_factor = lr_factor
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X: Any, T: Any, sample_offsets: Any = None, eval_set: Any = None) -> Self:
        """Fit on ``X`` (n, d) and targets ``T`` (n, p).  Returns self."""
        from sklearn.neural_network import MLPRegressor

        T = _as_targets(T)
        X = _mlp_inputs(X)
        if X.shape[0] != T.shape[0]:
            raise ValueError(f"X and T have different numbers of samples: {X.shape[0]} and {T.shape[0]}")
        if int(self.max_epochs) < 1:
            raise ValueError(f"max_epochs must be >= 1, got {self.max_epochs}")
        if isinstance(self.lr_drops, bool) or not isinstance(self.lr_drops, (int, np.integer)) or self.lr_drops < 0:
            raise ValueError(f"lr_drops must be an integer >= 0, got {self.lr_drops!r}")
        if not np.isfinite(self.lr_factor) or self.lr_factor <= 1:
            raise ValueError(f"lr_factor must be a number > 1, got {self.lr_factor!r}")
        ev = _check_eval_set(eval_set, T.shape[1])
        seed = int(check_random_state(self.random_state).integers(2**31 - 1))
        mu = T.mean(axis=0)
        scale = float(np.sqrt(np.mean((T - mu) ** 2))) or 1.0
        Ts = ((T - mu) / scale).astype(np.float32)
        model = MLPRegressor(
            hidden_layer_sizes=self.hidden_layer_sizes, activation=self.activation, alpha=self.alpha,
            learning_rate_init=self.learning_rate_init, batch_size=min(self.batch_size, X.shape[0]),
            solver="adam", shuffle=True, random_state=seed,
        )
        self.mu_, self.scale_ = mu, scale
        self.model_ = model
        stop = _EarlyStopping(self.patience, self.tol, self.verbose, "MLPSurrogate", self.max_epochs)
        get_state = lambda: ([c.copy() for c in model.coefs_], [b.copy() for b in model.intercepts_])  # noqa: E731
        drops, converged, lr = 0, False, float(self.learning_rate_init)
        for epoch in range(int(self.max_epochs)):
            model.partial_fit(X, Ts)
            train_loss = float(model.loss_) * 2 * scale**2 * T.shape[1]  # sklearn: half mean squared error
            val_loss = None if ev is None else kernel_induced_loss(self.predict(ev[0]), ev[1], ev[2])
            if stop.update(epoch, train_loss, val_loss, get_state):
                if drops >= self.lr_drops:
                    converged = True
                    break
                # plateau: resume from the best weights with a smaller step and a fresh Adam state
                drops, lr = drops + 1, lr / float(self.lr_factor)
                model.coefs_, model.intercepts_ = [c.copy() for c in stop.state[0]], [b.copy() for b in stop.state[1]]
                model.set_params(learning_rate_init=lr)
                if hasattr(model, "_optimizer"):  # MLPRegressor builds a new optimizer when it has none
                    del model._optimizer
                stop.bad = 0
        model.coefs_, model.intercepts_ = stop.state
        self.n_epochs_, self.best_epoch_, self.best_loss_, self.history_ = epoch + 1, stop.best_epoch, stop.best, \
            stop.history
        self.converged_ = converged
        self.n_outputs_ = T.shape[1]
        if not converged:
            warnings.warn(
                f"MLPSurrogate: max_epochs={self.max_epochs} reached before the monitored loss reached a "
                f"plateau (best epoch {stop.best_epoch + 1}, patience {self.patience}); the best weights are "
                f"kept, increase max_epochs (or learning_rate_init) to train to convergence",
                ConvergenceWarning, stacklevel=2)
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predicted targets, (n_q, p)."""
        check_is_fitted(self, "model_")
        G = self.model_.predict(_mlp_inputs(X))
        return _as_targets(G) * self.scale_ + self.mu_


def _mlp_inputs(X):
    """Inputs of the MLP as float32: a dense 2-D array, or a CSR matrix kept sparse."""
    import scipy.sparse as sp

    if sp.issparse(X):
        return sp.csr_matrix(X, dtype=np.float32)
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (n_samples, n_features) for the MLP; got shape {X.shape}. "
                         f"Reshape your data: X.reshape(-1, 1) for a single feature")
    if X.dtype.kind not in "fiub":
        try:  # numbers stored as objects are fine; other objects raise numpy's TypeError
            X = X.astype(np.float32)
        except ValueError:
            raise ValueError(f"X must hold numbers for the MLP, got dtype {X.dtype}") from None
    if X.shape[1] == 0:
        raise ValueError(f"X has 0 feature(s) (shape={X.shape}) while a minimum of 1 is required.")
    X = X.astype(np.float32, copy=False)
    if not np.isfinite(X).all():
        raise ValueError("X contains NaN or infinite values; expected finite numbers")
    return X


# --------------------------------------------------------------------------- torch
def _loss_fn(loss, delta):
    """``c`` applied to per-sample squared kernel distances (a torch tensor)."""
    import torch

    d2 = float(delta) ** 2
    if callable(loss):
        return loss
    if loss == "square":
        return lambda t: t
    if loss == "huber":  # Huber on the distance |h - psi|: quadratic, then linear
        return lambda t: torch.where(t <= d2, t, 2 * float(delta) * torch.sqrt(t.clamp_min(d2)) - d2)
    if loss == "cauchy":
        return lambda t: d2 * torch.log1p(t / d2)
    raise ValueError(f"unknown loss {loss!r}; use one of {sorted(ROBUST_LOSSES)} or a callable")


#: loss names of :class:`TorchRegressor`: ``c(t)`` for ``t = |h(x) - psi(y)|^2``
ROBUST_LOSSES = {"square": "c(t) = t", "huber": "c(t) = t if t <= d^2 else 2 d sqrt(t) - d^2",
                 "cauchy": "c(t) = d^2 log(1 + t / d^2)"}


def _default_mlp(hidden, activation, dropout):
    def build(n_features, n_outputs):
        import torch.nn as nn

        acts = {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU}
        if activation not in acts:
            raise ValueError(f"activation must be one of {sorted(acts)}, got {activation!r}")
        layers, width = [], n_features
        for h in hidden:
            layers += [nn.Linear(width, h), acts[activation]()]
            if dropout:
                layers.append(nn.Dropout(dropout))
            width = h
        layers.append(nn.Linear(width, n_outputs))
        return nn.Sequential(*layers)

    return build


def token_cnn(vocab_size: int, embed_dim: int = 64, channels: int = 128, kernel_size: int = 5, hidden: int = 256,
              pad_index: int = 0) -> Callable[[int, int], Any]:
    """Module builder for integer token sequences (SMILES characters, words), for ``module=``.

    Returns ``build(n_features, n_outputs) -> nn.Module``: embedding, one 1-D convolution,
    ReLU, max-pooling over positions (padding masked), an MLP head.  Inputs are (n, L) int
    arrays with ``pad_index`` for padding.
    """

    def build(n_features, n_outputs):
        import torch
        import torch.nn as nn

        class TokenCNN(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(vocab_size, embed_dim, padding_idx=pad_index)
                self.conv = nn.Conv1d(embed_dim, channels, kernel_size, padding=kernel_size // 2)
                self.head = nn.Sequential(nn.Linear(channels, hidden), nn.ReLU(), nn.Linear(hidden, n_outputs))

            def forward(self, tok):
                z = torch.relu(self.conv(self.emb(tok).transpose(1, 2)))  # (b, C, L)
                z = z.masked_fill((tok == pad_index)[:, None, :], -1e4).amax(dim=2)
                return self.head(z)

        return TokenCNN()

    return build


class TorchRegressor(SaveMixin, RegressorMixin, BaseEstimator):
    """A torch network trained on DSOKR targets with the loss ``c(|h(x) - psi(y)|^2_H)``.

    ``|h(x_i) - psi(y_i)|^2_H = |g(x_i) - psi~(y_i)|^2 + r_i`` (``r_i`` the sample offsets),
    so robust losses see the true kernel distance.  Requires ``torch`` (extra ``torch``).

    Parameters
    ----------
    module : callable, optional
        ``module(n_features, n_outputs) -> torch.nn.Module``; default an MLP with
        ``hidden_layer_sizes``.  Integer input arrays are passed as ``torch.long``
        (e.g. :func:`token_cnn`), others as float32.
    hidden_layer_sizes, activation, dropout : MLP architecture of the default module.
    loss : {"square", "huber", "cauchy"} or callable on a tensor of squared distances
    loss_delta : float
        Scale ``d`` of the robust losses (in kernel-distance units).
    lr, weight_decay, batch_size, max_epochs, patience, tol : Adam and early stopping.
    num_threads : int, optional
        ``torch.set_num_threads`` during fit/predict.
    random_state : None, int or numpy.random.Generator
    verbose : int

    Attributes
    ----------
    module_ : torch.nn.Module
    n_epochs_, best_loss_, history_
    """

    def __init__(self, module: Any = None, hidden_layer_sizes: tuple[int, ...] = (256,), activation: str = "relu",
                 dropout: float = 0.0, loss: str | Loss = "square", loss_delta: float = 1.0, lr: float = 1e-3,
                 weight_decay: float = 0.0, batch_size: int = 128, max_epochs: int = 100, patience: int = 10,
                 tol: float = 1e-4, num_threads: int | None = None, random_state: RandomStateLike = None,
                 verbose: bool | int = 0) -> None:
        self.module = module
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.dropout = dropout
        self.loss = loss
        self.loss_delta = loss_delta
        self.lr = lr
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.patience = patience
        self.tol = tol
        self.num_threads = num_threads
        self.random_state = random_state
        self.verbose = verbose

    @staticmethod
    def _tensor(X):
        import torch

        X = np.asarray(X)
        if X.dtype.kind in "iu":
            return torch.as_tensor(X, dtype=torch.long)
        return torch.as_tensor(np.asarray(X, dtype=np.float32))

    def fit(self, X: Any, T: Any, sample_offsets: Any = None, eval_set: Any = None) -> Self:
        """Fit on ``X`` (n, ...) and targets ``T`` (n, p).  Returns self."""
        if not torch_available():
            raise ImportError("TorchRegressor needs torch: pip install 'sprokr[torch]'")
        import torch

        T = _as_targets(T)
        n = check_paired(X, T, "X", "T")
        c = _loss_fn(self.loss, check_positive(self.loss_delta, "loss_delta"))
        ev = _check_eval_set(eval_set, T.shape[1])
        rng = check_random_state(self.random_state)
        seed = int(rng.integers(2**31 - 1))
        threads = torch.get_num_threads()
        if self.num_threads:
            torch.set_num_threads(int(self.num_threads))
        try:
            Xt = self._tensor(X)
            mu = T.mean(axis=0)
            scale = float(np.sqrt(np.mean((T - mu) ** 2))) or 1.0
            Tt = torch.as_tensor(((T - mu) / scale).astype(np.float32))
            r = np.zeros(n) if sample_offsets is None else np.asarray(sample_offsets, dtype=np.float64)
            rt = torch.as_tensor((r / scale**2).astype(np.float32))
            build = self.module or _default_mlp(tuple(self.hidden_layer_sizes), self.activation, self.dropout)
            with torch.random.fork_rng():
                torch.manual_seed(seed)
                net = build(int(np.prod(Xt.shape[1:])) if Xt.ndim > 1 else 1, T.shape[1])
            opt = torch.optim.Adam(net.parameters(), lr=self.lr, weight_decay=self.weight_decay)
            self.module_, self.mu_, self.scale_, self.n_outputs_ = net, mu, scale, T.shape[1]
            stop = _EarlyStopping(self.patience, self.tol, self.verbose, "TorchRegressor", self.max_epochs)
            bs = max(1, min(int(self.batch_size), n))
            for epoch in range(int(self.max_epochs)):
                net.train()
                total = 0.0
                perm = rng.permutation(n)
                for start in range(0, n, bs):
                    idx = torch.as_tensor(perm[start:start + bs])
                    d2 = ((net(Xt[idx]) - Tt[idx]) ** 2).sum(dim=1) + rt[idx]
                    loss = c(d2 * scale**2).mean()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    total += float(loss.detach()) * len(idx)
                val = None if ev is None else self._val_loss(ev, c)
                if stop.update(epoch, total / n, val, lambda: copy.deepcopy(net.state_dict())):
                    break
            net.load_state_dict(stop.state)
            net.eval()
        finally:
            torch.set_num_threads(threads)
        self.n_epochs_, self.best_loss_, self.history_ = epoch + 1, stop.best, stop.history
        self.n_outputs_ = T.shape[1]
        return self

    def _val_loss(self, ev, c):
        import torch

        Xv, Tv, rv = ev
        G = self.predict(Xv)
        d2 = np.einsum("ij,ij->i", G - Tv, G - Tv) + (0 if rv is None else rv)
        return float(c(torch.as_tensor(d2)).mean())

    def predict(self, X: Any) -> np.ndarray:
        """Predicted targets, (n_q, p) float32."""
        check_is_fitted(self, "module_")
        import torch

        Xt = self._tensor(X)
        out = np.empty((Xt.shape[0], self.n_outputs_), dtype=np.float32)
        self.module_.eval()
        with torch.no_grad():
            for sl in iter_chunks(Xt.shape[0], 4096):
                out[sl] = self.module_(Xt[sl]).numpy()
        return out * np.float32(self.scale_) + self.mu_.astype(np.float32)
