"""The training of SISOKR (:class:`sprokr.models.sisokr.SISOKR` and its named variants).

:meth:`SISOKR.fit <sprokr.models.sisokr.SISOKR.fit>` runs ``_validate_fit`` (the
parameters checked first, without data, by ``_checked_params`` -- the checks of
:meth:`SISOKR.check_params <sprokr.models.sisokr.SISOKR.check_params>` --, then the data
checked, components resolved, sketches drawn, the training set partitioned into
:data:`COLUMNS`: a :class:`FitSetup`), then ``_fit_validated``, which trains in three
phases and sets the model's learned attributes: the output side (the feature map ``psi~``
of the output sketch and the regression :class:`Targets`, once per distinct output when
outputs repeat), the input side (``_fit_sketched_input``: the sketched ridge;
``_fit_exact_input``: Cholesky of ``K_x + n lam I``) and the default candidate index
(``_build_default_index``).  They are the methods of :class:`SISOKRTraining`, a base class
of the estimator.

They are apart from :mod:`sprokr.models.sisokr` so that the estimator module holds the
estimator -- its parameters, ``fit`` and the prediction side -- and the named variants in a
module of a few hundred lines.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.linalg as sla

from ..decoders.candidates import CandidateIndex
from ..kernels import model_dtype, resolve_kernel
from ..kernels.base import fit_on_training_inputs
from ..numerics import (
    DEFAULT_RCOND,
    SOLVERS,
    WORK_DTYPE,
    SketchedFeatures,
    TargetRows,
    check_kernel_sample,
    default_chunk_size,
    distinct_samples,
    exact_ridge_factor,
    float64_kernel,
    resolve_executor,
    sketched_ridge,
)
from ..progress import warn_accuracy
from ..sketches import check_sketch_for, drawing_state, make_sketch
from ..utils import (
    NamedPrepare,
    check_bool,
    check_chunk_size,
    check_paired,
    check_positive,
    check_random_state,
    check_random_state_param,
    resolve_dtype,
    take,
    unique_inverse,
)
from ._sisokr_rows import Embed, Offsets, all_rows, groups_of
from .base import OUTPUT_DTYPE, make_decoder, new_index_token, set_n_features
from .feature_problem import checked_exact_factor, spread_rows

if TYPE_CHECKING:  # imported for the annotations only
    from ..decoders.base import Decoder
    from ..kernels.base import Kernel
    from ..numerics import Executor, RowPartitions
    from ..sketches.base import Sketch, SketchMatrix

__all__ = ["COLUMNS", "OUTPUT_IDS", "FitSetup", "ParamSetup", "SISOKRTraining", "Targets"]

#: the columns of the training partitions: prepared inputs, prepared outputs, raw outputs
#: and, when outputs repeat in this process, the distinct-output id of each sample
COLUMNS = ("inputs", "outputs", "raw_outputs")
OUTPUT_IDS = "output_ids"
#: training outputs whose scores probe exact IOKR's float32 check (as candidates)
EXACT_PROBES = 8


@dataclass(frozen=True)
class ParamSetup:
    """The components the parameters of a SISOKR resolve to, checked without data."""

    lam: float
    dtype: np.dtype
    rcond: float
    chunk: int | None
    input_kernel: Kernel
    output_kernel: Kernel
    input_sketch: Sketch | None
    output_sketch: Sketch | None
    decoder: Decoder
    executor: Executor


@dataclass(frozen=True)
class FitSetup:
    """The validated ingredients of a fit (resolved components, drawn sketches, partitions)."""

    parts: RowPartitions
    n: int
    lam: float
    dtype: np.dtype
    rcond: float
    chunk: int | None
    input_kernel: Kernel
    output_kernel: Kernel
    decoder: Decoder
    executor: Executor
    Rx: SketchMatrix | None
    Ry: SketchMatrix | None
    #: ``unique_inverse(Y)`` when the targets are computed once per distinct output
    distinct: tuple[np.ndarray, np.ndarray] | None


@dataclass(frozen=True)
class Targets:
    """What the input side regresses: ``T = fn(rows of partition column ``column``)`` (``fn``
    None: ``T = I_n``), ``width`` columns."""

    fn: Callable[[Any], np.ndarray] | None
    width: int
    column: str


class SISOKRTraining:
    """The training steps of :class:`~sprokr.models.sisokr.SISOKR` (a base class of it,
    holding no state of its own): ``fit`` validates (:meth:`_validate_fit`), then trains
    (:meth:`_fit_validated`).  The methods use the estimator's parameters and its
    ``_set_coef`` and ``_log``."""

    if TYPE_CHECKING:  # the estimator's parameters and learned state, for the type checker
        default_index_: CandidateIndex | None
        output_features_: Any  # None without output sketch
        solver_: str | None  # None after fit_state (no solve)
        solver_error_estimate_: float | None

        def __getattr__(self, name: str) -> Any: ...

    def _checked_params(self) -> ParamSetup:
        """The checks of :meth:`SISOKR.check_params <sprokr.models.sisokr.SISOKR.check_params>`
        (no data: nothing of ``self`` or of its parameters is changed): the components the
        parameters resolve to."""
        lam = check_positive(self.lam, "lam")
        dtype = resolve_dtype(self.dtype)
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {', '.join(map(repr, SOLVERS))}, got {self.solver!r}")
        rcond = DEFAULT_RCOND if self.rcond is None else check_positive(self.rcond, "rcond", strict=False)
        chunk = check_chunk_size(self.chunk_size)
        kx = resolve_kernel(self.input_kernel, self.input_kernel_params, "input", dtype)
        dtype = model_dtype(kx, dtype)  # a float32 input kernel is a float32 request (checked)
        ky = resolve_kernel(self.output_kernel, self.output_kernel_params, "output", OUTPUT_DTYPE)
        sx = make_sketch(self.input_sketch, self.m_x, self.input_sketch_params, "input")
        sy = make_sketch(self.output_sketch, self.m_y, self.output_sketch_params, "output")
        decoder = make_decoder(self.decoder, self.decoder_params, self.max_memory_mb)
        executor = resolve_executor(self.executor, self.executor_params)
        check_random_state_param(self.random_state)
        check_bool(self.default_index, "default_index")
        return ParamSetup(lam=lam, dtype=dtype, rcond=rcond, chunk=chunk, input_kernel=kx, output_kernel=ky,
                          input_sketch=sx, output_sketch=sy, decoder=decoder, executor=executor)

    def _validate_fit(self, X: Any, Y: Any) -> FitSetup:
        """Validate the parameters of ``self`` (:meth:`_checked_params`, first) and the ``n``
        pairs ``(X, Y)``: the resolved components, the drawn sketches and the partitioned
        training set of a fit."""
        ps = self._checked_params()
        n = check_paired(X, Y)
        lam, dtype, rcond, chunk, ky, decoder, executor = (ps.lam, ps.dtype, ps.rcond, ps.chunk, ps.output_kernel,
                                                            ps.decoder, ps.executor)
        sx = check_sketch_for(ps.input_sketch, self.input_sketch, self.m_x, n, "input")
        sy = check_sketch_for(ps.output_sketch, self.output_sketch, self.m_y, n, "output")
        kx = fit_on_training_inputs(ps.input_kernel, X)  # data-dependent kernels (text idf): a fitted copy
        rng = check_random_state(self.random_state)
        drawn_by = drawing_state(self.random_state, rng)
        Rx = sx.draw(n, drawn_by) if sx is not None else None
        Ry = sy.draw(n, drawn_by) if sy is not None else None
        # Structured outputs repeat (Bibtex: 2058 distinct label sets among 4880 documents).
        # In this process the targets psi~(y) are then computed once per distinct output,
        # and the chunks gather them by the distinct id of each sample (a 4th collection);
        # the same embeddings are the default candidate index, which this process holds
        # anyway: computed once for both, even when every output is distinct (QM9).
        distinct = None
        if Ry is not None and executor.in_process and self.default_index:
            distinct = unique_inverse(Y)
        # prepared inputs, prepared outputs and raw outputs (COLUMNS), partitioned where they are used
        extra = () if distinct is None else (distinct[1],)
        prepare = (NamedPrepare(kx.prepare, "X"), NamedPrepare(ky.prepare_outputs, "Y"), None) + (None,) * len(extra)
        parts = executor.partition(X, Y, Y, *extra, prepare=prepare, names=COLUMNS + (OUTPUT_IDS,) * len(extra))

        # the kernels on a few training samples: finite, symmetric, PSD (clear errors early);
        # a sketch's own support points, whose kernel columns the fit computes anyway (a
        # selection's cache then computes no column for the check alone)
        sample = np.arange(min(n, 64)) if Rx is None else Rx.indices[:64]
        check_kernel_sample(kx, executor.take_rows(parts, sample, which="inputs"), "input kernel")
        sample = np.arange(min(n, 64)) if Ry is None else Ry.indices[:64]
        check_kernel_sample(ky, executor.take_rows(parts, sample, which="outputs"), "output kernel")
        return FitSetup(parts=parts, n=n, lam=lam, dtype=dtype, rcond=rcond, chunk=chunk, input_kernel=kx,
                        output_kernel=ky, decoder=decoder, executor=executor, Rx=Rx, Ry=Ry, distinct=distinct)


    def _fit_validated(self, setup: FitSetup, solve: bool = True) -> None:
        """The training proper, on validated inputs partitioned by the executor.

        ``solve=False`` (``fit_state``): the state only -- the output side, the support of
        the input side (:meth:`_fit_input_state`), no ridge solve; the default index only
        when its embeddings are the training targets computed anyway (``psi_u``)."""
        parts, executor, Rx, Ry, distinct = setup.parts, setup.executor, setup.Rx, setup.Ry, setup.distinct
        self.input_kernel_, self.output_kernel_, self.decoder_, self.executor_ = (
            setup.input_kernel, setup.output_kernel, setup.decoder, executor)
        self.input_sketch_matrix_, self.output_sketch_matrix_ = Rx, Ry
        self.n_train_, self.dtype_, self.rcond_ = setup.n, setup.dtype, setup.rcond
        self.index_token_ = new_index_token()
        self.fit_times_ = {}
        t = time.perf_counter()
        # output side: the feature map psi~ from the output sketch's support points
        self.output_features_, self.Y_train_ = None, None
        psi_u = None
        if Ry is not None:
            raw_sel = executor.take_rows(parts, Ry.indices, which="raw_outputs")
            fy, keep = SketchedFeatures.from_support(setup.output_kernel, Ry, raw_sel, OUTPUT_DTYPE, setup.rcond,
                                                     prepared=executor.take_rows(parts, Ry.indices, which="outputs"))
            self.output_features_ = fy.fit_basis()
            self._support_outputs = (take(raw_sel, keep), fy.R.indices)
            targets = Targets(fy.transform, fy.rank, "outputs")
            if distinct is not None:  # psi~ once per distinct output, gathered by id
                Yu = take(all_rows(executor, parts, "raw_outputs"), distinct[0])
                # prepared as training samples (a precomputed kernel then knows their rows)
                upart = executor.partition(executor.take_rows(parts, distinct[0], which="outputs"))
                psi_u = (Yu, executor.map_rows(upart, fy.transform, setup.chunk or default_chunk_size(
                    fy.R.indices.size, OUTPUT_DTYPE), name="output targets"), upart)
                targets = Targets(TargetRows(psi_u[1]), fy.rank, OUTPUT_IDS)
        else:  # exact outputs: candidates are embedded against every training output
            targets = Targets(None, setup.n, "outputs")
            self.Y_train_ = all_rows(executor, parts, "outputs")
        self.fit_times_["output_side"] = time.perf_counter() - t
        width_kx = Rx.indices.size if Rx is not None else setup.n
        width_ky = self.output_features_.R.indices.size if Ry is not None and psi_u is None else 0
        chunk = setup.chunk or default_chunk_size(max(width_kx, width_ky), setup.dtype)
        t = time.perf_counter()
        if not solve:
            self._fit_input_state(setup, Rx)
        elif Rx is not None:
            self._fit_sketched_input(setup, Rx, targets, chunk)
        else:
            self._fit_exact_input(setup, targets, chunk)
        self.fit_times_["input_side"] = time.perf_counter() - t
        t = time.perf_counter()
        # fit_state: the index of the distinct training outputs only when its embeddings
        # are the targets psi~ computed above (a lam path's pass regresses them: the index
        # then costs its offsets alone); else build_default_index builds it when needed.
        # The attributes that go with an index: none of a previous fit's is kept
        for name in ("n_distinct_outputs_", "output_groups_", "_support_groups"):
            self.__dict__.pop(name, None)
        if self.default_index and (solve or psi_u is not None):
            self._build_default_index(parts, chunk, distinct, psi_u)
        else:
            self.default_index_ = None
            self.__dict__.pop("_support_outputs", None)
        self.fit_times_["default_index"] = time.perf_counter() - t
        self._log(", ".join(f"{k} {v:.3f} s" for k, v in self.fit_times_.items()))


    def _fit_input_state(self, setup: FitSetup, Rx: SketchMatrix | None) -> None:
        """The input side's state without its solve (``fit_state``): the prepared support
        (the sketch's support rows, or every training input), no coefficients."""
        ex, parts = self.executor_, setup.parts
        if Rx is not None:  # the support operand of every kernel block, as _fit_sketched_input
            self.X_support_ = self.input_kernel_.prepare_support(ex.take_rows(parts, Rx.indices, which="inputs"))
            set_n_features(self, self.X_support_)
        else:
            Xp = all_rows(ex, parts, "inputs")
            self.X_support_ = self.input_kernel_.prepare_support(Xp)
            set_n_features(self, Xp)
        self.coef_, self._cho, self._expansion = None, None, None
        self.output_rank_ = setup.n if self.output_features_ is None else self.output_features_.rank
        self.solver_, self.solver_error_estimate_ = None, None
        self.solver_precision_, self.solver_refinement_steps_ = np.dtype(self.dtype_), 0

    def _fit_sketched_input(self, setup: FitSetup, Rx: SketchMatrix, targets: Targets, chunk: int) -> None:
        """Sketched ridge of the targets ``Psi~`` (or ``I_n``) with input sketch ``Rx``, one pass over the data."""
        ex, parts, dtype = self.executor_, setup.parts, setup.dtype
        # the support operand of every kernel block of the pass (and of the predictions)
        support = self.input_kernel_.prepare_support(ex.take_rows(parts, Rx.indices, which="inputs"))
        ref = None
        if targets.fn is not None:  # targets at the input sketch's support: the centring shift
            ref = targets.fn(ex.take_rows(parts, Rx.indices, which=targets.column))
        # the input side's thresholds default to its own (None: see sketched_ridge)
        sol = sketched_ridge(self.input_kernel_, Rx, support, parts, setup.lam, targets.fn, targets.width, self.rcond,
                             chunk, ex, solver=self.solver, dtype=dtype, ref_targets=ref, which=targets.column)
        self.fit_times_.update({f"ridge_{k}": v for k, v in sol.times.items()})
        self.solver_, self.solver_error_estimate_ = sol.method, sol.error_estimate
        self.solver_precision_ = sol.precision
        self.solver_refinement_steps_ = sol.refinement_steps
        if sol.method == "qr" and self.solver == "auto":
            why = f"error estimate {sol.checks[-1][1]:.2g}" if sol.checks else "lam too small for them"
            self._log(f"whitened normal equations rejected ({why}): solved by the stable QR route")
        fallback = sol.fallback_message(dtype)
        if fallback:  # float32 failed its check: the self is float64 from here on
            warn_accuracy(fallback, self)
            self.input_kernel_, self.dtype_ = sol.features.kernel, sol.precision
            support = self.input_kernel_.prepare_support(sol.support)
        self.X_support_ = support
        self._set_coef(sol.coef)


    def _fit_exact_input(self, setup: FitSetup, targets: Targets, chunk: int) -> None:
        """Cholesky of ``K_x + n lam I`` (n x n: only when no input sketch is asked for)."""
        ex, parts = self.executor_, setup.parts
        Xp = all_rows(ex, parts, "inputs")
        T = None
        if targets.fn is not None:
            T = np.asarray(ex.map_rows(parts, targets.fn, chunk, name="output targets", which=targets.column),
                           dtype=WORK_DTYPE)
        # Cholesky of K + n lam I: well conditioned (cond <= 1 + |K| / (n lam)); float32
        # kernel values are not (their rounding is relative to |K|, not to n lam): measured
        self.solver_, self.solver_error_estimate_, self.solver_precision_ = "cholesky", None, np.dtype(self.dtype_)
        self.solver_refinement_steps_ = 0
        if self.dtype_ == np.float32 and float64_kernel(self.input_kernel_) is not self.input_kernel_:
            Xp, cho = self._check_exact_float32(Xp, T, setup, chunk)
        else:
            cho = self._exact_factor(Xp, setup, chunk)
        self.X_support_ = self.input_kernel_.prepare_support(Xp)
        if T is None:  # IOKR: h(x) = sum_i alpha_i(x) psi(y_i), alpha = (K + n lam I)^-1 k_x
            self.coef_, self._cho, self._expansion = None, cho, None
            set_n_features(self, Xp)
            self.output_rank_ = parts.n
            return
        self._set_coef(sla.cho_solve(cho, T, check_finite=False))

    def _exact_factor(self, Xp: Any, setup: FitSetup, chunk: int, kx: Any = None) -> Any:
        """``cho_solve``'s factor of ``K_x + n lam I`` with the input kernel ``kx`` (default:
        the model's)."""
        kx, parts = self.input_kernel_ if kx is None else kx, setup.parts
        # through the kernel's memo: a selection fits the same inputs for several outputs
        return kx.memo("exact ridge factor", Xp,
                       lambda: exact_ridge_factor(kx, parts, Xp, setup.lam, chunk, self.executor_),
                       key=(float(setup.lam),))

    def _check_exact_float32(self, Xp: Any, T: np.ndarray | None, setup: FitSetup,
                             chunk: int) -> tuple[Any, Any]:
        """The factor of the exact input side with float32 kernel values (``dtype="float32"``),
        checked (:func:`checked_exact_factor`) on the targets ``T`` -- exact IOKR: the scores
        of a few training outputs as candidates, centred per sample.  Above ``FLOAT32_TOL``, or
        when the float32 factorisation fails, the factor is recomputed with float64 kernel
        values (a ``LinAlgWarning``, also logged: :func:`sprokr.progress.warn_accuracy`; ``dtype_``
        and ``solver_precision_`` say float64).
        Returns ``(Xp, factor)``."""
        products: Any = np.float32
        if T is None:  # IOKR multiplies its float32 kernel values in float64
            Y = self.Y_train_
            probes = self.output_kernel_.pairwise(Y, take(Y, spread_rows(setup.n, EXACT_PROBES)))
            T, products = probes - probes.mean(axis=1, keepdims=True), np.float64
        check = checked_exact_factor(self.input_kernel_, Xp, lambda k, X: self._exact_factor(X, setup, chunk, k),
                                     T, products)
        self.solver_error_estimate_ = check.estimate
        self.fit_times_.update(check.times)
        if check.message is not None:
            warn_accuracy(check.message, self)
            self.input_kernel_, self.dtype_ = check.kernel, np.dtype(np.float64)
            self.solver_precision_ = np.dtype(np.float64)
        return check.Xp, check.factor

    def _build_default_index(self, parts, chunk, distinct, psi_u):
        """The distinct training outputs, embedded: the default candidate set."""
        ex, ky = self.executor_, self.output_kernel_
        if psi_u is not None:  # computed before the pass
            Yu, E, upart = psi_u
            self.n_distinct_outputs_ = E.shape[0]
            self._support_groups = distinct[1][self.output_features_.R.indices]
            del self._support_outputs
            offsets = None if ky.normalized else ex.map_rows(upart, Offsets(ky), chunk, name="output offsets")
            self.default_index_ = CandidateIndex(Yu, E, offsets, owner=self.index_token_, kernel=ky)
            return
        first, Yu = distinct_samples(ex, parts, "raw_outputs", chunk)
        self.n_distinct_outputs_ = first.size
        if self.output_features_ is None:
            self.output_groups_ = unique_inverse(all_rows(ex, parts, "raw_outputs"))[1]
            index = self.make_candidate_index(Yu)
        else:
            sel_raw, sel_idx = self._support_outputs
            self._support_groups = groups_of(sel_raw, sel_idx, Yu, first)
            del self._support_outputs
            upart = ex.partition(ex.take_rows(parts, first, which="outputs"))
            fy = self.output_features_
            offsets = None if ky.normalized else ex.map_rows(upart, Offsets(ky), chunk, name="output offsets")
            if isinstance(upart.blocks[0], tuple):  # local: the embeddings are held here
                E = ex.map_rows(upart, fy.transform, chunk, name="candidate embedding")
                index = CandidateIndex(Yu, E, offsets, owner=self.index_token_, kernel=ky)
            else:  # distributed: the embeddings stay on the workers, offsets as a last column
                Ep = ex.map_rows(upart, Embed(fy, ky, np.float64), chunk, keep=True, name="candidate embedding")
                index = CandidateIndex(Yu, None, offsets, owner=self.index_token_, kernel=ky, partitions=Ep,
                                       dim=fy.rank)
        self.default_index_ = index
