"""Logging (the ``sprokr`` logger), phase timings and the tqdm progress helper."""
import logging

import pytest

from sprokr import progress as prog


@pytest.fixture(autouse=True)
def unconfigured_logging(monkeypatch):
    """As in a fresh interpreter: no handler on the root logger, sprokr's level unset."""
    root, log = logging.getLogger(), logging.getLogger("sprokr")
    monkeypatch.setattr(root, "handlers", [h for h in root.handlers if type(h).__name__ == "LogCaptureHandler"])
    level = log.level
    log.setLevel(logging.NOTSET)  # setLevel (not the attribute): it clears the loggers' caches
    yield
    log.setLevel(level)


def test_library_logger_has_only_a_null_handler():
    log = logging.getLogger("sprokr")
    assert prog.logger is log and prog.get_logger() is log
    assert any(isinstance(h, logging.NullHandler) for h in log.handlers)
    assert not [h for h in log.handlers if not isinstance(h, logging.NullHandler)]
    assert prog.get_logger("SISOKR").name == "sprokr.SISOKR"
    assert prog.get_logger("sprokr.selection").name == "sprokr.selection"


def test_messages_silent_by_default_and_shown_once_with_verbose(capsys):
    prog.log_message("quiet message")
    assert capsys.readouterr().err == ""
    prog.log_message("loud message", verbose=True, logger="SISOKR")
    assert capsys.readouterr().err == "[sprokr.SISOKR] loud message\n"


def test_configured_logging_receives_records_and_verbose_does_not_duplicate(caplog, capsys):
    caplog.set_level(logging.INFO, logger="sprokr")
    with prog.timed_phase("kernel blocks", verbose=True, logger="IOKR") as phase:
        pass
    assert phase.elapsed is not None and phase.elapsed >= 0
    (rec,) = [r for r in caplog.records if r.name == "sprokr.IOKR"]
    assert rec.levelno == logging.INFO and rec.getMessage().startswith("kernel blocks took ")
    assert rec.getMessage().endswith(" s")
    assert capsys.readouterr().err == ""  # shown by the user's handler, not printed again


def test_timed_phase_reports_failures_and_reraises(capsys):
    with pytest.raises(ZeroDivisionError):
        with prog.timed_phase("solve", verbose=True):
            1 / 0
    assert "[sprokr] solve failed after" in capsys.readouterr().err


def test_progress_enabled_order(monkeypatch):
    monkeypatch.delenv(prog.ENV_PROGRESS, raising=False)
    assert prog.progress_enabled() is False  # pytest captures stderr: not a terminal
    monkeypatch.setenv(prog.ENV_PROGRESS, "1")
    assert prog.progress_enabled() is True
    assert prog.progress_enabled(False) is False  # the explicit parameter wins
    monkeypatch.setenv(prog.ENV_PROGRESS, "off")
    assert prog.progress_enabled() is False and prog.progress_enabled(True) is True
    monkeypatch.setenv(prog.ENV_PROGRESS, "maybe")
    with pytest.raises(ValueError, match="SPROKR_PROGRESS"):
        prog.progress_enabled()


def test_progress_bar_or_no_op(capsys, monkeypatch):
    monkeypatch.delenv(prog.ENV_PROGRESS, raising=False)
    bar = prog.progress(range(5), desc="chunks")
    assert isinstance(bar, prog.NullProgress) and bar.total == 5
    assert list(bar) == [0, 1, 2, 3, 4] and bar.n == 5
    with prog.progress(total=3, desc="rows") as nb:
        nb.update(2)
        nb.set_postfix(loss=1.0)
        nb.set_description("rows!")
    assert nb.n == 2 and capsys.readouterr().err == ""
    with pytest.raises(TypeError, match="update"):
        list(prog.NullProgress(total=3))

    from tqdm import tqdm

    with prog.progress(total=4, desc="decode", unit="queries", enabled=True, mininterval=0) as tb:
        assert isinstance(tb, tqdm)
        tb.update(4)
    err = capsys.readouterr().err
    assert "decode" in err and "4/4" in err


def test_executor_passes_show_bars_named_after_the_pass(capsys, monkeypatch):
    import numpy as np

    from sprokr.numerics import LocalExecutor

    monkeypatch.delenv(prog.ENV_PROGRESS, raising=False)
    X = np.arange(40.0).reshape(20, 2)
    ex = LocalExecutor(progress=True, n_partitions=2)
    out = ex.map_rows(ex.partition(X), lambda c: c.sum(axis=1, keepdims=True), 4, name="row sums")
    np.testing.assert_array_equal(out[:, 0], X.sum(axis=1))
    err = capsys.readouterr().err
    assert "row sums" in err and "20" in err
    quiet = LocalExecutor(progress=False)
    quiet.map_rows(quiet.partition(X), lambda c: c, 4, name="row sums")
    assert capsys.readouterr().err == ""
    with pytest.raises(ValueError, match="progress must be True, False or None"):
        LocalExecutor(progress="yes").partition(X)


def test_estimator_fit_and_predict_show_progress_and_log_phases(capsys, caplog):
    import numpy as np

    from sprokr.models import SISOKR

    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(300, 4)), (rng.random((300, 5)) > 0.5).astype(float)
    model = SISOKR(input_sketch="subsample", m_x=40, output_sketch="subsample", m_y=20, random_state=0,
                   executor_params={"progress": True})
    with caplog.at_level(logging.INFO, logger="sprokr"):
        model.fit(X, Y).predict(X[:10])
    err = capsys.readouterr().err
    assert "rows" in err  # tqdm bars of the chunked passes
    assert any(r.name == "sprokr.SISOKR" and "fit done" in r.getMessage() for r in caplog.records)
