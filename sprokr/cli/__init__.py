"""Command line: ``sprokr plugins`` lists components, ``sprokr demo`` runs the shipped demo,
``sprokr fit | predict | evaluate | select`` work on data files (see :mod:`sprokr.cli._tasks`),
``sprokr samples`` shows (and exports) the data samples shipped with the package.

Also ``python -m sprokr ...``.  With ``--json`` a command prints exactly one JSON document on
standard output; everything meant for a human goes to standard error.

Errors never show a traceback: any exception a command raises (a bad file, configuration
or option, an ``OSError`` while reading or writing, a corrupt archive, memory exhausted)
is printed as one line ``sprokr <command>: error: <what>`` on standard error and the exit
code is 2 (``--traceback`` shows the traceback instead, for bug reports).  Warnings (a
skipped plugin, numerical fallbacks) are printed once each, as one line ``warning: <message>``.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import json
import sys
import warnings
from typing import Any, Callable, Iterator, List, NoReturn, Optional

from ..extras import FIRST_PARTY_DEMOS, install_hint, provider_hint

__all__ = ["main", "install_hint", "provider_hint"]

@contextlib.contextmanager
def one_line_warnings() -> Iterator[None]:
    """Print each distinct warning once, as ``warning: <message>`` on standard error.

    Python's own format adds the emitting file, line and source line (two lines per warning,
    internal to sprokr or a plugin); a user of the command line needs the message only.
    """
    seen = set()

    def show(message: Any, category: Any, filename: Any, lineno: Any, file: Any = None, line: Any = None) -> None:
        text = warning_line(message)
        if text not in seen:
            seen.add(text)
            print(text, file=sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def warning_line(message: Any) -> str:
    """``"warning: <message>"`` on one line, whatever the message holds (pluggy's errors, quoted
    in a skipped plugin's warning, span several lines)."""
    return "warning: " + " ".join(str(message).split())


def error_message(exc: BaseException) -> str:
    """The one line printed for an exception a command raised.

    The messages of sprokr's errors (``ValueError`` and its subclasses: configuration, data
    file, output path, model file) already name the file and the reason; an ``OSError``
    gives ``<file>: <reason>``; anything else is named with its type and a pointer to
    ``--traceback``.
    """
    from ..io import describe_error

    if isinstance(exc, ValueError) and str(exc):
        return " ".join(str(exc).split())
    if isinstance(exc, (OSError, MemoryError)):
        return describe_error(exc)
    text = " ".join(describe_error(exc).split())
    if not text.startswith(type(exc).__name__):
        text = f"{type(exc).__name__}: {text}"
    return f"{text} (run again with --traceback to see where it happened)"


class _ArgumentError(Exception):
    """An invalid command line (raised by :class:`_Parser` instead of exiting)."""

    def __init__(self, prog: str, message: str) -> None:
        super().__init__(message)
        self.prog, self.message = prog, message


class _Parser(argparse.ArgumentParser):
    """argparse, whose errors are returned by :func:`main` as one line and exit code 2 (like
    every other error) instead of the usage text and ``SystemExit``."""

    def error(self, message: str) -> NoReturn:
        raise _ArgumentError(self.prog, message)


def cmd_plugins(args):
    from ..registry import list_components

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = list_components()
    for text in dict.fromkeys(warning_line(w.message) for w in caught):  # each once, one line each
        print(text, file=sys.stderr)
    if args.json:
        print(json.dumps(rows))
        return 0
    wn = max(len(r["name"]) for r in rows)
    wk = max(len(r["kind"]) for r in rows)
    print(f"{'name':{wn}s}  {'kind':{wk}s}  plugin")
    for r in rows:
        print(f"{r['name']:{wn}s}  {r['kind']:{wk}s}  {r['plugin']}")
    return 0


def cmd_demo(args):
    """Run every demo section; one that fails is named (with its plugin) and the others still
    run and are reported (with ``--json`` too).  Exit code 2 when a section failed (its
    library missing is a skip, not a failure)."""
    # with --json, stdout carries the JSON document only: the text goes to stderr
    out: Callable[..., None] = functools.partial(print, file=sys.stderr if args.json else sys.stdout)
    out("sprokr demo -- structured prediction with sketched kernel methods\n")
    from ..io import describe_error
    from ..registry import get_demos, get_registry, is_plugin_failure

    res = {}
    failed = []
    demos = get_demos()
    for i, (name, factory) in enumerate(demos):
        if i:
            out("")
        try:
            result = factory()(out=out)
            json.dumps(result)  # plain JSON data, or --json would fail after every section ran
            res[name] = result
        except ImportError as exc:  # a plugin's demo whose library is missing: the others still run
            out(f"({name} demo skipped: {exc})")
        except BaseException as exc:  # any other failure (even sys.exit) of one section: the others still run
            if not is_plugin_failure(exc):
                raise
            what = f"the {name} demo (plugin {get_registry().get('demo', name).plugin!r}) failed: " \
                   f"{' '.join(describe_error(exc).split())}"
            out(f"({what})")
            failed.append(what)
    names = {name for name, _ in demos}
    for name, (extra, title) in FIRST_PARTY_DEMOS.items():  # a first-party plugin that is not installed
        if name not in names:
            out(f"\n({title} skipped: it needs the {extra} plugin: {install_hint(extra)})")
    if args.json:
        print(json.dumps(res))
    if failed:  # after the sections that ran (and their JSON): one line, like every error
        print(f"sprokr demo: error: {'; '.join(failed)}", file=sys.stderr)
        return 2
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    """Run the ``sprokr`` command line with ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    from .. import __version__

    ap = _Parser(
        prog="sprokr", description="Structured prediction with sketched kernel methods.",
        epilog="examples:\n  sprokr plugins\n  sprokr demo\n  sprokr demo --json > demo.json\n"
               "  sprokr samples --export demo\n"
               "  sprokr fit --config model.toml --train train.csv -o model.sprokr\n"
               "  sprokr predict model.sprokr --input queries.csv -o predictions.csv\n"
               "  python -m sprokr plugins --json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", action="version", version=f"sprokr {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plugins", help="list every registered component, its kind and plugin")
    p.add_argument("--json", action="store_true", help="print one JSON list of components on stdout")
    p.set_defaults(func=cmd_plugins)
    d = sub.add_parser("demo", help="fit and predict on data shipped with the package")
    d.add_argument("--json", action="store_true",
                   help="print one JSON object of results on stdout (the text goes to stderr)")
    d.set_defaults(func=cmd_demo)
    from ._samples import add_samples_command
    from ._tasks import add_task_commands

    add_task_commands(sub)
    add_samples_command(sub)
    tb_help = "on an error, show the Python traceback instead of the one-line message"
    ap.add_argument("--traceback", action="store_true", default=argparse.SUPPRESS, help=tb_help)
    for parser in sub.choices.values():  # also accepted after the command
        parser.add_argument("--traceback", action="store_true", default=argparse.SUPPRESS, help=tb_help)
    try:
        args = ap.parse_args(argv)
    except _ArgumentError as exc:  # e.g. --top-k 0: one line, the command's help named
        print(f"{exc.prog}: error: {' '.join(exc.message.split())} (see {exc.prog} --help)", file=sys.stderr)
        return 2
    with one_line_warnings():
        try:
            return args.func(args)
        except BrokenPipeError:  # e.g. `sprokr plugins | head`: the reader left, stop quietly
            import os

            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
        except KeyboardInterrupt:
            if getattr(args, "traceback", False):
                raise
            print(f"sprokr {args.command}: interrupted", file=sys.stderr)
            return 130
        except Exception as exc:  # noqa: BLE001 - every error is one line (the class, not a list of cases)
            if getattr(args, "traceback", False):
                raise
            print(f"sprokr {args.command}: error: {error_message(exc)}", file=sys.stderr)
            return 2
        except SystemExit as exc:  # the commands return their codes: this one came from a component's
            # code (a plugin's kernel, reader, ...) and would end the command silently with its code
            if getattr(args, "traceback", False):
                raise
            print(f"sprokr {args.command}: error: a component called sys.exit({exc.code!r}) while the command ran "
                  "(run again with --traceback to see which)", file=sys.stderr)
            return 2


if __name__ == "__main__":
    sys.exit(main())
