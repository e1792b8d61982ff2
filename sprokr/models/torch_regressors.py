"""Torch surrogate regressors of DSOKR (the ``torch`` extra; torch is imported only at ``fit``).

* :class:`TorchRegressor` (``"torch_mlp"``): a network on vectors (an MLP, a
  ``ResidualMLP`` with ``residual=True``, or any
  ``module=`` builder) trained with a loss ``c(|h(x) - psi(y)|^2_H)`` (``square``,
  ``huber``, ``cauchy`` or a callable).
* :class:`SmilesRegressor` (``"torch_smiles"``) and :class:`TextRegressor`
  (``"torch_text"``): raw strings in -- a tokenizer fitted on the training strings
  (:mod:`sprokr.models.tokenizers`) and a small CNN or transformer encoder
  (``sprokr.models._torch_nets``), so ``DSOKR(regressor="torch_smiles")`` takes SMILES
  and ``DSOKR(regressor="torch_text")`` descriptions as ``X``.

All train with Adam on mini-batches, evaluate the kernel-induced loss on ``eval_set``
after every epoch, keep the best weights, divide the learning rate by ``lr_factor`` on a
plateau (``lr_drops`` times, resuming from the best weights) and stop on the last plateau
(``converged_ = True``); when ``max_epochs`` runs out first, a ``ConvergenceWarning`` is
issued.  Training is seeded (``random_state``) and leaves torch's global generator as it
was.  Saved models keep their networks through the safe format (the built-in networks
are rebuilt from their configuration; a user ``module=`` builder is code and refused).
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Self

import copy
import threading
from contextlib import contextmanager

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from ..deprecation import RenamedParametersMixin
from ..extras import install_hint
from ..persistence import SaveMixin
from ..utils import atomic_fit, check_feature_names, check_numeric_array, check_paired, check_positive, \
    check_random_state, check_random_state_param, check_strings, consistent_read, iter_chunks, set_feature_names
from ._targets import R2ScoreMixin
from .base import check_n_features, set_n_features
from .training import EarlyStopping, check_early_stopping, check_eval_set, check_fit_targets, check_lr_schedule, \
    check_monitor, check_optimiser_params, check_sample_offsets, self_retrieval_mrr, standardise, target_moments, warn_not_converged

__all__ = ["TorchRegressor", "SequenceRegressor", "SmilesRegressor", "TextRegressor", "token_cnn",
           "torch_available", "ROBUST_LOSSES"]

#: loss names of :class:`TorchRegressor`: ``c(t)`` for ``t = |h(x) - psi(y)|^2``
ROBUST_LOSSES = {"square": "c(t) = t", "huber": "c(t) = t if t <= d^2 else 2 d sqrt(t) - d^2",
                 "cauchy": "c(t) = d^2 log(1 + t / d^2)"}


def torch_available() -> bool:
    """True when ``torch`` can be imported (without importing it)."""
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def store_params(obj: Any, values: dict) -> None:
    """Store each constructor argument untouched (scikit-learn's convention): ``store_params(self, locals())``."""
    for name, value in values.items():
        if name not in ("self", "__class__"):
            setattr(obj, name, value)


#: torch's thread count is process-wide: the fits and predictions inside
#: :func:`_torch_threads` at once share one setting, restored by the last to leave (each
#: restoring what it found would leave another call's count in place for good)
_THREADS_LOCK = threading.Lock()
_THREADS_HOLDERS = 0
_THREADS_SAVED: int | None = None


@contextmanager
def _torch_threads(torch: Any, num_threads: Any) -> Iterator[None]:
    """``torch.set_num_threads(num_threads)`` while inside (a no-op for None / 0); the count
    found by the first caller is restored when the last one leaves."""
    global _THREADS_HOLDERS, _THREADS_SAVED
    if not num_threads:
        yield
        return
    with _THREADS_LOCK:
        if _THREADS_HOLDERS == 0:
            _THREADS_SAVED = torch.get_num_threads()
            torch.set_num_threads(int(num_threads))
        _THREADS_HOLDERS += 1
    try:
        yield
    finally:
        with _THREADS_LOCK:
            _THREADS_HOLDERS -= 1
            if _THREADS_HOLDERS == 0 and _THREADS_SAVED is not None:
                torch.set_num_threads(_THREADS_SAVED)
                _THREADS_SAVED = None


def _import_torch():
    if not torch_available():
        raise ImportError(f"the torch regressors need torch, which is not installed (the torch extra): "
                          f"{install_hint('torch')}")
    import torch

    return torch


def _check_loss(loss):
    """``loss``: a name of :data:`ROBUST_LOSSES` or a callable (checked without torch)."""
    if not callable(loss) and loss not in ROBUST_LOSSES:
        raise ValueError(f"unknown loss {loss!r}; use one of {sorted(ROBUST_LOSSES)} or a callable")


def _loss_fn(loss, delta):
    """``c`` applied to per-sample squared kernel distances (a torch tensor)."""
    import torch

    _check_loss(loss)
    d2 = float(delta) ** 2
    if callable(loss):
        return loss
    if loss == "square":
        return lambda t: t
    if loss == "huber":  # Huber on the distance |h - psi|: quadratic, then linear
        return lambda t: torch.where(t <= d2, t, 2 * float(delta) * torch.sqrt(t.clamp_min(d2)) - d2)
    if loss == "cauchy":
        return lambda t: d2 * torch.log1p(t / d2)
    raise AssertionError(loss)  # (checked: _check_loss)


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


def token_cnn(vocab_size: Any, embed_dim: Any = 64, channels: Any = 128, kernel_size: Any = 5,
              hidden: Any = 256, pad_index: Any = 0) -> Callable[[int, int], Any]:
    """Module builder for integer token sequences, for ``TorchRegressor(module=...)``.

    Returns ``build(n_features, n_outputs) -> nn.Module``: a
    ``TokenCNN`` with one convolution width.  Prefer
    :class:`SmilesRegressor` / :class:`TextRegressor`, which tokenize raw strings and are
    saved with the model (a builder function is code: a model using it cannot be saved).
    """

    def build(n_features, n_outputs):
        from ._torch_nets import TokenCNN

        return TokenCNN(vocab_size, n_outputs, embed_dim=embed_dim, channels=channels, kernel_sizes=(kernel_size,),
                        hidden=(hidden,), dropout=0.0, pad_index=pad_index)

    return build


class TorchRegressor(RenamedParametersMixin, SaveMixin, R2ScoreMixin, RegressorMixin, BaseEstimator):
    """A torch network trained on DSOKR targets with the loss ``c(|h(x) - psi(y)|^2_H)``.

    ``|h(x_i) - psi(y_i)|^2_H = |g(x_i) - psi~(y_i)|^2 + r_i`` (``r_i`` the sample offsets),
    so robust losses see the true kernel distance.  Requires ``torch`` (extra ``torch``).

    Parameters
    ----------
    module : callable, optional
        ``module(n_features, n_outputs) -> torch.nn.Module``; default an MLP with
        ``hidden_layer_sizes``.  With a ``module``, integer input arrays are passed as
        ``torch.long`` (token ids, e.g. :func:`token_cnn`); other inputs, and every input
        of the default networks (vectors: a 2-D array), as float32.
    hidden_layer_sizes, activation, dropout : MLP architecture of the default module.
    residual : bool
        Default module: a ``ResidualMLP`` (a linear path
        plus the hidden layers, starting as the linear model) instead of a plain MLP.
    ridge_init : float, optional
        With ``residual=True``: the linear path starts at the ridge regression of the
        targets on ``X`` with this penalty (``min |X W + b - T|^2 + ridge_init |W|^2``,
        closed form), so training starts from the linear model -- on Nystrom kernel features
        (:class:`~sprokr.kernels.KernelFeatures`) that is SISOKR's solution -- and, with an
        ``eval_set``, the starting point is scored too: the kept weights are never worse on
        the validation kernel loss than the linear model.
    loss : {"square", "huber", "cauchy"} or callable on a tensor of squared distances
    loss_delta : float
        Scale ``d`` of the robust losses (in kernel-distance units).
    learning_rate : float
        Adam's initial step size (formerly ``lr``).
    lam : float >= 0
        The penalty on the weights, as AdamW's decoupled weight decay: each step shrinks
        every weight by the factor ``1 - lr_t * lam``, ``lr_t`` the current step size
        (``learning_rate``, divided at each drop) (torch's ``weight_decay``; formerly
        ``weight_decay``).  It is not an L2 term added to the loss, so its scale
        is not that of :class:`MLPSurrogate`'s ``lam``.
    batch_size : int
        Mini-batch size.
    max_epochs, n_iter_no_change, tol : early stopping on the validation kernel-induced loss
        (the training loss without ``eval_set``); ``n_iter_no_change`` (formerly
        ``patience``): epochs without a relative improvement of ``tol`` before a plateau.
    lr_drops, lr_factor : learning-rate drops on a plateau (see :class:`MLPSurrogate`).
    monitor : {"loss", "mrr"}
        Early stopping on the validation kernel-induced loss or on the validation
        self-retrieval MRR (see :class:`MLPSurrogate`).
    num_threads : int, optional
        ``torch.set_num_threads`` during fit/predict (restored afterwards; calls at once in
        several threads share the setting, restored when the last one ends).
    random_state : None, int or numpy.random.Generator
    verbose : int

    Attributes
    ----------
    module_ : torch.nn.Module
    n_epochs_, best_epoch_, best_loss_, best_score_, history_ : as :class:`MLPSurrogate`
        (``best_epoch_ = -1``: the ``ridge_init`` starting weights were kept).
    initial_loss_, initial_score_ : float or None
        Validation loss / MRR of the ``ridge_init`` starting weights.
    converged_ : bool
        False when ``max_epochs`` ran out before the last plateau (``ConvergenceWarning``).
    n_features_in_ : int
        Number of input features seen in ``fit``, for vector inputs (a 2-D float array);
        not set for token ids or inputs of more dimensions.

    The former names ``lr``, ``weight_decay`` and ``patience`` still work until sprokr 0.3,
    with a ``FutureWarning`` (``docs/parameters.md``).
    """

    #: deprecated parameter names (sprokr.deprecation): old -> new
    renamed_parameters = {"lr": "learning_rate", "weight_decay": "lam", "patience": "n_iter_no_change"}

    def __init__(self, module: Any = None, hidden_layer_sizes: Any = (256,), activation: Any = "relu",
                 dropout: Any = 0.0, residual: Any = False, ridge_init: Any = None, loss: Any = "square",
                 loss_delta: Any = 1.0, learning_rate: Any = 1e-3, lam: Any = 0.0, batch_size: Any = 128,
                 max_epochs: Any = 100, n_iter_no_change: Any = 10, tol: Any = 1e-4, lr_drops: Any = 0,
                 lr_factor: Any = 10.0, monitor: Any = "loss", num_threads: Any = None,
                 random_state: Any = None, verbose: Any = 0) -> None:
        store_params(self, locals())

    # -- hooks of the subclasses ----------------------------------------------------------
    def _check_inputs(self, X, name):
        """The inputs as the network takes them, checked (``name`` in the errors): int64 token
        ids for an integer array given to a ``module=``, else finite float32 numbers -- a 2-D
        (n_samples, n_features) array for the built-in MLPs, which read vectors."""
        try:
            A = np.asarray(X)
        except (TypeError, ValueError):  # ragged: check_numeric_array names it
            A = None
        if A is not None and A.dtype.kind in "iu" and self.module is not None:  # token ids
            return A.astype(np.int64, copy=False)
        A = check_numeric_array(X, name, np.float32, type(self).__name__, ndim=2 if self.module is None else None)
        if A.ndim > 1 and 0 in A.shape[1:]:  # a network of no inputs would predict one constant
            raise ValueError(f"{name} has 0 feature(s) (shape={A.shape}) while a minimum of 1 is required by "
                             f"{type(self).__name__}")
        return A

    def _fit_inputs(self, X):
        """Learn any input preprocessing from the (checked) training inputs (none for vectors)."""

    def _tensor(self, X):
        """The checked inputs as a tensor (shares the array's memory)."""
        import torch

        return torch.as_tensor(X)

    def _build(self, Xt, n_outputs):
        n_features = int(np.prod(Xt.shape[1:])) if Xt.ndim > 1 else 1
        if self.module is not None:
            return self.module(n_features, n_outputs)
        if self.residual:
            from ._torch_nets import ResidualMLP

            return ResidualMLP(n_features, n_outputs, tuple(self.hidden_layer_sizes), self.activation, self.dropout)
        return _default_mlp(tuple(self.hidden_layer_sizes), self.activation, self.dropout)(n_features, n_outputs)

    # -- training -------------------------------------------------------------------------
    def check_params(self) -> Self:
        """Validate the parameters without data (clear errors naming them); torch is not
        needed.

        Checks ``loss_delta`` (> 0), ``loss`` (a name of ``ROBUST_LOSSES`` or a callable),
        ``lam`` (>= 0), ``learning_rate`` (> 0), ``dropout`` (in [0, 1)), ``batch_size`` and
        ``max_epochs``, ``n_iter_no_change`` (integers >= 1), ``tol`` (>= 0), ``lr_drops`` (an
        integer >= 0), ``lr_factor`` (> 1), ``monitor`` and ``random_state`` (its type; nothing is drawn); the sequence
        regressors also ``architecture``, the CNN's ``kernel_sizes`` and their tokenizer's
        parameters (``max_length``, ``min_count``).  ``fit`` runs the same checks first, with the same messages;
        ``monitor="mrr"`` without validation data and ``ridge_init`` (which needs vector
        inputs) are refused by ``fit``, and the network's sizes by torch when it is built.
        Nothing of the estimator is changed.

        Returns
        -------
        self

        Raises
        ------
        ValueError, TypeError
            A parameter value is invalid (the message names it).
        """
        check_positive(self.loss_delta, "loss_delta")
        _check_loss(self.loss)
        check_optimiser_params(self.lam, self.learning_rate, self.batch_size)
        d = self.dropout
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, float, np.number)) or not 0 <= d < 1:
            raise ValueError(f"dropout must be a probability in [0, 1), got {d!r}")
        check_lr_schedule(self.max_epochs, self.lr_drops, self.lr_factor)
        check_early_stopping(self.n_iter_no_change, self.tol)
        check_monitor(self.monitor)
        check_random_state_param(self.random_state)
        return self

    @atomic_fit
    def fit(self, X: Any, T: Any, sample_offsets: Any = None, eval_set: Any = None) -> Self:
        """Fit on ``X`` (n, ...) and targets ``T`` (n, p).  Returns self.

        Parameters
        ----------
        X : array-like
            Vectors (n, d) for the default networks, what the ``module`` takes otherwise
            (token ids: an integer array), strings for the sequence regressors.
        T : array-like of shape (n, p) or (n,)
            Finite targets.
        sample_offsets : array-like of shape (n,), optional
            Finite offsets ``r_i >= 0`` (module docstring of :mod:`sprokr.models.regressors`).
        eval_set : tuple, optional
            ``(X_val, T_val)`` or ``(X_val, T_val, offsets_val)``, checked like the training data.

        Raises
        ------
        ValueError
            NaN or infinite targets, offsets or (numeric) inputs, and eval_set inputs of
            another width than ``X``, naming the argument; raised before anything is
            trained, so a refit keeps the previous model.  The parameters are checked first
            (:meth:`check_params`).
        """
        self.check_params()
        torch = _import_torch()
        T = check_fit_targets(T, "T")
        n = check_paired(X, T, "X", "T")
        r = check_sample_offsets(sample_offsets, n)
        c = _loss_fn(self.loss, self.loss_delta)
        ev = check_eval_set(eval_set, T.shape[1])
        if self.monitor == "mrr" and ev is None:
            raise ValueError("monitor='mrr' needs validation data (eval_set, or DSOKR's validation_fraction)")
        set_feature_names(self, X)  # scikit-learn's feature_names_in_ (dataframe inputs)
        X = self._check_inputs(X, "X")
        Xv = None if ev is None else self._check_inputs(ev[0], "eval_set inputs")
        if Xv is not None and getattr(X, "dtype", None) == np.float32 and Xv.shape[1:] != X.shape[1:]:
            # the network is built for the training inputs' width: found here, not by torch mid-training
            raise ValueError(f"eval_set inputs have shape {Xv.shape}, but {type(self).__name__} is fitted on X "
                             f"of shape {X.shape}: expected (n_val, {', '.join(map(str, X.shape[1:]))})")
        rng = check_random_state(self.random_state)
        seed = int(rng.integers(2**31 - 1))
        # learned state starts here: a failure anywhere below (a bad ridge_init, inputs the
        # new vocabulary cannot encode, training) restores the previous model
        previous = dict(self.__dict__)
        try:
            with _torch_threads(torch, self.num_threads), torch.random.fork_rng(devices=[]):
                # (seeded init and dropout; the global generator restored)
                torch.manual_seed(seed)
                self._fit_inputs(X)
                Xt = self._tensor(X)
                Xvt = None if Xv is None else self._tensor(Xv)
                stop = self._train(torch, Xt, T, sample_offsets=r, ev=ev, Xv=Xvt, c=c, rng=rng)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(previous)
            raise
        # vectors only (scikit-learn's convention): token ids and strings have no feature count
        set_n_features(self, X if getattr(X, "dtype", None) == np.float32 and X.ndim == 2 else None)
        self.n_epochs_, self.best_epoch_, self.history_ = len(stop.history), stop.best_epoch, stop.history
        kept: tuple[Any, Any] = stop.best_values() if ev is not None else (stop.best, None)
        self.best_loss_, self.best_score_ = kept
        self.initial_loss_, self.initial_score_ = stop.initial
        self.converged_ = stop.converged
        if not stop.converged:
            warn_not_converged(type(self).__name__, stop)
        return self

    def _train(self, torch, Xt, T, *, sample_offsets, ev, Xv, c, rng):
        n = T.shape[0]
        mu, scale = target_moments(T)  # each minibatch is standardised as it is drawn
        r = np.zeros(n) if sample_offsets is None else sample_offsets
        rt = torch.as_tensor((r / scale**2).astype(np.float32))
        net = self._build(Xt, T.shape[1])
        self.module_, self.mu_, self.scale_, self.n_outputs_ = net, mu, scale, T.shape[1]
        lr = float(self.learning_rate)
        opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=float(self.lam))
        stop = EarlyStopping(self.n_iter_no_change, self.tol, self.verbose, type(self).__name__, int(self.max_epochs),
                             int(self.lr_drops))
        if self._ridge_start(torch, net, Xt, T, mu, scale) and ev is not None:
            # the linear model is a candidate too: the kept weights are never worse than it
            stop.start_from(*self._validate(Xv, ev, c), copy.deepcopy(net.state_dict()))
        bs = max(1, min(int(self.batch_size), n))
        for epoch in range(int(self.max_epochs)):
            net.train()
            total = 0.0
            perm = rng.permutation(n)
            for start in range(0, n, bs):
                rows = perm[start:start + bs]
                idx = torch.as_tensor(rows)
                d2 = ((net(Xt[idx]) - torch.as_tensor(standardise(T[rows], mu, scale))) ** 2).sum(dim=1) + rt[idx]
                loss = c(d2 * scale**2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += float(loss.detach()) * len(idx)
            val, score = (None, None) if ev is None else self._validate(Xv, ev, c)
            if not stop.update(epoch, total / n, val, lambda: copy.deepcopy(net.state_dict()), score):
                continue
            if stop.plateau():
                break
            # plateau: resume from the best weights with a smaller step and a fresh Adam state
            lr /= float(self.lr_factor)
            net.load_state_dict(stop.state)
            opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=float(self.lam))
        net.load_state_dict(stop.state)
        net.eval()
        return stop

    def _ridge_start(self, torch, net, Xt, T, mu, scale):
        """Set the linear path of a ResidualMLP to the ridge solution; True when done."""
        if self.ridge_init is None:
            return False
        alpha = check_positive(self.ridge_init, "ridge_init")
        if not self.residual or self.module is not None or Xt.ndim != 2 or Xt.dtype == torch.long:
            raise ValueError("ridge_init needs residual=True, no module= and vector (float) inputs")
        import scipy.linalg as sla

        Z = Xt.numpy().astype(np.float64)
        zm = Z.mean(axis=0)
        Zc = Z - zm
        G = Zc.T @ Zc
        G[np.diag_indices_from(G)] += alpha
        W = sla.solve(G, Zc.T @ (T - mu), assume_a="pos")  # (d, p); the intercept is mu - zm W
        with torch.no_grad():  # the network predicts (T - mu) / scale
            net.linear.weight.copy_(torch.as_tensor((W / scale).T.astype(np.float32)))
            net.linear.bias.copy_(torch.as_tensor((-(zm @ W) / scale).astype(np.float32)))
        return True

    def _validate(self, Xv, ev, c):
        """Validation loss ``mean c(|h(x) - psi(y)|^2)`` and (``monitor="mrr"``) MRR."""
        import torch

        _, Tv, rv = ev
        G = self._predict_tensor(Xv).astype(np.float64)
        d2 = np.einsum("ij,ij->i", G - Tv, G - Tv) + (0 if rv is None else rv)
        score = self_retrieval_mrr(G, Tv, rv) if self.monitor == "mrr" else None
        return float(c(torch.as_tensor(d2)).mean()), score

    # -- prediction -----------------------------------------------------------------------
    def _predict_tensor(self, Xt):
        import torch

        out = np.empty((Xt.shape[0], self.n_outputs_), dtype=np.float32)
        training = self.module_.training
        self.module_.eval()
        with torch.no_grad():
            for sl in iter_chunks(Xt.shape[0], 1024):
                out[sl] = self.module_(Xt[sl]).numpy()
        self.module_.train(training)
        return out * np.float32(self.scale_) + self.mu_.astype(np.float32)

    @consistent_read
    def predict(self, X: Any) -> np.ndarray:
        """Predicted targets, (n_q, p) float32."""
        check_is_fitted(self, "module_")
        torch = _import_torch()
        with _torch_threads(torch, self.num_threads):
            check_feature_names(self, X)
            X = self._check_inputs(X, "X")
            check_n_features(self, X)  # a clear error, not torch's "mat1 and mat2 shapes cannot be multiplied"
            return self._predict_tensor(self._tensor(X))


