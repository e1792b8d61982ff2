"""``MoleculeRetriever``: SMILES, text or numeric vectors in, molecules out, in one line.

A task-level estimator over sprokr's models (IOKR, SISOKR, DSOKR) that wires the
recommended kernels and chooses every setting -- the model too, with ``method="auto"`` --
by validation on the training data:

* model (``method="auto"``): exact IOKR when its estimated cost fits the time and memory
  budgets (:func:`sprokr.model_selection.exact_iokr_cost`) and its validation MRR is at
  least the sketched model's (:data:`AUTO_SKETCHED`), else the sketched model;

* inputs: SMILES -> ``smiles_spectrum`` (canonical SMILES n-grams, ``n`` from
  ``input_grid``); text -> the ``text`` kernel (word + character n-grams, idf fitted on the
  training texts); numeric vectors (descriptors, measured properties) -> a Gaussian kernel
  on the inputs standardised with the training mean and deviation, its bandwidth chosen
  by validation from :data:`VECTOR_GAMMAS`;
* outputs: the molecules as canonical SMILES; the output kernel is chosen on the
  validation split between the chemistry-aware ``wl`` kernel (molecule graphs with atom
  labels and bond orders) and ``morgan_count_tanimoto`` (Morgan count fingerprints);
* selection (:func:`sprokr.model_selection.select_model` with
  :func:`~sprokr.model_selection.retrieval_scorer`: the validation molecules rank
  themselves, MRR) on ONE seeded split of the training pairs by molecule
  (``validation_fraction`` of the distinct molecules; all the pairs of a molecule on one
  side, one pair per validation molecule scored),
  every fit sharing prepared samples, kernel columns and factorisations
  (:class:`sprokr.model_selection.SelectionCache`), sketch sizes grown while the
  validation improves (up to the training part), then a refit on all training pairs --
  except a DSOKR network, which keeps the validation split held out for early stopping
  (as scikit-learn's ``early_stopping=True``);
* DSOKR regresses the sketched output features on the input kernel's Nystrom features
  (:class:`sprokr.kernels.KernelFeatures`): a ridge (closed form, refitted on all pairs)
  and optionally MLPs, compared by validation MRR (``docs/dsokr.md``: on QM9 a ridge on
  these features beat every network and the former MLP on n-gram TF-IDF);
* decoding over a candidate pool of molecules (SMILES, RDKit molecules, graphs, or a
  ``.smi`` / ``.sdf`` / ``.csv`` file), by default the ``candidates`` given at construction,
  else the distinct training molecules.
"""
from __future__ import annotations

import time
from typing import Any, NamedTuple, Self

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import check_is_fitted

from sprokr.deprecation import RenamedParametersMixin
from sprokr.persistence import SaveMixin
from sprokr.progress import log_estimator, progress
from sprokr.utils import atomic_fit, check_integer, check_numeric_array, check_paired, check_random_state, check_random_state_param, \
    consistent_read, num_samples, reword_error

from ._selection import (
    AUTO_OUTPUT_KERNELS,
    DEFAULT_LAMS,
    DSOKR_LAMS,
    GRAPH_KERNELS,
    VECTOR_GAMMAS,
    RetrieverSearch,
    check_dict_list,
    check_grid,
    molecules_for_kernel,
)
from .io import MoleculeReadError, is_molecule_graph
from .molecules import canonical_smiles, check_one_dimensional, check_ordered, read_molecules

__all__ = ["MoleculeRetriever", "RetrievedMolecules", "molecules_for_kernel", "METHODS", "DEFAULT_LAMS",
           "GRAPH_KERNELS", "INPUT_KINDS", "VECTOR_GAMMAS", "AUTO_SKETCHED"]

METHODS = ("auto", "iokr", "sisokr", "dsokr")
#: the sketched model ``method="auto"`` compares exact IOKR with, or falls back to: DSOKR's
#: ridge on Nystrom features (on QM9 and ChEBI-20 as accurate as SISOKR on test and cheaper
#: to select: docs/molecules.md)
AUTO_SKETCHED = "dsokr"
#: what ``inputs`` may say
INPUT_KINDS = ("auto", "smiles", "text", "vectors")
class RetrievedMolecules(NamedTuple):
    """The ``k`` best candidates per query, best first.

    ``smiles``: list (n_q) of lists (k') of canonical SMILES; ``scores``: ndarray (n_q, k');
    ``indices``: ndarray (n_q, k') into the candidate pool (a molecule the pool holds several
    times: its first occurrence).  ``k' = min(k, number of distinct molecules in the pool)``.

    Parameters
    ----------
    smiles : list of list of str
        Canonical SMILES of the candidates, n_q lists of k'.
    scores : ndarray of shape (n_q, k')
        Their scores.
    indices : ndarray of shape (n_q, k')
        Their indices into the candidate pool (first occurrences).
    """

    smiles: list
    scores: np.ndarray
    indices: np.ndarray

    @property
    def outputs(self) -> list:
        """The ranked molecules as :meth:`MoleculeRetriever.predict` gives them: ``smiles``
        (the command line writes a decoded result's ``outputs``, docs/plugins.md)."""
        return self.smiles


