"""Log messages, phase timings and progress bars of sprokr.

Messages
    Everything sprokr reports goes through :mod:`logging`, under the ``"sprokr"`` logger
    (children ``"sprokr.<name>"``, see :func:`get_logger`).  As a library should, sprokr
    only attaches a :class:`logging.NullHandler` to it: configure logging to see the
    messages, e.g. ``logging.basicConfig(level=logging.INFO)`` or
    ``logging.getLogger("sprokr").setLevel(logging.DEBUG)`` plus a handler of your own.

Accuracy warnings
    A requested fast route whose measured error exceeds its tolerance (an explicit
    ``solver="cholesky"`` / ``"eigh"`` of a sketched ridge; ``dtype="float32"`` failing its
    check, then refitted in float64) is reported by :func:`warn_accuracy`: logged at
    ``WARNING`` and issued as a :class:`scipy.linalg.LinAlgWarning`, the category scipy and
    scikit-learn give an ill-conditioned solve, so that it is seen without any logging
    set-up and can be filtered or caught like theirs.

Phase timings
    :func:`timed_phase` (a context manager) logs ``"<phase> took <t> s"`` at ``INFO`` when
    the block ends; :func:`log_message` logs one message.  Both take ``verbose``: when it
    is true (an estimator's ``verbose=True``) the message is always shown -- through your
    handlers if they already show ``INFO`` records of the ``sprokr`` logger, otherwise on
    standard error as ``[sprokr.<name>] message`` -- so ``verbose=True`` works without any
    logging set-up and never prints a message twice.

Progress bars
    :func:`progress` returns a `tqdm <https://tqdm.github.io>`_ bar on standard error, or
    a :class:`NullProgress` with the same methods when bars are disabled.  Whether a bar is
    shown is decided, first match wins, by

    1. the ``enabled`` argument (``True`` / ``False``; estimators pass their own
       ``progress`` parameter here), then
    2. the environment variable ``SPROKR_PROGRESS`` (``1``/``true``/``yes``/``on`` or
       ``0``/``false``/``no``/``off``), then
    3. whether standard error is a terminal (so bars never end up in log files or in the
       output captured by a pipe).

Examples
--------
>>> import logging
>>> from sprokr.progress import get_logger, progress, timed_phase
>>> log = get_logger("example")
>>> with timed_phase("kernel blocks", logger=log) as phase:
...     total = sum(range(1000))
>>> phase.elapsed >= 0
True
>>> with progress(total=3, desc="chunks", enabled=False) as bar:
...     for _ in range(3):
...         bar.update(1)
"""
from __future__ import annotations

import logging
import os
import sys
import time
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Optional, Union

__all__ = [
    "LOGGER_NAME",
    "ENV_PROGRESS",
    "logger",
    "get_logger",
    "log_message",
    "log_estimator",
    "warn_accuracy",
    "grouped_accuracy_warnings",
    "user_stacklevel",
    "timed_phase",
    "PhaseTimer",
    "progress",
    "progress_enabled",
    "NullProgress",
]

#: name of the package logger
LOGGER_NAME = "sprokr"
#: environment variable that switches progress bars on (``1``) or off (``0``)
ENV_PROGRESS = "SPROKR_PROGRESS"

#: the ``"sprokr"`` logger (a :class:`logging.NullHandler` only, until you configure logging)
logger = logging.getLogger(LOGGER_NAME)
if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
    logger.addHandler(logging.NullHandler())

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def get_logger(name: Optional[str] = None) -> logging.Logger:
    """The ``"sprokr"`` logger, or its child ``"sprokr.<name>"``.

    Parameters
    ----------
    name : str, optional
        Suffix of the child logger, e.g. an estimator's class name (``"SISOKR"``) or a
        module (``"selection"``).  A name that already starts with ``"sprokr."`` is used
        as is.

    Returns
    -------
    logging.Logger
    """
    if not name or name == LOGGER_NAME:
        return logger
    if name.startswith(LOGGER_NAME + "."):
        return logging.getLogger(name)
    return logging.getLogger(f"{LOGGER_NAME}.{name}")