_ARCHITECTURES = ("cnn", "transformer")


class SequenceRegressor(TorchRegressor):
    """Strings in: a tokenizer fitted on the training strings and a CNN or transformer encoder.

    Subclasses set the tokenizer (:class:`SmilesRegressor`, :class:`TextRegressor`).

    Parameters
    ----------
    architecture : {"cnn", "transformer"}, default "cnn"
        ``TokenCNN`` or
        ``TokenTransformer``.
    embed_dim : int, default 64
        Token embedding width (the transformer's ``d_model``).
    channels : int, default 256
        CNN: filters per width.
    kernel_sizes : sequence of int, default (3, 5, 7)
        CNN: the filter widths (tokens).
    n_heads : int, default 4
        Transformer encoder: attention heads.
    n_layers : int, default 2
        Transformer encoder: layers.
    ff_dim : int, default 256
        Transformer encoder: width of the feed-forward layers.
    hidden_layer_sizes : sequence of int, default (512,)
        The MLP head after pooling: its hidden layer widths.
    dropout : float, default 0.1
        The MLP head after pooling: its dropout rate.
    max_length : int, optional
        Longest token sequence (longer inputs are truncated); default: the longest
        training sequence (text: at most 256).
    min_count : int, default 1
        Tokens seen fewer times in the training strings become ``<unk>``.
    loss : {"square", "huber", "cauchy"} or callable on a tensor of squared distances, default "square"
        As :class:`TorchRegressor`.
    loss_delta : float, default 1.0
        Scale ``d`` of the robust losses (in kernel-distance units).
    learning_rate : float, default 1e-3
        Adam's initial step size.
    lam : float >= 0, default 1e-4
        The penalty on the weights, as AdamW's decoupled weight decay (see :class:`TorchRegressor`).
    batch_size : int, default 64
        Mini-batch size.
    max_epochs : int, default 200
        Epoch budget of the early stopping on the validation kernel-induced loss.
    n_iter_no_change : int, default 10
        Epochs without a relative improvement of ``tol`` before a plateau.
    tol : float, default 1e-4
        Relative improvement that resets ``n_iter_no_change``.
    lr_drops : int, default 2
        Learning-rate drops on a plateau, resuming from the best weights (see :class:`MLPSurrogate`).
    lr_factor : float > 1, default 10.0
        The learning rate is divided by it at each drop.
    monitor : {"loss", "mrr"}, default "loss"
        Early stopping on the validation kernel-induced loss or on the validation
        self-retrieval MRR (see :class:`MLPSurrogate`).
    num_threads : int, optional
        ``torch.set_num_threads`` during fit/predict (restored afterwards).
    random_state : None, int or numpy.random.Generator
        Seeds the training (torch's global generator is left as it was).
    verbose : int, default 0
        Verbosity of the training.

    Attributes
    ----------
    tokenizer_ : SmilesTokenizer or WordTokenizer
        Fitted on the training strings (saved with the model).
    module_, n_epochs_, best_epoch_, best_loss_, history_, converged_ : as :class:`TorchRegressor`.
    """

    def __init__(self, architecture: Any = "cnn", embed_dim: Any = 64, channels: Any = 256,
                 kernel_sizes: Any = (3, 5, 7), n_heads: Any = 4, n_layers: Any = 2, ff_dim: Any = 256,
                 hidden_layer_sizes: Any = (512,), dropout: Any = 0.1, max_length: Any = None,
                 min_count: Any = 1, loss: Any = "square", loss_delta: Any = 1.0, learning_rate: Any = 1e-3,
                 lam: Any = 1e-4, batch_size: Any = 64, max_epochs: Any = 200, n_iter_no_change: Any = 10,
                 tol: Any = 1e-4, lr_drops: Any = 2, lr_factor: Any = 10.0, monitor: Any = "loss",
                 num_threads: Any = None, random_state: Any = None, verbose: Any = 0) -> None:
        store_params(self, locals())

    def _make_tokenizer(self):  # abstract: TypeError, as for an abstract class (check_params says it without data)
        raise TypeError(f"{type(self).__name__} is the base class of SmilesRegressor and TextRegressor, without a "
                        "tokenizer: use one of them")

    def check_params(self) -> Self:
        """Validate the parameters without data: :meth:`TorchRegressor.check_params`,
        ``architecture``, ``kernel_sizes`` (CNN) and the tokenizer's parameters.  Returns self."""
        super().check_params()
        if self.architecture not in _ARCHITECTURES:
            raise ValueError(f"architecture must be one of {_ARCHITECTURES}, got {self.architecture!r}")
        if self.architecture == "cnn":  # (an empty tuple failed in torch.cat, mid-fit)
            ks = self.kernel_sizes
            if isinstance(ks, (str, bytes)) or not isinstance(ks, (tuple, list)) or not ks or any(
                    isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1 for k in ks):
                raise ValueError(f"kernel_sizes must be a non-empty sequence of integers >= 1 (the CNN's filter "
                                 f"widths, in tokens), got {ks!r}")
        self._make_tokenizer().check_params()
        return self

    def _fit_inputs(self, X):
        self.tokenizer_ = self._make_tokenizer().fit(X)

    def _check_inputs(self, X, name):
        return check_strings(X, self._make_tokenizer().what, name, type(self).__name__)

    def _tensor(self, X):
        import torch

        check_is_fitted(self, "tokenizer_")
        return torch.as_tensor(self.tokenizer_.transform(X), dtype=torch.long)

    def _ridge_start(self, torch, net, Xt, T, mu, scale):
        return False  # no linear path on token ids

    def _build(self, Xt, n_outputs):
        from ._torch_nets import TokenCNN, TokenTransformer

        vocab, hidden = self.tokenizer_.vocabulary_size_, tuple(self.hidden_layer_sizes)
        if self.architecture == "cnn":
            return TokenCNN(vocab, n_outputs, self.embed_dim, self.channels, tuple(self.kernel_sizes), hidden,
                            self.dropout)
        return TokenTransformer(vocab, n_outputs, self.tokenizer_.max_length_, self.embed_dim, self.n_heads,
                                self.n_layers, self.ff_dim, hidden, self.dropout)


