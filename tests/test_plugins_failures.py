"""A broken plugin is named and never takes the host down: whatever a plugin's code raises
(``sys.exit`` included, only the user's ``KeyboardInterrupt`` gets through) while it is
registered, listed, or asked by the host, a warning or an error names the plugin, and the
built-ins keep working."""
import sys
import types

import numpy as np
import pytest

import sprokr
import sprokr.registry as registry
from sprokr.registry import PluginWarning, Registry, is_plugin_failure

from fake_distributions import install_fake_distribution


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


@pytest.mark.parametrize("bad", ["", "   ", 7, None], ids=repr)
def test_a_component_without_a_usable_name_is_named_and_skipped(bad):
    """A name is what users type and saved models record: an empty or non-string one
    (``7`` would have become ``"7"``) is skipped with a warning naming the plugin; the
    plugin's other components count."""
    class BadName:
        @sprokr.hookimpl
        def sprokr_input_kernels(self):
            return {bad: sprokr.kernels.LinearKernel, "fine": sprokr.kernels.LinearKernel}

    reg = Registry(entry_points=False)
    with pytest.warns(PluginWarning, match=r"sprokr plugin 'badname': one of its input kernels was skipped: its name "
                                           r"must be a non-empty string"):
        assert reg.register(BadName(), name="badname") == "badname"
    names = reg.names("input_kernel")
    assert "fine" in names and "7" not in names and "" not in names and "   " not in names
    assert any(p == "badname" and k == "input_kernel" for p, k, *_ in reg.skipped)


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


# -- file readers --------------------------------------------------------------------------
class RaisingSuffixes:
    description = "suffixes that raise"

    @property
    def suffixes(self):
        raise RuntimeError("suffixes boom")

    def guess_can_open(self, path):
        return True

    def read(self, path):
        raise AssertionError("never routed to")


class ExitingGuess:
    suffixes = (".exg",)
    description = "a guess calling sys.exit"

    def guess_can_open(self, path):
        sys.exit(0)

    def read(self, path):
        raise AssertionError("never routed to")


class ExitingRead:
    suffixes = (".exr",)
    description = "a read calling sys.exit"

    def guess_can_open(self, path):
        return str(path).endswith(self.suffixes)

    def read(self, path):
        sys.exit(0)


class RaggedRead(ExitingRead):
    suffixes = (".rag",)

    def read(self, path):
        return sprokr.io.Table(str(path), {"a": ["1", "2", "3"], "b": ["1"]}, [2, 3])


class BadReaders:
    @sprokr.hookimpl
    def sprokr_readers(self):
        return {"sfx": RaisingSuffixes, "exg": ExitingGuess, "exr": ExitingRead, "rag": RaggedRead,
                "noread": lambda: 5}


def test_a_broken_reader_is_named_and_skipped_and_the_built_in_readers_keep_working(reg, tmp_path):
    from sprokr.io import DataFileError, find_reader, read_table

    reg.register(BadReaders(), name="badreaders")
    (tmp_path / "t.csv").write_text("a,b\n1,2\n")
    with pytest.warns(PluginWarning) as caught:
        assert read_table(tmp_path / "t.csv").column("b") == ["2"]
    messages = {str(w.message) for w in caught}
    assert "sprokr plugin 'badreaders': the reader 'sfx' was skipped: its suffixes raised RuntimeError: " \
           "suffixes boom" in messages
    assert any("the reader 'noread' is broken: its factory returned an object of type int without "
               "guess_can_open, read; it was skipped" in m for m in messages), messages
    (tmp_path / "noext").write_text("a,b\n1,2\n")  # no reader claims it: every reader is asked
    with pytest.warns(PluginWarning) as caught:
        with pytest.raises(DataFileError, match="unknown file format"):
            find_reader(tmp_path / "noext")
    assert "sprokr plugin 'badreaders': the reader 'exg' was skipped: guess_can_open('noext') raised SystemExit: 0" \
        in {str(w.message) for w in caught}


def test_a_read_the_file_was_routed_to_fails_naming_the_reader_and_its_plugin(reg, tmp_path):
    import warnings

    from sprokr.io import DataFileError, read_table

    reg.register(BadReaders(), name="badreaders")
    (tmp_path / "x.exr").write_text("x")
    (tmp_path / "x.rag").write_text("x")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginWarning)
        with pytest.raises(DataFileError, match=r"x\.exr: cannot be read as a read calling sys\.exit: SystemExit: 0 "
                                                r"\(reader 'exr' of plugin 'badreaders'\)"):
            read_table(tmp_path / "x.exr")
        with pytest.raises(DataFileError, match=r"x\.rag: the reader 'rag' of plugin 'badreaders' returned columns "
                                                r"of \{'a': 3, 'b': 1\} values for 2 rows \(a broken plugin\)"):
            read_table(tmp_path / "x.rag")


