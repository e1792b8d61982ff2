"""Plugin discovery through the ``sprokr`` entry-point group, failure isolation, conflicts."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import sprokr
from sprokr.registry import PluginConflictError, PluginWarning, Registry, get_registry, reset_registry

PLUGIN_SOURCE = '''
import numpy as np
import sprokr
from sprokr.kernels import Kernel


class CharBagKernel(Kernel):
    """Cosine similarity of character counts: a kernel on Python strings."""

    name = "charbag"
    normalized = True

    def __init__(self, alphabet="abcdefghijklmnopqrstuvwxyz"):
        self.alphabet = alphabet

    def prepare(self, X):
        if isinstance(X, str) or not all(isinstance(s, str) for s in X):
            raise TypeError("charbag expects a sequence of strings")
        C = np.array([[s.count(a) for a in self.alphabet] for s in X], dtype=float)
        norms = np.linalg.norm(C, axis=1, keepdims=True)
        return C / np.where(norms == 0, 1, norms)

    def pairwise(self, A, B):
        return A @ B.T


@sprokr.hookimpl
def sprokr_input_kernels():
    return {"charbag": CharBagKernel}
'''


def install_fake_distribution(root, dist, module, source, entry_points):
    """Write a module and a ``*.dist-info`` with entry points: what ``pip install`` leaves."""
    (root / f"{module}.py").write_text(textwrap.dedent(source))
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    lines = "\n".join(f"{k} = {v}" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(f"[sprokr]\n{lines}\n")


@pytest.fixture
def site(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    reset_registry()
    yield tmp_path
    reset_registry()
    for mod in ("charbag_plugin", "broken_plugin", "clash_plugin"):
        sys.modules.pop(mod, None)


def test_external_plugin_kernel_is_discovered_and_used_by_name(site):
    install_fake_distribution(site, "sprokr-charbag", "charbag_plugin", PLUGIN_SOURCE,
                              {"charbag": "charbag_plugin"})
    rows = sprokr.list_components()
    assert {"name": "charbag", "kind": "input_kernel", "plugin": "charbag"} in rows
    X = ["abc", "abd", "xyz", "xyy", "aab", "zzy"]
    Y = np.array([[1, 0], [1, 0], [0, 1], [0, 1], [1, 0], [0, 1]])
    model = sprokr.IOKR(input_kernel="charbag", output_kernel="linear", lam=1e-2).fit(X, Y)
    np.testing.assert_array_equal(model.predict(["bac", "yzx"]), [[1, 0], [0, 1]])
    assert type(model.input_kernel_).__module__ == "charbag_plugin"


def test_broken_plugin_warns_and_host_keeps_working(site):
    (site / "broken_plugin.py").write_text("raise ImportError('libfoo.so not found')\n")
    info = site / "sprokr-broken-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: sprokr-broken\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[sprokr]\nbroken = broken_plugin\n")
    with pytest.warns(PluginWarning, match=r"'broken'.*libfoo\.so not found"):
        reg = get_registry()
    assert "gaussian" in reg.names("input_kernel")
    sprokr.IOKR(lam=1e-2).fit(np.eye(3), np.eye(3))


def test_hook_that_raises_is_isolated(site):
    install_fake_distribution(site, "sprokr-clash", "clash_plugin", '''
import sprokr

@sprokr.hookimpl
def sprokr_sketches():
    raise RuntimeError("boom")
''', {"clash": "clash_plugin"})
    with pytest.warns(PluginWarning, match=r"'clash'.*sprokr_sketches.*boom"):
        reg = get_registry()
    assert "psg" in reg.names("sketch")


def test_two_plugins_with_the_same_name_give_an_error_naming_both(site):
    install_fake_distribution(site, "sprokr-clash", "clash_plugin", '''
import sprokr
from sprokr.kernels import LinearKernel

@sprokr.hookimpl
def sprokr_input_kernels():
    return {"gaussian": LinearKernel}
''', {"clash": "clash_plugin"})
    with pytest.warns(PluginWarning, match="registered by both"):
        reg = get_registry()
    with pytest.raises(PluginConflictError, match=r"'sprokr'.*'clash'"):
        reg.get("input_kernel", "gaussian")
    assert any("CONFLICT" in r["plugin"] for r in reg.list_components())
    # explicit registration refuses the clash up front and leaves the registry intact
    reg2 = Registry(entry_points=False)

    class Dup:
        @sprokr.hookimpl
        def sprokr_sketches(self):
            return {"psg": object}

    with pytest.raises(PluginConflictError, match=r"sketch 'psg'.*'sprokr'.*'dup'"):
        reg2.register(Dup(), name="dup")
    assert reg2.get("sketch", "psg").plugin == "sprokr"


def test_unknown_names_list_known_ones():
    reg = Registry(entry_points=False)
    with pytest.raises(ValueError, match="unknown sketch 'foo'; known sketchs: accumulation, countsketch"):
        reg.create("sketch", "foo")
    with pytest.raises(ValueError, match="unknown component kind"):
        reg.names("widgets")
    with pytest.raises(TypeError, match="invalid parameters"):
        reg.create("input_kernel", "gaussian", {"bandwidth": 3})
    with pytest.raises(ValueError, match="instance"):
        reg.create("input_kernel", sprokr.kernels.GaussianKernel(), {"gamma": 1.0})


def test_cli_lists_components():
    out = subprocess.run([sys.executable, "-m", "sprokr.cli", "plugins"], capture_output=True, text=True, check=True)
    assert "psparsified" in out.stdout and "sketch" in out.stdout and "sprokr" in out.stdout


def test_core_does_not_import_domain_libraries():
    # plugins may import their library when loaded; the host's own modules must not
    code = ("import sys, sprokr, sprokr.models, sprokr.decoders, sprokr.registry, sprokr.cli, "
            "sprokr.datasets, sprokr.metrics; "
            "sprokr.registry.Registry(entry_points=False); "
            "bad = [m for m in ('rdkit', 'grakel', 'ot', 'torch', 'dask') if m in sys.modules]; "
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_lazy_factory_and_lazy_exports():
    from sprokr.registry import lazy_exports, lazy_factory

    f = lazy_factory("sprokr.kernels.vector:GaussianKernel")
    k = f(sigma2=2.0)
    assert type(k).__name__ == "GaussianKernel" and k.sigma2 == 2.0
    with pytest.raises(ValueError, match="module:attribute"):
        lazy_factory("sprokr.kernels.GaussianKernel")
    getattr_, dir_ = lazy_exports("sprokr.kernels", {"TanimotoKernel": ".vector"})
    assert getattr_("TanimotoKernel").name == "tanimoto"
    assert "TanimotoKernel" in dir_()
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        getattr_("Nope")


def test_cli_output_into_a_closed_pipe_is_quiet():
    """`sprokr plugins | head`: no traceback when the reader has gone away."""
    proc = subprocess.Popen([sys.executable, "-m", "sprokr.cli", "plugins"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader leaves before the first line is written
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
