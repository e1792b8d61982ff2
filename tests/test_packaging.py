"""Packaging metadata: the extras computed by setup.py, license, typing marker, entry points.

(The end-to-end check -- a fresh venv, non-editable ``pip install ".[all]"``, ``sprokr demo``
and a fit / predict / evaluate / select round trip from another directory -- downloads
packages, so it is not a unit test: ``.ci/fresh_install.sh``, run by ``.ci/run`` after the
README's test command.)
"""
import runpy
import shutil
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="Python >= 3.11 reads pyproject.toml with tomllib")

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = {"chem": "sprokr-chem", "graphs": "sprokr-graphs", "ot": "sprokr-ot"}


def extras_of(setup_py, monkeypatch):
    import setuptools

    captured = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kw: captured.update(kw))
    runpy.run_path(str(setup_py), run_name="__main__")
    return captured["extras_require"]


def test_extras_point_at_the_checkout_plugins(monkeypatch):
    extras = extras_of(ROOT / "setup.py", monkeypatch)
    for extra, dist in PLUGINS.items():
        (req,) = extras[extra]
        name, _, url = req.partition(" @ ")
        assert name == dist and url.startswith("file://")
        plugin_dir = Path(url[len("file://"):])
        assert plugin_dir.is_absolute()
        project = tomllib.loads((plugin_dir / "pyproject.toml").read_text())["project"]
        assert project["name"] == dist and "sprokr" in project["entry-points"]
        assert (plugin_dir / "LICENSE").is_file()
    assert set(extras["all"]) >= set(extras["chem"] + extras["graphs"] + extras["ot"] + extras["dask"] + extras["plot"])
    assert not any(r.startswith("torch") for r in extras["all"])  # several GB: asked for explicitly
    assert any(r.startswith("dask[distributed]") for r in extras["dask"])
    # the test extra has what the suite needs besides the plugins (requirements.txt adds those)
    for lib in ("pytest", "matplotlib", "dask[distributed]", "sphinx", "numpydoc", "myst-parser"):
        assert any(r.startswith(lib) for r in extras["test"]), lib
    reqs = (ROOT / "requirements.txt").read_text().split()
    assert "-e" in reqs and ".[test]" in reqs
    for dist in PLUGINS.values():
        assert f"./plugins/{dist.replace('-', '_')}" in reqs


def test_extras_fall_back_to_names_outside_a_checkout(tmp_path, monkeypatch):
    shutil.copy(ROOT / "setup.py", tmp_path / "setup.py")  # e.g. a build from an sdist
    extras = extras_of(tmp_path / "setup.py", monkeypatch)
    assert [extras[e] for e in PLUGINS] == [[d] for d in PLUGINS.values()]


def test_project_metadata():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    meta = project["project"]
    assert meta["license"] == "BSD-3-Clause" and meta["license-files"] == ["LICENSE"]
    assert "BSD 3-Clause" in (ROOT / "LICENSE").read_text() and "sprokr developers" in (ROOT / "LICENSE").read_text()
    assert meta["authors"] and meta["classifiers"] and "Typing :: Typed" in meta["classifiers"]
    assert meta["scripts"]["sprokr"] == "sprokr.cli:main"
    assert "optional-dependencies" in meta["dynamic"]
    assert any(d.startswith("tqdm") for d in meta["dependencies"])
    assert "py.typed" in project["tool"]["setuptools"]["package-data"]["sprokr"]
    assert (ROOT / "sprokr" / "py.typed").is_file() and (ROOT / "sprokr" / "__main__.py").is_file()


def test_plugins_share_the_license():
    for d in PLUGINS.values():
        meta = tomllib.loads((ROOT / "plugins" / d.replace("-", "_") / "pyproject.toml").read_text())["project"]
        assert meta["license"] == "BSD-3-Clause" and meta["authors"]
