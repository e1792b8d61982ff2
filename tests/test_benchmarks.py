"""Smoke runs of the kernel-machine benchmark scripts (tiny settings; the real runs and
their numbers are in docs/benchmarks.md).  They check that each script runs end to end,
follows the ``--json`` convention (one JSON object, last on stdout) and that its errors
are sane -- not its timings."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sprokr.datasets import default_data_dir

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def run_json(script, *args, cwd):
    out = subprocess.run([sys.executable, str(BENCH / script), *args, "--json"], cwd=cwd,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_robust_regression_smoke(tmp_path):
    res = run_json("robust_regression.py", "--n", "1500", "--sizes", "40", "--seeds", "1",
                   "--png", str(tmp_path / "fig.png"), "--out-json", str(tmp_path / "r.json"),
                   cwd=tmp_path)
    assert (tmp_path / "fig.png").stat().st_size > 0
    assert json.loads((tmp_path / "r.json").read_text()) == res
    for loss in ("huber", "epsilon_insensitive"):
        for method in ("Nystrom", "Gaussian", "Acc. m=30", "CountSketch", "5/n-SR", "50/n-SG", "RFF"):
            r = res[f"{loss}/{method} s=40"]
            assert {"rel_mse_paper", "rel_mse_all", "rel_mse", "fit_s", "predict_s"} <= set(r)
            # better than predicting the mean (rel_mse_all = 1) on this small set too, where
            # 15 blob points carry most of the variance (s=40 landmarks rarely hold one)
            assert 0 < r["rel_mse_all"] < 0.95, (loss, method, r)
            assert r["converged"] == 1.0, (loss, method, r)  # certified duality gaps


@pytest.mark.skipif(not (default_data_dir() / "rf1").is_dir(), reason="needs ../shared/data/rf1")
def test_rf1_smoke(tmp_path):
    res = run_json("rf1.py", "--sizes", "100", "--seeds", "1", "--repeats-exact", "1", cwd=tmp_path)
    assert abs(res["exact"]["arrmse"] - 0.571) < 0.01
    assert len(res["exact"]["rrmse_per_target"]) == 8
    assert res["20/n-SR s=100"]["arrmse"] < 0.62
    assert np.isfinite([r["fit_s"] for r in res.values()]).all()
    r = res["20/n-SR s=100"]
    assert r["fit_ratio"] == pytest.approx(r["fit_s"] / res["exact"]["fit_s"])


def test_quantiles_smoke(tmp_path):
    res = run_json("quantiles.py", "--splits", "1", "--no-cv", cwd=tmp_path)
    exact = res["exact"]
    assert {"pinball", "crossing", "fit_s", "gap_max", "adam_fit_s", "adam_gap_max", "fit_ratio"} <= set(exact)
    sketched = {name: r for name, r in res.items() if name != "exact"}
    assert sketched  # the sketched machines ran
    for name, r in sketched.items():
        # a sketch of the same model: within 10 % of the exact machine's test pinball loss
        assert r["pinball"] < 1.1 * exact["pinball"], name
        assert r["converged"] == 1.0 and r["gap_max"] <= 1e-4, (name, r)  # certified by the default


def test_quantiles_choose_hyper_parameters_inside_each_training_part(monkeypatch):
    """Nested CV: the hyper-parameters of split k are chosen on split k's training rows only
    (a fixed choice on split 0's would have seen the test rows of the other splits)."""
    import importlib.util

    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import train_test_split

    spec = importlib.util.spec_from_file_location("quantiles_bench", BENCH / "quantiles.py")
    q = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(q)
    seen = []

    def record(X, y, log):
        seen.append(X.copy())
        return q.FIXED

    monkeypatch.setattr(q, "cross_validate", record)
    monkeypatch.setattr(q, "methods", lambda n: {"20/n-SR s=50": ("psr", 50, {"p": 20.0 / n})})
    q.run(2, True, lambda *a: None)
    assert len(seen) == 2  # one choice per split (an empty `seen` checked nothing below)
    X, y = load_diabetes(return_X_y=True)
    for split, Xcv in enumerate(seen):
        Xtr, Xte, _, _ = train_test_split(X, y, test_size=0.3, random_state=split)
        np.testing.assert_array_equal(Xcv, Xtr)
        assert not (Xcv[:, None, :] == Xte[None]).all(-1).any()  # no test row in the CV


def test_scale_smoke(tmp_path):
    """benchmarks/scale.py end to end on tiny settings (every configuration in its own process)."""
    res = run_json("scale.py", "--grid", "3000", "--m-x", "100", "--m-y", "20", "--candidates", "5000",
                   "--decode-fit-n", "3000", "--no-dask", cwd=tmp_path)
    assert {"syrk@3000", "sisokr_local@3000", "sklearn@3000", "decode"} <= set(res)
    local, sk = res["sisokr_local@3000"], res["sklearn@3000"]
    assert 0.3 < local["f1"] <= 1 and 0.3 < sk["f1"] <= 1
    # the ratios are the same run's: the fit over the syrk measured beside it, sklearn over ours
    assert local["fit_over_syrk"] == pytest.approx(local["fit_s"] / res["syrk@3000"]["syrk_s"])
    assert local["speedup_vs_sklearn"] == pytest.approx(sk["fit_s"] / local["fit_s"])
    assert res["decode"]["top10_max_score_diff_faiss"] < 1e-3  # same scores as faiss's exact index


def test_output_kernel_twins_smoke(tmp_path):
    """benchmarks/output_kernel_twins.py on the shipped QM9 sample plus two known twin pairs:
    acetaldehyde / vinyl alcohol (only bond orders separate them) and two cage molecules
    that no 1-WL colouring separates."""
    pytest.importorskip("sprokr_chem")
    pytest.importorskip("sprokr_graphs")
    import csv

    from sprokr.datasets import sample_path

    with open(sample_path("qm9_sample.csv"), newline="") as fh:
        smiles = [r["smiles"] for r in csv.DictReader(fh)]
    extra = ["CC=O", "C=CO", "C1C2C1C1CC2C2CC21", "C1C2C1C1CC3C1CC23"]
    path = tmp_path / "qm9_twins.csv"
    path.write_text("smiles\n" + "\n".join(smiles + extra) + "\n")
    res = run_json("output_kernel_twins.py", "--data", str(path), cwd=tmp_path)
    n = len(set(smiles)) + len(extra)
    assert res["wl plain"]["n_twins"] >= 4 and res["wl plain"]["twins_frac"] >= 4 / n
    for name in ("wl chem", "core_wl chem", "morgan counts"):
        assert res[name]["n_twins"] == 2 and res[name]["n_groups"] == 1, (name, res[name])


@pytest.mark.parametrize("model", ["siokr", "krr"])
def test_float32_sweep_quick(tmp_path, model):
    res = run_json("float32_sweep.py", "--quick", "--model", model, cwd=tmp_path)
    assert set(res) == {f"{model} float32", f"{model} float64"}
    for name, r in res.items():
        assert r["cases"] == 3 and r["kept_in_dtype"] + r["fell_back_to_float64"] == 3, (name, r)
        # the default's solution, whichever route it kept, is within its dtype's tolerance
        # of the float64 QR route (the claim of docs/architecture.md, "Solvers")
        assert r["over_tol"] == 0 and r["worst_error_over_tol"] <= 1, (name, r)
    assert res[f"{model} float64"]["fell_back_to_float64"] == 0


@pytest.mark.skipif(not (default_data_dir() / "rf1").is_dir(), reason="needs ../shared/data/rf1")
def test_rf1_paper_grid_smoke(tmp_path):
    res = run_json("rf1_paper_grid.py", "--grid-size", "3", "3", "--n-train", "300", cwd=tmp_path)
    assert set(res) == {f"{f} {c}" for f in ("contiguous", "shuffled") for c in ("mse", "arrmse")}
    for name, r in res.items():
        # the selection is a point of the (reduced) paper grid, reported in both conventions
        assert np.isclose(np.log10(r["gamma"]), [-7, -2.5, 2]).any(), (name, r)
        assert np.isclose(np.log10(r["lam"]), [-8, -2.5, 3]).any(), (name, r)
        assert np.isclose(r["sigma2"], 1 / (2 * r["gamma"])), (name, r)
        assert np.isfinite(r["test_arrmse"]) and r["test_arrmse"] > 0.3, (name, r)
