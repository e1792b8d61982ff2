"""DSOKR: deep sketched output kernel regression, and ensembles over output sketches.

El Ahmad et al. (2024).  With an output sketch ``R_y`` (m_y x n) and the eigenpairs
``(U, D)`` of ``K~_y = R_y K_y R_y^T`` (rank p), the sketched output basis
``e~_j = sum_i [R_y^T U D^-1/2]_ij psi(y_i)`` is orthonormal in the output RKHS, and the
coordinates of ``psi(y)`` on it are ``psi~(y) = D^-1/2 U^T R_y k_y^y`` (p,) -- the
:class:`~sprokr.numerics.SketchedFeatures` of the output kernel.  Any regressor
``g_W: X -> R^p`` then defines ``h(x) = sum_j g_W(x)_j e~_j`` and::

    |h(x) - psi(y)|^2_H = |g_W(x) - psi~(y)|^2 + r(y),    r(y) = k(y, y) - |psi~(y)|^2 >= 0,

so training ``g_W`` on targets ``psi~(y_i)`` with the square loss minimises the
kernel-induced loss.  Decoding is ``argmax_c g_W(x)^T psi~(c) - k(c, c)/2`` over a
candidate set, through the same decoders and :class:`~sprokr.CandidateIndex` as SISOKR.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Self, Tuple

import inspect
import time

import numpy as np
from numpy.typing import ArrayLike, DTypeLike
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import check_is_fitted

from ..deprecation import RenamedParametersMixin
from ..decoders.candidates import CandidateIndex
from ..numerics import DEFAULT_RCOND, candidate_offsets
from ..registry import get_registry
from ..kernels import VectorKernel, resolve_kernel
from ..numerics import resolve_executor
from ..sketches import check_sketch_for, drawing_state, make_sketch
from ..progress import log_estimator
from ..utils import NamedPrepare, atomic_fit, check_bool, check_chunk_size, check_feature_names, check_integer, \
    check_paired, check_positive, check_random_state, check_random_state_param, consistent_read, frame_as_array, \
    num_samples, resolve_dtype, set_feature_names, take, unique_indices
# apart from the estimators: the numeric check of the regressor's inputs, the search of the
# ensemble's max aggregation, the output basis and targets and the validation split (both
# re-exported here)
from ._dsokr_inputs import check_regressor_inputs, takes_numeric_inputs
from ._dsokr_search import max_scores, max_topk
from ._dsokr_targets import sketched_output_basis, sketched_output_targets
from ._dsokr_validation import check_validation_fraction, validation_split
from .base import OUTPUT_DTYPE, ExecutorParamsMixin, OutputKernelModel, make_decoder, new_index_token

if TYPE_CHECKING:  # imported for the annotations only
    from ..decoders.base import Decoder
    from ..kernels.base import Kernel
    from ..sketches.base import Sketch
    from ..types import RandomStateLike, Samples

__all__ = ["DSOKR", "DSOKREnsemble", "sketched_output_targets", "sketched_output_basis", "validation_split",
           "check_validation_fraction"]


def _check_validation_widths(X, Y, Xv, Yvp, ky):
    """The pairs of ``validation_data`` must have the training pairs' widths: the raw inputs'
    (which ``n_features_in_`` records) when both are 2-D, and the prepared outputs' for a
    vector output kernel (other kernels' prepared widths may differ legitimately, see
    :func:`~sprokr.models.base.check_output_width`).  ``Yvp``: the prepared ``Y_val``.
    Checked before the targets are computed, whose error named neither."""
    shape, vshape = getattr(X, "shape", None), getattr(Xv, "shape", None)
    if shape is not None and vshape is not None and len(shape) == len(vshape) == 2 and shape[1] != vshape[1]:
        raise ValueError(f"validation_data: X_val has {vshape[1]} columns, the training X {shape[1]}: "
                         f"expected shape (n_val, {shape[1]})")
    if isinstance(ky, VectorKernel) and len(getattr(Yvp, "shape", ())) == 2:
        d = ky.prepare_outputs(take(Y, np.arange(1))).shape[1]  # (one training row gives the width)
        if Yvp.shape[1] != d:
            raise ValueError(f"validation_data: Y_val has {Yvp.shape[1]} columns, the training Y {d}: "
                             f"expected shape (n_val, {d})")


def _accepts(func, name):
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return name in params  # not **kwargs: a Pipeline forwards those to its steps and fails


class DSOKR(ExecutorParamsMixin, OutputKernelModel, BaseEstimator):
    """Deep sketched output kernel regression.

    Parameters
    ----------
    output_kernel : str or Kernel
    output_sketch : str or Sketch
        Output sketch (``subsample``, ``gaussian``, ``psg``, ...; see ``sprokr plugins``).
    m_y : int, optional
        Output sketch size (when the sketch is given by name).
    regressor : str or estimator
        Registered surrogate regressor (``mlp``, ``kernel_ridge``, ``ridge``; with torch
        ``torch_mlp``, ``torch_smiles`` and ``torch_text``, which take raw SMILES / texts)
        or any scikit-learn style regressor instance (cloned, never modified).  It must
        return ``p`` columns, ``p`` the rank of ``R_y K_y R_y^T`` (``output_rank_``).
    output_kernel_params, output_sketch_params, regressor_params : dict, optional
        Parameters of components given by name.
    validation_fraction : float, optional
        If set and no ``validation_data`` is given to ``fit``, this fraction of the training
        pairs is held out (seeded) for early stopping of regressors that support it.
    decoder, decoder_params : decoder by name (default ``"candidates"``)
    rcond : float, optional
        Relative eigenvalue threshold of the output basis.
    chunk_size : int, optional
    max_memory_mb : float, optional
        Budget of one score block while decoding (handed to the decoder).
    executor, executor_params : executor of the output-side passes (default ``"local"``;
        a ``dask.distributed.Client`` is shared, not copied, by ``sklearn.base.clone``).
    random_state : None, int, numpy.random.Generator or RandomState
        Seeds the output sketch, the validation split and (when it has a
        ``random_state`` parameter left to None) the regressor.  None: the output sketch is
        drawn with its own ``random_state`` (of a sketch instance or in ``output_sketch_params``), if any.
    verbose : int
        Print the training phases (and, passed to built-in regressors, their epochs).
    default_index : bool, default True
        Build ``default_index_`` (the distinct training outputs, embedded) at fit; False
        skips it (see :class:`~sprokr.SISOKR`): ``predict`` then needs ``candidates``.

    Attributes
    ----------
    output_kernel_ : Kernel
    output_sketch_matrix_ : SketchMatrix
    output_features_ : SketchedFeatures
        ``transform(Yp)`` gives ``psi~`` of prepared outputs.
    output_rank_ : int
        ``p``.
    regressor_ : fitted regressor
    default_index_ : CandidateIndex of the distinct training outputs, or None
    index_token_ : str
    validation_loss_ : float or None
        Kernel-induced loss ``mean |h(x) - psi(y)|^2_H`` on the validation data.
    n_train_, fit_time_ : int, float
    """

    def __init__(self, output_kernel: str | Kernel = "gaussian", output_sketch: str | Sketch | None = "subsample",
                 m_y: int | None = 100, regressor: Any = "mlp", output_kernel_params: Mapping[str, Any] | None = None,
                 output_sketch_params: Mapping[str, Any] | None = None,
                 regressor_params: Mapping[str, Any] | None = None, validation_fraction: float | None = None,
                 decoder: str | Decoder = "candidates", decoder_params: Mapping[str, Any] | None = None,
                 rcond: float | None = None, chunk_size: int | None = None, max_memory_mb: float | None = None,
                 executor: Any = "local", executor_params: Mapping[str, Any] | None = None,
                 random_state: RandomStateLike = None, verbose: bool | int = 0, default_index: bool = True) -> None:
        self.output_kernel = output_kernel
        self.output_sketch = output_sketch
        self.m_y = m_y
        self.regressor = regressor
        self.output_kernel_params = output_kernel_params
        self.output_sketch_params = output_sketch_params
        self.regressor_params = regressor_params
        self.validation_fraction = validation_fraction
        self.decoder = decoder
        self.decoder_params = decoder_params
        self.rcond = rcond
        self.chunk_size = chunk_size
        self.max_memory_mb = max_memory_mb
        self.executor = executor
        self.executor_params = executor_params
        self.random_state = random_state
        self.verbose = verbose
        self.default_index = default_index

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # the built-in regressors take scipy sparse inputs
        tags.target_tags.required = True
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        return tags

    def _log(self, msg):
        log_estimator(self, msg)

    def _regressor_component(self):
        """The regressor the parameters give (created from its name, or the user's instance,
        unchanged): checked to have ``fit`` and ``predict``."""
        # a plugin's factory returning something else is named (PluginComponentError)
        reg = get_registry().create("regressor", self.regressor, self.regressor_params, methods=("fit", "predict"))
        if not (hasattr(reg, "fit") and hasattr(reg, "predict")):  # an instance given by the user
            raise TypeError(f"regressor must have fit and predict methods; got {type(reg).__name__}")
        return reg

    def _make_regressor(self, reg, rng):
        """The regressor to fit, from :meth:`_regressor_component`'s ``reg``."""
        if not isinstance(self.regressor, str):
            reg = clone(reg)  # never fit the user's instance
        if hasattr(reg, "get_params"):
            params = reg.get_params(deep=False)
            if "random_state" in params and params["random_state"] is None:
                reg.set_params(random_state=int(rng.integers(2**31 - 1)))
            if self.verbose and params.get("verbose", None) in (0, False):
                reg.set_params(verbose=self.verbose)
        return reg

    def _checked_params(self) -> dict[str, Any]:
        """The checks of :meth:`check_params` (nothing of ``self`` or of its parameters is
        changed): the components the parameters resolve to, by name."""
        vf = check_validation_fraction(self.validation_fraction)
        rcond = DEFAULT_RCOND if self.rcond is None else check_positive(self.rcond, "rcond", strict=False)
        chunk = check_chunk_size(self.chunk_size)
        check_bool(self.default_index, "default_index")
        check_random_state_param(self.random_state)
        ky = resolve_kernel(self.output_kernel, self.output_kernel_params, "output", OUTPUT_DTYPE)
        sy = make_sketch(self.output_sketch, self.m_y, self.output_sketch_params, "output")
        if sy is None:
            raise ValueError("DSOKR needs an output sketch (output_sketch=None was given)")
        decoder = make_decoder(self.decoder, self.decoder_params, self.max_memory_mb)
        executor = resolve_executor(self.executor, self.executor_params)
        reg = self._regressor_component()
        # a regressor that trains in float32 gets float32 targets (half the n x p array)
        tdtype = resolve_dtype(getattr(reg, "target_dtype", OUTPUT_DTYPE), f"{type(reg).__name__}.target_dtype")
        return dict(vf=vf, rcond=rcond, chunk=chunk, ky=ky, sy=sy, decoder=decoder, executor=executor, reg=reg,
                    tdtype=tdtype)

    def check_params(self) -> Self:
        """Validate the parameters without data (clear errors naming them).

        Checks ``validation_fraction`` (None or in (0, 1)), ``rcond`` (>= 0),
        ``chunk_size``, ``default_index``, ``random_state`` (its type; nothing is drawn),
        the output kernel (registered name, ``output_kernel_params``, its own
        ``check_params``), the output sketch (required; registered name,
        ``output_sketch_params``, ``m_y`` an integer >= 1), the decoder (with
        ``decoder_params`` and ``max_memory_mb``), the executor, and the regressor
        (registered name and ``regressor_params``, or an instance with ``fit`` and
        ``predict``; its ``target_dtype``).  ``fit`` runs the same checks first, with the
        same messages; the checks that need the data (``m_y`` larger than the number of
        samples, the sketch's ``validate(n)``, the regressor's own checks of its values at
        its ``fit``) stay in ``fit``.  Nothing of the estimator or of its parameters (a
        regressor instance) is changed.

        Returns
        -------
        self

        Raises
        ------
        ValueError, TypeError
            A parameter value is invalid (the message names it).
        """
        self._checked_params()
        return self

    @atomic_fit
    def fit(self, X: Any, Y: Any, validation_data: Optional[Tuple[Any, Any]] = None) -> Self:
        """Fit on ``n`` pairs; ``validation_data=(X_val, Y_val)`` enables early stopping.

        ``X``: anything the regressor accepts (n samples); ``Y``: anything the output kernel
        accepts.  Returns self.  The parameters are checked first (:meth:`check_params`),
        before the data.
        """
        t0 = time.perf_counter()
        ps = self._checked_params()  # the parameters first (check_params), before the data
        Y = frame_as_array(Y)  # outputs given as a dataframe: an array (see frame_as_array)
        if validation_data is not None and isinstance(validation_data, (tuple, list)) and len(validation_data) == 2:
            validation_data = (validation_data[0], frame_as_array(validation_data[1]))
        n = check_paired(X, Y)
        set_feature_names(self, X)  # scikit-learn's feature_names_in_ (dataframe inputs)
        vf, rcond, chunk, ky, decoder, executor = ps["vf"], ps["rcond"], ps["chunk"], ps["ky"], ps["decoder"], \
            ps["executor"]
        rng = check_random_state(self.random_state)
        val_given = validation_data is not None
        val_name = "X_val" if val_given else "X"  # held-out rows of X: named X
        if validation_data is None and vf is not None:
            (X, Y), validation_data = validation_split(X, Y, vf, rng)
            n = num_samples(Y)
        if validation_data is not None:
            if len(validation_data) != 2 or num_samples(validation_data[0], "X_val") != num_samples(
                validation_data[1], "Y_val"
            ):
                raise ValueError("validation_data must be a pair (X_val, Y_val) of equal lengths")
            if num_samples(validation_data[0], "X_val") < 1:
                raise ValueError("validation_data is empty: give at least one pair (X_val, Y_val), or "
                                 "validation_data=None")
        sy = check_sketch_for(ps["sy"], self.output_sketch, self.m_y, n, "output")
        assert sy is not None  # (required: _checked_params)
        # the sketch is drawn first: same seed, same sketch as ISOKR (None: the sketch's own random_state)
        R = sy.draw(n, drawing_state(self.random_state, rng))
        reg = self._make_regressor(ps["reg"], rng)
        if takes_numeric_inputs(reg):  # numbers for Ridge & co: checked here, named (see _dsokr_inputs)
            X = check_regressor_inputs(X, reg)
            if validation_data is not None:
                validation_data = (check_regressor_inputs(validation_data[0], reg, val_name), validation_data[1])
        Yvp = None
        if validation_data is not None:
            Yvp = NamedPrepare(ky.prepare_outputs, "validation_data Y")(validation_data[1])
            if val_given:  # (a split of X, Y has their widths)
                _check_validation_widths(X, Y, validation_data[0], Yvp, ky)
        # through the kernel's memo: the fits of a selection (every regressor penalty and
        # input-feature size of one output kernel) share the basis and the n x p targets
        # instead of re-gathering them (1-2 s per fit at n = 8000, p = 7933)
        # a regressor that trains in float32 gets float32 targets (half the n x p array)
        tdtype = ps["tdtype"]
        feats, Psi, r = ky.memo("sketched output targets", Y,
                                lambda: sketched_output_targets(ky, R, Y, rcond, chunk, executor, dtype=tdtype),
                                key=(R, float(rcond), tdtype.name))
        p = Psi.shape[1]
        if p == 0:  # no regressor fits 0 targets (scikit-learn's: "Found array with 0 feature(s)")
            raise ValueError(f"the output basis is empty: R_y K_y R_y^T has rank 0 on the m_y={R.m} sketched "
                             f"outputs (each of zero norm under the output kernel, e.g. empty label sets with "
                             f"a linear kernel); draw more outputs (a larger m_y) or use an output kernel "
                             f"with k(y, y) > 0")
        self._log(f"output basis: m_y={R.m}, rank p={p}, mean residual r={r.mean():.4g} "
                  f"({time.perf_counter() - t0:.2f} s)")
        ev = None
        if validation_data is not None:
            Tv = feats.transform(Yvp)
            rv = np.maximum(ky.diag(Yvp).astype(np.float64) - np.einsum("ij,ij->i", Tv, Tv), 0.0)
            ev = (validation_data[0], Tv, rv)
        kwargs: dict[str, Any] = {}
        if _accepts(reg.fit, "sample_offsets"):
            kwargs["sample_offsets"] = r
        if ev is not None and _accepts(reg.fit, "eval_set"):
            kwargs["eval_set"] = ev
        t1 = time.perf_counter()
        reg.fit(X, Psi, **kwargs)
        self._log(f"regressor {type(reg).__name__} fitted in {time.perf_counter() - t1:.2f} s")
        self._check_output(reg.predict(take(X, np.arange(min(n, 4)))), min(n, 4), p, reg)
        val_loss = None
        if ev is not None:
            G = self._check_output(reg.predict(ev[0]), num_samples(ev[0]), p, reg)
            val_loss = float(np.mean(np.einsum("ij,ij->i", G - ev[1], G - ev[1]) + ev[2]))
            self._log(f"validation kernel-induced loss {val_loss:.5g}")

        # ---- validated: learned state starts here
        u = unique_indices(Y) if self.default_index else None
        shape = getattr(X, "shape", None)
        # array inputs: their feature count, checked at predict; other inputs (lists of rows,
        # strings) are the regressor's to read: its count, when it records one (as the
        # estimators that prepare their inputs record the prepared inputs' count)
        n_features = int(shape[1]) if shape is not None and len(shape) == 2 else getattr(reg, "n_features_in_", None)
        if n_features is not None:
            self.n_features_in_ = int(n_features)
        elif hasattr(self, "n_features_in_"):
            del self.n_features_in_
        self.output_kernel_, self.output_sketch_matrix_, self.output_features_ = ky, R, feats
        self.decoder_, self.executor_, self.regressor_, self.output_rank_, self.n_train_ = \
            decoder, executor, reg, p, n
        self.validation_loss_ = val_loss
        self.train_offsets_ = r
        self.index_token_ = new_index_token()
        self.default_index_ = None
        if u is not None:
            Yu = take(Y, u)
            self.default_index_ = CandidateIndex(Yu, Psi[u], candidate_offsets(ky, ky.prepare_outputs(Yu)),
                                                 owner=self.index_token_, kernel=ky)
        self.fit_time_ = time.perf_counter() - t0
        self._log(f"fit done in {self.fit_time_:.2f} s (n={n}, p={p})")
        return self

    @staticmethod
    def _check_output(G, n_q, p, reg):
        G = np.asarray(G)
        if G.ndim == 1 and p == 1:
            G = G[:, None]
        if G.shape != (n_q, p):
            raise ValueError(
                f"regressor {type(reg).__name__} returned predictions of shape {G.shape} for "
                f"{n_q} inputs, but DSOKR needs ({n_q}, {p}): one column per output-basis vector "
                f"(p = rank of R_y K_y R_y^T = output_rank_). Make the regressor output p values."
            )
        if not np.isfinite(G).all():
            raise ValueError(f"regressor {type(reg).__name__} returned non-finite predictions")
        return G

    # ------------------------------------------------------------- model interface
    @consistent_read
    def prepare_inputs(self, X: Samples) -> Any:
        """Inputs for :meth:`predict_coordinates`: unchanged (the regressor prepares them), but
        checked as numbers for a regressor that takes numbers (``Ridge``)."""
        check_is_fitted(self, "regressor_")
        num_samples(X, "X")
        check_feature_names(self, X)
        if takes_numeric_inputs(self.regressor_):
            X = check_regressor_inputs(X, self.regressor_)
        _check_width(self, X)
        return X

    @consistent_read
    def predict_coordinates(self, X: Samples, prepared: bool = False) -> np.ndarray:
        """``g_W(x)``: coordinates of ``h(x)`` on the sketched output basis, (n_q, p)."""
        check_is_fitted(self, "regressor_")
        if not prepared:
            X = self.prepare_inputs(X)
        n_q = num_samples(X, "X")
        if n_q == 0:  # zero queries: no coordinates (a regressor may refuse an empty batch)
            return np.empty((0, self.output_rank_))
        return self._check_output(self.regressor_.predict(X), n_q, self.output_rank_, self.regressor_)

    @consistent_read
    def output_basis_vectors(self, feature_map: Callable[[Any], ArrayLike] | None = None) -> np.ndarray:
        """The basis ``e~_j`` as explicit vectors, (p, D), for kernels with finite features.

        ``feature_map(Y_sel)`` must return ``psi(y)`` (n_sel, D) of prepared outputs; default:
        the identity (the linear kernel).  ``e~ = basis^T W psi(Y_sel)``.
        """
        check_is_fitted(self, "regressor_")
        f = self.output_features_
        Phi = np.asarray(f.Z_sel if feature_map is None else feature_map(f.Z_sel), dtype=np.float64)
        W = f.R.weights
        WPhi = W @ Phi if f.R.scale is None else f.R.scale * Phi
        return f.basis_transpose_times(np.asarray(WPhi))

    @consistent_read
    def predict_features(self, X: Samples, feature_map: Callable[[Any], ArrayLike] | None = None) -> np.ndarray:
        """``h(x)`` as explicit output feature vectors (n_q, D) (linear kernel by default)."""
        return self.predict_coordinates(X) @ self.output_basis_vectors(feature_map)


