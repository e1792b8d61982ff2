"""Shared pieces of the molecule benchmarks (QM9 SMILES -> graph, ChEBI-20 text -> molecule).

* :func:`unseen_split`: train / held-out split by molecule; the test queries are drawn from
  the held-out molecules and the candidate set is *every* held-out molecule (never a
  training molecule), so each query's truth is in the candidates and has never been seen.
* :func:`rank_metrics`: top-k and MRR from a full score matrix (``predict_scores``), ties
  counted at their expected rank (a random tie-break), so equal-feature twins neither help
  nor hurt on average.
* :func:`nearest_neighbour_scores`: the baseline -- the training output of the nearest
  training input (input kernel), then every candidate scored by its output-kernel
  similarity to that output.
* :func:`select_iokr_family`: IOKR / SISOKR settings by ``sprokr.model_selection`` on a
  validation split of the training data (never the test split).
* :func:`select_dsokr`: DSOKR on Nystrom features of the input kernel -- ridge penalty,
  ``m_y``, ``m_x`` and (optionally) networks chosen by validation MRR on the training molecules.
"""
from __future__ import annotations

import time
import warnings

import numpy as np
from sklearn.base import clone

from sprokr.kernels import fit_on_training_inputs
from sprokr.model_selection import retrieval_scorer, select_model
from sprokr.kernels import resolve_kernel
from sprokr.utils import iter_chunks, take, take_slice


def unseen_split(n, n_train, n_test, rng):
    """``(train, held_out, test_pos)``: indices of the training and held-out molecules, and
    the positions (in ``held_out``) of the test queries.  Candidates = ``held_out``."""
    if n_train + n_test > n:
        raise SystemExit(f"need {n_train} + {n_test} molecules, the data has {n}")
    perm = rng.permutation(n)
    train, held = np.sort(perm[:n_train]), np.sort(perm[n_train:])
    test_pos = np.sort(rng.choice(len(held), n_test, replace=False))
    return train, held, test_pos


def expected_ranks(S, true_idx):
    """Rank (1 = best) of the true candidate; ties at their expected rank (random tie-break)."""
    S = np.asarray(S, dtype=np.float64)
    st = S[np.arange(S.shape[0]), true_idx][:, None]
    greater = (S > st).sum(axis=1)
    ties = (S == st).sum(axis=1) - 1
    return 1.0 + greater + ties / 2.0


def rank_metrics(S, true_idx, ks=(1, 5, 10)):
    """``{"top1", "top5", "top10", "MRR"}`` of a full score matrix (n_q, n_c)."""
    r = expected_ranks(S, true_idx)
    out = {f"top{k}": float(np.mean(r <= k)) for k in ks}
    out["MRR"] = float(np.mean(1.0 / r))
    return out


def full_scores(model, X, candidates, batch=500):
    """``predict_scores`` over query batches: the (n_q, n_c) matrix, plus the index time."""
    t0 = time.perf_counter()
    index = model.make_candidate_index(candidates)
    n = len(X) if not hasattr(X, "shape") else X.shape[0]
    S = np.empty((n, len(index)))
    for sl in iter_chunks(n, batch):
        S[sl] = model.predict_scores(take_slice(X, sl), candidates=index)
    return S, time.perf_counter() - t0


