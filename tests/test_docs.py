"""The code examples of the documentation run as written: every Python block of the README
and of the guide pages listed below, each in a fresh namespace (so that copying one block
alone works: no NameError); and the fragments of the pages listed in IN_SEQUENCE, in order
in one shared namespace per page (no AttributeError, TypeError or wrong import there)."""
import logging
import re
import sys
import textwrap
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# pages whose every Python block is self-contained (the others show fragments in context)
SELF_CONTAINED = ["README.md", "docs/getting_started.md", "docs/precomputed.md", "docs/logging_and_figures.md",
                  "docs/parameters.md"]


# pages whose Python blocks are fragments of one example, run in order in one namespace (a
# module, so that the classes a block defines can be saved by name) after the setup below,
# which makes the data the page leaves to the reader (small, so that each page takes seconds)
IN_SEQUENCE = {
    "docs/model_selection.md": "",
    "docs/reliability.md": "",
    "docs/plugins.md": "",
    "docs/dsokr.md": """
import numpy as np
rng = np.random.default_rng(0)
X = rng.standard_normal((300, 5))
Y = (X @ rng.standard_normal((5, 8)) > 0).astype(float)
X_train, Y_train, X_test, candidates = X[:250], Y[:250], X[250:], Y
""",
    "docs/molecules.md": """
from rdkit import Chem
from sprokr.datasets import sample_path
from sprokr_chem.datasets import load_qm9
smiles, X_properties, _ = load_qm9(sample_path("qm9_sample.csv"))
train_smiles, molecules, X_properties = smiles[:150], smiles[:150], X_properties[:150]
query_smiles = true_smiles = smiles[150:180]
pool = smiles[150:]
with Chem.SDWriter("pool.sdf") as writer:
    for s in pool:
        writer.write(Chem.MolFromSmiles(s))
descriptions = [f"a molecule of {len(s)} characters with {s.count('C')} carbon and {s.count('O')} oxygen atoms"
                for s in molecules]
""",
}
# blocks of those pages that are not run, and why
NOT_RUN = {
    ("docs/plugins.md", 0): "the hook of an installed plugin: a lazy factory of the reader's own module",
    ("docs/molecules.md", 1): "MOSES: 1.58 million molecules from a file outside the repository",
}


def python_blocks(path):
    return re.findall(r"```python\n(.*?)```", (ROOT / path).read_text(), re.S)


def indented_python_blocks(path):
    """Every Python block, also those indented in a list item (dedented)."""
    return [textwrap.dedent(b) for b in re.findall(r"^ *```python\n(.*?)^ *```", (ROOT / path).read_text(), re.S | re.M)]


def all_blocks():
    out = [(path, i) for path in SELF_CONTAINED for i in range(len(python_blocks(path)))]
    return out + [("docs/kernel_machines.md", 0)]


def test_readme_commands_and_blocks():
    text = (ROOT / "README.md").read_text()
    # .ci/run runs the second command verbatim: keep both exactly in this form
    assert "    pip install -r requirements.txt && sprokr demo\n" in text
    assert "    pip install -r requirements.txt && python -m pytest -q\n" in text
    assert "pip install -r requirements.txt && python -m pytest -q" in (ROOT / ".ci" / "run").read_text()
    assert len(python_blocks("README.md")) >= 4


@pytest.fixture
def restore_logging():
    """Examples may configure logging (basicConfig): undo it for the other tests."""
    root, sprokr_log = logging.getLogger(), logging.getLogger("sprokr")
    saved = root.handlers[:], root.level, sprokr_log.level
    yield
    for h in root.handlers[:]:
        if h not in saved[0]:
            root.removeHandler(h)
    root.setLevel(saved[1])
    sprokr_log.setLevel(saved[2])


@pytest.mark.parametrize("path, index", all_blocks())
def test_documented_example_runs(path, index, capsys, restore_logging):
    block = python_blocks(path)[index]
    if "sprokr_chem" in block:
        pytest.importorskip("sprokr_chem")
    if "plotting" in block:
        pytest.importorskip("matplotlib")
    if path == "docs/precomputed.md" and index == 1:  # continues the page's first block
        block = python_blocks(path)[0] + block
    exec(compile(block, f"{path} example {index}", "exec"), {"__name__": "__doc_example__"})
    printed = capsys.readouterr().out.split()
    if "print(" in block:
        assert printed, "the example prints its result"
    if path == "docs/kernel_machines.md":
        pinball, crossing = map(float, printed[-2:])
        assert pinball < 85 and crossing < 0.5  # diabetes: exact machine ~78.6


@pytest.fixture
def fresh_registry():
    """Pages that register plugins register them for their test only."""
    from sprokr.registry import reset_registry

    reset_registry()
    yield
    reset_registry()


@pytest.mark.parametrize("path", sorted(IN_SEQUENCE))
def test_documented_fragments_run_in_sequence(path, tmp_path, monkeypatch, capsys, restore_logging, fresh_registry):
    if path == "docs/molecules.md":
        pytest.importorskip("sprokr_chem")
    if path == "docs/plugins.md":
        pytest.importorskip("matplotlib")
        monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)  # files the examples write
    module = types.ModuleType("__doc_example__")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(IN_SEQUENCE[path], f"{path} setup", "exec"), module.__dict__)
    blocks = indented_python_blocks(path)
    assert blocks and len(blocks) == len(python_blocks(path))
    for i, block in enumerate(blocks):
        if (path, i) in NOT_RUN:
            continue
        exec(compile(block, f"{path} example {i}", "exec"), module.__dict__)
        if "print(" in block:
            assert capsys.readouterr().out.split(), f"{path} example {i} prints its result"
    assert all(i < len(blocks) for p, i in NOT_RUN if p == path)


def test_documented_commands_use_existing_options(capsys):
    """Every ``sprokr <command> ...`` the pages write (code blocks and inline code) names a
    command of the command line and only options of that command (its ``--help``)."""
    from sprokr.cli import main

    with pytest.raises(SystemExit):
        main(["--help"])
    commands = re.search(r"\{([\w,]+)\}", capsys.readouterr().out).group(1).split(",")
    options = {}
    for command in commands:
        with pytest.raises(SystemExit):
            main([command, "--help"])
        options[command] = set(re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", capsys.readouterr().out))
    wrong = []
    for page in ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]:
        for line in (ROOT / page).read_text().splitlines():
            for command, rest in re.findall(r"(?<![\w./-])sprokr ([a-z]+)((?: +(?:-[-\w]+|[\w./=-]+))*)", line):
                if command not in options:
                    continue  # prose ("sprokr is ..."): only the commands are checked
                wrong += [f"{page}: sprokr {command} {option}" for option in re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", rest)
                          if option not in options[command] and option != "--traceback"]
    assert not wrong, wrong
