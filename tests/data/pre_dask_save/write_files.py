"""Writes the model files of this folder with a sprokr from before ``__sprokr_save__``.

Until commit 5500ef5 the safe format wrote the fitted ``executor_`` of a model fitted with
``executor="dask"`` (or a ``DaskExecutor``) as that ``DaskExecutor``, so the loaded model
predicted through Dask and needed a client.  These files were written by sprokr's main
branch at commit 70267a0 (before that change), on a LocalCluster in this process::

    cd <checkout of 70267a0> && python tests/data/pre_dask_save/write_files.py OUT_DIR

``tests/test_persistence.py`` loads them with the current code, without any cluster, and
compares the predictions with ``predictions.json`` (written here, by the old code, from the
models fitted on Dask).
"""
import json
import pathlib
import sys
import warnings

import numpy as np
from dask.distributed import Client, LocalCluster

from sprokr.models import DSOKR, JointQuantileRegressor, SketchedKernelMachine
from sprokr.numerics import DaskExecutor

out = pathlib.Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
rng = np.random.default_rng(0)
X = rng.standard_normal((40, 3))
y = np.sin(X[:, 0]) + 0.1 * X[:, 1]
Y = (X @ rng.standard_normal((3, 4)) > 0).astype(int)
Xq = rng.standard_normal((5, 3))
preds = {}
warnings.simplefilter("ignore")  # convergence warnings of the small fits

with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
        Client(cluster):
    models = {
        # executor="dask": the default client, written as the DaskExecutor it resolved to
        "skm": (SketchedKernelMachine(input_sketch="subsample", m_x=15, lam=1e-3, random_state=0,
                                      executor="dask"), y, "predict"),
        # a DaskExecutor parameter (no client: the default one), with its own settings
        "jqr": (JointQuantileRegressor(taus=(0.2, 0.8), input_sketch="subsample", m_x=15, random_state=0,
                                       executor=DaskExecutor(timeout=30.0)), y, "predict"),
        "dsokr": (DSOKR(output_sketch="subsample", m_y=5, regressor="kernel_ridge",
                        regressor_params={"input_sketch": "subsample", "m_x": 10}, random_state=0,
                        executor="dask"), Y, "predict_scores"),
    }
    for name, (model, targets, method) in models.items():
        model.fit(X, targets)
        assert not model.executor_.in_process, name  # fitted on the cluster
        model.save(out / f"{name}.sprokr")
        preds[name] = np.asarray(getattr(model, method)(Xq), dtype=float).tolist()
np.save(out / "Xq.npy", Xq)
(out / "predictions.json").write_text(json.dumps(preds))