def nearest_neighbour_scores(input_kernel, input_params, output_kernel, output_params, X_train, Y_train,
                             X_query, candidates, batch=500):
    """Baseline scores (n_q, n_c): output-kernel similarity of each candidate to the training
    output of the query's nearest training input (largest input-kernel value).

    Returns ``(S, nn)`` with ``nn`` the index of the nearest training input per query.
    """
    # a data-dependent input kernel (e.g. the text kernel's idf) is fitted on the training inputs
    kx = fit_on_training_inputs(resolve_kernel(input_kernel, input_params, "input", np.dtype(np.float64)), X_train)
    ky = resolve_kernel(output_kernel, output_params, "output", np.dtype(np.float64))
    Xtr = kx.prepare(X_train)
    n_q = len(X_query) if not hasattr(X_query, "shape") else X_query.shape[0]
    nn = np.empty(n_q, dtype=np.int64)
    for sl in iter_chunks(n_q, batch):
        Kq = np.asarray(kx.pairwise(kx.prepare(take_slice(X_query, sl)), Xtr))
        if not kx.normalized:  # nearest in the feature space: max k(x, x_i) - k(x_i, x_i) / 2
            Kq = Kq - 0.5 * np.asarray(kx.diag(Xtr))[None, :]
        nn[sl] = Kq.argmax(axis=1)
    Cp = ky.prepare_outputs(candidates)
    S = np.asarray(ky.pairwise(ky.prepare_outputs(take(Y_train, nn)), Cp), dtype=np.float64)
    if not ky.normalized:  # rank by -|psi(y_nn) - psi(c)|^2 (up to a per-row constant)
        S = S - 0.5 * np.asarray(ky.diag(Cp), dtype=np.float64)[None, :]
    return S, nn


def select_iokr_family(estimator, X, Y, lams, param_grid=None, m_y_grid=None, m_x_grid=None,
                       metric="mrr", random_state=0, validation_fraction=0.2, m_x_budget_s=None):
    """``select_model`` with the retrieval scorer (the validation molecules rank themselves).

    Returns ``(estimator with the chosen settings (unfitted), selection dict)``.
    """
    perfect_h = None
    if m_y_grid is not None:
        perfect_h = {"rtol": 0.02}
    sel = select_model(estimator, X, Y, lams=lams, param_grid=param_grid, m_y_grid=m_y_grid,
                       m_x_grid=m_x_grid, scoring=retrieval_scorer(metric), perfect_h_params=perfect_h,
                       validation_fraction=validation_fraction, m_x_budget_s=m_x_budget_s,
                       random_state=random_state)
    return clone(estimator).set_params(**sel["best_params"]), sel


def run_sisokr(base, X_tr, Y_tr, X_te, candidates, lams, m_y_grid, m_x_grid, seed, log, finish, fit_it=True,
               extra_scores=None):
    """Select SISOKR (m_y, m_x, lam) on the training data, log the choice, then refit and
    score it over the candidates (``fit_it``); returns the selected ``m_y``.

    ``extra_scores(model, X_te)``, if given, scores the queries over a second candidate set
    (e.g. the training molecules), passed to ``finish`` as ``S_train``."""
    t0 = time.perf_counter()
    sis, ssel = select_iokr_family(base, X_tr, Y_tr, lams, m_y_grid=m_y_grid, m_x_grid=m_x_grid,
                                   random_state=seed)
    sel_s = time.perf_counter() - t0
    log[f"seed{seed}"]["SISOKR"] = {"best_params": ssel["best_params"], "val_mrr": ssel["best_score"],
                                    "perfect_h": {k: ssel["perfect_h"][k] for k in ("m", "metric", "plateau_m")},
                                    "m_x": ssel["m_x"] and {k: ssel["m_x"][k] for k in ("m", "best_scores",
                                                                                        "selected_m", "stopped")},
                                    "select_s": sel_s}
    print(f"SISOKR selection: {ssel['best_params']} (validation MRR {ssel['best_score']:.4f}, {sel_s:.0f} s)",
          flush=True)
    if fit_it:
        t0 = time.perf_counter()
        sis.fit(X_tr, Y_tr)
        fit_s = time.perf_counter() - t0
        S, dec_s = full_scores(sis, X_te, candidates)
        kw = {} if extra_scores is None else {"S_train": extra_scores(sis, X_te)}
        finish("SISOKR", S, fit_s, dec_s, {"select_s": sel_s, "m_x": sis.m_x, "m_y": sis.m_y, "lam": sis.lam}, **kw)
    return ssel["best_params"]["m_y"]


