"""Extras of sprokr, computed at build time (the rest of the metadata is in pyproject.toml).

The first-party plugins (``plugins/sprokr_chem``, ``plugins/sprokr_graphs``,
``plugins/sprokr_ot``) are separate distributions discovered through the ``sprokr``
entry-point group, and they are not on an index.  So that ``pip install "<checkout>[all]"``
(or ``[chem]`` ...) installs them too, the extras name them by an absolute ``file://``
direct reference to the plugin directory when the build runs from a checkout that has it;
when it does not (a build from an sdist, which does not contain the plugins) the extras
name the distributions, to be found on an index.
"""
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent

PLUGINS = {"chem": "sprokr-chem", "graphs": "sprokr-graphs", "ot": "sprokr-ot"}


def plugin_requirement(extra: str) -> str:
    """``sprokr-chem @ file:///.../plugins/sprokr_chem`` from a checkout, else ``sprokr-chem``."""
    dist = PLUGINS[extra]
    path = HERE / "plugins" / dist.replace("-", "_")
    if (path / "pyproject.toml").is_file():
        return f"{dist} @ {path.as_uri()}"
    return dist


PLOT = ["matplotlib>=3.6"]
DASK = ["dask[distributed]>=2023.1"]
TORCH = ["torch>=2.0"]
DOCS = ["sphinx>=7", "numpydoc>=1.6", "myst-parser>=2"]

EXTRAS = {
    "chem": [plugin_requirement("chem")],
    "graphs": [plugin_requirement("graphs")],
    "ot": [plugin_requirement("ot")],
    "dask": DASK,
    "torch": TORCH,
    "plot": PLOT,
    "docs": DOCS + PLOT,
    # everything the test suite needs besides the plugins (requirements.txt installs those,
    # editable): the figures, the Dask executor and the documentation build are tested;
    # faiss-cpu is the baseline of the scale benchmark's decoding, which a smoke test runs;
    # pandas: dataframe inputs (feature names, outputs as arrays) are tested on real ones.
    "test": ["pytest>=7", "mypy>=1.5", "mpmath>=1.2", "faiss-cpu>=1.7", "pandas>=2"] + PLOT + DASK + DOCS,
}
# `all`: every plugin and optional library except torch, whose default Linux wheels pull
# several GB of CUDA libraries -- ask for it explicitly: pip install ".[all,torch]"
EXTRAS["all"] = sorted({r for k in ("chem", "graphs", "ot", "dask", "plot") for r in EXTRAS[k]})

setup(extras_require=EXTRAS)
