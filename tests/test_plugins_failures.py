"""A broken plugin is named and never takes the host down: whatever a plugin's code raises
(``sys.exit`` included, only the user's ``KeyboardInterrupt`` gets through) while it is
registered, listed, or asked by the host, a warning or an error names the plugin, and the
built-ins keep working."""
import sys
import textwrap
import types

import numpy as np
import pytest

import sprokr
import sprokr.registry as registry
from sprokr.registry import PluginWarning, Registry, is_plugin_failure


def install_fake_distribution(root, dist, modules, entry_points):
    """Modules and a ``*.dist-info`` declaring ``entry_points`` (what ``pip install`` leaves)."""
    for module, source in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(source))
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    lines = "\n".join(f"{k} = {v}" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(f"[sprokr]\n{lines}\n")


@pytest.fixture
def reg(monkeypatch):
    """A registry of sprokr's built-ins only, made the process-wide one."""
    r = Registry(entry_points=False)
    monkeypatch.setattr(registry, "_REGISTRY", r)
    return r


class GoodKernels:
    @sprokr.hookimpl
    def sprokr_input_kernels(self):
        return {"goodlinear": sprokr.kernels.LinearKernel}


# -- registration: hooks, dir() and attributes of the plugin ---------------------------------
class CustomStop(BaseException):
    """A plugin's own BaseException subclass."""


@pytest.mark.parametrize("exc", [SystemExit("plugin hook exited"), SystemExit(3), GeneratorExit(),
                                 CustomStop("stop")], ids=lambda e: type(e).__name__)
def test_a_hook_ending_by_any_base_exception_is_named_and_skipped(exc):
    class Exits(GoodKernels):
        @sprokr.hookimpl
        def sprokr_sketches(self):
            raise exc

    reg = Registry(entry_points=False)
    what = "exited" if isinstance(exc, SystemExit) else f"raised {type(exc).__name__}"
    with pytest.warns(PluginWarning, match=rf"sprokr plugin 'exits': hook sprokr_sketches {what}.*its sketches "
                                           r"were skipped"):
        assert reg.register(Exits(), name="exits") == "exits"
    assert "goodlinear" in reg.names("input_kernel")  # its other hooks still count
    assert reg.create("sketch", "subsample", {"m": 2}) is not None  # the built-ins work


def test_keyboard_interrupt_in_a_plugin_still_stops_the_program():
    class Interrupted:
        @sprokr.hookimpl
        def sprokr_sketches(self):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Registry(entry_points=False).register(Interrupted(), name="ki")
    assert not is_plugin_failure(KeyboardInterrupt())
    assert not is_plugin_failure(BaseExceptionGroup("g", [KeyboardInterrupt(), ValueError()]))
    assert is_plugin_failure(BaseExceptionGroup("g", [SystemExit(1)])) and is_plugin_failure(GeneratorExit())


def test_a_plugin_that_cannot_be_inspected_is_named_and_skipped():
    reg = Registry(entry_points=False)
    mod = types.ModuleType("dirboom")

    def boom():
        raise RuntimeError("dir boom")

    mod.__dir__ = boom
    with pytest.warns(PluginWarning, match=r"sprokr plugin 'dirboom' was skipped: RuntimeError: dir boom"):
        assert reg.register(mod, name="dirboom") is None

    class GetattributeBoom:
        def __getattribute__(self, name):
            raise RuntimeError("getattribute boom")

    with pytest.warns(PluginWarning, match=r"'GetattributeBoom' was skipped: RuntimeError: getattribute boom"):
        assert reg.register(GetattributeBoom()) is None

    class DirExits:
        def __dir__(self):
            sys.exit(2)

    with pytest.warns(PluginWarning, match=r"'direxits' was skipped: exited \(SystemExit: 2\)"):
        assert reg.register(DirExits(), name="direxits") is None
    assert "gaussian" in reg.names("input_kernel")


def test_a_skipped_plugin_leaves_its_name_free_and_a_taken_name_is_said_in_one_line():
    class WrongSignature:
        @sprokr.hookimpl
        def sprokr_input_kernels(self, config):  # hooks take no argument
            return {}

    reg = Registry(entry_points=False)
    with pytest.warns(PluginWarning, match=r"'mine' was skipped: PluginValidationError"):
        assert reg.register(WrongSignature(), name="mine") is None
    assert reg.register(GoodKernels(), name="mine") == "mine"  # pluggy had kept the name taken
    assert reg.get("input_kernel", "goodlinear").plugin == "mine"
    with pytest.warns(PluginWarning) as caught:
        assert reg.register(GoodKernels(), name="mine") is None
        assert reg.register(GoodKernels(), name="sprokr") is None
    messages = [str(w.message) for w in caught]
    assert messages == ["sprokr plugin 'mine' was skipped: the name 'mine' is already taken by another plugin",
                        "sprokr plugin 'sprokr' was skipped: the name 'sprokr' is already taken by sprokr's built-ins"]


def test_entry_point_plugins_ending_by_sys_exit_do_not_take_the_host_down(tmp_path, monkeypatch):
    install_fake_distribution(tmp_path, "sprokr-badplugs", {
        "hookexit_plugin": '''
            import sys
            import sprokr

            @sprokr.hookimpl
            def sprokr_input_kernels():
                sys.exit("plugin hook exited")
            ''',
        "dirboom_plugin": '''
            def __dir__():
                raise RuntimeError("dir boom")
            ''',
    }, {"hookexit": "hookexit_plugin", "dirboom": "dirboom_plugin"})
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_REGISTRY", None)
    for mod in ("hookexit_plugin", "dirboom_plugin"):
        monkeypatch.delitem(sys.modules, mod, raising=False)
    with pytest.warns(PluginWarning) as caught:
        reg = registry.get_registry()
    messages = [str(w.message) for w in caught]
    assert "sprokr plugin 'hookexit': hook sprokr_input_kernels exited (SystemExit: 'plugin hook exited'); its " \
           "input kernels were skipped" in messages
    assert "sprokr plugin 'dirboom' was skipped: RuntimeError: dir boom" in messages
    X = np.random.default_rng(0).standard_normal((6, 2))
    sprokr.IOKR(lam=1e-2).fit(X, np.eye(6)[:, :3])  # the host works
    assert reg.get("input_kernel", "gaussian").plugin == "sprokr"
