"""The README's main job (`sprokr demo`) runs end to end on the shipped samples."""
import json
import subprocess
import sys


def test_demo_runs_and_reports_metrics():
    out = subprocess.run([sys.executable, "-m", "sprokr.cli", "demo", "--json"], capture_output=True,
                         text=True, check=True, timeout=600)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    ml = res["multilabel"]
    assert set(ml) == {"IOKR (exact)", "SISOKR (m_x=400, m_y=100)"}
    for r in ml.values():
        assert 0.2 < r["f1"] <= 1 and r["fit_s"] > 0 and r["decode_s"] > 0
    assert "F1" in out.stdout and "fit" in out.stdout
    if "molecules" in res:  # the chemistry plugins are installed (requirements.txt)
        assert res["molecules"]


def test_default_data_dir_search_order(tmp_path, monkeypatch):
    """$SPROKR_DATA first; else shared/data beside the checkout, the cwd or its parents."""
    import sprokr.datasets as ds

    # a regular (non-editable) install: nothing beside the installed sources
    monkeypatch.setattr(ds, "__file__", str(tmp_path / "venv" / "lib" / "site" / "sprokr" / "datasets.py"))
    monkeypatch.delenv("SPROKR_DATA", raising=False)
    (tmp_path / "shared" / "data").mkdir(parents=True)
    work = tmp_path / "checkout" / "benchmarks"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    assert ds.default_data_dir() == (tmp_path / "shared" / "data").resolve()
    monkeypatch.setenv("SPROKR_DATA", str(tmp_path / "elsewhere"))
    assert ds.default_data_dir() == tmp_path / "elsewhere"