def add_dsokr_arguments(ap, m_x, alphas, m_y_grid):
    """The ``--dsokr-*`` options of :func:`run_dsokr` (defaults per benchmark)."""
    ints = lambda s: [int(v) for v in s.split(",")]  # noqa: E731
    ap.add_argument("--dsokr-m-x", type=int, default=m_x,
                    help="DSOKR's first number of Nystrom features when SISOKR is not run (else SISOKR's m_x)")
    ap.add_argument("--dsokr-m-x-doublings", type=int, default=2,
                    help="DSOKR's m_x grid: the first size doubled this many times (capped at the training part)")
    ap.add_argument("--dsokr-alphas", type=lambda s: [float(v) for v in s.split(",")], default=alphas,
                    help="ridge penalties tried (at the smallest m_y)")
    ap.add_argument("--dsokr-m-y-grid", type=ints, default=m_y_grid,
                    help="DSOKR's m_y, grown until the validation MRR stops improving")
    ap.add_argument("--dsokr-networks", default="[]",
                    help='JSON list of networks also tried (early stopping on the validation MRR), e.g. '
                         '[{"name": "mlp", "regressor": "torch_mlp", "params": {"hidden_layer_sizes": [1024]}}]; '
                         'they work on the Nystrom features')
    ap.add_argument("--dsokr-ensemble", type=int, default=3, help="output sketches of the DSOKR ensemble (0: none)")


def parse_networks(text):
    """The networks DSOKR's selection tries: a JSON list of ``{"name", "regressor", "params"}``
    (``--dsokr-networks``); torch regressors need torch (a clear exit otherwise)."""
    import json

    from sprokr.models.regressors import torch_available

    nets = json.loads(text)
    if not isinstance(nets, list) or not all(isinstance(n, dict) and {"name", "regressor"} <= set(n) for n in nets):
        raise SystemExit(f"--dsokr-networks must be a JSON list of objects with name and regressor, got {text!r}")
    if any(str(n["regressor"]).startswith("torch") for n in nets) and not torch_available():
        raise SystemExit("--dsokr-networks names torch regressors: pip install 'sprokr[torch]'")
    return nets


