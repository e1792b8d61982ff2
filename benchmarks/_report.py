"""Shared reporting for the benchmark scripts: per-seed rows -> means -> table + JSON.

The convention of every benchmark: a table on stdout and, with ``--json``, one JSON
object ``{method: {metric: mean over seeds}}`` printed last.
"""
from __future__ import annotations

import json

import numpy as np


class SeedTable:
    """Collect ``{metric: value}`` rows per method over seeds and report their means."""

    def __init__(self):
        self._rows = {}

    def add(self, method, seed, metrics):
        """Record one run; prints a progress line."""
        print(f"seed {seed} {method}: " + ", ".join(f"{k}={v:.4g}" for k, v in metrics.items()), flush=True)
        for k, v in metrics.items():
            self._rows.setdefault(method, {}).setdefault(k, []).append(v)

    def means(self):
        return {m: {k: float(np.mean(v)) for k, v in d.items()} for m, d in self._rows.items()}

    def report(self, title, cols, as_json=False, width=10):
        """Print the title, the table of ``cols`` and (``as_json``) the JSON object last."""
        out = self.means()
        print(f"\n{title}")
        print(f"{'method':8s} " + " ".join(f"{c:>{width}s}" for c in cols))
        for m, d in out.items():
            print(f"{m:8s} " + " ".join(f"{d.get(c, float('nan')):{width}.4g}" for c in cols))
        if as_json:
            print(json.dumps(out))
        return out


class CpuSteal:
    """Share of CPU time the hypervisor stole while the block ran (``/proc/stat``).

    On a shared VM, stolen time slows every timing; reporting it tells a slow run on a
    busy host from a regression.  ``fraction`` is None where ``/proc/stat`` is missing.
    """

    fraction = None

    @staticmethod
    def _read():
        try:
            with open("/proc/stat") as f:
                fields = [float(x) for x in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        steal = fields[7] if len(fields) > 7 else 0.0
        return steal, sum(fields[:8])

    def __enter__(self):
        self._start = self._read()
        return self

    def __exit__(self, *exc):
        end = self._read()
        if self._start is not None and end is not None and end[1] > self._start[1]:
            self.fraction = (end[0] - self._start[0]) / (end[1] - self._start[1])
        return False


def reference_blas_seconds(repeats=3):
    """Best time of a fixed float32 syrk (4880 x 2250, the size of Bibtex's A^T A).

    A yardstick of the machine's current BLAS speed, printed next to timings: on a shared
    VM it drifts (0.13 s .. 0.27 s seen on the same 2-core machine within one day), and the
    fit times drift with it.
    """
    import time

    from scipy.linalg import get_blas_funcs

    A = np.random.default_rng(0).random((4880, 2250), dtype=np.float32)
    syrk = get_blas_funcs("syrk", dtype=np.float32)
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        syrk(1.0, A.T, trans=0, lower=1)
        best = min(best, time.perf_counter() - t0)
    return best


def print_yardstick_and_json(res, ref, steal, as_json):
    """The footer of the Bibtex benchmarks: the yardstick (:func:`reference_blas_seconds`)
    and the stolen CPU share, recorded in every row of ``res``, then ``res`` as JSON last."""
    import json

    steal_txt = "n/a" if steal.fraction is None else f"{100 * steal.fraction:.0f} %"
    print(f"machine yardstick: float32 syrk 4880 x 2250 in {ref:.3f} s; cpu steal {steal_txt}")
    for v in res.values():
        v["reference_syrk_s"], v["cpu_steal"] = ref, steal.fraction
    if as_json:
        print(json.dumps(res))
