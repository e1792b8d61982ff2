"""Command line: ``sprokr plugins`` lists components, ``sprokr demo`` runs the shipped demo,
``sprokr fit | predict | evaluate | select`` work on data files (see :mod:`sprokr.cli._tasks`),
``sprokr samples`` shows (and exports) the data samples shipped with the package.

Also ``python -m sprokr ...``.  With ``--json`` a command prints exactly one JSON document on
standard output; everything meant for a human goes to standard error.
"""
from __future__ import annotations

import argparse
import functools
import json
import sys
import time
import warnings
from typing import Callable, List, Optional

__all__ = ["main", "install_hint"]

#: first-party plugin of each extra: (distribution, directory under plugins/)
PLUGIN_EXTRAS = {"chem": ("sprokr-chem", "sprokr_chem"), "graphs": ("sprokr-graphs", "sprokr_graphs"),
                 "ot": ("sprokr-ot", "sprokr_ot")}


def install_hint(extra: str) -> str:
    """A ``pip`` command that installs the extra ``extra`` for *this* installation of sprokr.

    The first-party plugins are not on an index: they are installed from the source sprokr
    was installed from, which pip records (PEP 610 ``direct_url.json``).  An editable
    install from a checkout gets ``pip install -e <checkout>/plugins/<plugin>``, an install
    from a directory or archive ``pip install "<source>[extra]"``, anything else
    ``pip install "sprokr[extra]"``.

    Parameters
    ----------
    extra : str
        ``"chem"``, ``"graphs"``, ``"ot"``, ``"dask"``, ``"torch"``, ``"plot"`` or ``"all"``.

    Returns
    -------
    str
    """
    import importlib.metadata as md
    from urllib.parse import unquote, urlparse

    fallback = f'pip install "sprokr[{extra}]"'
    try:
        info = json.loads(md.distribution("sprokr").read_text("direct_url.json") or "null")
    except (md.PackageNotFoundError, ValueError, OSError):
        return fallback
    url = info.get("url", "") if isinstance(info, dict) else ""
    if not url.startswith("file://"):
        return fallback
    from pathlib import Path

    source = Path(unquote(urlparse(url).path))
    if info.get("dir_info", {}).get("editable"):
        if extra in PLUGIN_EXTRAS and (source / "plugins" / PLUGIN_EXTRAS[extra][1]).is_dir():
            return f'pip install -e "{source / "plugins" / PLUGIN_EXTRAS[extra][1]}"'
        return f'pip install -e "{source}[{extra}]"'
    return f'pip install "{source}[{extra}]"'


def cmd_plugins(args):
    from ..registry import list_components

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = list_components()
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    if args.json:
        print(json.dumps(rows))
        return 0
    wn = max(len(r["name"]) for r in rows)
    wk = max(len(r["kind"]) for r in rows)
    print(f"{'name':{wn}s}  {'kind':{wk}s}  plugin")
    for r in rows:
        print(f"{r['name']:{wn}s}  {r['kind']:{wk}s}  {r['plugin']}")
    return 0


def _multilabel_demo(out):
    """SISOKR vs IOKR on the shipped Bibtex sample (800 train / 400 test)."""
    import numpy as np
    from sklearn.preprocessing import StandardScaler

    from ..datasets import load_bibtex_sample
    from ..metrics import f1_samples
    from ..models import IOKR, SISOKR

    Xtr, Ytr, Xte, Yte = load_bibtex_sample()
    sc = StandardScaler(with_mean=False).fit(Xtr)
    Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
    n = Xtr.shape[0]
    out(f"Bibtex sample: {n} train / {Xte.shape[0]} test documents, {Xtr.shape[1]} features, "
        f"{Ytr.shape[1]} labels; candidates = distinct training label sets")
    models = {
        "IOKR (exact)": IOKR(lam=1e-4, input_kernel_params={"sigma2": 1e4}, output_kernel_params={"sigma2": 1.0}),
        "SISOKR (m_x=400, m_y=100)": SISOKR(
            lam=1e-4, input_kernel_params={"sigma2": 1e4}, output_kernel_params={"sigma2": 1e4},
            input_sketch="subsample", m_x=400, output_sketch="psg", m_y=100,
            output_sketch_params={"p": 20.0 / n}, random_state=0),
    }
    res = {}
    for name, model in models.items():
        t0 = time.perf_counter()
        model.fit(Xtr, Ytr)
        t1 = time.perf_counter()
        pred = model.predict(Xte)
        t2 = time.perf_counter()
        res[name] = {"f1": f1_samples(Yte, pred), "fit_s": t1 - t0, "decode_s": t2 - t1}
        out(f"  {name:28s} F1 {res[name]['f1']:.3f}   fit {t1 - t0:6.3f} s   decode {t2 - t1:6.3f} s")
    top = models["SISOKR (m_x=400, m_y=100)"].predict_topk(Xte[:1], k=3)
    # a wide Gaussian output kernel (sigma2 = 1e4 on 159-bit label vectors) is nearly flat:
    # scores agree to ~5 digits and only their order matters, so show the gaps to the best
    index = models["SISOKR (m_x=400, m_y=100)"].default_index_
    labels = [np.flatnonzero(np.asarray(index.take([i])[0])).tolist() for i in top.indices[0]]
    gaps = (top.scores[0] - top.scores[0][0]).tolist()
    out(f"  first test document: true labels {np.flatnonzero(Yte[0]).tolist()}; SISOKR top-3 label sets "
        f"{labels}\n  (score minus the best: {', '.join(f'{g:.2g}' for g in gaps)}: with the wide Gaussian output "
        "kernel the scores of all candidates are close, only their order matters)")
    return res


def cmd_demo(args):
    # with --json, stdout carries the JSON document only: the text goes to stderr
    out: Callable[..., None] = functools.partial(print, file=sys.stderr if args.json else sys.stdout)
    out("sprokr demo -- structured prediction with sketched kernel methods\n")
    res = {"multilabel": _multilabel_demo(out)}
    from .. import _demo_molecules

    out("")
    try:
        res["molecules"] = _demo_molecules.run(out=out)
    except _demo_molecules.MissingPlugin as exc:
        out(f"(molecule demo skipped: {exc})")
    if args.json:
        print(json.dumps(res))
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    """Run the ``sprokr`` command line with ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    from .. import __version__

    ap = argparse.ArgumentParser(
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
    args = ap.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        if args.command not in ("fit", "predict", "evaluate", "select", "samples"):
            raise
        # a user-facing error (unreadable file, missing column, invalid molecule, bad
        # parameter): one line, no traceback
        from ..utils import error_text

        print(f"sprokr {args.command}: error: {error_text(exc)}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `sprokr plugins | head`: the reader left, stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
