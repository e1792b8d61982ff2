"""Plugin discovery through the ``sprokr`` entry-point group, failure isolation, conflicts."""
import subprocess
import sys

import numpy as np
import pytest

import sprokr
from sprokr.registry import PluginConflictError, PluginWarning, Registry, get_registry, reset_registry

from fake_distributions import install_fake_distribution as install

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
    """One module and its ``*.dist-info`` (:func:`fake_distributions.install_fake_distribution`)."""
    install(root, dist, {module: source}, entry_points)


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
    assert {"name": "charbag", "kind": "input_kernel", "plugin": "charbag", "qualified_name": "charbag:charbag"} in rows
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


def test_a_plugin_cannot_disable_a_builtin(site):
    install_fake_distribution(site, "sprokr-clash", "clash_plugin", '''
import sprokr
from sprokr.kernels import LinearKernel

@sprokr.hookimpl
def sprokr_input_kernels():
    return {"gaussian": LinearKernel}
''', {"clash": "clash_plugin"})
    with pytest.warns(PluginWarning, match="built-in keeps the name.*'sprokr:gaussian', 'clash:gaussian'"):
        reg = get_registry()
    assert reg.get("input_kernel", "gaussian").plugin == "sprokr"  # built-ins win
    assert reg.get("input_kernel", "clash:gaussian").factory.__name__ == "LinearKernel"
    sprokr.IOKR(lam=1e-2).fit(np.eye(3), np.eye(3))  # the default kernel still works
    rows = {(r["name"], r["plugin"]) for r in reg.list_components() if r["kind"] == "input_kernel"}
    assert ("gaussian", "sprokr") in rows and ("clash:gaussian", "clash") in rows


def test_two_third_party_plugins_make_the_bare_name_ambiguous():
    reg = Registry(entry_points=False)

    class A:
        @sprokr.hookimpl
        def sprokr_sketches(self):
            return {"mysketch": sprokr.sketches.SubSample}

    class B:
        @sprokr.hookimpl
        def sprokr_sketches(self):
            return {"mysketch": sprokr.sketches.GaussianSketch}

    reg.register(A(), name="a")
    assert reg.get("sketch", "mysketch").plugin == "a"
    with pytest.warns(PluginWarning, match="ambiguous"):
        reg.register(B(), name="b")
    with pytest.raises(PluginConflictError, match=r"'a', 'b'.*'a:mysketch', 'b:mysketch'"):
        reg.get("sketch", "mysketch")
    assert isinstance(reg.create("sketch", "b:mysketch", {"m": 3}), sprokr.sketches.GaussianSketch)
    with pytest.raises(ValueError, match="plugin 'c' provides no sketch 'mysketch'"):
        reg.get("sketch", "c:mysketch")


def test_wrong_hook_signature_does_not_take_the_host_down(site):
    install_fake_distribution(site, "sprokr-clash", "clash_plugin", '''
import sprokr

@sprokr.hookimpl
def sprokr_input_kernels(config):  # hooks take no argument
    return {}
''', {"clash": "clash_plugin"})
    with pytest.warns(PluginWarning, match=r"'clash' was skipped.*"):
        reg = get_registry()
    assert "gaussian" in reg.names("input_kernel")
    out = subprocess.run([sys.executable, "-m", "sprokr.cli", "plugins"], capture_output=True, text=True,
                         env={**__import__("os").environ, "PYTHONPATH": str(site)})
    assert out.returncode == 0 and "gaussian" in out.stdout


def test_plugin_calling_sys_exit_at_import_does_not_kill_the_host(site):
    (site / "broken_plugin.py").write_text("import sys\nsys.exit(3)\n")
    info = site / "sprokr-broken-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: sprokr-broken\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[sprokr]\nbroken = broken_plugin\n")
    with pytest.warns(PluginWarning, match=r"'broken'.*exited \(SystemExit: 3\)"):
        reg = get_registry()
    assert "psg" in reg.names("sketch")


def test_broken_factories_are_named(site):
    reg = Registry(entry_points=False)

    class Bad:
        @sprokr.hookimpl
        def sprokr_input_kernels(self):
            return {"notcallable": 42, "wrongtype": dict, "lazymissing": lazy("nonexistent_mod:Kernel")}

    from sprokr.registry import PluginComponentError, lazy_factory as lazy

    with pytest.warns(PluginWarning, match=r"plugin 'bad'.*'notcallable' was skipped.*not callable"):
        reg.register(Bad(), name="bad")
    assert "notcallable" not in reg.names("input_kernel")
    with pytest.raises(PluginComponentError,
                       match=r"'wrongtype' \(plugin 'bad'\).*returned an object of type dict, not an instance of Kernel"):
        reg.create("input_kernel", "wrongtype", base=sprokr.Kernel)
    with pytest.raises(ImportError, match=r"'lazymissing' of plugin 'bad'.*nonexistent_mod"):
        reg.create("input_kernel", "lazymissing")


def test_misspelled_hook_is_reported():
    reg = Registry(entry_points=False)

    class Typo:
        @sprokr.hookimpl
        def sprokr_input_kernel(self):
            return {}

    with pytest.warns(PluginWarning, match=r"'sprokr_input_kernel' is not a sprokr hook.*did you mean "
                                            r"'sprokr_input_kernels'"):
        reg.register(Typo(), name="typo")


def test_kernel_needing_arguments_and_lazy_kernels_get_dtype():
    import sprokr.registry as registry
    from sprokr.kernels import resolve_kernel

    class NeedsArg(sprokr.kernels.GaussianKernel):
        def __init__(self, scale, gamma=None, sigma2=None, dtype="float64"):
            super().__init__(gamma=gamma, sigma2=sigma2, dtype=dtype)
            self.scale = scale

    class P:
        @sprokr.hookimpl
        def sprokr_input_kernels(self):
            return {"needsarg": NeedsArg, "lazygauss": registry.lazy_factory("sprokr.kernels.vector:GaussianKernel")}

    reg = Registry(entry_points=False)
    reg.register(P(), name="p")
    old, registry._REGISTRY = registry._REGISTRY, reg
    try:
        k = resolve_kernel("needsarg", {"scale": 2.0}, "input", np.dtype("float32"))
        assert k.scale == 2.0 and k.dtype == "float32"
        assert resolve_kernel("lazygauss", None, "input", np.dtype("float32")).dtype == "float32"
    finally:
        registry._REGISTRY = old


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
