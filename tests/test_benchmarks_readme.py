"""benchmarks/README.md stays in step with benchmarks/*.py and with the pages it cites.

docs/benchmarks.md and README.md send readers to benchmarks/README.md for the command behind
every published number; these checks keep that map from going stale: one table row per
public script, no row or mention of a script that is gone, every cited page present, and
every flag of a quoted command defined by the script's argparse.  Pure file reads."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
README = BENCH / "README.md"


def public_scripts():
    return {p.name for p in BENCH.glob("*.py") if not p.name.startswith("_")}


def rows():
    """``{script: [script cell, what, command, where]}`` from the table's rows."""
    out = {}
    for line in README.read_text().splitlines():
        m = re.match(r"\|\s*`(\w+\.py)`\s*\|", line)
        if m:
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            assert len(cells) == 4, f"row of {m.group(1)} has {len(cells)} cells, expected 4: {line}"
            assert m.group(1) not in out, f"two rows for {m.group(1)}"
            out[m.group(1)] = cells
    return out


def test_one_row_per_public_script():
    missing = sorted(public_scripts() - set(rows()))
    assert not missing, f"benchmarks/README.md has no row for {missing}"


def test_rows_name_existing_public_scripts():
    for name in rows():
        assert (BENCH / name).is_file(), f"benchmarks/README.md has a row for {name}, which does not exist"
        assert not name.startswith("_"), f"{name} is a private helper: mention it in the helpers line, not a row"


def test_every_script_mentioned_exists():
    text = README.read_text()
    # bare names (`scale.py`) and benchmarks/ paths; other paths (tests/...) are not scripts
    names = set(re.findall(r"(?:(?<=benchmarks/)|(?<![\w/.-]))(\w+\.py)\b", text))
    gone = sorted(n for n in names if not (BENCH / n).is_file())
    assert not gone, f"benchmarks/README.md names scripts that do not exist: {gone}"
    helpers = {p.name for p in BENCH.glob("_*.py")}
    unmentioned = sorted(h for h in helpers if f"`{h}`" not in text)
    assert not unmentioned, f"private helpers not mentioned in benchmarks/README.md: {unmentioned}"


def test_cited_pages_exist():
    text = README.read_text()
    pages = set(re.findall(r"\b(docs/[\w.-]+\.md|README\.md)\b", text))
    assert any(p.startswith("docs/") for p in pages), "no page cited: the parsing broke"
    missing = sorted(p for p in pages if not (ROOT / p).is_file())
    assert not missing, f"benchmarks/README.md cites pages that do not exist: {missing}"
    for name, cells in rows().items():
        where = cells[3]
        assert "not published" in where or re.search(r"(docs/[\w.-]+\.md|README\.md)", where), (
            f"row {name}: 'where published' names no page and does not say 'not published'")


def test_command_flags_exist():
    for name, cells in rows().items():
        source = (BENCH / name).read_text()
        for flag in set(re.findall(r"(?<![\w-])(--[a-z][\w-]*)", cells[2])):
            assert f'"{flag}"' in source, f"row {name}: {flag} is not a flag of benchmarks/{name}"
