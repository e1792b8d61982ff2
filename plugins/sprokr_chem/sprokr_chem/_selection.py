"""The selection behind :class:`sprokr_chem.MoleculeRetriever`: per method and output kernel,
on one seeded validation split, every fit through one :class:`sprokr.model_selection.SelectionCache`.

The recommended kernels and grids live here (:data:`DEFAULT_LAMS`, :data:`INPUT_KERNELS`,
:data:`VECTOR_GAMMAS`, ...), with :class:`RetrieverSearch`, which runs the method's
selection for each output kernel (IOKR and SISOKR: :func:`sprokr.model_selection.select_model`;
DSOKR: the ridge on the input kernel's Nystrom features) and refits a chosen DSOKR.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np
from sklearn.base import clone

from sprokr.kernels import resolve_kernel
from sprokr.model_selection import check_sizes
from sprokr.progress import log_estimator
from sprokr.utils import take

__all__ = ["RetrieverSearch", "molecules_for_kernel", "default_sizes", "check_grid", "check_dict_list",
           "DEFAULT_LAMS", "AUTO_OUTPUT_KERNELS", "GRAPH_KERNELS", "INPUT_KERNELS", "VECTOR_GAMMAS", "PSG_NONZEROS",
           "DSOKR_LAMS", "DSOKR_ALPHAS"]

#: the ridge grid of the lam paths: 1e-1 ... 1e-8, one value per decade
DEFAULT_LAMS = tuple(float(v) for v in np.logspace(-1, -8, 8))
#: output kernels compared by validation with ``output_kernel="auto"`` (those installed)
AUTO_OUTPUT_KERNELS = ("wl", "morgan_count_tanimoto")
#: output kernels on molecule graphs (the others take SMILES)
GRAPH_KERNELS = ("wl", "core_wl", "grakel")
#: input kernel and default parameter grid per input kind (vectors: see VECTOR_GAMMAS)
INPUT_KERNELS = {"smiles": ("smiles_spectrum", ({"n": 4}, {"n": 6})), "text": ("text", ({},)),
                 "vectors": ("gaussian", ())}
#: Gaussian bandwidths tried on standardised vectors of d features: ``gamma = g / d`` for g
#: here (two standardised inputs are ~2d apart in squared distance, so g = 1 puts a typical
#: pair at exp(-2); the larger g, the closer to nearest-neighbour retrieval)
VECTOR_GAMMAS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
#: p-sparsified Gaussian output sketch with ~20 non-zeros per row (the benchmarks' choice)
PSG_NONZEROS = 20.0
#: DSOKR ridge penalties tried (the benchmarks' validation chose 1e-4 to 1e-2)
DSOKR_LAMS = (1e-4, 1e-3, 1e-2, 1e-1)
#: the former name of :data:`DSOKR_LAMS` (removed in sprokr 0.3)
DSOKR_ALPHAS = DSOKR_LAMS


def molecules_for_kernel(smiles: list, kernel: str) -> list:
    """The molecules as an output kernel takes them: molecule graphs
    (:func:`sprokr_chem.smiles_to_graph`) for the graph kernels :data:`GRAPH_KERNELS`, else
    the SMILES themselves."""
    if kernel.rpartition(":")[2] in GRAPH_KERNELS:
        from .graphs import smiles_to_graph

        return [smiles_to_graph(s) for s in smiles]
    return list(smiles)


def default_sizes(n: int) -> list:
    """The default grid of sketch sizes: 100, 200, 400, ... up to half the training part (the
    selection extends it, doubling up to the training part, while the validation still
    improves at its edge)."""
    sizes = [int(s) for s in 100 * 2 ** np.arange(12) if s <= n // 2]
    return sizes or [max(1, n // 2)]


def check_grid(grid: Any, name: str, upper: int | None = None) -> list | None:
    """A grid of sketch sizes as a list of int (None: None), or a ValueError naming ``name``.

    :func:`sprokr.model_selection.check_sizes` (the check of ``select_model``'s grids): a
    non-empty increasing sequence of positive integers; integral floats (``3.0``) are sizes,
    ``2.5``, a bool or a string is refused, not truncated.

    Parameters
    ----------
    grid : sequence of int or None
        The sizes (None: the default grid, chosen by the caller).
    name : str
        The argument's name in the error messages (``m_x_grid``, ``m_y_grid``).
    upper : int, optional
        The largest size allowed: the selection's training part (a sketch draws at most one
        column per sample).

    Returns
    -------
    list of int or None
    """
    if grid is None:
        return None
    return check_sizes(grid, name, upper, "the model selection's training part (the rest of the training pairs "
                                          "validates)")


def check_dict_list(grid: Any, name: str) -> list:
    """A non-empty list of parameter dicts (copies), or a ValueError naming ``name``."""
    if isinstance(grid, dict) or not isinstance(grid, (list, tuple)) or not grid or \
            not all(isinstance(g, dict) for g in grid):
        raise ValueError(f"{name} must be a non-empty list of parameter dicts, got {grid!r}")
    return [dict(g) for g in grid]


class RetrieverSearch:
    """One fit's selection: the data, the split, the cache and the per-method, per-output-kernel search.

    ``method`` (an attribute, set before :meth:`select`) is the model searched; the
    searches of several methods (``method="auto"``) share the split and the cache.
    """

    def __init__(self, owner, kind, X, Ys, split, seed):
        from sprokr.model_selection import SelectionCache

        self.owner, self.kind, self.X, self.Ys, self.seed = owner, kind, X, Ys, seed
        self.method = owner.method
        self.tr, self.va = split
        # prepared samples, kernel columns and Gram factorisations shared by every fit of
        # the selection (grid points, sketch sizes, output kernels); dropped after fit
        self.cache = SelectionCache()
        self.X_view = self.cache.samples(X)
        self.Y_views, self.Y_lists = {}, {}
        n_tr = self.tr.size
        self.input_kernel, default_grid = INPUT_KERNELS[kind]
        if kind == "vectors":  # a bandwidth grid scaled to the number of (standardised) features
            default_grid = tuple({"gamma": g / X.shape[1]} for g in VECTOR_GAMMAS)
        self.input_grid = check_dict_list(owner.input_grid, "input_grid") if owner.input_grid is not None \
            else [dict(g) for g in default_grid]
        for i, params in enumerate(self.input_grid):  # named before any fit: the selection fits many
            resolve_kernel(self.input_kernel, params, "input", np.dtype(np.float64), name=f"input_grid[{i}]")
        self.lams = np.asarray(DEFAULT_LAMS if owner.lams is None else owner.lams, dtype=np.float64)
        self.m_x_grid = check_grid(owner.m_x_grid, "m_x_grid", n_tr) or default_sizes(n_tr)
        self.m_y_grid = check_grid(owner.m_y_grid, "m_y_grid", n_tr) or default_sizes(n_tr)
        # default grids do not stop at their edge while the validation still improves there
        # (a size at the edge is not a choice); grids given are used as given
        self.extend = [name for name in ("m_x", "m_y") if getattr(owner, f"{name}_grid") is None]
        self.n_tr = n_tr
        self.psg = {"p": min(1.0, PSG_NONZEROS / n_tr)}
        self.input_features = {}  # DSOKR: (input-kernel params, m_x) -> (fitted features, Z_train, Z_val)

    def estimator(self, kernel):
        """The unfitted model of the method with output kernel ``kernel``."""
        from sprokr import DSOKR, IOKR, SISOKR

        m = self.method
        if m == "iokr":
            return IOKR(input_kernel=self.input_kernel, output_kernel=kernel)
        if m == "sisokr":
            return SISOKR(input_kernel=self.input_kernel, output_kernel=kernel, input_sketch="subsample",
                          m_x=self.m_x_grid[0], output_sketch="psg", m_y=self.m_y_grid[0],
                          output_sketch_params=self.psg, random_state=self.seed)
        return DSOKR(output_kernel=kernel, output_sketch="psg", m_y=self.m_y_grid[0], output_sketch_params=self.psg,
                     regressor="ridge", random_state=self.seed)

    def molecules(self, kernel):
        """All the training molecules as ``kernel`` takes them (converted once: the selection
        and the refit share them)."""
        if kernel not in self.Y_lists:
            self.Y_lists[kernel] = molecules_for_kernel(self.Ys, kernel)
        return self.Y_lists[kernel]

    def outputs(self, kernel):
        """The training molecules as ``kernel`` takes them, a view of the cache."""
        if kernel not in self.Y_views:
            self.Y_views[kernel] = self.cache.samples(self.molecules(kernel))
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

    def release(self, kernel):
        """Drop what the cache keeps for output kernel ``kernel`` (its columns, the sketched
        bases and features): the next output kernel's fits then do not evict each other's."""
        from sprokr.kernels import resolve_kernel

        return self.cache.release(resolve_kernel(kernel, None, "output", np.dtype(np.float64)))

    def select(self, kernel):
        """``(record, fitted)`` of the best settings with output kernel ``kernel``."""
        if self.method == "dsokr":
            return self._select_dsokr(kernel)
        from sprokr.model_selection import retrieval_scorer, select_model

        (Xtr, Ytr), val = self.parts(kernel)
        sketched = self.method == "sisokr"
        est = self.estimator(kernel)
        if not sketched:  # the path scores its own index of the validation outputs: exact IOKR's
            # default index of the training outputs (1.6-4.4 s per fit at 8000) is not used
            est.set_params(default_index=False)  # (a sketched model's holds the targets it reuses)
        sel = select_model(est, Xtr, Ytr, lams=self.lams,
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
        from sprokr.model_selection import ProjectedTargets, grow_until_plateau, perfect_h_curve, retrieval_scorer
        from sprokr.models.dsokr import sketched_output_basis
        from sprokr.numerics import DEFAULT_RCOND
        from sprokr.registry import get_registry

        owner = self.owner
        (Xtr, Ytr), (Xva, Yva) = self.parts(kernel)
        ky = self.cached_kernel(kernel, None, "output")
        ph = perfect_h_curve(Ytr, Yva, ky, self.m_y_grid, sketch="psg", sketch_params=self.psg, rtol=0.02,
                             random_state=self.seed, max_m=self.n_tr if "m_y" in self.extend else None)
        m_y = int(ph["plateau_m"])
        scorer = retrieval_scorer("mrr")
        alphas = [float(a) for a in (DSOKR_LAMS if owner.dsokr_lams is None else owner.dsokr_lams)]
        runs, models = [], {}
        feats = self.input_features  # shared by the output kernels: the inputs do not depend on them

        def features(params, m_x):
            key = (repr(sorted(params.items())), m_x)
            if key not in feats:
                f = KernelFeatures(self.cached_kernel(self.input_kernel, params), m_x=m_x,
                                   random_state=self.seed)
                feats[key] = (f, f.fit_transform(Xtr), f.transform(Xva))
            return feats[key]

        projected = []  # the ridges' projected targets (one output basis for every ridge)

        def run(params, m_x, reg, reg_params):
            t0 = time.perf_counter()
            _, Ftr, Fva = features(params, m_x)
            rec = {"input_kernel_params": dict(params), "m_x": int(m_x), "regressor": reg,
                   "regressor_params": dict(reg_params)}
            if reg == "ridge":
                # a ridge is linear in its targets: fitted to the n_val projected targets
                # Psi E^T it scores as the DSOKR fitted to Psi (7933 targets at m_y = 8000),
                # whose output basis is the perfect-h curve's at m_y (served by the cache);
                # the chosen ridge is refitted (refit_dsokr)
                if not projected:
                    basis = sketched_output_basis(ky, ph["plateau_sketch"], Ytr, DEFAULT_RCOND)
                    projected.append(ProjectedTargets.from_features(basis, Ytr, Yva))
                score = projected[0].score(get_registry().create("regressor", reg, reg_params), Ftr, Fva)
                # (no validation kernel loss: it needs the n x p targets the trial never forms)
                rec.update(val_mrr=score, val_loss=None, fit_s=time.perf_counter() - t0)
            else:  # a network is kept as trained: plain kernel, early stopping on validation
                model = clone(self.estimator(kernel)).set_params(m_y=m_y, regressor=reg, regressor_params=reg_params)
                model.fit(Ftr, Ytr.raw(), validation_data=(Fva, Yva.raw()))
                score = float(scorer(model, Fva, Yva.raw()))
                r = model.regressor_
                rec.update(val_mrr=score, val_loss=model.validation_loss_, fit_s=time.perf_counter() - t0,
                           epochs=int(r.n_epochs_), converged=bool(r.converged_))
                models[len(runs)] = model
            runs.append(rec)
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
                                     "max_epochs": int(owner.max_epochs), "lam": 1e-4, "lr_drops": 2,
                                     "monitor": "mrr"})
        at = [i for i, r in enumerate(runs) if r["m_x"] == m_x and r["input_kernel_params"] == params]
        best = max(at, key=lambda i: runs[i]["val_mrr"])
        b = runs[best]
        rec = {"output_kernel": kernel, "best_score": b["val_mrr"],
               "best_params": {"output_kernel": kernel, "input_kernel_params": dict(params), "m_x": m_x, "m_y": m_y,
                               "regressor": b["regressor"], "regressor_params": dict(b["regressor_params"])},
               "runs": runs, "m_x": {k: growth[k] for k in ("m", "errors", "selected_m", "stopped", "extended")},
               "perfect_h": {k: ph[k] for k in ("m", "projection_error", "criterion", "plateau_m", "extended")}}
        return rec, models.get(best)  # a ridge is refitted (refit_dsokr), a network kept

    def refit_dsokr(self, rec, model):
        """``(model, learned state)`` of the chosen DSOKR: a ridge (closed form) refitted with its
        features on all training pairs; a network kept as trained (its early stopping needs
        the validation split), with the feature map it was trained on (refitted on the
        training part without the cache: the same sketch, the same features)."""
        from sprokr.kernels import KernelFeatures

        p = rec["best_params"]
        feats = KernelFeatures(self.input_kernel, dict(p["input_kernel_params"]), m_x=p["m_x"],
                               random_state=self.seed)
        if p["regressor"] == "ridge":
            feats.fit(self.X)
            Y = self.molecules(rec["output_kernel"])
            model = clone(self.estimator(rec["output_kernel"])).set_params(
                m_y=p["m_y"], regressor="ridge", regressor_params=dict(p["regressor_params"]))
            model.fit(feats.transform(self.X), Y)
        else:
            feats.fit(take(self.X, self.tr))
        return model, {"input_features_": feats}