def _amount(v):
    """An estimate in a message: whole seconds / MB, small ones in two digits ('0 s > 1e-09 s'
    read as an estimate within the budget)."""
    return f"{v:.0f}" if v >= 10 else f"{v:.2g}"


def _is_numeric(X):
    """Whether ``X`` holds numbers (an array or nested sequences of numbers), not strings
    (nor molecule graphs: numpy reads graphs of as many nodes as rows of node ids)."""
    if isinstance(X, (list, tuple)) and any(is_molecule_graph(x) for x in X):
        return False
    try:
        A = np.asarray(X)
    except (TypeError, ValueError):  # ragged: numbers if its first row is
        first = X[0] if len(X) else None
        return isinstance(first, (list, tuple, np.ndarray)) and len(first) > 0 and \
            all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in first)
    return A.dtype.kind in "biuf" and A.size > 0


def _check_collection(X):
    """A TypeError naming ``X`` unless it is a collection of inputs (not None, a number or
    a single string): ``fit`` and the predictions check it before reading the inputs."""
    if isinstance(X, str) or not hasattr(X, "__len__") or (isinstance(X, np.ndarray) and X.ndim == 0):
        raise TypeError(f"X must be a sequence of SMILES or texts, or an array of numbers (n, d), not an object of "
                        f"type {type(X).__name__}")
    check_ordered(X, "X")


def _as_texts(X, name="X"):
    if isinstance(X, str) or not hasattr(X, "__len__"):
        raise TypeError(f"{name} must be a sequence of texts, not an object of type {type(X).__name__}")
    check_one_dimensional(X, name, "texts")
    for i, x in enumerate(X):
        if not isinstance(x, str) or not x.strip():
            raise ValueError(f"{name}: expected a non-empty text at position {i}, got {x!r}")
    return list(X)


