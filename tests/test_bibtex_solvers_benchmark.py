"""Smoke test of benchmarks/bibtex_solvers.py (the measured routes' comparison) on a slice."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sprokr.datasets import default_data_dir

ROOT = Path(__file__).resolve().parents[1]


def test_bibtex_solvers_benchmark_smoke():
    data = default_data_dir() / "bibtex"
    if not data.exists():
        pytest.skip("needs the bibtex data (SPROKR_DATA)")
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bibtex_solvers.py"), "--data", str(data),
                          "--max-train", "300", "--reps", "2", "--methods", "SISOKR", "--json"],
                         capture_output=True, text=True, timeout=600, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])["SISOKR"]
    assert res["reps"] == 2 and np.isfinite([res["fit_s"], res["cholesky_fit_s"], res["ratio"]]).all()
    assert res["error"] <= 1e-4  # the float32 default against the float64 one
    assert "decode_s" in res
