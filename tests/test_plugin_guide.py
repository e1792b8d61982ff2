"""Every worked example of docs/plugins.md runs as written (one per hook)."""
import re
import sys
import types
from pathlib import Path

import pytest

from sprokr.registry import reset_registry

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"
BLOCKS = [b for b in re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S) if "register(" in b]


def test_guide_covers_every_hook():
    from sprokr.hookspecs import KINDS

    text = GUIDE.read_text()
    assert all(f"`{hook}`" in text for hook in KINDS)
    # kernels, sketches, decoders, regressors, losses, executors, readers, column types, depictions,
    # saveable classes, demos
    assert len(BLOCKS) == 11


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_guide_example_runs(index, capsys):
    # each example runs as the module of a plugin would: its classes are importable by
    # "module:Name" (what the safe model format records for a saveable class)
    name = f"plugins_md_example_{index}"
    module = types.ModuleType(name)
    sys.modules[name] = module
    reset_registry()
    try:
        exec(compile(BLOCKS[index], f"docs/plugins.md example {index}", "exec"), module.__dict__)
    finally:
        reset_registry()
        del sys.modules[name]
    assert capsys.readouterr().out.strip(), "the example prints its result"
