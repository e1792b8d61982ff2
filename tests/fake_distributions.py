"""Fake installed distributions for the plugin tests: what ``pip install`` of a plugin leaves."""
import textwrap


def install_fake_distribution(root, dist, modules, entry_points):
    """Write ``modules`` (``{module: source}``) into ``root`` and a ``*.dist-info`` declaring
    ``entry_points`` (``{name: "module[:object]"}``) in the ``sprokr`` group."""
    for module, source in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(source))
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    lines = "\n".join(f"{k} = {v}" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(f"[sprokr]\n{lines}\n")
