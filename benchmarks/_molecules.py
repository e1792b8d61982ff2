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
* :func:`select_dsokr`: DSOKR's ``m_y`` from the perfect-h curve and its network from the
  validation kernel loss (early stopping on the same validation split).
"""
from __future__ import annotations

import time
import warnings

import numpy as np
from sklearn.base import clone

from sprokr.kernels import fit_on_training_inputs
from sprokr.model_selection import retrieval_scorer, select_model
from sprokr.registry import resolve_kernel
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


def select_dsokr(make_dsokr, X, Y, m_y, hidden_grid, random_state=0, validation_fraction=0.2):
    """DSOKR networks tried on one seeded validation split of the training data.

    ``make_dsokr(m_y, hidden)`` returns an unfitted DSOKR; each is fitted on the training
    part with ``validation_data`` (early stopping of its network on the validation
    kernel-induced loss), the lowest validation loss wins.  That fitted model is returned
    (like scikit-learn's ``early_stopping=True``, the validation part stays held out).
    Any ConvergenceWarning is counted and reported (``n_convergence_warnings``).
    """
    from sklearn.exceptions import ConvergenceWarning

    rng = np.random.default_rng(random_state)
    n = len(Y)
    perm = rng.permutation(n)
    n_val = int(round(validation_fraction * n))
    va, tr = np.sort(perm[:n_val]), np.sort(perm[n_val:])
    Xtr, Ytr, Xv, Yv = take(X, tr), take(Y, tr), take(X, va), take(Y, va)
    runs, best, n_warn = [], None, 0
    for hidden in hidden_grid:
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            m = make_dsokr(m_y, hidden).fit(Xtr, Ytr, validation_data=(Xv, Yv))
        n_warn += sum(issubclass(w.category, ConvergenceWarning) for w in caught)
        reg = m.regressor_
        runs.append({"hidden": list(hidden), "val_loss": m.validation_loss_, "fit_s": time.perf_counter() - t0,
                     "epochs": getattr(reg, "n_epochs_", None), "converged": getattr(reg, "converged_", None)})
        print(f"  DSOKR hidden={hidden}: validation kernel loss {m.validation_loss_:.5g}, "
              f"{runs[-1]['epochs']} epochs, converged={runs[-1]['converged']}", flush=True)
        if best is None or m.validation_loss_ < best.validation_loss_:
            best = m
    return best, {"runs": runs, "n_convergence_warnings": n_warn, "n_train": len(tr), "n_val": len(va)}
