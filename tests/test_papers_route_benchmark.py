"""The papers' route of benchmarks/bibtex.py (``--papers-route``): the same model as sprokr's.

The baseline is only a fair yardstick if it computes the same predictor: on the shipped
Bibtex sample, with a ridge large enough for the plain normal equations to be accurate,
its predictions equal sprokr's IOKR and SISOKR (same sketches: both draw them from the
seed in the same order).
"""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.preprocessing import StandardScaler

from sprokr import IOKR, SISOKR
from sprokr.datasets import default_data_dir, load_bibtex_sample

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _papers_route import dense_standardised, papers_iokr, papers_sisokr  # noqa: E402


@pytest.fixture(scope="module")
def sample():
    Xtr, Ytr, Xte, _ = load_bibtex_sample()
    Dtr, Dte = dense_standardised(Xtr, Xte)
    scaler = StandardScaler(with_mean=False).fit(Xtr)  # sprokr's inputs (bibtex.py): same Gaussian Gram
    return scaler.transform(Xtr), Ytr, scaler.transform(Xte), Dtr, Dte


def test_papers_iokr_predicts_what_sprokr_predicts(sample):
    Xtr, Ytr, Xte, Dtr, Dte = sample
    pred, fit_s, decode_s = papers_iokr(Dtr, Ytr, Dte, lam=1e-3, sx2=1e3, sy2=1.0)
    ours = IOKR(lam=1e-3, input_kernel_params={"sigma2": 1e3}, output_kernel_params={"sigma2": 1.0}).fit(Xtr, Ytr)
    np.testing.assert_array_equal(pred, ours.predict(Xte))
    assert fit_s > 0 and decode_s > 0


def test_papers_sisokr_predicts_what_sprokr_predicts(sample):
    Xtr, Ytr, Xte, Dtr, Dte = sample
    p = 20.0 / Xtr.shape[0]
    pred, _, _ = papers_sisokr(Dtr, Ytr, Dte, lam=1e-3, sx2=1e3, sy2=1e4, m_in=300, m_out=60, p=p, seed=4)
    ours = SISOKR(lam=1e-3, input_kernel_params={"sigma2": 1e3}, output_kernel_params={"sigma2": 1e4},
                  input_sketch="subsample", m_x=300, output_sketch="psg", m_y=60,
                  output_sketch_params={"p": p}, random_state=4).fit(Xtr, Ytr)
    agree = (pred == ours.predict(Xte)).all(axis=1).mean()
    assert agree == 1.0
    # another seed draws other sketches: the check above can tell them apart
    other, _, _ = papers_sisokr(Dtr, Ytr, Dte, lam=1e-3, sx2=1e3, sy2=1e4, m_in=300, m_out=60, p=p, seed=5)
    assert (other != pred).any()


def test_bibtex_benchmark_reports_same_run_ratios():
    data = default_data_dir() / "bibtex"
    if not data.exists():
        pytest.skip("needs the bibtex data (SPROKR_DATA)")
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bibtex.py"), "--data", str(data),
                          "--methods", "SISOKR", "--seeds", "1", "--papers-route", "--json"],
                         capture_output=True, text=True, timeout=600, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    ours, theirs = res["SISOKR"], res["papers_SISOKR"]
    assert ours["fit_ratio"] == pytest.approx(ours["fit_s"] / theirs["fit_s"])
    assert ours["decode_ratio"] == pytest.approx(ours["decode_s"] / theirs["decode_s"])
    assert abs(ours["f1"] - theirs["f1"]) < 0.01  # the same model (its flat kernel: to the plain route's error)