class MoleculeRetriever(RenamedParametersMixin, SaveMixin, BaseEstimator):
    """Retrieve molecules from SMILES or text: recommended kernels, settings chosen by validation.

    Parameters
    ----------
    method : {"auto", "iokr", "sisokr", "dsokr"}
        ``"iokr"``: exact IOKR (best accuracy, ``O(n^3)`` fit and ``n x n`` memory; up to a
        few thousand molecules).  ``"sisokr"``: input sketch (sub-sampling, ``m_x``) and
        p-sparsified Gaussian output sketch (``m_y``).  ``"dsokr"``: a ridge (and the MLPs of
        ``hidden_layer_sizes``) on the input kernel's Nystrom features (``m_x`` of them)
        regressing the sketched output features.  ``"auto"`` (default): exact IOKR when
        its estimated selection and refit fit ``time_budget_s`` and ``memory_budget_mb``
        and its validation MRR is at least that of the sketched model
        :data:`AUTO_SKETCHED` (both selected on the same split); the sketched model
        otherwise (``selection_["auto"]`` says what was compared and why).
    inputs : {"auto", "smiles", "text", "vectors"}
        What ``X`` holds.  ``"vectors"``: numbers, an array (n, d) (e.g. molecular descriptors
        or measured properties), standardised with the training mean and deviation, under
        a Gaussian kernel whose bandwidth is chosen by validation (:data:`VECTOR_GAMMAS`).
        ``"auto"``: vectors when ``X`` holds numbers, else texts when at least half of its
        elements contain whitespace (SMILES never do: one that does is an invalid SMILES,
        named), else SMILES.
    output_kernel : "auto", str or list of str
        Output kernel(s) compared on the validation split: ``"auto"`` = ``wl``
        (chemistry-aware Weisfeiler-Lehman on molecule graphs, sprokr-graphs) and
        ``morgan_count_tanimoto``; or registered names (graph kernels -- :data:`GRAPH_KERNELS`
        -- get molecule graphs, the others SMILES), with their default parameters.
    candidates : None, sequence of molecules or path
        Default candidate pool of ``predict*`` (SMILES, RDKit molecules, molecule graphs,
        or a ``.smi`` / ``.sdf`` / ``.csv`` file with a ``smiles`` column), read and
        validated by ``fit``.  None: the distinct training molecules.
    validation_fraction : float in (0, 1)
        Share of the training molecules held out (seeded) to choose the settings: the split
        is by molecule (the distinct canonical SMILES of ``y``), so that a duplicated
        molecule is never in both parts; a validation molecule with several pairs is scored
        once, on its first pair (the others are in neither part:
        ``selection_["n_val_unscored"]``).  Without duplicates, a split of the pairs.
    lams : sequence of float > 0, optional
        Ridge grid of the lam paths (IOKR, SISOKR; default :data:`DEFAULT_LAMS`).
    input_grid : list of dict, optional
        Input-kernel parameter sets tried (default: ``[{"n": 4}, {"n": 6}]`` for
        ``smiles_spectrum``, ``[{}]`` for ``text``, ``[{"gamma": g / d} for g in
        VECTOR_GAMMAS]`` for the Gaussian kernel on d standardised features).
    m_x_grid, m_y_grid : increasing sequences of int, optional
        Sketch sizes tried (SISOKR's ``m_x`` and DSOKR's number of input features grown
        until the validation MRR stops improving, ``m_y`` for SISOKR and DSOKR from the
        perfect-h curve).  Default: 100, 200, 400, ... up to half the training part, then
        -- while the validation still improves at the grid's edge -- doubled up to the
        training part (a size at the edge of a grid is not a choice).  A grid given is
        used as given.
    dsokr_lams : sequence of float > 0, optional
        DSOKR ridge penalties tried (default :data:`DSOKR_LAMS`; formerly ``alphas``): the
        penalty of scikit-learn's ``Ridge`` on the Nystrom features (``|T - F W|^2 + lam
        |W|^2``, a sum over the training pairs, not a mean).
    hidden_layer_sizes : list of tuple of int
        DSOKR networks (:class:`sprokr.models.regressors.MLPSurrogate`) tried besides the
        ridge, at the ridge's chosen sizes, early-stopped on the validation MRR; default
        none (``()``; e.g. ``[(256,)]``).
    max_epochs : int
        DSOKR network epochs at most.
    time_budget_s : float > 0
        ``method="auto"``: exact IOKR is considered only when its estimated time (the linear
        algebra of its selection and refit, :func:`sprokr.model_selection.exact_iokr_cost`
        at :data:`~sprokr.model_selection.ASSUMED_FLOP_RATE`, a constant so that the choice
        does not depend on the machine's load) is at most this many seconds.  Default 300:
        exact IOKR up to ~10,800 SMILES (two n-gram lengths compared) or ~13,500 texts (the
        memory budget stops it at 11,585).
    memory_budget_mb : float > 0
        ``method="auto"``: exact IOKR is considered only when its ``n x n`` float64 Gram
        and Cholesky factor (``16 n^2`` bytes) fit in this many MB.  Default 2048
        (n <= 11585).
    random_state : None, int or numpy.random.Generator
        Seeds the validation split, the sketches and the networks.
    verbose : bool
        Show the selection's steps on standard error (always logged on the
        ``sprokr.MoleculeRetriever`` logger).

    Attributes
    ----------
    method_ : str
        The method of the fitted model (``"auto"`` resolved).
    model_ : IOKR, SISOKR or DSOKR
        The fitted model (outputs: molecule graphs for graph kernels, else SMILES).
    inputs_ : {"smiles", "text", "vectors"}
    input_center_, input_scale_ : ndarray (d,), vectors only
        The training inputs' mean and standard deviation (1 where it is 0), applied to
        every query.
    output_kernel_ : str
        The chosen output kernel.
    best_params_ : dict
        The chosen settings (``output_kernel``, ``input_kernel_params``, ``lam``, ``m_x``,
        ``m_y`` as applicable; DSOKR: ``regressor`` and ``regressor_params`` -- the ridge's
        ``alpha`` or the network's ``hidden_layer_sizes`` -- instead of ``lam``).
    best_score_ : float
        Validation MRR of the chosen settings.
    selection_ : dict
        What was tried: ``tried`` (the chosen method's, one entry per output kernel, with
        the lam paths, the kernel grid, the ``m_x`` growth, the perfect-h curve or the
        networks), ``n_train``, ``n_val`` (pairs of the two parts), ``n_val_unscored`` (further
        pairs of the validation molecules, in neither part), ``scoring``, ``time_s``, ``refit_s``,
        ``cache`` (what the selection's fits shared: :attr:`SelectionCache.stats`) and,
        with ``method="auto"``, ``auto``: ``estimate`` (exact IOKR's estimated memory and
        time), ``budget``, ``iokr_fits``, ``compared`` (per method: validation MRR, chosen
        settings, selection time, ``tried``), ``chosen`` and ``reason``.
    training_molecules_ : list of str (n,)
        Canonical SMILES of the training outputs.
    candidates_ : list of str
        The default candidate pool (canonical SMILES).
    input_features_ : KernelFeatures, DSOKR only
        The fitted Nystrom feature map of the input kernel fed to the regressor.
    n_train_ : int
    fit_time_ : float (s)

    Examples
    --------
    >>> from sprokr.datasets import sample_path
    >>> from sprokr_chem import MoleculeRetriever
    >>> from sprokr_chem.datasets import load_qm9
    >>> smiles, _, _ = load_qm9(sample_path("qm9_sample.csv"))
    >>> model = MoleculeRetriever(random_state=0).fit(smiles[:250], smiles[:250])
    >>> model.method_   # exact IOKR fits the default budgets and wins on validation
    'iokr'
    >>> len(model.predict(smiles[250:], candidates=smiles))
    50

    The former name ``alphas`` (of ``dsokr_lams``) still works until sprokr 0.3, with a
    ``FutureWarning``.
    """

    #: deprecated parameter names (sprokr.deprecation): old -> new
    renamed_parameters = {"alphas": "dsokr_lams"}

    def __init__(self, method: str = "auto", inputs: str = "auto", output_kernel: str = "auto",
                 candidates: Any = None, validation_fraction: float = 0.2, lams: Any = None,
                 input_grid: Any = None, m_x_grid: Any = None, m_y_grid: Any = None, dsokr_lams: Any = None,
                 hidden_layer_sizes: Any = (), max_epochs: int = 200, time_budget_s: float = 300.0,
                 memory_budget_mb: float = 2048.0, random_state: Any = None, verbose: bool = False) -> None:
        self.method = method
        self.inputs = inputs
        self.output_kernel = output_kernel
        self.candidates = candidates
        self.validation_fraction = validation_fraction
        self.lams = lams
        self.input_grid = input_grid
        self.m_x_grid = m_x_grid
        self.m_y_grid = m_y_grid
        self.dsokr_lams = dsokr_lams
        self.hidden_layer_sizes = hidden_layer_sizes
        self.max_epochs = max_epochs
        self.time_budget_s = time_budget_s
        self.memory_budget_mb = memory_budget_mb
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.target_tags.required = True
        return tags

    # ------------------------------------------------------------------ checks
    def check_params(self) -> Self:
        """Validate the parameters without data (clear errors naming them).

        Checks ``method``, ``inputs``, ``validation_fraction`` (in (0, 1)), ``lams``, the
        output kernels (``"auto"``, a registered name or a non-empty list of names), the
        grids (``input_grid``, ``m_x_grid``, ``m_y_grid``), ``hidden_layer_sizes``,
        ``dsokr_lams``, ``max_epochs`` (a positive integer), ``time_budget_s`` and
        ``memory_budget_mb`` (finite, > 0) and ``random_state`` (its type; nothing is
        drawn).  ``fit`` runs the same checks first, with the same messages; the checks
        that need the data stay in ``fit`` (the inputs against ``inputs``, the
        ``candidates`` molecules, at least 5 training pairs).  Nothing of the estimator is
        changed.

        Returns
        -------
        self

        Raises
        ------
        ValueError, TypeError
            A parameter value is invalid (the message names it).
        """
        from sprokr.model_selection import check_lams
        from sprokr.models.dsokr import check_validation_fraction

        if self.method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(map(repr, METHODS))}, got {self.method!r}")
        if self.inputs not in INPUT_KINDS:
            raise ValueError(f"inputs must be one of {', '.join(map(repr, INPUT_KINDS))}, got {self.inputs!r}")
        if self.validation_fraction is None or check_validation_fraction(self.validation_fraction) is None:
            raise ValueError(f"validation_fraction must lie in (0, 1), got {self.validation_fraction!r}")
        check_lams(DEFAULT_LAMS if self.lams is None else self.lams, "lams")
        self._output_kernel_names()
        if self.input_grid is not None:
            check_dict_list(self.input_grid, "input_grid")
        check_grid(self.m_x_grid, "m_x_grid")
        check_grid(self.m_y_grid, "m_y_grid")
        hidden = self.hidden_layer_sizes
        if not isinstance(hidden, (list, tuple)) or \
                not all(isinstance(h, (list, tuple)) and h and all(int(u) >= 1 for u in h) for h in hidden):
            raise ValueError(f"hidden_layer_sizes must be a list of tuples of layer sizes, e.g. [(256,)] "
                             f"(or [] for the ridge only), got {hidden!r}")
        check_lams(DSOKR_LAMS if self.dsokr_lams is None else self.dsokr_lams, "dsokr_lams")
        check_integer(self.max_epochs, "max_epochs")
        for name in ("time_budget_s", "memory_budget_mb"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.number)) or not (v > 0 and np.isfinite(v)):
                raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
        check_random_state_param(self.random_state)
        return self

    def _output_kernel_names(self):
        """The registered output kernels ``output_kernel`` names (checked)."""
        from sprokr.registry import get_registry

        names = get_registry().names("output_kernel")
        if isinstance(self.output_kernel, str) and self.output_kernel == "auto":
            kernels = [k for k in AUTO_OUTPUT_KERNELS if k in names]
        elif isinstance(self.output_kernel, str):
            kernels = [self.output_kernel]
        elif isinstance(self.output_kernel, (list, tuple)) and self.output_kernel:
            kernels = list(self.output_kernel)
        else:
            raise ValueError(f"output_kernel must be 'auto', a registered output kernel name or a list of names, "
                             f"got {self.output_kernel!r}")
        for k in kernels:
            if not isinstance(k, str):
                raise ValueError(f"output_kernel: expected registered kernel names, got {k!r}")
            get_registry().get("output_kernel", k)  # unknown names: the registry's error
        return kernels

    def _resolve_inputs(self, X):
        _check_collection(X)
        numeric = _is_numeric(X)
        if self.inputs in ("smiles", "text") and numeric:  # refused at once, not as "invalid molecule"
            raise ValueError(f"inputs={self.inputs!r} but X holds numbers (shape {np.shape(X)}); numeric inputs "
                             f"take inputs='vectors' (or 'auto')")
        if self.inputs != "auto":
            return self.inputs
        if numeric:
            return "vectors"
        check_one_dimensional(X, "X", "SMILES or texts")  # (a DataFrame iterates over its column names)
        # texts when at least half the elements hold whitespace (SMILES never do): one SMILES
        # with a stray blank (a typo) no longer turns a whole column of SMILES into texts --
        # it is named as an invalid SMILES instead
        n_blank = sum(isinstance(x, str) and any(c.isspace() for c in x.strip()) for x in X)
        return "text" if n_blank and 2 * n_blank >= len(X) else "smiles"

    def _input_values(self, X, kind, name="X"):
        """Canonical SMILES, validated texts or a float64 array (n, d) (not yet standardised)."""
        if kind == "vectors":
            try:
                return check_numeric_array(X, name)
            except (TypeError, ValueError) as exc:
                raise reword_error(exc, f"{exc} (inputs='vectors' takes an array of numbers (n, d))")
        if kind == "text":
            return _as_texts(X, name)
        return canonical_smiles(X, name)

    def _standardised(self, A, center=None, scale=None):
        """``(A - center) / scale`` with the given statistics, or the training ones."""
        center = self.input_center_ if center is None else center
        scale = self.input_scale_ if scale is None else scale
        if A.shape[1] != center.size:
            raise ValueError(f"X has {A.shape[1]} features, but MoleculeRetriever was fitted on {center.size}: "
                             f"expected shape (n_samples, {center.size})")
        return (A - center) / scale

    def _log(self, msg):
        log_estimator(self, msg)

    def _select(self, ctx, kernels, release=True):
        """``(records, best record, its fitted DSOKR or None)`` of ``ctx.method`` over the output
        kernels; ``release``: drop each output kernel's cached columns and bases once its
        selection is done (not when another method will use them)."""
        tried, best = [], None
        bar = progress(total=len(kernels), desc=f"MoleculeRetriever selection ({ctx.method})", unit="kernels")
        for k in kernels:
            t1 = time.perf_counter()
            rec, fitted = ctx.select(k)
            if release:
                ctx.release(k)
            rec["time_s"] = time.perf_counter() - t1
            tried.append(rec)
            bar.update(1)
            self._log(f"{ctx.method}, output kernel {k}: validation MRR {rec['best_score']:.4f} with "
                      f"{rec['best_params']} ({rec['time_s']:.1f} s)")
            if best is None or rec["best_score"] > best[0]["best_score"]:
                best = (rec, fitted)
        bar.close()
        return tried, best[0], best[1]

    def _select_auto(self, ctx, kernels, n):
        """``method="auto"``: exact IOKR if it fits the budgets and is at least as good on
        validation as :data:`AUTO_SKETCHED`, else the latter.  Returns ``(method, tried,
        record, fitted, report)``."""
        from sprokr.model_selection import exact_iokr_cost

        cost = exact_iokr_cost(n, ctx.tr.size, ctx.va.size, n_points=len(ctx.input_grid), n_outputs=len(kernels),
                               n_lams=len(ctx.lams))
        fits = cost.fits(float(self.time_budget_s), float(self.memory_budget_mb))
        report = {"estimate": cost.as_dict(), "iokr_fits": bool(fits),
                  "budget": {"time_s": float(self.time_budget_s), "memory_mb": float(self.memory_budget_mb)},
                  "compared": {}}
        self._log(f"auto: exact IOKR estimated {_amount(cost.seconds)} s, {_amount(cost.memory_mb)} MB (budget "
                  f"{self.time_budget_s:g} s, {self.memory_budget_mb:g} MB): "
                  f"{'compared with' if fits else 'replaced by'} {AUTO_SKETCHED}")
        results = {}
        for method in (["iokr"] if fits else []) + [AUTO_SKETCHED]:
            ctx.method = method
            t1 = time.perf_counter()
            # the exact output Gram columns IOKR computes serve the sketched model's support
            results[method] = self._select(ctx, kernels, release=method == AUTO_SKETCHED)
            rec = results[method][1]
            report["compared"][method] = {"best_score": float(rec["best_score"]), "best_params": rec["best_params"],
                                          "time_s": time.perf_counter() - t1, "tried": results[method][0]}
        if fits:
            a, b = results["iokr"][1]["best_score"], results[AUTO_SKETCHED][1]["best_score"]
            chosen = "iokr" if a >= b else AUTO_SKETCHED
            report["reason"] = (f"exact IOKR fits the budgets (estimated {_amount(cost.seconds)} s <= "
                                f"{self.time_budget_s:g} s, {_amount(cost.memory_mb)} MB <= "
                                f"{self.memory_budget_mb:g} MB) and its validation MRR {a:.4f} is "
                                f"{'>=' if a >= b else '<'} {AUTO_SKETCHED}'s {b:.4f}")
        else:
            chosen = AUTO_SKETCHED
            why = []
            if cost.seconds > self.time_budget_s:
                why.append(f"estimated {_amount(cost.seconds)} s > {self.time_budget_s:g} s")
            if cost.memory_mb > self.memory_budget_mb:
                why.append(f"{_amount(cost.memory_mb)} MB > {self.memory_budget_mb:g} MB")
            report["reason"] = f"exact IOKR does not fit the budgets ({', '.join(why)}): {AUTO_SKETCHED}"
        report["chosen"] = ctx.method = chosen
        self._log(f"auto: {report['reason']} -> {chosen}")
        tried, rec, fitted = results[chosen]
        return chosen, tried, rec, fitted, report

    # ------------------------------------------------------------------ fit
    @atomic_fit
    def fit(self, X: Any, y: Any) -> Self:
        """Choose the settings on a validation split of ``(X, y)`` and fit.

        The parameters are checked first (:meth:`check_params`), before the data.

        Parameters
        ----------
        X : sequence of str (n,)
            SMILES (or RDKit molecules) or texts.
        y : sequence (n,)
            The molecules: SMILES, RDKit molecules or molecule graphs.

        Returns
        -------
        self
        """
        t0 = time.perf_counter()
        self.check_params()  # the parameters first, before the data
        kernels = self._output_kernel_names()
        n = check_paired(X, y, "X", "y")
        kind = self._resolve_inputs(X)
        try:
            Xv = self._input_values(X, kind)
        except MoleculeReadError as exc:
            if self.inputs == "auto" and 2 * (exc.n_others + 1) > n:  # most of X: texts of one word?
                exc.add_note("inputs='auto' read X as SMILES (no element contains whitespace); if X holds "
                             "texts, pass inputs='text'")
            raise
        stats = {}
        if kind == "vectors":  # standardised with the training statistics (kept for the queries)
            sd = Xv.std(axis=0)
            stats = {"input_center_": Xv.mean(axis=0), "input_scale_": np.where(sd > 0, sd, 1.0)}
            Xv = self._standardised(Xv, stats["input_center_"], stats["input_scale_"])
        Ys = canonical_smiles(y, "y")
        pool = None if self.candidates is None else read_molecules(self.candidates, "candidates")
        if pool is not None and not pool:
            raise ValueError("candidates is empty; give at least one molecule (or None: the training molecules)")
        if n < 5:
            raise ValueError(f"X and y: need at least 5 training pairs to hold out a validation split, got {n}")
        rng = check_random_state(self.random_state)
        # split by molecule: every pair of a molecule on one side (a duplicated molecule in
        # both parts would validate on training molecules), and one pair per validation
        # molecule (twins in the validation pool tie with the truth); without duplicates,
        # the split of the pairs it always was
        first: dict[str, int] = {}
        inverse = np.empty(n, dtype=np.int64)
        for i, s in enumerate(Ys):
            inverse[i] = first.setdefault(s, len(first))
        n_mol = len(first)
        if n_mol < 4:
            raise ValueError(f"y: need at least 4 distinct molecules to hold some out for validation, got {n_mol}")
        perm = rng.permutation(n)  # the molecules in the order of their first pair in it: a few
        order = np.array(list(dict.fromkeys(inverse[perm].tolist())))  # duplicates barely move the split
        first_pair = np.unique(inverse, return_index=True)[1]
        n_val = min(n_mol - 2, max(2, int(round(self.validation_fraction * n_mol))))
        held = np.zeros(n_mol, dtype=bool)
        held[order[:n_val]] = True
        split = (np.flatnonzero(~held[inverse]), np.sort(first_pair[order[:n_val]]))
        n_unscored = int(held[inverse].sum()) - n_val
        seed = int(rng.integers(2**31 - 1))
        ctx = RetrieverSearch(self, kind, Xv, Ys, split, seed)
        self._log(f"{self.method}: {n} pairs ({kind} inputs), {split[0].size} train / {n_val} validation; "
                  f"output kernels tried: {', '.join(kernels)}")
        auto = None
        if self.method == "auto":
            method, tried, rec, fitted, auto = self._select_auto(ctx, kernels, n)
        else:
            method = self.method
            tried, rec, fitted = self._select(ctx, kernels)
        cache_stats = ctx.cache.stats
        ctx.Y_views.clear()
        ctx.cache.clear()  # the selection's kept blocks: not needed by the refit
        t1 = time.perf_counter()
        if method == "dsokr":  # a ridge is refitted with its features, a network is kept
            model, extra = ctx.refit_dsokr(rec, fitted)
        else:
            model = clone(ctx.estimator(rec["output_kernel"])).set_params(
                **{k: v for k, v in rec["best_params"].items() if k != "output_kernel"})
            model.fit(Xv, ctx.molecules(rec["output_kernel"]))
            extra = {}
        refit_s = time.perf_counter() - t1
        # ---- learned state
        for name in ("input_features_", "input_center_", "input_scale_"):  # state of an earlier fit
            self.__dict__.pop(name, None)
        self.method_, self.inputs_, self.model_, self.output_kernel_ = method, kind, model, rec["output_kernel"]
        self.best_params_, self.best_score_ = dict(rec["best_params"]), float(rec["best_score"])
        for name, value in {**extra, **stats}.items():
            setattr(self, name, value)
        self.training_molecules_ = Ys
        self.candidates_ = pool if pool is not None else list(dict.fromkeys(Ys))
        self.n_train_ = n
        self.selection_ = {"method": self.method, "inputs": kind, "scoring": "validation MRR",
                           "n_train": int(split[0].size), "n_val": int(n_val), "n_val_unscored": n_unscored,
                           "tried": tried,
                           "chosen": self.output_kernel_, "refit_s": refit_s, "cache": cache_stats}
        if auto is not None:
            self.selection_["auto"] = auto
        self.fit_time_ = self.selection_["time_s"] = time.perf_counter() - t0
        self._log(f"chose {method} with {self.best_params_} (validation MRR {self.best_score_:.4f}); fit in "
                  f"{self.fit_time_:.1f} s")
        return self

    # ------------------------------------------------------------------ predict
    def _queries(self, X):
        check_is_fitted(self, "model_")
        _check_collection(X)
        vals = self._input_values(X, self.inputs_)
        if self.inputs_ == "vectors":
            vals = self._standardised(vals)
        return self._features(vals) if self.method_ == "dsokr" else vals

    def _features(self, texts):
        """DSOKR inputs: the input kernel's Nystrom features."""
        return self.input_features_.transform(texts)

    def _pool(self, candidates):
        check_is_fitted(self, "model_")
        if candidates is None:
            return self.candidates_
        pool = read_molecules(candidates, "candidates")
        if not pool:
            raise ValueError("candidates is empty; give at least one molecule")
        return pool

    def _index(self, pool):
        return self.model_.make_candidate_index(molecules_for_kernel(pool, self.output_kernel_))

    def _distinct(self, pool):
        """``(distinct molecules, first occurrence of each in pool, position of each pool entry
        among the distinct)``: a molecule given several times (in any spelling: the pool is
        canonical SMILES) is one candidate."""
        first: dict[str, int] = {}
        inverse = np.fromiter((first.setdefault(s, len(first)) for s in pool), dtype=np.intp, count=len(pool))
        distinct = list(first)
        return distinct, np.unique(inverse, return_index=True)[1], inverse

    @consistent_read
    def predict_scores(self, X: Any, candidates: Any = None) -> np.ndarray:
        """Score of every candidate for every query (greater is better).

        Parameters
        ----------
        X : sequence (n_q,) of SMILES or texts (as in ``fit``)
        candidates : None, sequence of molecules or path
            The pool (default: ``candidates_``).

        Returns
        -------
        ndarray of shape (n_q, n_candidates)
            Columns in the pool's order.  ``<h(x), psi(c)>`` for a normalised output kernel
            (``k(c, c) = 1`` for every molecule: every built-in one, the Morgan fingerprint
            kernels and ``smiles_spectrum``), ``<h(x), psi(c)> - k(c, c) / 2`` otherwise: the
            constant ``-1/2`` of the normalised case is left out (rankings unaffected; see
            the models' ``predict_scores``).  A molecule given several times in the pool (in
            any spelling) is scored once: its columns are equal.
        """
        Xq = self._queries(X)
        distinct, _, inverse = self._distinct(self._pool(candidates))
        S = self.model_.predict_scores(Xq, candidates=self._index(distinct))
        return S if len(distinct) == inverse.size else S[:, inverse]

    @consistent_read
    def predict_topk(self, X: Any, k: int = 5, candidates: Any = None) -> RetrievedMolecules:
        """The ``k`` best candidates per query (ties: the earlier candidate first).

        The candidates are distinct molecules: a molecule given several times in the pool
        (in any spelling, e.g. Kekule and aromatic) is one candidate, listed once.

        Parameters
        ----------
        X : sequence (n_q,) of SMILES or texts, or an array of numbers (as in ``fit``)
        k : int >= 1
            How many candidates per query.
        candidates : None, sequence of molecules or path
            The pool (default: ``candidates_``).

        Returns
        -------
        RetrievedMolecules
            ``smiles`` (n_q lists of k' canonical SMILES), ``scores`` and ``indices``
            (ndarray (n_q, k'): the first occurrence of each molecule in the pool),
            ``k' = min(k, number of distinct molecules in the pool)``.
        """
        top = check_integer(k, "k")  # (None too: it is not "predict")
        Xq = self._queries(X)
        distinct, first, _ = self._distinct(self._pool(candidates))
        D = self.model_.predict_topk(Xq, k=top, candidates=self._index(distinct))
        idx = np.asarray(D.indices)
        return RetrievedMolecules([[distinct[j] for j in row] for row in idx], np.asarray(D.scores), first[idx])

    @consistent_read
    def predict(self, X: Any, candidates: Any = None) -> list:
        """The best candidate per query, as canonical SMILES (list of n_q str)."""
        return [row[0] for row in self.predict_topk(X, 1, candidates).smiles]

    @consistent_read
    def score(self, X: Any, y: Any, candidates: Any = None) -> float:
        """Mean reciprocal rank of the true molecules (greater is better; 1 = always first).

        The pool is the distinct molecules of ``y`` (they rank themselves, as in the
        selection) plus ``candidates`` if given; ties are broken at random in expectation
        (:func:`sprokr.metrics.ranks_from_scores`).
        """
        from sprokr.metrics import ranks_from_scores

        if num_samples(X, "X") == 0 and num_samples(y, "y") == 0:  # (check_paired would say "cannot fit")
            raise ValueError("cannot score on 0 samples: X is empty; expected at least one sample")
        check_paired(X, y, "X", "y")
        truth = canonical_smiles(y, "y")
        extra = [] if candidates is None else self._pool(candidates)
        pool = list(dict.fromkeys(truth + extra))
        pos = {s: i for i, s in enumerate(pool)}
        S = self.predict_scores(X, candidates=pool)
        return float(np.mean(1.0 / ranks_from_scores(S, np.array([pos[s] for s in truth]))))