def test_a_depiction_factory_returning_garbage_is_named_and_skipped(reg):
    from sprokr.registry import get_depictions

    class BadDepictions:
        @sprokr.hookimpl
        def sprokr_depictions(self):
            return {"garbage": lambda: "not a depiction", "exits": lambda: sys.exit(1)}

    reg.register(BadDepictions(), name="baddeps")
    with pytest.warns(PluginWarning) as caught:
        found = get_depictions()
    assert [c.qualified_name for c, _ in found] == ["sprokr:text"]
    assert {str(w.message) for w in caught} == {
        "sprokr plugin 'baddeps': the depiction 'garbage' is broken: its factory returned an object of type str "
        "without can_draw, draw; it was skipped",
        "sprokr plugin 'baddeps': the depiction 'exits' could not be built: exited (SystemExit: 1); it was skipped"}


# -- sprokr demo ---------------------------------------------------------------------------
class Demos:
    @sprokr.hookimpl
    def sprokr_demos(self):
        def failing():
            def demo(out=print):
                out("failing demo starts")
                raise RuntimeError("demo boom")
            return demo

        def exiting():
            return lambda out=print: sys.exit(0)

        def good():
            def demo(out=print):
                out("good demo ran")
                return {"score": 1.0}
            return demo

        def not_json():
            return lambda out=print: {"labels": {1, 2}}  # a set: --json could not print it

        return {"failing": failing, "exiting": exiting, "good": good, "notjson": not_json}


def test_a_failing_demo_section_is_named_and_the_others_still_run_and_report(reg, monkeypatch, capsys):
    import json

    from sprokr.cli import main

    reg.register(Demos(), name="demos")
    every = registry.get_demos
    monkeypatch.setattr(registry, "get_demos", lambda: [d for d in every() if d[0] != "multilabel"])  # fast
    code = main(["demo", "--json"])
    out = capsys.readouterr()
    assert code == 2
    assert json.loads(out.out) == {"good": {"score": 1.0}}  # the sections that ran are reported
    assert "good demo ran" in out.err and "(the failing demo (plugin 'demos') failed: RuntimeError: demo boom)" \
        in out.err
    last = out.err.strip().splitlines()[-1]
    assert last == "sprokr demo: error: the failing demo (plugin 'demos') failed: RuntimeError: demo boom; " \
                   "the exiting demo (plugin 'demos') failed: SystemExit: 0; the notjson demo (plugin 'demos') " \
                   "failed: TypeError: Object of type set is not JSON serializable", out.err


# -- components built by name: estimators, regressors, factories that exit -----------------
class GarbageComponents:
    @sprokr.hookimpl
    def sprokr_estimators(self):
        return {"BadEst": lambda **kw: 5}

    @sprokr.hookimpl
    def sprokr_regressors(self):
        return {"badreg": lambda **kw: "not a regressor"}

    @sprokr.hookimpl
    def sprokr_sketches(self):
        return {"exiting": lambda **kw: sys.exit(3),
                "exitimport": registry.lazy_factory("exiting_module_for_sprokr_tests:Sketch")}


def test_an_estimator_or_regressor_factory_returning_garbage_names_the_plugin(reg):
    from sprokr.cli._tasks import check_config
    from sprokr.registry import PluginComponentError

    reg.register(GarbageComponents(), name="garbage")
    cfg = {"estimator": "BadEst", "input": {"columns": ["f0"]}, "output": {"column": "y"}}
    with pytest.raises(PluginComponentError, match=r"estimator 'BadEst' \(plugin 'garbage'\): its factory returned an "
                                                   r"object of type int without fit, predict, get_params, save"):
        check_config(cfg)
    X = np.random.default_rng(0).standard_normal((12, 2))
    with pytest.raises(PluginComponentError, match=r"regressor 'badreg' \(plugin 'garbage'\): its factory returned "
                                                   r"an object of type str without fit, predict"):
        sprokr.DSOKR(regressor="badreg", m_y=3).fit(X, np.eye(12)[:, :3])


