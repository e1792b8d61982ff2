"""The README's main job (`sprokr demo`) runs end to end on the shipped samples."""
import json
import subprocess
import sys


def test_demo_runs_and_reports_metrics():
    out = subprocess.run([sys.executable, "-m", "sprokr", "demo", "--json"], capture_output=True,
                         text=True, check=True, timeout=600)
    res = json.loads(out.stdout)  # stdout is the JSON document and nothing else
    ml = res["multilabel"]
    assert set(ml) == {"IOKR (exact)", "SISOKR (m_x=400, m_y=100)"}
    for r in ml.values():
        assert 0.2 < r["f1"] <= 1 and {"fit_s", "decode_s"} <= set(r)
    assert "F1" in out.stderr and "fit" in out.stderr  # the text went to stderr
    # requirements.txt installs the chemistry plugins: the molecule section runs, and each of
    # its tasks beats a random ranking of the 300 sample molecules by a wide margin
    mol = res["molecules"]
    assert mol["fingerprints"]["top10"] > 3 * 10 / 300
    assert mol["same_formula"]["top5"] > 0.6 and mol["same_formula"]["top1"] > 0.2
    assert mol["smiles_to_graph"]["top1"] > 10 / 300


def test_demo_without_the_chemistry_plugin_skips_with_an_install_hint():
    code = ("import sys; sys.modules['sprokr_chem'] = None\n"  # as if sprokr-chem were not installed
            "from sprokr.cli import main; sys.exit(main(['demo']))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "F1" in out.stdout and "molecule demo skipped" in out.stdout
    assert "pip install" in out.stdout and "requirements.txt" not in out.stdout


def test_install_hint_follows_the_recorded_install_source(monkeypatch, tmp_path):
    import importlib.metadata as md

    from sprokr.cli import install_hint

    class Dist:
        def __init__(self, text):
            self.text = text

        def read_text(self, name):
            assert name == "direct_url.json"
            return self.text

    (tmp_path / "plugins" / "sprokr_chem").mkdir(parents=True)
    cases = [
        (json.dumps({"url": tmp_path.as_uri(), "dir_info": {"editable": True}}),
         f'pip install -e "{tmp_path / "plugins" / "sprokr_chem"}"'),
        (json.dumps({"url": tmp_path.as_uri(), "dir_info": {}}), f'pip install "{tmp_path}[chem]"'),
        (None, 'pip install "sprokr[chem]"'),  # installed from an index
    ]
    for text, expected in cases:
        monkeypatch.setattr(md, "distribution", lambda name, text=text: Dist(text))
        assert install_hint("chem") == expected


def test_python_dash_m_sprokr_help():
    out = subprocess.run([sys.executable, "-m", "sprokr", "--help"], capture_output=True, text=True,
                         check=True, timeout=120)
    assert "sprokr demo --json" in out.stdout and "plugins" in out.stdout


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


def test_missing_benchmark_data_error_says_how_to_give_the_location(tmp_path, monkeypatch):
    """An installed (non-checkout) sprokr never points inside site-packages."""
    import pytest

    import sprokr.datasets as ds

    site = tmp_path / "venv" / "lib" / "python3" / "site-packages"
    monkeypatch.setattr(ds, "__file__", str(site / "sprokr" / "datasets.py"))
    monkeypatch.delenv("SPROKR_DATA", raising=False)
    work = tmp_path / "elsewhere"
    work.mkdir()
    monkeypatch.chdir(work)
    assert ds.default_data_dir() == work.resolve() / "shared" / "data"
    with pytest.raises(FileNotFoundError, match=r"--data PATH.*SPROKR_DATA") as err:
        ds.load_bibtex()
    assert "site-packages" not in str(err.value)
    with pytest.raises(FileNotFoundError, match="SPROKR_DATA"):
        ds.load_rf1(tmp_path / "nowhere")