def select_dsokr(features, make_dsokr, X, Y, alphas, m_y_grid, m_x_grid, networks=(), n_ensemble=0,
                 random_state=0, validation_fraction=0.2, rtol=0.005):
    """DSOKR chosen by validation MRR on one seeded split of the TRAINING data (never the test split).

    ``features``: an unfitted transformer of the inputs with an ``m_x`` parameter
    (``sprokr.kernels.KernelFeatures`` of the input kernel), fitted on the training part
    while selecting; ``make_dsokr(m_y, regressor, regressor_params, seed)`` returns an
    unfitted DSOKR on those features.  Every candidate is scored by the retrieval MRR of the
    validation molecules ranking themselves (``sprokr.model_selection.retrieval_scorer``) --
    not by the validation kernel loss, which on these tasks prefers over-smoothed models
    (docs/dsokr.md):

    1. the penalty ``alpha`` of a ridge (regressor ``"ridge"``, scikit-learn's ``Ridge``) on
       the features, at the smallest ``m_x`` and ``m_y`` of the grids;
    2. ``m_y`` grown with that ``alpha`` until the validation MRR stops improving by ``rtol``
       (``sprokr.model_selection.grow_until_plateau``; the smallest size within ``rtol`` is kept);
    3. ``m_x`` (the number of features) grown the same way at that ``m_y``;
    4. each network of ``networks`` (dicts ``name``, ``regressor``, ``params``) at those
       sizes, early-stopped on the validation MRR (``monitor="mrr"``).

    The best candidate wins.  A ridge (closed form) is refitted on all the training data, its
    features too; a network keeps the validation part held out (early stopping, like
    scikit-learn's ``early_stopping=True``).  ``log["refit_s"]`` / ``log["ensemble_fit_s"]``:
    the fit time of the chosen model / of the ensemble, features included.  With
    ``n_ensemble`` >= 2, a ``DSOKREnsemble`` of that many output sketches of the chosen
    configuration is fitted the same way.  ConvergenceWarnings are counted
    (``n_convergence_warnings``).

    Returns ``(model, fitted features, ensemble or None, log)``.
    """
    from sklearn.exceptions import ConvergenceWarning

    from sprokr import DSOKREnsemble
    from sprokr.model_selection import grow_until_plateau, retrieval_scorer

    rng = np.random.default_rng(random_state)
    n = len(Y)
    perm = rng.permutation(n)
    n_val = int(round(validation_fraction * n))
    va, tr = np.sort(perm[:n_val]), np.sort(perm[n_val:])
    Xtr, Ytr, Xv, Yv = take(X, tr), take(Y, tr), take(X, va), take(Y, va)
    m_y_grid = [m for m in m_y_grid if m <= len(tr)] or [len(tr)]
    m_x_grid = [m for m in m_x_grid if m <= len(tr)] or [len(tr)]
    scorer = retrieval_scorer("mrr")
    log = {"n_train": len(tr), "n_val": len(va), "features_s": {}, "runs": [], "n_convergence_warnings": 0}
    fitted, feats_by_m = {}, {}

    def features_of(m_x):
        """``(fitted features, Z_train_part, Z_validation)`` with ``m_x`` components."""
        if m_x not in feats_by_m:
            t = time.perf_counter()
            f = clone(features).set_params(m_x=m_x).fit(Xtr)
            feats_by_m[m_x] = (f, f.transform(Xtr), f.transform(Xv))
            log["features_s"][m_x] = time.perf_counter() - t
        return feats_by_m[m_x]

    def run(name, m_x, m_y, reg, params):
        if (name, m_x, m_y) in fitted:
            return fitted[(name, m_x, m_y)][0], 0.0
        _, Ztr, Zv = features_of(m_x)
        t = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            m = make_dsokr(m_y, reg, params, random_state).fit(Ztr, Ytr, validation_data=(Zv, Yv))
        log["n_convergence_warnings"] += sum(issubclass(w.category, ConvergenceWarning) for w in caught)
        fit_s = time.perf_counter() - t
        mrr = scorer(m, Zv, Yv)
        r = m.regressor_
        log["runs"].append({"name": name, "m_x": m_x, "m_y": m_y, "val_mrr": mrr, "val_loss": m.validation_loss_,
                            "fit_s": fit_s, "epochs": getattr(r, "n_epochs_", None),
                            "best_epoch": getattr(r, "best_epoch_", None), "converged": getattr(r, "converged_", None)})
        print(f"  DSOKR {name}, m_x={m_x}, m_y={m_y}: validation MRR {mrr:.4f}, kernel loss {m.validation_loss_:.4f} "
              f"({fit_s:.0f} s)", flush=True)
        fitted[(name, m_x, m_y)] = (mrr, m)
        return mrr, fit_s

    # 1. ridge penalty at the smallest sizes; 2. m_y grown with it; 3. m_x grown
    ridges = {f"ridge alpha={a:g}": {"alpha": float(a)} for a in alphas}
    for name, params in ridges.items():
        run(name, m_x_grid[0], m_y_grid[0], "ridge", params)
    ridge = max(ridges, key=lambda k: fitted[(k, m_x_grid[0], m_y_grid[0])][0])

    def grow(grid, size):
        """Grow one size (``size(m) -> (m_x, m_y)``) for the chosen ridge; error = -MRR."""
        def evaluate(m):
            mrr, fit_s = run(ridge, *size(m), "ridge", ridges[ridge])
            return -mrr, fit_s

        res = grow_until_plateau(grid, evaluate, rtol=rtol)
        return res["selected_m"], {k: res[k] for k in ("m", "errors", "selected_m", "stopped")}

    m_y, log["m_y_growth"] = grow(m_y_grid, lambda m: (m_x_grid[0], m))
    m_x, log["m_x_growth"] = grow(m_x_grid, lambda m: (m, m_y))
    # 4. networks at those sizes
    for net in networks:
        run(net["name"], m_x, m_y, net["regressor"], {**net.get("params", {}), "monitor": "mrr"})
    best = max((k for k in fitted if k[1:] == (m_x, m_y)), key=lambda k: fitted[k][0])
    name = best[0]
    log.update(chosen=name, m_x=m_x, m_y=m_y, val_mrr=fitted[best][0])
    print(f"DSOKR selection: {name}, m_x={m_x}, m_y={m_y} (validation MRR {fitted[best][0]:.4f})", flush=True)
    ensemble = None
    t0 = time.perf_counter()
    if name in ridges:  # closed form: refit features and model on all the training data
        feats = clone(features).set_params(m_x=m_x).fit(X)
        Z = feats.transform(X)
        feat_s = time.perf_counter() - t0
        model = make_dsokr(m_y, "ridge", ridges[name], random_state).fit(Z, Y)
        log["refit_s"] = time.perf_counter() - t0  # features + model
        if n_ensemble >= 2:
            t0 = time.perf_counter()
            ensemble = DSOKREnsemble(make_dsokr(m_y, "ridge", ridges[name], None), n_estimators=n_ensemble,
                                     random_state=random_state).fit(Z, Y)
            log["ensemble_fit_s"] = time.perf_counter() - t0 + feat_s
    else:  # the network fitted on the training part, its features fitted there too
        model = fitted[best][1]
        feats, Ztr, Zv = features_of(m_x)
        log["refit_s"] = log["features_s"][m_x] + next(
            r["fit_s"] for r in log["runs"] if (r["name"], r["m_x"], r["m_y"]) == best)
        if n_ensemble >= 2:
            net = next(nt for nt in networks if nt["name"] == name)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ConvergenceWarning)
                ensemble = DSOKREnsemble(make_dsokr(m_y, net["regressor"], {**net.get("params", {}), "monitor": "mrr"},
                                                    None), n_estimators=n_ensemble,
                                         random_state=random_state).fit(Ztr, Ytr, validation_data=(Zv, Yv))
            log["ensemble_fit_s"] = time.perf_counter() - t0 + log["features_s"][m_x]
            log["n_convergence_warnings"] += sum(issubclass(w.category, ConvergenceWarning) for w in caught)
    log["features_s"] = {str(k): v for k, v in log["features_s"].items()}  # JSON keys
    return model, feats, ensemble, log