class SmilesRegressor(SequenceRegressor):
    """:class:`SequenceRegressor` on SMILES strings (atom-level :class:`SmilesTokenizer`).

    Registered as ``"torch_smiles"``: ``DSOKR(regressor="torch_smiles")`` takes SMILES as ``X``.

    Parameters
    ----------
    architecture : {"cnn", "transformer"}, default "cnn"
        ``TokenCNN`` or
        ``TokenTransformer``.
    embed_dim : int, default 64
        Token embedding width (the transformer's ``d_model``).
    channels : int, default 256
        CNN: filters per width.
    kernel_sizes : sequence of int, default (3, 5, 7)
        CNN: the filter widths (tokens).
    n_heads : int, default 4
        Transformer encoder: attention heads.
    n_layers : int, default 2
        Transformer encoder: layers.
    ff_dim : int, default 256
        Transformer encoder: width of the feed-forward layers.
    hidden_layer_sizes : sequence of int, default (512,)
        The MLP head after pooling: its hidden layer widths.
    dropout : float, default 0.1
        The MLP head after pooling: its dropout rate.
    max_length : int, optional
        Longest token sequence (longer inputs are truncated); default: the longest
        training sequence.
    min_count : int, default 1
        Tokens seen fewer times in the training strings become ``<unk>``.
    loss : {"square", "huber", "cauchy"} or callable on a tensor of squared distances, default "square"
        As :class:`TorchRegressor`.
    loss_delta : float, default 1.0
        Scale ``d`` of the robust losses (in kernel-distance units).
    learning_rate : float, default 1e-3
        Adam's initial step size.
    lam : float >= 0, default 1e-4
        The penalty on the weights, as AdamW's decoupled weight decay (see :class:`TorchRegressor`).
    batch_size : int, default 64
        Mini-batch size.
    max_epochs : int, default 200
        Epoch budget of the early stopping on the validation kernel-induced loss.
    n_iter_no_change : int, default 10
        Epochs without a relative improvement of ``tol`` before a plateau.
    tol : float, default 1e-4
        Relative improvement that resets ``n_iter_no_change``.
    lr_drops : int, default 2
        Learning-rate drops on a plateau, resuming from the best weights (see :class:`MLPSurrogate`).
    lr_factor : float > 1, default 10.0
        The learning rate is divided by it at each drop.
    monitor : {"loss", "mrr"}, default "loss"
        Early stopping on the validation kernel-induced loss or on the validation
        self-retrieval MRR (see :class:`MLPSurrogate`).
    num_threads : int, optional
        ``torch.set_num_threads`` during fit/predict (restored afterwards).
    random_state : None, int or numpy.random.Generator
        Seeds the training (torch's global generator is left as it was).
    verbose : int, default 0
        Verbosity of the training.
    """

    def _make_tokenizer(self):
        from .tokenizers import SmilesTokenizer

        return SmilesTokenizer(max_length=self.max_length, min_count=self.min_count)


