"""The public API is annotated and type-checks (sprokr ships ``py.typed``)."""
import inspect
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


@pytest.mark.skipif(shutil.which("mypy") is None and not any(
    (Path(p) / "mypy").is_dir() for p in sys.path), reason="mypy not installed (pip install -e .[test])")
def test_mypy_passes_on_the_package():
    res = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary"], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    errors = [line for line in res.stdout.splitlines() if ": error:" in line]
    assert res.returncode == 0 and not errors, res.stdout[-3000:] + res.stderr[-2000:]
