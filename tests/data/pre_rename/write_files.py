"""Writes the model files of this folder with a sprokr from before the parameter renames.

They were written by sprokr's main branch at commit 41190ef (before ``sprokr.deprecation``)::

    cd <checkout of 41190ef> && python tests/data/pre_rename/write_files.py OUT_DIR

``tests/test_renamed_parameters.py`` loads them with the current code and compares the
predictions with ``predictions.json`` (written here, by the old code).
"""
import json
import pathlib
import pickle
import sys
import warnings

import numpy as np

from sprokr.kernels import KernelFeatures
from sprokr.models import (DSOKR, DSOKREnsemble, JointQuantileRegressor, MLPSurrogate, RFFKernelMachine,
                           SketchedKernelMachine, TorchRegressor)

out = pathlib.Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
rng = np.random.default_rng(0)
X = rng.standard_normal((40, 3))
y = np.sin(X[:, 0]) + 0.1 * X[:, 1]
Xq = rng.standard_normal((5, 3))
Y = (X @ rng.standard_normal((3, 4)) > 0).astype(int)
T = rng.standard_normal((40, 2))
preds = {}


def keep(name, model, P):
    model.save(out / f"{name}.sprokr")
    preds[name] = np.asarray(P, dtype=float).tolist()


warnings.simplefilter("ignore")  # convergence warnings of the few epochs
m = SketchedKernelMachine(sketch="subsample", m=15, solver="lbfgs", loss="huber", lam=1e-3, random_state=0).fit(X, y)
keep("skm", m, m.predict(Xq))
(out / "skm.pkl").write_bytes(pickle.dumps(m))
m = JointQuantileRegressor(taus=(0.2, 0.8), sketch="subsample", m=15, solver="adam", max_epochs=5,
                           random_state=0).fit(X, y)
keep("jqr", m, m.predict(Xq))
m = RFFKernelMachine(gamma=0.5, n_components=20, solver="auto", random_state=0).fit(X, y)
keep("rff", m, m.predict(Xq))
m = RFFKernelMachine(sigma2=2.0, n_components=20, random_state=0).fit(X, y)
keep("rff_sigma2", m, m.predict(Xq))
m = KernelFeatures("gaussian", {"gamma": 0.4}, n_components=10, sketch="subsample", random_state=0).fit(X)
keep("kernel_features", m, m.transform(Xq))
m = MLPSurrogate(hidden_layer_sizes=(8,), alpha=1e-3, learning_rate_init=1e-2, patience=3, max_epochs=5,
                 random_state=0).fit(X, T)
keep("mlp", m, m.predict(Xq))
m = DSOKR(m_y=10, regressor="mlp", regressor_params={"hidden_layer_sizes": (8,), "alpha": 1e-3,
                                                     "learning_rate_init": 1e-2, "patience": 3, "max_epochs": 5},
          random_state=0).fit(X, Y)
keep("dsokr_mlp", m, m.predict_scores(Xq))
m = DSOKREnsemble(estimators=DSOKR(m_y=10, regressor="kernel_ridge",
                                   regressor_params={"input_sketch": "subsample", "m_x": 15}),
                  n_estimators=2, random_state=0).fit(X, Y)
keep("dsokr_ensemble", m, m.predict_scores(Xq))
m = TorchRegressor(hidden_layer_sizes=(8,), lr=1e-2, weight_decay=1e-3, patience=2, max_epochs=4, random_state=0,
                   num_threads=1).fit(X, T)
keep("torch", m, m.predict(Xq))
m = DSOKR(m_y=10, regressor="torch_mlp", regressor_params={"hidden_layer_sizes": (8,), "lr": 1e-2,
                                                           "weight_decay": 1e-3, "patience": 2, "max_epochs": 4,
                                                           "num_threads": 1}, random_state=0).fit(X, Y)
keep("dsokr_torch", m, m.predict_scores(Xq))
np.save(out / "Xq.npy", Xq)
(out / "predictions.json").write_text(json.dumps(preds))
