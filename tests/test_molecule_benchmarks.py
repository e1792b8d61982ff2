"""Smoke runs of the molecule benchmarks (tiny settings; the real runs and their numbers are
in docs/molecules.md and docs/benchmarks.md).  They check that each script runs end to end,
follows the ``--json`` convention and that the evaluation is sane -- not tuned numbers."""
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from sprokr.datasets import default_data_dir

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
# with torch installed, DSOKR's selection also tries a small network (early-stopped on validation MRR)
TORCH_NET = ("--dsokr-networks", json.dumps([{"name": "mlp", "regressor": "torch_mlp", "params": {
    "hidden_layer_sizes": [16], "max_epochs": 100, "n_iter_no_change": 3, "learning_rate": 3e-3, "num_threads": 1}}])) \
    if importlib.util.find_spec("torch") else ()


def run_json(script, *args, cwd):
    out = subprocess.run([sys.executable, str(BENCH / script), *args, "--json"], cwd=cwd,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


def test_qm9_smiles_to_graph_smoke(tmp_path):
    """On the shipped 300-molecule sample: 200 train, 40 queries among 100 unseen candidates."""
    sel = tmp_path / "sel.json"
    res, err = run_json("qm9_smiles_to_graph.py", "--data", str(ROOT / "sprokr" / "data" / "qm9_sample.csv"),
                        "--n-train", "200", "--n-test", "40", "--input-grid", '[{"n": 3}]',
                        "--m-y-grid", "20,40", "--m-x-grid", "40,80", "--dsokr-m-y-grid", "20,40,80",
                        "--dsokr-alphas", "1e-2,1e-1", "--dsokr-ensemble", "2", *TORCH_NET,
                        "--ged-n", "3", "--ged-timeout", "0.05", "--selection-json", str(sel), cwd=tmp_path)
    assert set(res) == {"NN", "IOKR", "SISOKR", "DSOKR", "DSOKR-ens2"}
    for name, r in res.items():
        assert {"top1", "top5", "top10", "MRR", "ged_noedge", "ged_noedge_n_exact", "fit_s", "decode_s"} <= set(r)
        assert 0 <= r["top1"] <= r["top5"] <= r["top10"] <= 1 and 0 < r["MRR"] <= 1, name
        assert 0 <= r["ged_noedge_n_exact"] <= 3 and r["ged_noedge"] >= 0
    for name in ("NN", "IOKR", "SISOKR"):
        # more candidates (the 200 training molecules too) can only push the truth down
        assert res[name]["MRR_incl_train"] <= res[name]["MRR"] + 1e-12, name
    assert res["SISOKR"]["fit_speedup_vs_IOKR"] == pytest.approx(res["IOKR"]["fit_s"] / res["SISOKR"]["fit_s"])
    # 100 candidates: chance MRR ~ 0.05; the exact model must do much better
    assert res["IOKR"]["MRR"] > 0.2
    assert res["DSOKR"]["convergence_warnings"] == 0
    log = json.loads(sel.read_text())["seed0"]
    assert log["SISOKR"]["best_params"]["m_y"] in (20, 40) and log["SISOKR"]["best_params"]["m_x"] in (40, 80)
    ds = log["DSOKR"]  # chosen by validation MRR among the candidates it tried
    assert ds["val_mrr"] == max(r["val_mrr"] for r in ds["runs"] if (r["m_x"], r["m_y"]) == (ds["m_x"], ds["m_y"]))
    assert ds["m_y"] == ds["m_y_growth"]["selected_m"] and ds["m_x"] == ds["m_x_growth"]["selected_m"]
    assert ds["m_x_growth"]["m"][0] == log["SISOKR"]["best_params"]["m_x"]  # grown from SISOKR's m_x
    assert res["DSOKR"]["m_x"] == ds["m_x"] and res["DSOKR"]["select_s"] >= res["DSOKR"]["fit_s"]
    assert {r["name"] for r in ds["runs"]} >= {"ridge alpha=0.01", "ridge alpha=0.1"} | ({"mlp"} if TORCH_NET else set())
    assert "ConvergenceWarning" not in err


@pytest.mark.skipif(not (default_data_dir() / "chebi20" / "val.sdf.zip").exists(),
                    reason="needs ../shared/data/chebi20/val.sdf.zip")
def test_chebi_text_to_molecule_smoke(tmp_path):
    res, err = run_json("chebi_text_to_molecule.py", "--data", str(default_data_dir() / "chebi20" / "val.sdf.zip"),
                        "--subsample", "400", "--n-train", "300",
                        "--output-kernels", "morgan_cosine", "--m-y-grid", "30,60", "--m-x-grid", "50,100",
                        "--dsokr-m-y-grid", "30,60", "--dsokr-ensemble", "0", cwd=tmp_path)
    assert set(res) == {"NN-text", "NN-textkernel", "IOKR", "SISOKR", "DSOKR"}
    for name, r in res.items():
        assert {"MRR", "Hits@1", "Hits@10", "fit_s", "decode_s"} <= set(r)
        assert 0 <= r["Hits@1"] <= r["Hits@10"] <= 1 and 0 < r["MRR"] <= 1, name
    # 100 unseen candidates: chance MRR ~ 0.05
    assert res["IOKR"]["MRR"] > 0.1 and res["NN-text"]["MRR"] > 0.1
    assert "ConvergenceWarning" not in err


def test_qm9_fgw_decoding_smoke(tmp_path):
    """FGW decoding on the shipped sample: 200 train, 6 unseen test molecules, lam by validation,
    the decoder's search settings by validation on 10 held-out training molecules."""
    res, err = run_json("qm9_fgw_decoding.py", "--data", str(ROOT / "sprokr" / "data" / "qm9_sample.csv"),
                        "--n-train", "200", "--n-test", "6", "--input-grid", '[{"n": 3}]',
                        "--methods", "NN,IOKR-train,FGW-score,FGW", "--ged-limit", "20", "--validate", "10",
                        "--decoder-grid", '[{"search_steps": 0}, {"search_steps": 2, "train_margin": 0.1}]',
                        cwd=tmp_path)
    assert set(res) == {"NN", "IOKR-train", "FGW-score", "FGW"}
    for name, r in res.items():
        assert 0 <= r["exact_new"] <= r["exact"] <= r["valid"] <= 1, name
        assert 0 <= r["in_train"] <= 1 and r["ged_edge"] >= r["ged_noedge"] >= 0, name
        assert r["ged_inexact"] == 0, name  # small molecules: every GED proved optimal
    assert res["FGW"]["valid"] >= 0.75  # decoded within valences and repaired
    # NN and IOKR return training molecules, never one of the unseen test molecules
    assert res["NN"]["exact"] == 0 and res["IOKR-train"]["exact"] == 0
    assert res["NN"]["in_train"] == 1 and res["IOKR-train"]["in_train"] == 1


def test_qm9_properties_to_molecule_smoke(tmp_path):
    """Per-query candidate sets of unseen molecules (and with the training ones), lam by validation."""
    res, err = run_json("qm9_properties_to_molecule.py", "--data", str(ROOT / "sprokr" / "data" / "qm9_sample.csv"),
                        "--n-train", "200", "--gamma-x-grid", "0.05", "--m-x-grid", "40,80", "--m-y-grid", "20,40",
                        cwd=tmp_path)
    assert set(res) == {"IOKR", "SISOKR", "random"}
    for name, r in res.items():
        assert 0 <= r["top1"] <= r["top5"] <= r["top10"] <= 1 and 0 <= r["top1_incl_train"] <= 1, name
    # the sets without training molecules are smaller: a random ranking does at least as well
    assert res["random"]["top1"] >= res["random"]["top1_incl_train"] - 0.1


def test_qm9_fit_speed_smoke(tmp_path):
    res, _ = run_json("qm9_fit_speed.py", "--data", str(ROOT / "sprokr" / "data" / "qm9_sample.csv"),
                      "--n-train", "200", "--repeats", "1", "--m-x", "50", "--m-y", "40", "--m-y-fast", "20",
                      cwd=tmp_path)
    assert set(res) == {"IOKR", "SISOKR m_y=40", "SISOKR m_y=20"}
    # every ratio is IOKR's fit time over the method's, measured in the same run
    for name, r in res.items():
        assert r["fit_speedup_vs_IOKR"] == pytest.approx(res["IOKR"]["fit_s"] / r["fit_s"]), name


def test_dsokr_qm9_validation_smoke(tmp_path):
    """The DSOKR validation comparison runs on the sample (tiny networks, no numbers checked
    beyond sanity); with torch, the torch regressors too."""
    models = "iokr,sisokr,ridge,ridge-ens,mlp-loss" + (",mlp-mrr,residual,cnn" if TORCH_NET else "")
    res, err = run_json("dsokr_qm9_validation.py", "--data", str(ROOT / "sprokr" / "data" / "qm9_sample.csv"),
                        "--n-train", "250", "--n-sub", "200", "--models", models, "--m-y", "20,40", "--m-x", "60",
                        "--spectrum-n", "4", "--hidden", "16", "--max-epochs", "20", "--n-ensemble", "2",
                        "--threads", "1", cwd=tmp_path)
    expected = {"iokr"} | {f"{m}@{k}" for m in models.split(",")[1:] for k in (20, 40)}
    assert set(res) == expected
    for name, r in res.items():
        assert 0 <= r["top1"] <= 1 and 0 < r["MRR"] <= 1, name
    assert res["iokr"]["MRR"] > 0.2  # 40 queries among 90 candidates: chance ~ 0.05
