"""The import graph of ``sprokr/`` is layered, without import circles (docs/architecture.md).

Every ``import`` / ``from ... import`` statement of every module under ``sprokr/`` counts as
an arrow, wherever it is: at module level, inside a function (a lazy import) or under
``if TYPE_CHECKING:``.  Relative imports are resolved; an import of a package is an import
of its ``__init__``, and importing ``sprokr.a.b`` from outside ``sprokr.a`` also runs (so
depends on) ``sprokr/a/__init__.py``.  The graph is checked for:

1. no circle (the message lists the files and lines of the circle);
2. every arrow goes to the same or a lower layer of :data:`LAYERS` (the table of
   ``docs/architecture.md``: keep both in sync);
3. the core never imports a domain plugin or its library;
4. no module imports a private (``_``) name of another module, nor a private submodule of
   another package (a package's own modules and its ``__init__``, which re-exports it, may).

Plus a behavioural check that ``import sprokr`` imports nothing heavy.
"""
from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "sprokr"

#: layer of each module, bottom (0) to top (6); an entry for a package covers its
#: submodules.  A module may import only modules of its own layer or of a lower one.
LAYERS = {
    # L0 -- foundations: no sprokr import except L0
    "sprokr.types": 0,
    "sprokr.utils": 0,
    "sprokr.progress": 0,
    "sprokr.hookspecs": 0,
    "sprokr.metrics": 0,
    "sprokr.version": 0,
    "sprokr.extras": 0,
    "sprokr.deprecation": 0,
    # L1 -- the plugin host: names -> factories ("module:Name" strings for the built-ins)
    "sprokr.registry": 1,
    "sprokr._builtins": 1,
    # L2 -- numerics (incl. SketchMatrix, executors) and the safe model format
    "sprokr.numerics": 2,
    "sprokr.persistence": 2,
    # L3 -- components
    "sprokr.sketches": 3,
    "sprokr.kernels": 3,
    "sprokr.losses": 3,
    "sprokr.decoders": 3,
    # L4 -- estimators
    "sprokr.models": 4,
    # L5 -- model selection, data files, plots, datasets
    "sprokr.model_selection": 5,
    "sprokr.selection": 5,
    "sprokr.io": 5,
    "sprokr.readers": 5,
    "sprokr.column_types": 5,
    "sprokr.plotting": 5,
    "sprokr.datasets": 5,
    # L6 -- the command line and the package itself (top)
    "sprokr.cli": 6,
    "sprokr.__main__": 6,
    "sprokr": 6,
}

#: domain plugins and their libraries: the core never imports them
FORBIDDEN = ("sprokr_chem", "sprokr_graphs", "sprokr_ot", "rdkit", "grakel", "ot")

#: modules that must not be loaded by ``import sprokr``
HEAVY = ("sklearn", "scipy", "dask", "distributed", "matplotlib", "torch", "pandas", "networkx", "tqdm",
         "sprokr_chem", "sprokr_graphs", "sprokr_ot", "rdkit")


