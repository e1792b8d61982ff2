"""``MoleculeRetriever``: SMILES, text or numeric vectors in, molecules out, in one line.

A task-level estimator over sprokr's models (IOKR, SISOKR, DSOKR) that wires the
recommended kernels and chooses every setting by validation on the training data:

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
  themselves, MRR) on ONE seeded split of the training pairs (``validation_fraction``),
  then a refit on all training pairs -- except a DSOKR network, which keeps the validation
  split held out for early stopping (as scikit-learn's ``early_stopping=True``);
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

from sprokr.persistence import SaveMixin
from sprokr.progress import log_estimator, progress
from sprokr.utils import check_numeric_array, check_paired, check_random_state, reword_error, take

from .io import canonical_smiles, read_molecules

__all__ = ["MoleculeRetriever", "RetrievedMolecules", "molecules_for_kernel", "METHODS", "DEFAULT_LAMS",
           "GRAPH_KERNELS", "INPUT_KINDS", "VECTOR_GAMMAS"]

METHODS = ("iokr", "sisokr", "dsokr")
#: the ridge grid of the lam paths: 1e-1 ... 1e-8, one value per decade
DEFAULT_LAMS = tuple(float(v) for v in np.logspace(-1, -8, 8))
#: output kernels compared by validation with ``output_kernel="auto"`` (those installed)
AUTO_OUTPUT_KERNELS = ("wl", "morgan_count_tanimoto")
#: output kernels on molecule graphs (the others take SMILES)
GRAPH_KERNELS = ("wl", "core_wl", "grakel")
#: input kernel and default parameter grid per input kind (vectors: see VECTOR_GAMMAS)
INPUT_KERNELS = {"smiles": ("smiles_spectrum", ({"n": 4}, {"n": 6})), "text": ("text", ({},)),
                 "vectors": ("gaussian", ())}
#: what ``inputs`` may say
INPUT_KINDS = ("auto", "smiles", "text", "vectors")
#: Gaussian bandwidths tried on standardised vectors of d features: ``gamma = g / d`` for g
#: here (two standardised inputs are ~2d apart in squared distance, so g = 1 puts a typical
#: pair at exp(-2); the larger g, the closer to nearest-neighbour retrieval)
VECTOR_GAMMAS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
#: p-sparsified Gaussian output sketch with ~20 non-zeros per row (the benchmarks' choice)
PSG_NONZEROS = 20.0
#: DSOKR ridge penalties tried (the benchmarks' validation chose 1e-4 to 1e-2)
DSOKR_ALPHAS = (1e-4, 1e-3, 1e-2, 1e-1)


def molecules_for_kernel(smiles: list, kernel: str) -> list:
    """The molecules as an output kernel takes them: molecule graphs
    (:func:`sprokr_chem.smiles_to_graph`) for the graph kernels :data:`GRAPH_KERNELS`, else
    the SMILES themselves."""
    if kernel.rpartition(":")[2] in GRAPH_KERNELS:
        from .graphs import smiles_to_graph

        return [smiles_to_graph(s) for s in smiles]
    return list(smiles)


class RetrievedMolecules(NamedTuple):
    """The ``k`` best candidates per query, best first.

    ``smiles``: list (n_q) of lists (k') of canonical SMILES; ``scores``: ndarray (n_q, k');
    ``indices``: ndarray (n_q, k') into the candidate pool.  ``k' = min(k, n_candidates)``.
    """

    smiles: list
    scores: np.ndarray
    indices: np.ndarray


def _sizes(n):
    """The default grid of sketch sizes: 100, 200, 400, ... up to half the training part (the
    selection extends it, doubling up to the training part, while the validation still
    improves at its edge)."""
    sizes = [int(s) for s in 100 * 2 ** np.arange(12) if s <= n // 2]
    return sizes or [max(1, n // 2)]


def _check_grid(grid, name):
    if grid is None:
        return None
    sizes = [int(v) for v in grid] if np.iterable(grid) and not isinstance(grid, str) else None
    if not sizes or any(v < 1 for v in sizes) or any(b <= a for a, b in zip(sizes, sizes[1:])):
        raise ValueError(f"{name} must be an increasing sequence of positive integers, got {grid!r}")
    return sizes


def _check_dict_list(grid, name):
    if isinstance(grid, dict) or not isinstance(grid, (list, tuple)) or not grid or \
            not all(isinstance(g, dict) for g in grid):
        raise ValueError(f"{name} must be a non-empty list of parameter dicts, got {grid!r}")
    return [dict(g) for g in grid]


def _is_numeric(X):
    """Whether ``X`` holds numbers (an array or nested sequences of numbers), not strings."""
    try:
        A = np.asarray(X)
    except (TypeError, ValueError):  # ragged: numbers if its first row is
        first = X[0] if len(X) else None
        return isinstance(first, (list, tuple, np.ndarray)) and len(first) > 0 and \
            all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in first)
    return A.dtype.kind in "biuf" and A.size > 0


def _as_texts(X, name="X"):
    if isinstance(X, str) or not hasattr(X, "__len__"):
        raise TypeError(f"{name} must be a sequence of texts, not a {type(X).__name__}")
    for i, x in enumerate(X):
        if not isinstance(x, str) or not x.strip():
            raise ValueError(f"{name}: expected a non-empty text at position {i}, got {x!r}")
    return list(X)


class MoleculeRetriever(SaveMixin, BaseEstimator):
    """Retrieve molecules from SMILES or text: recommended kernels, settings chosen by validation.

    Parameters
    ----------
    method : {"iokr", "sisokr", "dsokr"}
        ``"iokr"``: exact IOKR (best accuracy, ``O(n^3)`` fit; up to a few thousand
        molecules).  ``"sisokr"``: input sketch (sub-sampling, ``m_x``) and p-sparsified
        Gaussian output sketch (``m_y``).  ``"dsokr"``: a ridge (and the MLPs of
        ``hidden_layer_sizes``) on the input kernel's Nystrom features (``m_x`` of them)
        regressing the sketched output features.
    inputs : {"auto", "smiles", "text", "vectors"}
        What ``X`` holds.  ``"vectors"``: numbers, an array (n, d) (e.g. molecular descriptors
        or measured properties), standardised with the training mean and deviation, under
        a Gaussian kernel whose bandwidth is chosen by validation (:data:`VECTOR_GAMMAS`).
        ``"auto"``: vectors when ``X`` holds numbers, else texts when any element contains
        whitespace (SMILES never do), else SMILES.
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
        Share of the training pairs held out (seeded) to choose the settings.
    lams : sequence of float > 0, optional
        Ridge grid of the lam paths (IOKR, SISOKR; default :data:`DEFAULT_LAMS`).
    input_grid : list of dict, optional
        Input-kernel parameter sets tried (default: ``[{"n": 4}, {"n": 6}]`` for
        ``smiles_spectrum``, ``[{}]`` for ``text``, ``[{"gamma": g / d} for g in
        VECTOR_GAMMAS]`` for the Gaussian kernel on d standardised features).
    m_x_grid, m_y_grid : increasing sequences of int, optional
        Sketch sizes tried (SISOKR's ``m_x`` and DSOKR's number of input features grown
        until the validation MRR stops improving, ``m_y`` for SISOKR and DSOKR from the
        perfect-h curve).  Default: 100, 200, 400, ... up to half the training part.
    alphas : sequence of float > 0, optional
        DSOKR ridge penalties tried (default :data:`DSOKR_ALPHAS`).
    hidden_layer_sizes : list of tuple of int
        DSOKR networks (:class:`sprokr.models.regressors.MLPSurrogate`) tried besides the
        ridge, at the ridge's chosen sizes, early-stopped on the validation MRR; default
        none (``[]``; e.g. ``[(256,)]``).
    max_epochs : int
        DSOKR network epochs at most.
    random_state : None, int or numpy.random.Generator
        Seeds the validation split, the sketches and the networks.
    verbose : bool
        Show the selection's steps on standard error (always logged on the
        ``sprokr.MoleculeRetriever`` logger).

    Attributes
    ----------
    method_ : str
        The method of the fitted model.
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
        ``m_y``, ``hidden_layer_sizes`` as applicable).
    best_score_ : float
        Validation MRR of the chosen settings.
    selection_ : dict
        What was tried: ``tried`` (one entry per output kernel, with the lam paths, the
        kernel grid, the ``m_x`` growth, the perfect-h curve or the networks), ``n_train``,
        ``n_val``, ``scoring``, ``time_s``.
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
    >>> model = MoleculeRetriever(method="iokr", random_state=0).fit(smiles[:250], smiles[:250])
    >>> len(model.predict(smiles[250:], candidates=smiles))
    50
    """

    def __init__(self, method: str = "iokr", inputs: str = "auto", output_kernel: str = "auto",
                 candidates: Any = None, validation_fraction: float = 0.2, lams: Any = None,
                 input_grid: Any = None, m_x_grid: Any = None, m_y_grid: Any = None, alphas: Any = None,
                 hidden_layer_sizes: Any = (), max_epochs: int = 200,
                 random_state: Any = None, verbose: bool = False) -> None:
        self.method = method
        self.inputs = inputs
        self.output_kernel = output_kernel
        self.candidates = candidates
        self.validation_fraction = validation_fraction
        self.lams = lams
        self.input_grid = input_grid
        self.m_x_grid = m_x_grid
        self.m_y_grid = m_y_grid
        self.alphas = alphas
        self.hidden_layer_sizes = hidden_layer_sizes
        self.max_epochs = max_epochs
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.target_tags.required = True
        return tags

    # ------------------------------------------------------------------ checks
    def _check_params(self):
        from sprokr.model_selection import check_lams
        from sprokr.models.dsokr import check_validation_fraction
        from sprokr.registry import get_registry

        if self.method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(map(repr, METHODS))}, got {self.method!r}")
        if self.inputs not in INPUT_KINDS:
            raise ValueError(f"inputs must be one of {', '.join(map(repr, INPUT_KINDS))}, got {self.inputs!r}")
        if self.validation_fraction is None or check_validation_fraction(self.validation_fraction) is None:
            raise ValueError(f"validation_fraction must lie in (0, 1), got {self.validation_fraction!r}")
        check_lams(DEFAULT_LAMS if self.lams is None else self.lams, "lams")
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
        if self.input_grid is not None:
            _check_dict_list(self.input_grid, "input_grid")
        _check_grid(self.m_x_grid, "m_x_grid")
        _check_grid(self.m_y_grid, "m_y_grid")
        hidden = self.hidden_layer_sizes
        if not isinstance(hidden, (list, tuple)) or \
                not all(isinstance(h, (list, tuple)) and h and all(int(u) >= 1 for u in h) for h in hidden):
            raise ValueError(f"hidden_layer_sizes must be a list of tuples of layer sizes, e.g. [(256,)] "
                             f"(or [] for the ridge only), got {hidden!r}")
        check_lams(DSOKR_ALPHAS if self.alphas is None else self.alphas, "alphas")
        v = self.max_epochs
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"max_epochs must be a positive integer, got {v!r}")
        return kernels

    def _resolve_inputs(self, X):
        if isinstance(X, str) or not hasattr(X, "__len__"):
            raise TypeError(f"X must be a sequence of SMILES or texts, or an array of numbers (n, d), not a "
                            f"{type(X).__name__}")
        numeric = _is_numeric(X)
        if self.inputs in ("smiles", "text") and numeric:  # refused at once, not as "invalid molecule"
            raise ValueError(f"inputs={self.inputs!r} but X holds numbers (shape {np.shape(X)}); numeric inputs "
                             f"take inputs='vectors' (or 'auto')")
        if self.inputs != "auto":
            return self.inputs
        if numeric:
            return "vectors"
        return "text" if any(isinstance(x, str) and any(c.isspace() for c in x.strip()) for x in X) else "smiles"

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

    def _select(self, ctx, kernels):
        """``(records, best record, its fitted DSOKR or None)`` over the output kernels."""
        tried, best = [], None
        bar = progress(total=len(kernels), desc="MoleculeRetriever selection", unit="kernels")
        for k in kernels:
            t1 = time.perf_counter()
            rec, fitted = ctx.select(k)
            rec["time_s"] = time.perf_counter() - t1
            tried.append(rec)
            bar.update(1)
            self._log(f"output kernel {k}: validation MRR {rec['best_score']:.4f} with {rec['best_params']} "
                      f"({rec['time_s']:.1f} s)")
            if best is None or rec["best_score"] > best[0]["best_score"]:
                best = (rec, fitted)
        bar.close()
        return tried, best[0], best[1]

    # ------------------------------------------------------------------ fit
    def fit(self, X: Any, y: Any) -> Self:
        """Choose the settings on a validation split of ``(X, y)`` and fit.

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
        kernels = self._check_params()
        n = check_paired(X, y, "X", "y")
        kind = self._resolve_inputs(X)
        Xv = self._input_values(X, kind)
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
            raise ValueError(f"need at least 5 training pairs to hold out a validation split, got {n}")
        rng = check_random_state(self.random_state)
        perm = rng.permutation(n)
        n_val = min(n - 2, max(2, int(round(self.validation_fraction * n))))
        split = (np.sort(perm[n_val:]), np.sort(perm[:n_val]))
        seed = int(rng.integers(2**31 - 1))
        ctx = _Context(self, kind, Xv, Ys, split, seed)
        self._log(f"{self.method}: {n} pairs ({kind} inputs), {n - n_val} train / {n_val} validation; "
                  f"output kernels tried: {', '.join(kernels)}")
        tried, rec, fitted = self._select(ctx, kernels)
        t1 = time.perf_counter()
        if self.method == "dsokr":  # a ridge is refitted with its features, a network is kept
            model, extra = ctx.refit_dsokr(rec, fitted)
        else:
            model = clone(ctx.estimator(rec["output_kernel"])).set_params(
                **{k: v for k, v in rec["best_params"].items() if k != "output_kernel"})
            model.fit(Xv, molecules_for_kernel(Ys, rec["output_kernel"]))
            extra = {}
        refit_s = time.perf_counter() - t1
        # ---- learned state
        for name in ("input_features_", "input_center_", "input_scale_"):  # state of an earlier fit
            self.__dict__.pop(name, None)
        self.method_, self.inputs_, self.model_, self.output_kernel_ = self.method, kind, model, rec["output_kernel"]
        self.best_params_, self.best_score_ = dict(rec["best_params"]), float(rec["best_score"])
        for name, value in {**extra, **stats}.items():
            setattr(self, name, value)
        self.training_molecules_ = Ys
        self.candidates_ = pool if pool is not None else list(dict.fromkeys(Ys))
        self.n_train_ = n
        self.selection_ = {"method": self.method, "inputs": kind, "scoring": "validation MRR",
                           "n_train": int(n - n_val), "n_val": int(n_val), "tried": tried,
                           "chosen": self.output_kernel_, "refit_s": refit_s}
        self.fit_time_ = self.selection_["time_s"] = time.perf_counter() - t0
        self._log(f"chose {self.best_params_} (validation MRR {self.best_score_:.4f}); fit in {self.fit_time_:.1f} s")
        return self

    # ------------------------------------------------------------------ predict
    def _queries(self, X):
        check_is_fitted(self, "model_")
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
            ``<h(x), psi(c)> - k(c, c) / 2``, columns in the pool's order.
        """
        Xq = self._queries(X)
        return self.model_.predict_scores(Xq, candidates=self._index(self._pool(candidates)))

    def predict_topk(self, X: Any, k: int = 5, candidates: Any = None) -> RetrievedMolecules:
        """The ``k`` best candidates per query (ties: the earlier candidate first).

        Returns
        -------
        RetrievedMolecules
            ``smiles`` (n_q lists of k' canonical SMILES), ``scores`` and ``indices``
            (ndarray (n_q, k')), ``k' = min(k, n_candidates)``.
        """
        Xq = self._queries(X)
        pool = self._pool(candidates)
        D = self.model_.predict_topk(Xq, k=k, candidates=self._index(pool))
        idx = np.asarray(D.indices)
        return RetrievedMolecules([[pool[j] for j in row] for row in idx], np.asarray(D.scores), idx)

    def predict(self, X: Any, candidates: Any = None) -> list:
        """The best candidate per query, as canonical SMILES (list of n_q str)."""
        return [row[0] for row in self.predict_topk(X, 1, candidates).smiles]

    def score(self, X: Any, y: Any, candidates: Any = None) -> float:
        """Mean reciprocal rank of the true molecules (greater is better; 1 = always first).

        The pool is the distinct molecules of ``y`` (they rank themselves, as in the
        selection) plus ``candidates`` if given; ties are not counted against the truth
        (:func:`sprokr.metrics.ranks_from_scores`).
        """
        from sprokr.metrics import ranks_from_scores

        check_paired(X, y, "X", "y")
        truth = canonical_smiles(y, "y")
        extra = [] if candidates is None else self._pool(candidates)
        pool = list(dict.fromkeys(truth + extra))
        pos = {s: i for i, s in enumerate(pool)}
        S = self.predict_scores(X, candidates=pool)
        return float(np.mean(1.0 / ranks_from_scores(S, np.array([pos[s] for s in truth]))))


class _Context:
    """One fit's selection: the data, the split and the per-output-kernel search."""

    def __init__(self, owner, kind, X, Ys, split, seed):
        from sprokr.model_selection import SelectionCache

        self.owner, self.kind, self.X, self.Ys, self.seed = owner, kind, X, Ys, seed
        self.tr, self.va = split
        # prepared samples, kernel columns and Gram factorisations shared by every fit of
        # the selection (grid points, sketch sizes, output kernels); dropped after fit
        self.cache = SelectionCache()
        self.X_view = self.cache.samples(X)
        self.Y_views = {}
        n_tr = self.tr.size
        self.input_kernel, default_grid = INPUT_KERNELS[kind]
        if kind == "vectors":  # a bandwidth grid scaled to the number of (standardised) features
            default_grid = tuple({"gamma": g / X.shape[1]} for g in VECTOR_GAMMAS)
        self.input_grid = _check_dict_list(owner.input_grid, "input_grid") if owner.input_grid is not None \
            else [dict(g) for g in default_grid]
        self.lams = np.asarray(DEFAULT_LAMS if owner.lams is None else owner.lams, dtype=np.float64)
        self.m_x_grid = _check_grid(owner.m_x_grid, "m_x_grid") or _sizes(n_tr)
        self.m_y_grid = _check_grid(owner.m_y_grid, "m_y_grid") or _sizes(n_tr)
        # default grids do not stop at their edge while the validation still improves there
        # (a size at the edge is not a choice); grids given are used as given
        self.extend = [name for name in ("m_x", "m_y") if getattr(owner, f"{name}_grid") is None]
        self.n_tr = n_tr
        self.psg = {"p": min(1.0, PSG_NONZEROS / n_tr)}
        self.input_features = {}  # DSOKR: (input-kernel params, m_x) -> (fitted features, Z_train, Z_val)

    def estimator(self, kernel):
        """The unfitted model of the method with output kernel ``kernel``."""
        from sprokr import DSOKR, IOKR, SISOKR

        m = self.owner.method
        if m == "iokr":
            return IOKR(input_kernel=self.input_kernel, output_kernel=kernel)
        if m == "sisokr":
            return SISOKR(input_kernel=self.input_kernel, output_kernel=kernel, input_sketch="subsample",
                          m_x=self.m_x_grid[0], output_sketch="psg", m_y=self.m_y_grid[0],
                          output_sketch_params=self.psg, random_state=self.seed)
        return DSOKR(output_kernel=kernel, output_sketch="psg", m_y=self.m_y_grid[0], output_sketch_params=self.psg,
                     regressor="ridge", random_state=self.seed)

    def outputs(self, kernel):
        """The training molecules as ``kernel`` takes them, a view of the cache (converted once)."""
        if kernel not in self.Y_views:
            self.Y_views[kernel] = self.cache.samples(molecules_for_kernel(self.Ys, kernel))
        return self.Y_views[kernel]

    def parts(self, kernel):
        """``((X_train, Y_train), (X_val, Y_val))`` as views of the cache."""
        X, Y = self.X_view, self.outputs(kernel)
        return (X.take(self.tr), Y.take(self.tr)), (X.take(self.va), Y.take(self.va))

    def cached_kernel(self, kernel, params, side="input"):
        """A registered kernel with ``params``, served by the cache (fitted on the training part
        when it learns from data)."""
        from sprokr.kernels import resolve_kernel

        k = resolve_kernel(kernel, params, side, np.dtype(np.float64))
        if side == "input":
            k = self.cache.fitted_kernel(k, self.X_view.take(self.tr))
        return self.cache.kernel(k)

    def select(self, kernel):
        """``(record, fitted)`` of the best settings with output kernel ``kernel``."""
        if self.owner.method == "dsokr":
            return self._select_dsokr(kernel)
        from sprokr.model_selection import retrieval_scorer, select_model

        (Xtr, Ytr), val = self.parts(kernel)
        sketched = self.owner.method == "sisokr"
        sel = select_model(self.estimator(kernel), Xtr, Ytr, lams=self.lams,
                           param_grid={"input_kernel_params": self.input_grid},
                           m_y_grid=self.m_y_grid if sketched else None, m_x_grid=self.m_x_grid if sketched else None,
                           scoring=retrieval_scorer("mrr"), validation_data=val,
                           perfect_h_params={"rtol": 0.02} if sketched else None, random_state=self.seed,
                           cache=self.cache, extend_grids=self.extend if sketched else False)
        ph = sel["perfect_h"]
        rec = {"output_kernel": kernel, "best_params": {"output_kernel": kernel, **sel["best_params"]},
               "best_score": float(sel["best_score"]),
               "grid": [{k: g[k] for k in ("params", "lams", "scores", "best_lam", "best_score", "fit_s", "path_s")}
                        for g in sel["grid"]],
               "m_x": sel["m_x"] and {k: sel["m_x"][k] for k in ("m", "best_scores", "best_lams", "selected_m",
                                                                   "stopped", "extended")},
               "perfect_h": ph and {k: ph[k] for k in ("m", "projection_error", "criterion", "plateau_m", "extended")}}
        return rec, None

    def _select_dsokr(self, kernel):
        """DSOKR by validation MRR: ``m_y`` from the perfect-h curve; per input-kernel point,
        the ridge penalty on Nystrom features of the smallest ``m_x``; ``m_x`` grown for the
        best pair until the MRR stops improving; then the networks at those sizes."""
        from sprokr.kernels import KernelFeatures
        from sprokr.model_selection import grow_until_plateau, perfect_h_curve, retrieval_scorer

        owner = self.owner
        (Xtr, Ytr), (Xva, Yva) = self.parts(kernel)
        ky = self.cached_kernel(kernel, None, "output")
        ph = perfect_h_curve(Ytr, Yva, ky, self.m_y_grid, sketch="psg", sketch_params=self.psg, rtol=0.02,
                             random_state=self.seed, max_m=self.n_tr if "m_y" in self.extend else None)
        m_y = int(ph["plateau_m"])
        scorer = retrieval_scorer("mrr")
        alphas = [float(a) for a in (DSOKR_ALPHAS if owner.alphas is None else owner.alphas)]
        runs, models = [], {}
        feats = self.input_features  # shared by the output kernels: the inputs do not depend on them

        def features(params, m_x):
            key = (repr(sorted(params.items())), m_x)
            if key not in feats:
                f = KernelFeatures(self.cached_kernel(self.input_kernel, params), n_components=m_x,
                                   random_state=self.seed)
                feats[key] = (f, f.fit_transform(Xtr), f.transform(Xva))
            return feats[key]

        def run(params, m_x, reg, reg_params):
            t0 = time.perf_counter()
            _, Ftr, Fva = features(params, m_x)
            model = clone(self.estimator(kernel)).set_params(m_y=m_y, regressor=reg, regressor_params=reg_params)
            Yt, Yv = Ytr, Yva
            if reg == "ridge":  # the output side served by the cache (a network is kept: plain kernel)
                model.set_params(output_kernel=ky)
            else:
                Yt, Yv = Ytr.raw(), Yva.raw()
            model.fit(Ftr, Yt, validation_data=(Fva, Yv))
            score = float(scorer(model, Fva, Yv))
            rec = {"input_kernel_params": dict(params), "m_x": int(m_x), "regressor": reg,
                   "regressor_params": dict(reg_params), "val_mrr": score, "val_loss": model.validation_loss_,
                   "fit_s": time.perf_counter() - t0}
            r = model.regressor_
            if reg == "mlp":
                rec.update(epochs=int(r.n_epochs_), converged=bool(r.converged_))
            runs.append(rec)
            models[len(runs) - 1] = model
            log_estimator(owner, f"  DSOKR {kernel} {params} m_x={m_x} {reg} {reg_params}: validation MRR {score:.4f}")
            return score, rec["fit_s"]

        m_x0 = self.m_x_grid[0]
        for params in self.input_grid:  # 1. kernel point x ridge penalty at the smallest m_x
            for a in alphas:
                run(params, m_x0, "ridge", {"alpha": a})
        first = max(runs, key=lambda r: r["val_mrr"])
        params, alpha = first["input_kernel_params"], first["regressor_params"]["alpha"]

        def evaluate(m_x):  # 2. m_x grown with that pair (error = -MRR)
            done = [r for r in runs if r["m_x"] == m_x and r["regressor"] == "ridge"
                    and r["input_kernel_params"] == params and r["regressor_params"]["alpha"] == alpha]
            if done:
                return -done[0]["val_mrr"], 0.0
            score, fit_s = run(params, m_x, "ridge", {"alpha": alpha})
            return -score, fit_s

        growth = grow_until_plateau(self.m_x_grid, evaluate, rtol=0.005, name="m_x",
                                    max_size=self.n_tr if "m_x" in self.extend else None)
        m_x = int(growth["selected_m"])
        for hidden in owner.hidden_layer_sizes:  # 3. networks at those sizes
            run(params, m_x, "mlp", {"hidden_layer_sizes": tuple(int(u) for u in hidden),
                                     "max_epochs": int(owner.max_epochs), "alpha": 1e-4, "lr_drops": 2,
                                     "monitor": "mrr"})
        at = [i for i, r in enumerate(runs) if r["m_x"] == m_x and r["input_kernel_params"] == params]
        best = max(at, key=lambda i: runs[i]["val_mrr"])
        b = runs[best]
        rec = {"output_kernel": kernel, "best_score": b["val_mrr"],
               "best_params": {"output_kernel": kernel, "input_kernel_params": dict(params), "m_x": m_x, "m_y": m_y,
                               "regressor": b["regressor"], "regressor_params": dict(b["regressor_params"])},
               "runs": runs, "m_x": {k: growth[k] for k in ("m", "errors", "selected_m", "stopped", "extended")},
               "perfect_h": {k: ph[k] for k in ("m", "projection_error", "criterion", "plateau_m", "extended")}}
        return rec, models[best]

    def refit_dsokr(self, rec, model):
        """``(model, learned state)`` of the chosen DSOKR: a ridge (closed form) refitted with its
        features on all training pairs; a network kept as trained (its early stopping needs
        the validation split), with the feature map it was trained on (refitted on the
        training part without the cache: the same sketch, the same features)."""
        from sprokr.kernels import KernelFeatures

        p = rec["best_params"]
        feats = KernelFeatures(self.input_kernel, dict(p["input_kernel_params"]), n_components=p["m_x"],
                               random_state=self.seed)
        if p["regressor"] == "ridge":
            feats.fit(self.X)
            Y = molecules_for_kernel(self.Ys, rec["output_kernel"])
            model = clone(self.estimator(rec["output_kernel"])).set_params(
                m_y=p["m_y"], regressor="ridge", regressor_params=dict(p["regressor_params"]))
            model.fit(feats.transform(self.X), Y)
        else:
            feats.fit(take(self.X, self.tr))
        return model, {"input_features_": feats}