def _check_width(model, X):
    """Refuse 2-D inputs ``X`` whose number of columns is not the fitted ``n_features_in_``
    (a ``ValueError`` naming ``model``'s class, as scikit-learn's estimators word it)."""
    shape = getattr(X, "shape", None)
    if getattr(model, "n_features_in_", None) is not None and shape is not None and len(shape) == 2 \
            and shape[1] != model.n_features_in_:
        raise ValueError(f"X has {shape[1]} features, but {type(model).__name__} is expecting "
                         f"{model.n_features_in_} features as input")


class DSOKREnsemble(RenamedParametersMixin, OutputKernelModel, BaseEstimator):
    """Ensemble of DSOKR models over ``T`` output sketches.

    ``mean``: ``argmax_c sum_t w_t g_t(x)^T psi~_t(c) - k(c,c)/2`` with ``sum_t w_t = 1``;
    ``max``:  ``argmax_c max_t g_t(x)^T psi~_t(c) - k(c,c)/2``.

    Parameters
    ----------
    estimator : DSOKR or list of DSOKR
        The members (formerly ``estimators``).  A list is used as given (each keeps its
        own ``random_state``, so different sketch types can be mixed); a single DSOKR is
        cloned ``n_estimators`` times with seeds drawn from ``random_state``.  All members
        must use the same output kernel.
    n_estimators : int
        Only with a single DSOKR.
    aggregation : {"mean", "max"}
    weights : array-like of shape (T,), optional
        Non-negative weights of the mean, normalised to sum 1 (default uniform).
    validation_fraction : float, optional
        Held out ONCE (seeded by ``random_state``) and given to every member as its
        validation data, so that all members are trained on the same pairs (a member's own
        ``validation_fraction`` is not allowed: members trained on different pairs could
        not share one candidate index).
    random_state : None, int or numpy.random.Generator
    max_memory_mb : float, optional

    Attributes
    ----------
    estimators_ : list of fitted DSOKR
    weights_ : ndarray (T,)
    aggregation_ : str, the ``aggregation`` the ensemble was fitted with (predictions follow
        it, not a later ``set_params``)
    default_index_ : CandidateIndex over the distinct training outputs

    The former name ``estimators`` still works until sprokr 0.3, with a ``FutureWarning``
    (``docs/parameters.md``).
    """

    #: deprecated parameter names (sprokr.deprecation): old -> new
    renamed_parameters = {"estimators": "estimator"}

    def __init__(self, estimator: Any, n_estimators: int = 3, aggregation: str = "mean",
                 weights: ArrayLike | None = None, validation_fraction: float | None = None,
                 random_state: RandomStateLike = None, max_memory_mb: float | None = None) -> None:
        self.estimator = estimator
        self.n_estimators = n_estimators
        self.aggregation = aggregation
        self.weights = weights
        self.validation_fraction = validation_fraction
        self.random_state = random_state
        self.max_memory_mb = max_memory_mb

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        return tags

    def _member_templates(self) -> list[DSOKR]:
        """The members the parameters give, not yet cloned: ``n_estimators`` times
        ``estimator``, or the list ``estimator`` (checked)."""
        if isinstance(self.estimator, DSOKR):
            members = [self.estimator] * check_integer(self.n_estimators, "n_estimators")
        else:
            members = list(self.estimator) if isinstance(self.estimator, (list, tuple)) else []
            if not members or not all(isinstance(e, DSOKR) for e in members):
                raise TypeError("estimator must be a DSOKR or a non-empty list of DSOKR")
        if any(e.validation_fraction is not None for e in members):
            raise ValueError("members must not set validation_fraction: set it on the ensemble, which "
                             "holds out one validation split for all members")
        return members

    def _members(self, templates, rng):
        """Clones of the :meth:`_member_templates`, each seeded from ``rng`` when the ensemble
        repeats one estimator."""
        if isinstance(self.estimator, DSOKR):
            return [clone(e).set_params(random_state=int(rng.integers(2**31 - 1))) for e in templates]
        return [clone(e) for e in templates]

    def _checked_params(self) -> dict[str, Any]:
        """The checks of :meth:`check_params` (nothing of ``self`` or of its parameters is
        changed): the member templates, the normalised-to-be weights and the decoder."""
        if self.aggregation not in ("mean", "max"):
            raise ValueError(f"aggregation must be 'mean' or 'max', got {self.aggregation!r}")
        vf = check_validation_fraction(self.validation_fraction)
        check_random_state_param(self.random_state)
        templates = self._member_templates()
        w = np.full(len(templates), 1.0 / len(templates)) if self.weights is None else np.asarray(
            self.weights, dtype=float)
        if w.shape != (len(templates),) or not np.isfinite(w).all() or (w < 0).any() or not w.sum() > 0:
            raise ValueError(f"weights must be {len(templates)} non-negative numbers with a positive sum")
        decoder = make_decoder("candidates", None, self.max_memory_mb)
        if isinstance(self.estimator, DSOKR):  # the members' random_state is the ensemble's draw
            clone(self.estimator).set_params(random_state=0).check_params()
        else:
            # the output kernel a member fits with is the one its parameters resolve to:
            # members that would not share one are refused before any of them is fitted
            kernels: dict[str, int] = {}
            for i, e in enumerate(templates):
                ky = e._checked_params()["ky"]
                kernels.setdefault(f"{type(ky).__name__}({ky.get_params()!r})", i)
            if len(kernels) > 1:
                shown = "; ".join(f"member {i}: {k}" for k, i in kernels.items())
                raise ValueError(f"estimator: all ensemble members must use the same output kernel, got {shown}")
        return dict(vf=vf, templates=templates, w=w, decoder=decoder)

    def check_params(self) -> Self:
        """Validate the parameters without data (clear errors naming them).

        Checks ``aggregation`` ('mean' or 'max'), ``validation_fraction`` (None or in
        (0, 1)), ``random_state`` (its type; nothing is drawn), ``estimator`` (a DSOKR with
        ``n_estimators`` a positive integer, or a non-empty list of DSOKR; none setting
        ``validation_fraction``), ``weights`` (one non-negative number per member, positive
        sum), ``max_memory_mb``, and each member's parameters (:meth:`DSOKR.check_params`;
        a repeated ``estimator`` without its ``random_state``, which the ensemble draws)
        with their output kernels (one kernel: a list's members must resolve the same class
        with the same parameters).  ``fit`` runs the same checks first, with the same
        messages, before any member is fitted; the checks that need the data stay in
        ``fit`` (the members' own).  Nothing of the ensemble or of its members is changed.

        Returns
        -------
        self

        Raises
        ------
        ValueError, TypeError
            A parameter value is invalid (the message names it).
        """
        self._checked_params()
        return self

    @atomic_fit
    def fit(self, X: Any, Y: Any, validation_data: Optional[Tuple[Any, Any]] = None) -> Self:
        """Fit every member on the same training pairs.  Returns self.

        The parameters are checked first (:meth:`check_params`), before the data."""
        ps = self._checked_params()
        Y = frame_as_array(Y)  # (see DSOKR.fit)
        check_paired(X, Y)
        set_feature_names(self, X)  # the members check the names of query inputs
        vf, w, decoder = ps["vf"], ps["w"], ps["decoder"]
        rng = check_random_state(self.random_state)
        members = self._members(ps["templates"], rng)
        if validation_data is None and vf is not None:
            (X, Y), validation_data = validation_split(X, Y, vf, rng)
        # (the members' output kernels are one: checked with the parameters, before fitting)
        fitted = [e.fit(X, Y, validation_data=validation_data) for e in members]
        self.estimators_, self.weights_, self.aggregation_ = fitted, w / w.sum(), self.aggregation
        self.output_kernel_, self.decoder_ = fitted[0].output_kernel_, decoder
        if hasattr(fitted[0], "n_features_in_"):
            self.n_features_in_ = fitted[0].n_features_in_
        elif hasattr(self, "n_features_in_"):
            del self.n_features_in_
        self.output_features_, self.output_rank_ = None, sum(e.output_rank_ for e in fitted)
        self.index_token_ = new_index_token()
        d0 = fitted[0].default_index_
        self.default_index_ = None if any(e.default_index_ is None for e in fitted) else self._index(
            d0.candidates, [e.default_index_.embeddings for e in fitted], d0.offsets)
        return self

    def _index(self, candidates, Es, offsets):
        return CandidateIndex(candidates, np.hstack(Es), offsets, owner=self.index_token_, kernel=self.output_kernel_)

    def _splits(self):
        return np.cumsum([e.output_rank_ for e in self.estimators_])[:-1]

    @consistent_read
    def embed_candidates(self, candidates: Any, dtype: DTypeLike | None = None,
                         out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
        """Concatenated member embeddings ``[E_1(c), ..., E_T(c)]`` and the offsets
        (written into ``out`` when given)."""
        check_is_fitted(self, "estimators_")
        parts = [e.embed_candidates(candidates, dtype) for e in self.estimators_]
        E = np.hstack([E for E, _ in parts])
        if out is not None:
            if getattr(out, "shape", None) != E.shape:
                raise ValueError(f"out must have shape {E.shape}, got {getattr(out, 'shape', None)}")
            out[...] = E
            E = out
        return E, parts[0][1]

    @consistent_read
    def make_candidate_index(self, candidates: Any, dtype: Optional[str] = None, path: Any = None,
                             labels: Any = None) -> CandidateIndex:
        """Embed a candidate set once for every member (``path``, ``labels``: as
        :meth:`sprokr.SISOKR.make_candidate_index`; the embeddings are computed in memory)."""
        candidates, labels = frame_as_array(candidates), frame_as_array(labels)
        E, offsets = self.embed_candidates(candidates, dtype)
        shown = candidates if labels is None else labels
        if labels is not None and num_samples(labels, "labels") != num_samples(candidates, "candidates"):
            raise ValueError("labels: one per candidate expected")
        index = CandidateIndex(shown, E, offsets, owner=self.index_token_, kernel=self.output_kernel_)
        if path is None:
            return index
        from ..persistence import load

        index.save(path)
        return load(path, model=self, mmap=True)

    @consistent_read
    def prepare_inputs(self, X: Samples) -> Any:
        check_is_fitted(self, "estimators_")
        _check_width(self, X)  # named as the ensemble (the member's check would name DSOKR)
        return self.estimators_[0].prepare_inputs(X)

    @consistent_read
    def predict_coordinates(self, X: Samples, prepared: bool = False) -> np.ndarray:
        """Concatenated ``[w_1 g_1(x), ..., w_T g_T(x)]`` (mean aggregation), (n_q, sum p_t)."""
        check_is_fitted(self, "estimators_")
        return np.hstack([w * e.predict_coordinates(X) for w, e in zip(self.weights_, self.estimators_)])

    def _fitted_aggregation(self):
        # (models saved before aggregation_ existed predict with the parameter, as they did)
        return getattr(self, "aggregation_", self.aggregation)

    def _decode(self, X, candidates, top_k):
        if self._fitted_aggregation() == "mean":
            return super()._decode(X, candidates, top_k)
        from ..decoders.base import CandidateSets

        check_is_fitted(self, "estimators_")
        if isinstance(candidates, CandidateSets):
            raise ValueError("candidates: CandidateSets are decoded with aggregation='mean' only")
        index = self.resolve_index(candidates)
        return max_topk(self.estimators_, self._splits(), index, X, top_k, self.decoder_.max_memory_mb)

    @consistent_read
    def predict_scores(self, X: Any, candidates: Any = None) -> Any:
        """Scores of every candidate (aggregated over members), shape (n_q, n_c).

        ``mean``: ``sum_t w_t g_t(x)^T psi~_t(c) - k(c, c)/2``; ``max``:
        ``max_t g_t(x)^T psi~_t(c) - k(c, c)/2``.  As for the other models (see
        ``OutputKernelModel.predict_scores``), the ``-k(c, c)/2`` term is left out for a
        normalised output kernel (``k(c, c) = 1`` for every candidate): the scores are then
        0.5 above the formula's value, and rankings are unaffected.
        """
        if self._fitted_aggregation() == "mean":
            return super().predict_scores(X, candidates)
        check_is_fitted(self, "estimators_")
        return max_scores(self.estimators_, self._splits(), self.resolve_index(candidates), X)