class TextRegressor(SequenceRegressor):
    """:class:`SequenceRegressor` on texts (lowercased :class:`WordTokenizer`, max. 256 tokens by default).

    Registered as ``"torch_text"``: ``DSOKR(regressor="torch_text")`` takes descriptions as ``X``.

    Parameters
    ----------
    architecture : {"cnn", "transformer"}, default "cnn"
        ``TokenCNN`` or
        ``TokenTransformer``.
    embed_dim : int, default 128
        Token embedding width (the transformer's ``d_model``).
    channels : int, default 256
        CNN: filters per width.
    kernel_sizes : sequence of int, default (1, 2, 3)
        CNN: the filter widths (tokens).
    n_heads : int, default 4
        Transformer encoder: attention heads.
    n_layers : int, default 2
        Transformer encoder: layers.
    ff_dim : int, default 256
        Transformer encoder: width of the feed-forward layers.
    hidden_layer_sizes : sequence of int, default (512,)
        The MLP head after pooling: its hidden layer widths.
    dropout : float, default 0.1
        The MLP head after pooling: its dropout rate.
    max_length : int or None, default 256
        Longest token sequence (longer inputs are truncated; None: the longest training sequence).
    min_count : int, default 2
        Tokens seen fewer times in the training strings become ``<unk>``.
    loss : {"square", "huber", "cauchy"} or callable on a tensor of squared distances, default "square"
        As :class:`TorchRegressor`.
    loss_delta : float, default 1.0
        Scale ``d`` of the robust losses (in kernel-distance units).
    learning_rate : float, default 1e-3
        Adam's initial step size.
    lam : float >= 0, default 1e-4
        The penalty on the weights, as AdamW's decoupled weight decay (see :class:`TorchRegressor`).
    batch_size : int, default 64
        Mini-batch size.
    max_epochs : int, default 200
        Epoch budget of the early stopping on the validation kernel-induced loss.
    n_iter_no_change : int, default 10
        Epochs without a relative improvement of ``tol`` before a plateau.
    tol : float, default 1e-4
        Relative improvement that resets ``n_iter_no_change``.
    lr_drops : int, default 2
        Learning-rate drops on a plateau, resuming from the best weights (see :class:`MLPSurrogate`).
    lr_factor : float > 1, default 10.0
        The learning rate is divided by it at each drop.
    monitor : {"loss", "mrr"}, default "loss"
        Early stopping on the validation kernel-induced loss or on the validation
        self-retrieval MRR (see :class:`MLPSurrogate`).
    num_threads : int, optional
        ``torch.set_num_threads`` during fit/predict (restored afterwards).
    random_state : None, int or numpy.random.Generator
        Seeds the training (torch's global generator is left as it was).
    verbose : int, default 0
        Verbosity of the training.
    """

    def __init__(self, architecture: Any = "cnn", embed_dim: Any = 128, channels: Any = 256,
                 kernel_sizes: Any = (1, 2, 3), n_heads: Any = 4, n_layers: Any = 2, ff_dim: Any = 256,
                 hidden_layer_sizes: Any = (512,), dropout: Any = 0.1, max_length: Any = 256,
                 min_count: Any = 2, loss: Any = "square", loss_delta: Any = 1.0, learning_rate: Any = 1e-3,
                 lam: Any = 1e-4, batch_size: Any = 64, max_epochs: Any = 200, n_iter_no_change: Any = 10,
                 tol: Any = 1e-4, lr_drops: Any = 2, lr_factor: Any = 10.0, monitor: Any = "loss",
                 num_threads: Any = None, random_state: Any = None, verbose: Any = 0) -> None:
        store_params(self, locals())  # the same parameters as SequenceRegressor, other defaults

    def _make_tokenizer(self):
        from .tokenizers import WordTokenizer

        return WordTokenizer(max_length=self.max_length, min_count=self.min_count)