# -- the graph ---------------------------------------------------------------------------
def module_files(root=ROOT / PACKAGE):
    """``{module name: (path, is_package)}`` of every ``.py`` file under ``root``."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts.pop()
        out[".".join(parts)] = (path, is_pkg)
    return out


def imports_of(name, path, is_pkg):
    """Every import of a module as ``(module, imported name or None, line)``, relative
    imports resolved; all statements count (function bodies, ``TYPE_CHECKING`` blocks)."""
    package = name if is_pkg else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found += [(module, alias.name, node.lineno) for alias in node.names]
    return found


def build_graph(root=ROOT / PACKAGE):
    """``(modules, arrows)``: arrows maps ``(importer, imported)`` to ``[(path, line, what)]``
    for the sprokr modules; ``modules`` as :func:`module_files`."""
    modules = module_files(root)
    top = root.name

    def target(module, name):
        if name is not None and f"{module}.{name}" in modules:  # `from pkg import submodule`
            return f"{module}.{name}"
        parts = module.split(".")
        while parts and ".".join(parts) not in modules:
            parts.pop()
        return ".".join(parts) or None

    arrows = {}
    for importer, (path, is_pkg) in modules.items():
        for module, name, line in imports_of(importer, path, is_pkg):
            if module.split(".")[0] != top:
                continue
            imported = target(module, name)
            if imported is None or imported == importer:
                continue
            what = f"{module}:{name}" if name else module
            # importing sprokr.a.b runs sprokr/a/__init__.py first (unless the importer is in sprokr.a)
            parts = imported.split(".")
            runs = [".".join(parts[:i]) for i in range(2, len(parts))] + [imported]
            for dep in runs:
                if dep != importer and not (importer + ".").startswith(dep + "."):
                    arrows.setdefault((importer, dep), []).append((path, line, what))
    return modules, arrows


def layer_of(module):
    parts = module.split(".")
    while parts:
        key = ".".join(parts)
        if key in LAYERS and (key != PACKAGE or module == PACKAGE):
            return LAYERS[key]
        parts.pop()
    return None


def find_circles(nodes, arrows):
    """The import circles of the graph: for each strongly connected component with more
    than one module (Tarjan), its shortest circle through its first module, as the list
    of modules along it."""
    succ = {n: [] for n in nodes}
    for a, b in arrows:
        succ[a].append(b)
    index, low, stack, on_stack, comps = {}, {}, [], set(), []

    def visit(v):  # recursion depth is bounded by the number of modules (~100)
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in succ[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(comp)

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    circles = []
    for comp in comps:  # the shortest circle through the component's first module
        members, start = set(comp), min(comp)
        prev, queue, last = {start: None}, [start], None
        while last is None:
            u = queue.pop(0)
            for w in sorted(succ[u]):
                if w == start:
                    last = u
                    break
                if w in members and w not in prev:
                    prev[w] = u
                    queue.append(w)
        path = []
        while last is not None:
            path.append(last)
            last = prev[last]
        circles.append(path[::-1])
    return circles


def describe(arrows, a, b):
    lines = {}
    for path, line, what in arrows[(a, b)]:
        lines.setdefault((str(path.relative_to(ROOT)), line), []).append(what.rpartition(":")[2])
    return "; ".join(f"{p}:{line} imports {', '.join(names)}" for (p, line), names in lines.items())


@pytest.fixture(scope="module")
def graph():
    return build_graph()


# -- the checks --------------------------------------------------------------------------
def test_every_module_has_a_layer(graph):
    modules, _ = graph
    missing = sorted(m for m in modules if layer_of(m) is None)
    assert not missing, f"modules without a layer in LAYERS (and docs/architecture.md): {missing}"


def test_layers_table_matches_the_docs():
    """docs/architecture.md's table (``| L<n> | `module`, ... |`` rows) says what LAYERS says."""
    import re

    documented = {}
    for line in (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").splitlines():
        row = re.match(r"\| L(\d) \| ([^|]*)\|", line)
        if row:
            for name in re.findall(r"`([^`]+)`", row.group(2)):
                name = name.rstrip("/")
                documented[PACKAGE if name == "sprokr/__init__" else f"{PACKAGE}.{name}"] = int(row.group(1))
    assert documented == LAYERS


def test_no_import_circle(graph):
    modules, arrows = graph
    circles = find_circles(modules, arrows)
    report = []
    for c in circles:
        steps = [f"  {a} -> {b}: {describe(arrows, a, b)}" for a, b in zip(c, c[1:] + c[:1]) if (a, b) in arrows]
        report.append(" -> ".join(c + c[:1]) + "\n" + "\n".join(steps))
    assert not circles, "import circles in sprokr/:\n" + "\n".join(report)


def test_imports_go_down_the_layers(graph):
    _, arrows = graph
    up = [f"{a} (L{layer_of(a)}) -> {b} (L{layer_of(b)}): {describe(arrows, a, b)}"
          for (a, b) in sorted(arrows) if layer_of(b) > layer_of(a)]
    assert not up, "imports that go up a layer (docs/architecture.md):\n" + "\n".join(up)


def test_core_never_imports_domain_plugins(graph):
    modules, _ = graph
    bad = []
    for name, (path, is_pkg) in modules.items():
        for module, _, line in imports_of(name, path, is_pkg):
            if module.split(".")[0] in FORBIDDEN:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not bad, "the core imports a domain plugin or library:\n" + "\n".join(bad)


def test_no_private_imports_across_modules(graph):
    modules, _ = graph
    bad = []
    for importer, (path, is_pkg) in modules.items():
        own_package = importer if is_pkg else importer.rpartition(".")[0]
        for module, name, line in imports_of(importer, path, is_pkg):
            if module.split(".")[0] != PACKAGE:
                continue
            full = f"{module}.{name}" if name and f"{module}.{name}" in modules else module
            # a private module is its package's: only that package's own modules use it
            private = [i for i, part in enumerate(full.split(".")) if part.startswith("_") and not part.startswith("__")]
            if private and full != importer:
                owner = ".".join(full.split(".")[:private[0]])
                if own_package != owner:
                    bad.append(f"{path.relative_to(ROOT)}:{line} imports the private module {full}")
            if name and full == module and name.startswith("_") and not name.startswith("__"):
                bad.append(f"{path.relative_to(ROOT)}:{line} imports the private name {module}.{name}")
    assert not bad, "private names imported from another module (re-export them):\n" + "\n".join(bad)


def test_checker_catches_a_circle_and_an_upward_import(tmp_path):
    """The checks above can fail: a throw-away package with a circle and an upward import."""
    pkg = tmp_path / PACKAGE
    (pkg / "numerics").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "utils.py").write_text("def f():\n    from .numerics.ops import g  # lazy: still an arrow\n")
    (pkg / "numerics" / "__init__.py").write_text("from .ops import g\n")
    (pkg / "numerics" / "ops.py").write_text("from typing import TYPE_CHECKING\n"
                                             "if TYPE_CHECKING:\n    from .. import utils\n")
    modules, arrows = build_graph(pkg)
    circles = find_circles(modules, arrows)
    assert circles and set(circles[0]) >= {"sprokr.utils", "sprokr.numerics.ops"}
    assert ("sprokr.utils", "sprokr.numerics") in arrows  # the package's __init__ runs first
    assert layer_of("sprokr.utils") < layer_of("sprokr.numerics")  # utils -> numerics goes up


