"""Peak resident *anonymous* memory of this process and its children, sampled.

``ru_maxrss`` counts every resident page, including the pages of memory-mapped files
(feature caches, candidate indexes), which belong to the page cache and are dropped under
memory pressure.  The figure that matters for "does it fit" is the anonymous memory:
``RssAnon`` of ``/proc/<pid>/status`` (heap, numpy arrays, Python objects).  A background
thread samples it every ``interval`` seconds for this process and all its descendants
(worker processes of a process pool, Dask workers of a ``LocalCluster``) and keeps the
largest sum.  Peaks shorter than the interval can be missed.
"""
from __future__ import annotations

import os
import threading


def rss_anon_mb(pid: int | str = "self") -> float:
    """``RssAnon`` of one process in MiB (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) / 1024.0
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return 0.0


def _descendants(pid):
    out, stack = [], [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/task/{p}/children") as fh:
                kids = [int(x) for x in fh.read().split()]
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            kids = []
        out += kids
        stack += kids
    return out


def tree_rss_anon_mb() -> float:
    """``RssAnon`` of this process plus all its descendants, MiB."""
    me = os.getpid()
    return rss_anon_mb(me) + sum(rss_anon_mb(p) for p in _descendants(me))


class PeakMemory:
    """Context manager / thread: the peak of :func:`tree_rss_anon_mb` while it runs.

    ``peak_mb`` is the peak since the start (or the last :meth:`reset`).
    """

    def __init__(self, interval: float = 0.2) -> None:
        self.interval = interval
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.peak_mb = max(self.peak_mb, tree_rss_anon_mb())
            self._stop.wait(self.interval)

    def start(self) -> "PeakMemory":
        self.peak_mb = tree_rss_anon_mb()
        self._thread.start()
        return self

    def reset(self) -> None:
        self.peak_mb = tree_rss_anon_mb()

    def sample(self) -> float:
        """Sample now (so that a phase's end is counted) and return the peak."""
        self.peak_mb = max(self.peak_mb, tree_rss_anon_mb())
        return self.peak_mb

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.sample()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
