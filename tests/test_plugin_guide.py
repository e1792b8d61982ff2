"""Every worked example of docs/plugins.md runs as written (one per hook)."""
import re
from pathlib import Path

import pytest

from sprokr.registry import reset_registry

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"
BLOCKS = [b for b in re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S) if "register(" in b]


def test_guide_covers_every_hook():
    from sprokr.hookspecs import KINDS

    text = GUIDE.read_text()
    assert all(f"`{hook}`" in text for hook in KINDS)
    assert len(BLOCKS) == 6  # kernels, sketches, decoders, regressors, losses, executors


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_guide_example_runs(index, capsys):
    reset_registry()
    try:
        exec(compile(BLOCKS[index], f"docs/plugins.md example {index}", "exec"), {})
    finally:
        reset_registry()
    assert capsys.readouterr().out.strip(), "the example prints its result"
