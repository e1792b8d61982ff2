"""Sphinx configuration of the sprokr documentation site.

Build (warnings are errors, as in the tests)::

    sphinx-build -W -b html docs docs/_build/html

The user guide is the Markdown of ``docs/*.md`` (myst-parser).  The API reference is
generated at build time (``docs/api/`` and ``docs/gallery.rst``, not versioned) from the ``__all__`` of every public
module of sprokr and of the first-party plugins: each object is documented once, under the
shallowest public module that exports it, and listed with a link everywhere else.
"""
from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# document the sources next to this file, whatever is installed
for p in (ROOT / "plugins" / "sprokr_ot", ROOT / "plugins" / "sprokr_graphs", ROOT / "plugins" / "sprokr_chem", ROOT):
    if p.is_dir() and str(p) not in sys.path:
        sys.path.insert(0, str(p))

import sprokr  # noqa: E402

project = "sprokr"
author = "sprokr developers"
copyright = "2026, sprokr developers"
release = version = sprokr.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "README.md", "Thumbs.db", ".DS_Store"]
templates_path = ["_templates"]

myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3

autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
autodoc_member_order = "bysource"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set = set()

html_theme = "alabaster"
html_title = f"sprokr {release}"
html_static_path: list = []
html_theme_options = {"description": "Structured prediction with kernel-induced losses, scaled by sketching",
                      "fixed_sidebar": True}

# the deprecated alias module sprokr.selection is documented (it still works) without its
# import-time FutureWarning in the build's output
import warnings  # noqa: E402

warnings.filterwarnings("ignore", message="sprokr.selection is deprecated", category=FutureWarning)
suppress_warnings = ["myst.xref_missing"]  # links to repository files (../benchmarks/...) outside the site

# ------------------------------------------------------------------ API reference
PACKAGES = ["sprokr", "sprokr_chem", "sprokr_graphs", "sprokr_ot"]
TITLES = {"sprokr": "sprokr (top level)", "sprokr_chem": "sprokr-chem plugin",
          "sprokr_graphs": "sprokr-graphs plugin", "sprokr_ot": "sprokr-ot plugin"}


def public_modules():
    """Importable public modules (no ``_private`` component) of the packages, in order."""
    out = []
    for pkg in PACKAGES:
        try:
            mod = importlib.import_module(pkg)
        except ImportError:  # a plugin that is not importable here: documented where it is
            continue
        names = [pkg] + sorted(n for _, n, _ in pkgutil.walk_packages(mod.__path__, pkg + "."))
        out += [n for n in names if not any(part.startswith("_") for part in n.split("."))]
    return out


def exported(modname):
    """``{name: object}`` of a module's ``__all__`` (hookspecs: its hook specifications)."""
    mod = importlib.import_module(modname)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n, obj in vars(mod).items()
                 if inspect.isfunction(obj) and obj.__module__ == modname and not n.startswith("_")]
    return {n: getattr(mod, n) for n in names}


def kind(obj):
    if inspect.isclass(obj):
        return "class"
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return "function"
    return "data"


def owners(modules):
    """Module that documents each object: defined under it (if any), then the shallowest."""
    exports = {m: exported(m) for m in modules}
    found = {}
    for m, names in exports.items():
        for n, obj in names.items():
            key = id(obj) if kind(obj) != "data" else (m, n)
            found.setdefault(key, []).append((m, n))
    owner = {}
    for key, places in found.items():
        def rank(place):
            m, n = place
            obj = exports[m][n]
            home = getattr(obj, "__module__", "") or ""
            top = m in PACKAGES and len(places) > 1  # re-exports at the top level: link only
            return (top, not (home == m or home.startswith(m + ".")), m.count("."), m)

        best = min(places, key=rank)
        for place in places:
            owner[place] = best
    return exports, owner


def write_api(app, config=None):
    modules = public_modules()
    exports, owner = owners(modules)
    api = DOCS / "api"
    # stubs of names removed since the last build would be orphan pages (a warning, hence an error)
    shutil.rmtree(api, ignore_errors=True)
    api.mkdir()
    pages = []
    for m in modules:
        names = exports[m]
        own = {"class": [], "function": [], "data": []}
        links = []
        for n, obj in names.items():
            om, on = owner[(m, n)]
            if (om, on) == (m, n):
                own[kind(obj)].append(n)
            else:
                role = {"class": "class", "function": "func", "data": "data"}[kind(obj)]
                links.append(f":py:{role}:`{n} <{om}.{on}>`")
        title = TITLES.get(m, m)
        lines = [title, "=" * len(title), "", f".. automodule:: {m}", "   :no-members:", "",
                 f".. currentmodule:: {m}", ""]
        for k, heading, template in (("class", "Classes", "class.rst"), ("function", "Functions", "function.rst"),
                                     ("data", "Constants and objects", "data.rst")):
            if own[k]:
                lines += [heading, "-" * len(heading), "", ".. autosummary::", "   :toctree: generated",
                          f"   :template: {template}", "", *[f"   {n}" for n in own[k]], ""]
        if links:
            lines += ["Also available here", "-------------------", "",
                      "Documented with the module that defines them: " + ", ".join(links) + ".", ""]
        (api / f"{m}.rst").write_text("\n".join(lines))
        pages.append(m)
    index = ["API reference", "=============", "",
             "Every public class, function and constant, generated from the ``__all__`` of each module.",
             "", ".. toctree::", "   :maxdepth: 1", "", *[f"   {m}" for m in pages], ""]
    (api / "index.rst").write_text("\n".join(index))


def write_gallery(app, config=None):
    """``gallery.rst``: every script of ``examples/`` with its docstring, in full."""
    import ast

    lines = ["Gallery of examples", "===================", "",
             "The scripts of ``examples/`` in the repository, run as ``python examples/<name>.py``",
             "from a checkout after ``pip install -r requirements.txt`` (the tests run them too).", ""]
    for path in sorted((ROOT / "examples").glob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        first, _, rest = doc.partition("\n")
        title = f"{path.name}: {first.strip()}" if first else path.name
        lines += [title, "-" * len(title), "", rest.strip(), "",
                  f".. literalinclude:: ../examples/{path.name}", "   :language: python", "   :linenos:", ""]
    (DOCS / "gallery.rst").write_text("\n".join(lines))


def skip_member(app, what, name, obj, skip, options):
    """Leave out scikit-learn's generated metadata-routing methods (``set_fit_request`` ...)."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def drop_type_docstrings(app, what, name, obj, options, lines):
    """Constants (``DEFAULT_RCOND``, ``WORK_DTYPE``, dicts ...): no docstring of their *type*."""
    if what in ("data", "attribute") and not inspect.isclass(obj) and not callable(obj):
        doc = getattr(type(obj), "__doc__", None)
        if isinstance(doc, str) and lines and lines[0].strip() and inspect.cleandoc(doc).startswith(lines[0].strip()):
            lines.clear()


def setup(app):
    app.connect("autodoc-skip-member", skip_member)
    app.connect("autodoc-process-docstring", drop_type_docstrings, priority=100)
    # written before Sphinx lists the source files and autosummary generates its stubs
    app.connect("config-inited", write_api)
    app.connect("config-inited", write_gallery)
    return {"parallel_read_safe": True}
