"""The documentation site builds with Sphinx, warnings as errors, and documents every public name."""
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_sphinx_site_builds_without_warnings_and_covers_the_api(tmp_path):
    for mod in ("sphinx", "numpydoc", "myst_parser"):
        pytest.importorskip(mod, reason=f"{mod} is needed to build the docs (pip install -r requirements.txt)")
    out = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                          "-d", str(tmp_path / "doctrees"), str(ROOT / "docs"), str(tmp_path / "html")],
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    html = tmp_path / "html"
    for page in ("index", "getting_started", "architecture", "plugins", "kernel_machines", "dsokr", "molecules",
                 "precomputed", "logging_and_figures", "benchmarks", "gallery", "api/index"):
        assert (html / f"{page}.html").is_file(), page
    # every name of every public module's __all__ has an anchor somewhere in the reference
    anchors = set()
    for f in (html / "api").rglob("*.html"):
        anchors.update(re.findall(r'id="([\w.]+)"', f.read_text()))
    conf_ns = {"__file__": str(ROOT / "docs" / "conf.py")}
    exec(compile((ROOT / "docs" / "conf.py").read_text(), "conf.py", "exec"), conf_ns)
    modules = conf_ns["public_modules"]()
    assert {"sprokr.progress", "sprokr.plotting", "sprokr.kernels.precomputed", "sprokr_chem"} <= set(modules)
    missing = []
    for m in modules:
        for name in getattr(importlib.import_module(m), "__all__", []):
            if not any(a.endswith("." + name) for a in anchors):
                missing.append(f"{m}.{name}")
    assert not missing, f"not documented: {missing}"
    gallery = (html / "gallery.html").read_text()
    for example in (ROOT / "examples").glob("*.py"):
        assert example.name in gallery
