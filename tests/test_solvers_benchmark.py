"""Smoke test of benchmarks/solvers.py (routes x data sets: time and measured error) at tiny sizes."""
import json
import subprocess
import sys
from pathlib import Path


from sprokr.datasets import default_data_dir

ROOT = Path(__file__).resolve().parents[1]


def test_solvers_benchmark_smoke():
    datasets = ["scale"] + [d for d in ("bibtex", "rf1") if (default_data_dir() / d).exists()]
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "solvers.py"), "--datasets", *datasets,
                          "--max-train", "300", "--n", "2000", "--m-x", "80", "--m-y", "8", "--reps", "2",
                          "--routes", "auto", "mixed", "cholesky", "qr", "auto:float32", "--json"],
                         capture_output=True, text=True, timeout=900, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    names = {k.split("/")[0] for k in res}
    assert "scale" in names and len(res) == 5 * len(names)
    for key, v in res.items():
        assert v["reps"] == 2 and v["fit_s"] > 0 and v["cpu_s"] >= 0 and "decode_s" in v
        route = key.split("/")[1]
        if route == "qr":
            assert v["error"] == 0.0
        elif route in ("auto", "mixed"):  # the default and the refined route meet the float64 target
            assert v["error"] <= 1e-6 and v["estimate"] <= 1e-6, (key, v)
        elif route == "auto:float32":
            assert v["error"] <= 1e-4, (key, v)
        else:  # the plain normal equations: their estimate is reported
            assert v["estimate"] is not None
