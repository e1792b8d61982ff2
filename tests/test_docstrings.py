"""The numpydoc "Parameters" sections of the public API are complete and correct: for every
class and function in the ``__all__`` of the modules of MODULES, numpydoc's validator reports
no PR01 (a parameter of the signature not documented; a class's signature is its
``__init__``'s) and no PR02 (a documented parameter not in the signature, e.g. a malformed
line such as ``max_iter, max_epochs,`` or prose inside the section).  The API site shows each
class alone, so a subclass documents its own parameters rather than pointing at its parent's."""
import importlib
import inspect

import pytest

numpydoc_validate = pytest.importorskip("numpydoc.validate")

# modules whose __all__ is checked (more can be added)
MODULES = ["sprokr", "sprokr.models", "sprokr.model_selection", "sprokr.metrics", "sprokr.kernels",
           "sprokr.sketches", "sprokr.decoders", "sprokr.numerics", "sprokr_chem", "sprokr_graphs",
           "sprokr_ot"]
# numpydoc codes checked
CODES = ("PR01", "PR02")
# (module, name) pairs not checked here, and why (none at present)
DEFERRED: dict = {}


def public_objects():
    """(module, name, object) of every class and function in the modules' ``__all__``."""
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                yield module_name, name, obj


def test_parameters_sections_complete():
    results = {}  # qualified name -> errors (an object exported by several modules is validated once)
    failures = []
    for module_name, name, obj in public_objects():
        if (module_name, name) in DEFERRED:
            continue
        qualified = f"{obj.__module__}.{obj.__qualname__}"
        if qualified not in results:
            errors = numpydoc_validate.validate(qualified)["errors"]
            results[qualified] = [(code, message) for code, message in errors if code in CODES]
        failures += [f"{module_name}.{name} ({qualified}): {code} {message}"
                     for code, message in results[qualified]]
    assert not failures, "\n".join(failures)


def test_modules_export_checked_objects():
    """The check above is not vacuous: every module of MODULES exports classes or functions."""
    checked = {module_name for module_name, _, _ in public_objects()}
    assert checked == set(MODULES)
