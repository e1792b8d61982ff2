"""The public API is annotated and type-checks (sprokr ships ``py.typed``)."""
import importlib
import inspect
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import sprokr.models as models

ROOT = Path(__file__).resolve().parents[1]

ESTIMATOR_METHODS = ("fit", "predict", "predict_topk", "predict_scores", "make_candidate_index", "score",
                     "random_features")


@pytest.mark.parametrize("name", sorted(n for n in models.__all__ if inspect.isclass(getattr(models, n))))
def test_estimator_methods_are_annotated(name):
    cls = getattr(models, name)
    for meth in ESTIMATOR_METHODS:
        fn = getattr(cls, meth, None)
        if fn is None or not callable(fn) or fn.__module__.startswith("sklearn"):
            continue
        hints = inspect.signature(fn)
        missing = [p for p in hints.parameters.values() if p.name != "self" and p.annotation is inspect._empty]
        assert not missing, f"{name}.{meth}: parameters without annotation {[p.name for p in missing]}"
        assert hints.return_annotation is not inspect._empty, f"{name}.{meth} has no return annotation"


#: packages whose public API is checked: sprokr and the three first-party plugins
ROOTS = ("sprokr", "sprokr_chem", "sprokr_graphs", "sprokr_ot")
#: dunder methods that are part of the public API (the others have signatures fixed by
#: Python's data model, which type checkers already know: __len__, __repr__, __getitem__ ...)
PUBLIC_DUNDERS = ("__init__", "__call__")


def public_modules():
    """Every importable module of ROOTS without a private (``_``) component in its name.

    Private modules (``sprokr.numerics._ridge``, ``sprokr_chem.plugin`` is public but has no
    ``__all__``) are reached through the public names they define and re-export.  Hook
    implementations (``@hookimpl`` functions in ``sprokr._builtins`` and the plugins'
    ``plugin`` modules) are not exported through any ``__all__``: their signatures are the
    hook specifications' (``sprokr.hookspecs``), which pluggy checks when registering.
    """
    for root in ROOTS:
        try:
            pkg = importlib.import_module(root)
        except ImportError:  # a plugin that is not installed
            continue
        yield pkg
        for info in pkgutil.walk_packages(pkg.__path__, root + "."):
            if not any(part.startswith("_") for part in info.name.split(".")):
                yield importlib.import_module(info.name)


def _own(obj):
    return (getattr(obj, "__module__", None) or "").split(".")[0] in ROOTS


def public_callables():
    """``{qualified name: (function, is_method)}`` of everything exported through an ``__all__``:
    functions, and the public methods (static, class, properties' getters, ``__init__`` and
    ``__call__``, methods behind scikit-learn's ``available_if``) that classes defined in
    ROOTS define or inherit from classes defined in ROOTS (methods inherited from
    scikit-learn or the standard library are theirs)."""
    found = {}
    for mod in public_modules():
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name)
            if not _own(obj):
                continue
            if inspect.isfunction(obj):
                found[f"{obj.__module__}.{obj.__qualname__}"] = (obj, False)
            if not inspect.isclass(obj):
                continue
            for klass in filter(_own, obj.__mro__):
                for attr_name, attr in vars(klass).items():
                    if attr_name.startswith("_") and attr_name not in PUBLIC_DUNDERS:
                        continue
                    if isinstance(attr, staticmethod):
                        fn, method = attr.__func__, False
                    elif isinstance(attr, classmethod):
                        fn, method = attr.__func__, True
                    elif isinstance(attr, property):
                        fn, method = attr.fget, True
                    elif inspect.isfunction(getattr(attr, "fn", None)):  # sklearn's available_if
                        fn, method = attr.fn, True
                    else:
                        fn, method = attr, True
                    # (a function another library put there -- typing.Protocol's __init__ -- is theirs)
                    if inspect.isfunction(fn) and _own(fn):
                        found[f"{klass.__module__}.{klass.__qualname__}.{attr_name}"] = (fn, method)
    return found


def missing_annotations(fn, method):
    """Names of the parameters (and ``return``) of ``fn`` without an annotation."""
    params = list(inspect.signature(fn).parameters.values())[int(method):]  # self / cls
    missing = [p.name for p in params if p.annotation is inspect.Parameter.empty]
    # PEP 484: an __init__ with annotated arguments may leave out its `-> None`
    if inspect.signature(fn).return_annotation is inspect.Signature.empty and not (
            fn.__name__ == "__init__" and params):
        missing.append("return")
    return missing


def test_walker_finds_the_public_api():
    found = public_callables()
    # a function, a method, a property, a classmethod, a plugin's class and a plugin's function
    for name in ("sprokr.models.sisokr.SISOKR.fit", "sprokr.metrics.labels.f1_samples",
                 "sprokr.registry.Registry.create", "sprokr.numerics._sketch_matrix.SketchMatrix.shape",
                 "sprokr.decoders.base.CandidateSets.from_pool", "sprokr.plotting.plot_model_selection",
                 "sprokr.model_selection._search.LambdaSearchCV.predict_topk", "sprokr_chem.graphs.smiles_to_graph"):
        assert name in found, name
    assert not any(".plugin." in name for name in found)  # hook implementations
    assert len(found) > 400


def test_every_public_callable_is_annotated():
    missing = {name: m for name, (fn, method) in public_callables().items() if (m := missing_annotations(fn, method))}
    report = "\n".join(f"{name}: {', '.join(m)}" for name, m in sorted(missing.items()))
    assert not missing, f"{len(missing)} public callables lack annotations:\n{report}"


@pytest.mark.skipif(shutil.which("mypy") is None and not any(
    (Path(p) / "mypy").is_dir() for p in sys.path), reason="mypy not installed (pip install -e .[test])")
def test_mypy_passes_on_the_package():
    res = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary"], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    errors = [line for line in res.stdout.splitlines() if ": error:" in line]
    assert res.returncode == 0 and not errors, res.stdout[-3000:] + res.stderr[-2000:]