def test_builtin_targets_are_the_packages_builtins():
    """sprokr._builtins names the built-ins by string: they are the packages' own tables."""
    import sprokr._builtins as b
    from sprokr.decoders import BUILTIN_DECODERS
    from sprokr.kernels import BUILTIN_KERNELS
    from sprokr.losses import BUILTIN_LOSSES
    from sprokr.registry import get_registry
    from sprokr.sketches import BUILTIN_SKETCHES

    from sprokr.numerics import DaskExecutor, LocalExecutor

    executors = {"local": LocalExecutor, "dask": DaskExecutor}
    for table, builtin in ((b.KERNELS, BUILTIN_KERNELS), (b.SKETCHES, BUILTIN_SKETCHES),
                           (b.DECODERS, BUILTIN_DECODERS), (b.LOSSES, BUILTIN_LOSSES), (b.EXECUTORS, executors)):
        assert set(table) == set(builtin)
        for name, target in table.items():
            module, _, attr = target.partition(":")
            assert getattr(importlib.import_module(module), attr) is builtin[name], name
    reg = get_registry()
    assert type(reg.create("input_kernel", "gaussian")) is BUILTIN_KERNELS["gaussian"]
    assert type(reg.create("executor", "local")) is LocalExecutor


def test_import_sprokr_imports_nothing_heavy():
    """``import sprokr`` stays cheap: the public names are imported on first use."""
    code = ("import sys, sprokr; "
            f"heavy = {HEAVY!r}; "
            "print(sorted(m for m in sys.modules if m in heavy or m.startswith(tuple(h + '.' for h in heavy))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", f"import sprokr loaded: {out.stdout.strip()}"
    # the public names are still there, imported on first access
    code = ("import sprokr; from sprokr import SISOKR; assert sprokr.SISOKR is SISOKR; "
            "assert set(sprokr.__all__) <= set(dir(sprokr)); "
            "assert all(getattr(sprokr, n) is not None for n in sprokr.__all__); "
            "import sprokr.kernels; print(sprokr.kernels.GaussianKernel.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "GaussianKernel"


def test_command_line_parser_imports_no_model():
    code = ("import sys, runpy; sys.argv = ['sprokr', '--help']\n"
            "try:\n    from sprokr.cli import main; main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('sklearn', 'scipy.stats', 'sprokr.models', 'sprokr.numerics') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout[-500:]