def test_a_factory_or_lazy_import_calling_sys_exit_raises_an_error_naming_the_plugin(reg, tmp_path, monkeypatch):
    from sprokr.registry import PluginComponentError

    (tmp_path / "exiting_module_for_sprokr_tests.py").write_text("import sys\nsys.exit(4)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg.register(GarbageComponents(), name="garbage")
    with pytest.raises(PluginComponentError, match=r"sketch 'exiting' \(plugin 'garbage'\): its factory exited "
                                                   r"\(SystemExit: 3\); the plugin is broken"):
        reg.create("sketch", "exiting")
    with pytest.raises(PluginComponentError, match=r"sketch 'exitimport' of plugin 'garbage': importing "
                                                   r"exiting_module_for_sprokr_tests:Sketch exited \(SystemExit: 4\)"):
        reg.create("sketch", "exitimport", {"m": 2})


def test_a_class_of_sprokr_models_that_is_no_estimator_is_an_unknown_estimator():
    from sprokr.cli._tasks import ConfigError, build_estimator

    for name in ("WordTokenizer", "SmilesTokenizer"):  # fit and transform: tokenizers, not estimators
        with pytest.raises(ConfigError, match=rf"unknown estimator '{name}'; known: .*SISOKR") as info:
            build_estimator({"estimator": name})
        assert "Tokenizer" not in str(info.value).split("known:")[1]
    assert type(build_estimator({"estimator": "IOKR"})).__name__ == "IOKR"


# -- column types --------------------------------------------------------------------------
def column_type(n_columns=1, parse=None, fmt=None):
    """A column type class taking ``n_columns`` (a value, or a callable: a property)."""
    attrs = {"parse": parse or (lambda self, values, table: list(next(iter(values.values())))),
             "format": fmt or (lambda self, value, columns: str(value))}
    attrs["n_columns"] = property(n_columns) if callable(n_columns) else n_columns
    return type("PluginColumn", (), attrs)


def raise_boom(self):
    raise RuntimeError("n_columns boom")


class BrokenColumnTypes:
    @sprokr.hookimpl
    def sprokr_column_types(self):
        return {"two": column_type("two"), "zero": column_type(0), "true": column_type(True),
                "boom": column_type(raise_boom), "noparse": lambda: object(),
                "short": column_type(None, parse=lambda self, values, table: [1, 2]),
                "scalar": column_type(1, parse=lambda self, values, table: 7),
                "exits": column_type(1, parse=lambda self, values, table: sys.exit(0)),
                "badformat": column_type(1, fmt=lambda self, value, columns: 1 / 0)}


@pytest.mark.parametrize("name, problem", [
    ("two", "n_columns must be a positive integer (or None for any number of columns), got 'two'"),
    ("zero", "n_columns must be a positive integer (or None for any number of columns), got 0"),
    ("true", "n_columns must be a positive integer (or None for any number of columns), got True"),
    ("boom", "reading its n_columns raised RuntimeError: n_columns boom"),
    ("noparse", "its factory returned an object of type object without parse, format"),
], ids=["two", "zero", "true", "boom", "noparse"])
def test_a_broken_column_type_is_named_with_what_is_wrong(reg, name, problem):
    from sprokr.cli._tasks import check_config
    from sprokr.io import ColumnSpec
    from sprokr.registry import PluginComponentError

    reg.register(BrokenColumnTypes(), name="cols")
    expected = f"column type '{name}' of plugin 'cols' is broken: {problem}"
    with pytest.raises(PluginComponentError) as info:
        ColumnSpec.from_config({"columns": ["f0", "f1"], "type": name}, "input")
    assert expected in str(info.value)
    with pytest.raises(PluginComponentError) as info:
        check_config({"estimator": "IOKR", "input": {"column": "f0", "type": name}, "output": {"column": "y"}})
    assert expected in str(info.value)


def test_a_column_type_parse_or_format_failing_names_its_plugin(reg):
    from sprokr.io import ColumnSpec, DataFileError, Table
    from sprokr.registry import PluginComponentError

    reg.register(BrokenColumnTypes(), name="cols")
    table = Table("train.csv", {"f0": ["a", "b", "c"], "f1": ["1", "2", "3"]}, [2, 3, 4])
    with pytest.raises(PluginComponentError, match=r"column type 'short' of plugin 'cols' is broken: its parse "
                                                   r"returned 2 values for the 3 rows of train\.csv"):
        ColumnSpec(["f0", "f1"], "short").read(table)
    with pytest.raises(PluginComponentError, match=r"'scalar' of plugin 'cols' is broken: its parse returned an "
                                                   r"object of type int \(not one value per row\) for the 3 rows"):
        ColumnSpec(["f0"], "scalar").read(table)
    with pytest.raises(DataFileError, match=r"train\.csv: column\(s\) 'f0' cannot be read as 'exits': SystemExit: 0 "
                                            r"\(column type of plugin 'cols'\)"):
        ColumnSpec(["f0"], "exits").read(table)
    with pytest.raises(PluginComponentError, match=r"column type 'badformat' of plugin 'cols' could not write a "
                                                   r"prediction \(str\): ZeroDivisionError: division by zero"):
        ColumnSpec(["f0"], "badformat").write("x")
    assert ColumnSpec(["f0"], "text").read(table) == ["a", "b", "c"]  # the built-ins are unaffected


# -- sprokr plugins ------------------------------------------------------------------------
def test_sprokr_plugins_prints_each_warning_on_one_line(tmp_path, monkeypatch, capsys):
    from sprokr.cli import main

    install_fake_distribution(tmp_path, "sprokr-wrongsig", {"wrongsig_plugin": '''
        import sprokr

        @sprokr.hookimpl
        def sprokr_input_kernels(config):  # hooks take no argument: pluggy's message spans 3 lines
            return {}
        '''}, {"wrongsig": "wrongsig_plugin"})
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_REGISTRY", None)
    monkeypatch.delitem(sys.modules, "wrongsig_plugin", raising=False)
    assert main(["plugins"]) == 0
    out = capsys.readouterr()
    mine = [line for line in out.err.splitlines() if "wrongsig" in line]
    assert len(mine) == 1 and mine[0].startswith("warning: sprokr plugin 'wrongsig' was skipped: "
                                                 "PluginValidationError"), out.err
    assert "Argument(s) {'config'} are declared in the hookimpl" in mine[0]
    assert "gaussian" in out.out