class _StderrHandler(logging.StreamHandler):
    """Writes to the *current* ``sys.stderr`` (which tests and notebooks may replace)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)
        self.setFormatter(logging.Formatter("[%(name)s] %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


_console = _StderrHandler()


def _is_shown(log: logging.Logger, level: int) -> bool:
    """True when a record of ``level`` sent to ``log`` reaches a handler that writes it."""
    if not log.isEnabledFor(level):
        return False
    current: Optional[logging.Logger] = log
    while current is not None:
        for h in current.handlers:
            if not isinstance(h, logging.NullHandler) and level >= h.level:
                return True
        if not current.propagate:
            break
        current = current.parent
    return False


def log_estimator(estimator: Any, message: str, level: int = logging.INFO) -> None:
    """Log ``message`` on the ``sprokr.<EstimatorClass>`` logger, shown when
    ``estimator.verbose`` is true (the estimators' phase timings).

    Parameters
    ----------
    estimator : object
        Any object; its class name names the logger, its ``verbose`` attribute (if any)
        forces the message to standard error.
    message : str
    level : int
    """
    log_message(message, verbose=bool(getattr(estimator, "verbose", False)), logger=type(estimator).__name__,
                level=level)


def user_stacklevel() -> int:
    """``stacklevel`` for a ``warnings.warn`` made by the function calling this one, that
    attributes the warning to the first caller outside sprokr and its plugins (the user's
    ``fit`` line, not sprokr's internals), as :func:`warn_accuracy` does."""
    frame: Any = sys._getframe(2)  # the warning function's caller
    level = 2
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith("sprokr"):
        frame, level = frame.f_back, level + 1
    return level


def warn_accuracy(message: str, estimator: Any = None, logger: Union[logging.Logger, str, None] = None) -> None:
    """Report a requested fast route that is less accurate than its tolerance.

    Logged at ``WARNING`` (on ``estimator``'s logger as :func:`log_estimator` does, else on
    ``logger``) and issued as a :class:`scipy.linalg.LinAlgWarning` attributed to the first
    caller outside sprokr and its plugins (the user's ``fit`` line, not sprokr's internals).

    Parameters
    ----------
    message : str
        What was requested, the measured estimate and what was done about it.
    estimator : object, optional
        The estimator fitting (its class names the logger; ``verbose`` forces the message).
    logger : logging.Logger or str, optional
        The logger when there is no estimator (a name is a child of ``"sprokr"``).
    """
    import warnings

    from scipy.linalg import LinAlgWarning

    if estimator is not None:
        log_estimator(estimator, message, logging.WARNING)
    else:
        log_message(message, logger=logger, level=logging.WARNING)
    frame: Any = sys._getframe(1)
    level = 2  # warn_accuracy's caller
    # (contextlib: a warning issued as a context manager of sprokr's exits)
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith(("sprokr", "contextlib")):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, LinAlgWarning, stacklevel=level)


@contextmanager
def grouped_accuracy_warnings(parts: str, total: int, estimator: Any = None) -> Iterator[None]:
    """One accuracy warning per kind for the many sub-models a block fits.

    The :class:`scipy.linalg.LinAlgWarning` s issued inside the block (e.g. each regional
    ridge of a :class:`~sprokr.models.LocalKernelRidgeRegressor` failing its float32 check:
    16 warnings for one fit) are collected; when the block ends, each kind -- the same
    message up to its numbers -- is issued once by :func:`warn_accuracy`, with how many of
    the ``total`` ``parts`` it concerns and the range of their estimates.  Other warnings
    are issued as they were.  For a fit's own loop: the warnings module's filters are
    process-wide, as for :class:`warnings.catch_warnings`.

    Parameters
    ----------
    parts : str
        What the sub-models are, plural (``"regional ridges"``).
    total : int
        How many there are.
    estimator : object, optional
        The estimator fitting them (its logger, as :func:`warn_accuracy`).
    """
    import re
    import warnings

    from scipy.linalg import LinAlgWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    kinds: dict = {}
    for w in caught:
        if issubclass(w.category, LinAlgWarning):
            text = str(w.message)
            kinds.setdefault(re.sub(r"\d+(\.\d*)?(e[-+]?\d+)?", "#", text), []).append(text)
        else:  # through the caller's filters again
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
    for texts in kinds.values():
        if len(texts) == 1:
            warn_accuracy(texts[0], estimator)
            continue
        est = [float(v) for t in texts for v in re.findall(r"estimate ([0-9.]+(?:e[-+]?[0-9]+)?)", t)]
        spread = f" (estimates {min(est):.2g} to {max(est):.2g})" if est else ""
        first = re.sub(r" \(estimate [^)]*\)", "", texts[0]) if est else texts[0]
        warn_accuracy(f"{len(texts)} of the {total} {parts}{spread}: {first}", estimator)


def log_message(message: str, *, verbose: bool = False, logger: Union[logging.Logger, str, None] = None,
                level: int = logging.INFO) -> None:
    """Log ``message``; with ``verbose`` true, make sure it is shown.

    Parameters
    ----------
    message : str
    verbose : bool
        When true and the logging configuration would not show the record (the default:
        no handler but sprokr's ``NullHandler``), it is written to standard error as
        ``[<logger name>] message``.
    logger : logging.Logger or str, optional
        A logger or the name given to :func:`get_logger` (default: the ``"sprokr"`` logger).
    level : int
        Logging level (default ``logging.INFO``).
    """
    log = logger if isinstance(logger, logging.Logger) else get_logger(logger)
    if log.isEnabledFor(level):
        log.log(level, message)
    if verbose and not _is_shown(log, level):
        _console.handle(log.makeRecord(log.name, level, "(sprokr)", 0, message, (), None))


class PhaseTimer:
    """Timing of one phase, yielded by :func:`timed_phase`.

    Attributes
    ----------
    name : str
        The phase.
    start : float
        ``time.perf_counter()`` when the phase began (s).
    elapsed : float or None
        Duration in seconds once the phase has ended (None before).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.start = time.perf_counter()
        self.elapsed: Optional[float] = None

    def __repr__(self) -> str:
        return f"PhaseTimer({self.name!r}, elapsed={self.elapsed!r})"


@contextmanager
def timed_phase(name: str, *, verbose: bool = False, logger: Union[logging.Logger, str, None] = None,
                level: int = logging.INFO) -> Iterator[PhaseTimer]:
    """Time a block and log ``"<name> took <seconds> s"`` when it ends.

    Parameters
    ----------
    name : str
        Phase name, e.g. ``"output side on 2058 distinct outputs"``.
    verbose : bool
        Show the message even without logging configuration (see :func:`log_message`).
    logger : logging.Logger or str, optional
        Logger or :func:`get_logger` name (default: the ``"sprokr"`` logger).
    level : int
        Logging level (default ``logging.INFO``).

    Yields
    ------
    PhaseTimer
        Its ``elapsed`` attribute holds the duration (s) after the block.

    Notes
    -----
    A block that raises is logged as ``"<name> failed after <seconds> s"`` and the
    exception propagates.
    """
    timer = PhaseTimer(name)
    try:
        yield timer
    except BaseException:
        timer.elapsed = time.perf_counter() - timer.start
        log_message(f"{name} failed after {timer.elapsed:.3f} s", verbose=verbose, logger=logger, level=level)
        raise
    timer.elapsed = time.perf_counter() - timer.start
    log_message(f"{name} took {timer.elapsed:.3f} s", verbose=verbose, logger=logger, level=level)


def progress_enabled(enabled: Optional[bool] = None) -> bool:
    """Whether progress bars are shown (see the module documentation for the order).

    Parameters
    ----------
    enabled : bool or None
        An explicit choice wins; None defers to ``$SPROKR_PROGRESS``, then to whether
        standard error is a terminal.

    Returns
    -------
    bool

    Raises
    ------
    ValueError
        When ``$SPROKR_PROGRESS`` holds something other than a yes/no value.
    """
    if enabled is not None:
        return bool(enabled)
    env = os.environ.get(ENV_PROGRESS)
    if env is not None:
        v = env.strip().lower()
        if v in _TRUE:
            return True
        if v in _FALSE:
            return False
        raise ValueError(f"environment variable {ENV_PROGRESS} must be 1/true/yes/on or 0/false/no/off; "
                         f"got {env!r}")
    stream = sys.stderr
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class NullProgress:
    """A disabled progress bar: the methods of ``tqdm`` used by sprokr, doing nothing.

    Iterating over it iterates over the wrapped iterable (if any).
    """

    disable = True

    def __init__(self, iterable: Optional[Iterable[Any]] = None, total: Optional[float] = None,
                 desc: Optional[str] = None) -> None:
        self.iterable = iterable
        self.total = total
        self.desc = desc
        self.n: float = 0

    def __iter__(self) -> Iterator[Any]:
        if self.iterable is None:
            raise TypeError("this progress bar wraps no iterable; call update(n) instead")
        for item in self.iterable:
            self.n += 1
            yield item

    def __enter__(self) -> "NullProgress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def update(self, n: float = 1) -> None:
        """Count ``n`` more units of work (kept in ``n``, nothing shown)."""
        self.n += n

    def set_description(self, desc: Optional[str] = None, refresh: bool = True) -> None:
        """Change the description (nothing shown)."""
        self.desc = desc

    def set_postfix(self, *args: Any, **kwargs: Any) -> None:
        """Accept a postfix (nothing shown)."""

    def write(self, s: str, *args: Any, **kwargs: Any) -> None:
        """Accept a message (nothing shown: use :func:`log_message` for messages)."""

    def refresh(self) -> None:
        """Nothing to redraw."""

    def close(self) -> None:
        """Nothing to close."""


def progress(iterable: Optional[Iterable[Any]] = None, *, total: Optional[float] = None,
             desc: Optional[str] = None, unit: str = "it", enabled: Optional[bool] = None,
             leave: bool = False, **tqdm_kwargs: Any) -> Any:
    """A tqdm progress bar on standard error, or a :class:`NullProgress` when disabled.

    Parameters
    ----------
    iterable : iterable, optional
        Wrap it (``for x in progress(chunks, ...)``); else call ``update(n)``.
    total : int or float, optional
        Number of units of work (default: ``len(iterable)`` when it has one).
    desc : str, optional
        Label shown before the bar, e.g. ``"SISOKR fit"``.
    unit : str
        Unit of work, e.g. ``"rows"`` (default ``"it"``).
    enabled : bool or None
        True / False forces the bar on / off; None (default) follows ``$SPROKR_PROGRESS``,
        then whether standard error is a terminal.
    leave : bool
        Keep the finished bar on screen (default False: it disappears).
    **tqdm_kwargs
        Passed to :class:`tqdm.tqdm` (e.g. ``unit_scale=True``, ``mininterval``).

    Returns
    -------
    tqdm.tqdm or NullProgress
        Both are context managers and iterables and have ``update``, ``set_description``,
        ``set_postfix``, ``write`` and ``close``.

    Examples
    --------
    >>> from sprokr.progress import progress
    >>> with progress(total=10_000, desc="decode", unit="queries", enabled=False) as bar:
    ...     for start in range(0, 10_000, 2_500):
    ...         bar.update(2_500)
    >>> bar.n
    10000
    """
    if not progress_enabled(enabled):
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)  # type: ignore[arg-type]
        return NullProgress(iterable, total=total, desc=desc)
    from tqdm import tqdm

    tqdm_kwargs.setdefault("file", sys.stderr)
    tqdm_kwargs.setdefault("dynamic_ncols", True)
    return tqdm(iterable, total=total, desc=desc, unit=unit, leave=leave, **tqdm_kwargs)