def run_dsokr(input_kernel, input_params, make, X_tr, Y_tr, X_te, candidates, args, seed, log, finish):
    """DSOKR in a molecule benchmark: :func:`select_dsokr` on the training data with Nystrom
    features of the input kernel (``m_x`` grown from SISOKR's choice -- ``--dsokr-m-x`` when
    SISOKR did not run -- by doubling up to the training part), then the chosen model
    (``DSOKR``) and its ensemble (``DSOKR-ens<T>``) scored over the candidates.
    ``make(m_y, regressor, regressor_params, seed)`` builds an unfitted DSOKR."""
    from sprokr.kernels import KernelFeatures

    t_select = time.perf_counter()
    sis = log[f"seed{seed}"].get("SISOKR")
    m_x0 = sis["best_params"]["m_x"] if sis else args.dsokr_m_x
    n_fit = len(Y_tr) - int(round(0.2 * len(Y_tr)))  # the training part of select_dsokr's split
    m_x_grid = sorted({min(m_x0 * 2**k, n_fit) for k in range(args.dsokr_m_x_doublings + 1)})
    feats = KernelFeatures(input_kernel, input_params, random_state=seed)
    ds, feats, ens, dsel = select_dsokr(feats, make, X_tr, Y_tr, args.dsokr_alphas, args.dsokr_m_y_grid, m_x_grid,
                                        parse_networks(args.dsokr_networks), args.dsokr_ensemble, random_state=seed)
    select_s = time.perf_counter() - t_select  # the whole selection, refit and ensemble included
    log[f"seed{seed}"]["DSOKR"] = dsel
    t0 = time.perf_counter()
    Z_te = feats.transform(X_te)  # the input side of decoding
    feat_s = time.perf_counter() - t0
    info = {"select_s": select_s, "m_x": dsel["m_x"], "m_y": dsel["m_y"], "val_mrr": dsel["val_mrr"],
            "convergence_warnings": dsel["n_convergence_warnings"]}
    for name, model, fit_s in (("DSOKR", ds, dsel["refit_s"]),
                               (f"DSOKR-ens{args.dsokr_ensemble}", ens, dsel.get("ensemble_fit_s"))):
        if model is not None:
            S, dec_s = full_scores(model, Z_te, candidates)
            finish(name, S, fit_s, dec_s + feat_s, info)
