"""The docstring examples (``>>>`` blocks) of sprokr and of its first-party plugins run and
print what they show: every module of the four packages (found with ``pkgutil.walk_packages``)
is imported and its examples are run by :mod:`doctest`, one test per module so a failure names
its module.  This is a plain test module (no ``--doctest-modules``), so the README's test
command and ``.ci/run`` run it; ``.ci/torch_tests.sh`` runs its torch modules with PyTorch.

A module needing an optional dependency (PyTorch, dask.distributed, matplotlib, a plugin's
domain library) is skipped when that dependency is missing (``OPTIONAL``) and run when present.
An example needing data that is not shipped with the package is marked ``# doctest: +SKIP``
in its docstring, with the reason beside it."""
import doctest
import importlib
import importlib.util
import io
import pkgutil
import tempfile

import pytest

# the packages whose modules are collected
PACKAGES = ["sprokr", "sprokr_chem", "sprokr_graphs", "sprokr_ot"]
# modules not imported, and why
EXCLUDED = {
    "sprokr.__main__": "the `python -m sprokr` entry point (runs the command line when run)",
    "sprokr.cli.__main__": "the `python -m sprokr.cli` entry point (runs the command line on import)",
}
# (module name or package prefix ending in '.', optional dependencies it needs): a module is
# skipped when one of them cannot be imported
OPTIONAL = [
    ("sprokr.models._torch_nets", ("torch",)),
    ("sprokr.models.torch_regressors", ("torch",)),
    ("sprokr.numerics._dask", ("distributed",)),
    ("sprokr.numerics._dask_client", ("distributed",)),
    ("sprokr.numerics._dask_cluster", ("distributed",)),
    ("sprokr.numerics._dask_tasks", ("distributed",)),
    ("sprokr.plotting", ("matplotlib",)),
    ("sprokr_chem.", ("rdkit",)),
    ("sprokr_chem.plotting", ("matplotlib",)),
    ("sprokr_graphs.", ("grakel",)),
    ("sprokr_ot.", ("ot",)),
]
# warnings expected on importing a module
IMPORT_WARNINGS = {
    "sprokr.selection": "ignore:sprokr.selection is deprecated:FutureWarning",
}
OPTIONFLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


# subpackages that walk_packages could not import
_unimportable: list = []


def _walk_error(name):
    """``walk_packages`` calls this when a subpackage fails to import: keep its name, so its
    test imports it and fails with the error (walk_packages would drop it silently)."""
    _unimportable.append(name)


def module_names():
    """Every module of PACKAGES (a package whose plugin is not installed: its name alone)."""
    names = []
    for package in PACKAGES:
        names.append(package)
        spec = importlib.util.find_spec(package)
        if spec is None or spec.submodule_search_locations is None:
            continue  # not installed (skipped by its test) or not a package
        names += [info.name for info in pkgutil.walk_packages(
            spec.submodule_search_locations, package + ".", onerror=_walk_error)]
    return sorted(set(names + _unimportable) - set(EXCLUDED))


MODULES = module_names()


def matches(module_name, pattern):
    """Whether an OPTIONAL pattern (a module name, or a package prefix ending in '.') names
    ``module_name``."""
    if pattern.endswith("."):
        return (module_name + ".").startswith(pattern)
    return module_name == pattern


def dependencies(module_name):
    """The optional dependencies ``module_name`` needs (OPTIONAL), its plugin package first."""
    top = module_name.split(".")[0]
    deps = [] if top == "sprokr" else [top]
    for pattern, needed in OPTIONAL:
        if matches(module_name, pattern):
            deps += needed
    return deps


def prompts_in_source(module):
    """The number of ``>>>`` prompts (one per example) in the source file of ``module``."""
    with open(module.__file__, encoding="utf-8") as f:
        return sum(line.lstrip().startswith(">>>") for line in f)


@pytest.mark.parametrize("module_name", [
    pytest.param(name, marks=pytest.mark.filterwarnings(IMPORT_WARNINGS[name]))
    if name in IMPORT_WARNINGS else name for name in MODULES])
def test_docstring_examples(module_name, tmp_path, monkeypatch):
    for dep in dependencies(module_name):
        pytest.importorskip(dep)
    module = importlib.import_module(module_name)
    tests = doctest.DocTestFinder(exclude_empty=True).find(module, module_name)
    # every example of the file is found (one in a docstring doctest cannot reach -- an object
    # not defined in this module, a nested function -- would go unrun)
    found = sum(len(test.examples) for test in tests)
    assert found == prompts_in_source(module), "examples doctest does not find"
    # what an example writes with tempfile (e.g. ``tempfile.mkdtemp()``) lands in tmp_path
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    runner = doctest.DocTestRunner(optionflags=OPTIONFLAGS)
    out = io.StringIO()
    for test in sorted(tests, key=lambda t: t.name):
        runner.run(test, out=out.write)
    assert runner.failures == 0, f"{runner.failures} of {runner.tries} examples failed:\n{out.getvalue()}"


def test_modules_collected():
    """The collection is not vacuous: every installed package's modules are found (a plugin
    that is not installed is left out: its test is skipped), the names of OPTIONAL, EXCLUDED
    and IMPORT_WARNINGS are real modules, and known examples are among those run."""
    installed = [package for package in PACKAGES if importlib.util.find_spec(package) is not None]
    assert "sprokr" in installed
    for package in installed:
        assert sum(name.split(".")[0] == package for name in MODULES) > 1, package
    for pattern, _ in OPTIONAL:
        if pattern.split(".")[0] in installed:
            assert any(matches(name, pattern) for name in MODULES), pattern
    for name in EXCLUDED:
        assert importlib.util.find_spec(name) is not None, name
    assert set(IMPORT_WARNINGS) <= set(MODULES)
    finder = doctest.DocTestFinder(exclude_empty=True)
    for name in ("sprokr.progress", "sprokr.persistence", "sprokr.model_selection._cache"):
        examples = sum(len(t.examples) for t in finder.find(importlib.import_module(name), name))
        assert examples > 0, name
