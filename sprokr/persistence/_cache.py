"""An on-disk feature cache: content-addressed, resumable, memory-mapped on load.

Featurising a million molecules takes minutes; the second run should take seconds.
:class:`FeatureCache` stores the output of a *featuriser* -- a picklable callable
``featurizer(items) -> FeatureChunk`` -- for a list of items under a key that is the
sha256 of

* the **source**: a string naming the content of the items (e.g. ``"sha256:<file
  checksum>"`` of the file they were read from, :func:`file_checksum`; by default the
  sha256 of the items themselves), and the number of items;
* the **featuriser's parameters**: its class and ``feature_params()`` (or
  ``get_params()``), which must name everything that changes the features (a version
  number when the code changes them).

Layout of one entry ``<directory>/<name>-<key>/``::

    manifest.json          the key's inputs, the chunk table, then the blocks and errors
    chunks/<i>.npz         one file per finished chunk of rows (while computing)
    <block>.npy            a dense block (n_rows, ...)
    <block>.data.npy, <block>.indices.npy, <block>.indptr.npy    a CSR block

The work is cut into chunks of rows, run through an executor's ``map_tasks`` (local worker
processes or Dask workers) with a progress bar; each finished chunk is written to a
temporary file and moved into place (``os.replace``, atomic), then recorded in the
manifest (rewritten the same way).  An interrupted run (Ctrl-C, a killed process)
therefore leaves only whole chunk files and a manifest naming them; the next call with the
same items and featuriser verifies their checksums and computes only the missing chunks.
When every chunk is done they are concatenated, streamed, into one ``.npy`` file per array
(sha256 recorded), the chunk files are removed and the manifest is marked complete.

Loading memory-maps those files (``numpy.load(mmap_mode="r")``): the features of a
million molecules occupy the page cache, not the process's anonymous memory, and a CSR
block is a :class:`scipy.sparse.csr_matrix` over the mapped arrays (no copy).  With
``verify=True`` (default) every file's sha256 is checked first.

Invalid items are never dropped: a featuriser returns a row for every item (all zeros for
an invalid one) and lists the invalid rows with a reason; the table reports them
(:attr:`FeatureTable.errors`: ``(row, item text, reason)``) and :attr:`FeatureTable.valid`.

One writer per entry at a time (two processes computing the same entry concurrently may
both compute a chunk; the files stay consistent, the work is done twice).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid
from collections import namedtuple
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from ..utils import check_integer

if TYPE_CHECKING:  # imported for the annotations only
    from ..numerics import Executor
    from ..types import PathLike

__all__ = ["FeatureChunk", "FeatureCache", "FeatureTable", "file_checksum", "items_checksum",
           "CACHE_FORMAT", "CACHE_VERSION"]

CACHE_FORMAT = "sprokr-features"
CACHE_VERSION = 1
_READ = 1 << 22

#: What a featuriser returns for a chunk of ``r`` items: ``arrays`` maps block names to
#: arrays of ``r`` rows (ndarray, or CSR matrix), ``errors`` lists ``(row_in_chunk, reason)``
#: of the invalid items (whose rows are all zeros).
FeatureChunk = namedtuple("FeatureChunk", ["arrays", "errors"])


def file_checksum(path: PathLike) -> str:
    """sha256 (hex) of a file's bytes, read in blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while True:
            block = fh.read(_READ)
            if not block:
                break
            h.update(block)
    return h.hexdigest()


def items_checksum(items: Sequence[Any]) -> str:
    """sha256 of a sequence of items (strings or bytes as such, anything else by ``repr``),
    each followed by a separator: equal sequences, equal checksums."""
    h = hashlib.sha256()
    buf: list[bytes] = []
    size = 0
    for x in items:
        b = x if isinstance(x, bytes) else (x if isinstance(x, str) else repr(x)).encode("utf-8", "surrogatepass")
        buf.append(b)
        size += len(b)
        if size > _READ:
            h.update(b"\x00".join(buf) + b"\x00")
            buf, size = [], 0
    if buf:
        h.update(b"\x00".join(buf) + b"\x00")
    return h.hexdigest()


def _featurizer_params(featurizer):
    get = getattr(featurizer, "feature_params", None) or getattr(featurizer, "get_params", None)
    params = get() if get is not None else {}
    cls = type(featurizer)
    out = {"class": f"{cls.__module__}:{cls.__qualname__}", "params": params}
    try:
        json.dumps(out, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"featurizer {cls.__name__}: its parameters must be plain JSON data to key the "
                        f"cache ({exc})") from None
    return out


def _write_json_atomic(path, obj):
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    with open(tmp, "w") as fh:
        json.dump(obj, fh, indent=1, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _short(x, n=200):
    s = x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x)
    return s if len(s) <= n else s[: n - 3] + "..."


class FeatureTable:
    """Features of ``n_rows`` items: named blocks (memory-mapped), invalid rows, provenance.

    Attributes
    ----------
    path : Path
        The cache entry's directory.
    key : str
        Its key (sha256 of the source and the featuriser's parameters).
    n_rows : int
    blocks : dict of name -> ndarray or scipy.sparse.csr_matrix
        One row per item, memory-mapped read-only.
    errors : list of (row, item text, reason)
        The invalid items (their rows are zeros).
    params : dict
        The featuriser's class and parameters.
    from_cache : bool
        True when the table was read from disk without computing anything.
    compute_s : float
        Seconds spent computing (0 when read from the cache).
    """

    def __init__(self, path: Path, manifest: Mapping[str, Any], blocks: dict[str, Any], from_cache: bool,
                 compute_s: float = 0.0) -> None:
        self.path = Path(path)
        self.key = manifest["key"]
        self.n_rows = int(manifest["n_rows"])
        self.params = manifest["featurizer"]
        self.blocks = blocks
        self.errors = [(int(r), str(t), str(why)) for r, t, why in manifest["errors"]]
        self.from_cache = from_cache
        self.compute_s = float(compute_s)

    def __getitem__(self, name: str) -> Any:
        try:
            return self.blocks[name]
        except KeyError:
            raise KeyError(f"no feature block {name!r}; this table has {sorted(self.blocks)}") from None

    def __len__(self):
        return self.n_rows

    @property
    def names(self) -> list[str]:
        """Block names."""
        return sorted(self.blocks)

    @property
    def valid(self) -> np.ndarray:
        """Boolean mask (n_rows,): False at the invalid items."""
        mask = np.ones(self.n_rows, dtype=bool)
        mask[[r for r, _, _ in self.errors]] = False
        return mask

    def __repr__(self):
        return (f"FeatureTable({self.n_rows} rows, blocks={self.names}, {len(self.errors)} invalid, "
                f"path={str(self.path)!r})")


class FeatureCache:
    """Content-addressed, resumable store of featurised items (see the module documentation).

    Parameters
    ----------
    directory : path
        Where the entries live (created if missing).
    """

    def __init__(self, directory: PathLike) -> None:
        self.directory = Path(directory)

    # ------------------------------------------------------------------ keys
    def key(self, featurizer: Any, source: str, n_rows: int) -> str:
        """The entry key: sha256 of the source, the number of items and the featuriser's params."""
        spec = {"format": CACHE_FORMAT, "version": CACHE_VERSION, "source": str(source), "n_rows": int(n_rows),
                "featurizer": _featurizer_params(featurizer)}
        return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()

    def entry_path(self, featurizer: Any, source: str, n_rows: int) -> Path:
        """Directory of the entry of these items and this featuriser."""
        name = getattr(featurizer, "name", None) or type(featurizer).__name__.lower()
        return self.directory / f"{name}-{self.key(featurizer, source, n_rows)[:32]}"

    # ------------------------------------------------------------------ reading
    def get(self, featurizer: Any, source: str, n_rows: int, verify: bool = True) -> FeatureTable | None:
        """The complete entry of these items, memory-mapped, or None if it is not complete.

        Raises ``ValueError`` when a complete entry's files do not match their checksums
        (``verify=True``): delete the entry's directory to recompute it.
        """
        path = self.entry_path(featurizer, source, n_rows)
        manifest = _read_manifest(path)
        if manifest is None or not manifest.get("complete"):
            return None
        return FeatureTable(path, manifest, _open_blocks(path, manifest, verify), from_cache=True)

    # ------------------------------------------------------------------ computing
    def compute(self, items: Sequence[Any], featurizer: Any, source: str | None = None,
                executor: Executor | None = None, chunk_size: int = 10_000, processes: int | None = None,
                verify: bool = True, name: str | None = None) -> FeatureTable:
        """Features of ``items``: read from the cache, or computed (the missing chunks only).

        Parameters
        ----------
        items : sequence
            The items (e.g. SMILES strings), sent to the featuriser in chunks.
        featurizer : picklable callable ``featurizer(items) -> FeatureChunk``
            With ``feature_params()`` (or ``get_params()``) returning plain JSON data.
        source : str, optional
            Names the items' content (e.g. ``"sha256:" + file_checksum(path)``); default
            :func:`items_checksum` of the items.
        executor : Executor, optional
            Runs the chunks (``map_tasks``): default a :class:`~sprokr.numerics.LocalExecutor`
            with worker processes; a :class:`~sprokr.numerics.DaskExecutor` runs them on the
            Dask workers.
        chunk_size : int
            Items per chunk (a new entry; a resumed one keeps the size it started with).
        processes : int, optional
            Local worker processes (default: the usable cores; 1: in this process).
        verify : bool
            Check the sha256 of chunk files before reusing them and of the final files
            when reading a complete entry.
        name : str, optional
            Label of the progress bar.

        Returns
        -------
        FeatureTable

        Raises
        ------
        sprokr.numerics.ChunkError
            The featuriser failed on a chunk (naming its rows of ``items``).
        sprokr.utils.RowError
            The featuriser's own error naming one item (e.g. a ``MoleculeReadError``), the
            same exception renumbered so that it names the item's position in ``items``.
        """
        from ..numerics import LocalExecutor

        check_integer(chunk_size, "chunk_size")
        if not callable(featurizer):
            raise TypeError(f"featurizer must be callable (items -> FeatureChunk), got {type(featurizer).__name__}")
        n = len(items)
        source = ("items-sha256:" + items_checksum(items)) if source is None else str(source)
        path = self.entry_path(featurizer, source, n)
        manifest = _read_manifest(path)
        if manifest is not None and manifest.get("complete"):
            return FeatureTable(path, manifest, _open_blocks(path, manifest, verify), from_cache=True)
        t0 = time.perf_counter()
        (path / "chunks").mkdir(parents=True, exist_ok=True)
        if manifest is None:
            manifest = {"format": CACHE_FORMAT, "version": CACHE_VERSION, "key": self.key(featurizer, source, n),
                        "source": source, "n_rows": n, "featurizer": _featurizer_params(featurizer),
                        "chunk_size": int(chunk_size), "chunks": {}, "complete": False}
            _write_json_atomic(path / "manifest.json", manifest)
        size = int(manifest["chunk_size"])
        bounds = [(a, min(a + size, n)) for a in range(0, n, size)]
        done = {int(i) for i, rec in manifest["chunks"].items() if _chunk_ok(path, int(i), rec, verify)}
        for i in [int(i) for i in manifest["chunks"] if int(i) not in done]:
            del manifest["chunks"][str(i)]
        todo = [i for i in range(len(bounds)) if i not in done]
        ex = executor if executor is not None else LocalExecutor()
        tasks = [(list(items[bounds[i][0]:bounds[i][1]]),) for i in todo]
        weights = [bounds[i][1] - bounds[i][0] for i in todo]
        label = name or f"features ({getattr(featurizer, 'name', type(featurizer).__name__)})"
        # rows: a featuriser's error naming a row of its chunk (an invalid molecule) names the
        # row of ``items``, whatever the executor
        for j, chunk in ex.map_tasks(featurizer, tasks, name=label, weights=weights, processes=processes,
                                     rows=[bounds[i] for i in todo]):
            i = todo[j]
            a, b = bounds[i]
            manifest["chunks"][str(i)] = _write_chunk(path, i, chunk, b - a, items, a)
            _write_json_atomic(path / "manifest.json", manifest)
        _consolidate(path, manifest, bounds)
        return FeatureTable(path, manifest, _open_blocks(path, manifest, verify=False), from_cache=False,
                            compute_s=time.perf_counter() - t0)

    def clear(self, featurizer: Any, source: str, n_rows: int) -> None:
        """Delete one entry (its directory)."""
        shutil.rmtree(self.entry_path(featurizer, source, n_rows), ignore_errors=True)


# ---------------------------------------------------------------------- entry files
def _read_manifest(path):
    try:
        with open(path / "manifest.json") as fh:
            m = json.load(fh)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ValueError(f"feature cache entry {path} has an unreadable manifest ({exc}); delete the "
                         f"directory to recompute it") from None
    if not isinstance(m, dict) or m.get("format") != CACHE_FORMAT or m.get("version") != CACHE_VERSION:
        raise ValueError(f"{path} is not a sprokr feature cache entry of version {CACHE_VERSION}")
    return m


def _sha_file(p):
    return file_checksum(p)


def _chunk_ok(path, i, rec, verify):
    p = path / "chunks" / f"{i}.npz"
    if not p.is_file() or p.stat().st_size != rec.get("size"):
        return False
    return not verify or _sha_file(p) == rec.get("sha256")


def _check_chunk(chunk, rows, i):
    if not isinstance(chunk, tuple) or len(chunk) != 2 or not isinstance(chunk[0], Mapping):
        raise TypeError(f"the featurizer must return a FeatureChunk(arrays, errors); got {type(chunk).__name__} "
                        f"for chunk {i}")
    for name, a in chunk[0].items():
        if not isinstance(name, str) or not name.replace("_", "").isalnum():
            raise ValueError(f"feature block names must be alphanumeric strings, got {name!r}")
        if a.shape[0] != rows:
            raise ValueError(f"feature block {name!r} of chunk {i} has {a.shape[0]} rows for {rows} items")


def _write_chunk(path, i, chunk, rows, items, start):
    """Write one chunk's arrays (atomically) and return its manifest record."""
    _check_chunk(chunk, rows, i)
    arrays, meta = {}, {}
    for name, a in chunk.arrays.items():
        if sp.issparse(a):
            a = sp.csr_matrix(a)
            a.sort_indices()
            arrays.update({f"{name}.data": a.data, f"{name}.indices": a.indices.astype(np.int32),
                           f"{name}.indptr": a.indptr.astype(np.int64)})
            meta[name] = {"kind": "csr", "shape": list(a.shape), "nnz": int(a.nnz), "dtype": a.dtype.str}
        else:
            a = np.ascontiguousarray(a)
            if a.dtype.hasobject:
                raise TypeError(f"feature block {name!r} has dtype object; use numbers")
            arrays[name] = a
            meta[name] = {"kind": "dense", "shape": list(a.shape), "dtype": a.dtype.str}
    p = path / "chunks" / f"{i}.npz"
    tmp = p.with_name(f".{p.name}.{uuid.uuid4().hex}.tmp")
    with open(tmp, "wb") as fh:
        np.savez(fh, **arrays)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, p)
    errors = []
    for r, why in chunk.errors:
        r = int(r)
        if not 0 <= r < rows:
            raise ValueError(f"chunk {i}: error row {r} outside the chunk's {rows} rows")
        errors.append([start + r, _short(items[start + r]), str(why)])
    return {"sha256": _sha_file(p), "size": p.stat().st_size, "rows": rows, "blocks": meta, "errors": errors}


def _consolidate(path, manifest, bounds):
    """Concatenate the chunk files into one ``.npy`` per array; mark the entry complete."""
    from numpy.lib.format import open_memmap

    chunks = [manifest["chunks"][str(i)] for i in range(len(bounds))]
    n = int(manifest["n_rows"])
    names = sorted(chunks[0]["blocks"]) if chunks else []
    for c in chunks[1:]:
        if sorted(c["blocks"]) != names:
            raise ValueError(f"{path}: chunks with different feature blocks ({names} vs {sorted(c['blocks'])})")
    blocks = {}
    outs = {}
    for name in names:
        metas = [c["blocks"][name] for c in chunks]
        kinds = {m["kind"] for m in metas}
        dtypes = {m["dtype"] for m in metas}
        tails = {tuple(m["shape"][1:]) for m in metas}
        if len(kinds) > 1 or len(dtypes) > 1 or len(tails) > 1:
            raise ValueError(f"{path}: block {name!r} differs between chunks (kind, dtype or width)")
        kind, dtype, tail = kinds.pop(), np.dtype(dtypes.pop()), tails.pop()
        if kind == "csr":
            nnz = sum(m["nnz"] for m in metas)
            files = {"data": (f"{name}.data.npy", dtype, (nnz,)), "indices": (f"{name}.indices.npy", np.int32, (nnz,)),
                     "indptr": (f"{name}.indptr.npy", np.int64, (n + 1,))}
        else:
            files = {"array": (f"{name}.npy", dtype, (n,) + tail)}
        outs[name] = {k: open_memmap(path / f".{fn}.tmp", mode="w+", dtype=dt, shape=sh)
                      for k, (fn, dt, sh) in files.items()}
        blocks[name] = {"kind": kind, "dtype": dtype.str, "shape": [n, *tail],
                        "files": {k: fn for k, (fn, _, _) in files.items()}}
    pos = {name: 0 for name in names}
    for i, (a, b) in enumerate(bounds):
        with np.load(path / "chunks" / f"{i}.npz", allow_pickle=False) as z:
            for name in names:
                o = outs[name]
                if blocks[name]["kind"] == "csr":
                    data, ind, ptr = z[f"{name}.data"], z[f"{name}.indices"], z[f"{name}.indptr"]
                    p0 = pos[name]
                    o["data"][p0:p0 + data.size] = data
                    o["indices"][p0:p0 + ind.size] = ind
                    o["indptr"][a:b + 1] = ptr + p0
                    pos[name] = p0 + data.size
                else:
                    o["array"][a:b] = z[name]
    if n == 0:
        for name in names:
            if blocks[name]["kind"] == "csr":
                outs[name]["indptr"][:] = 0
    for name in names:
        for k, mm in outs[name].items():
            mm.flush()
            del mm
        outs[name] = None
        for k, fn in blocks[name]["files"].items():
            os.replace(path / f".{fn}.tmp", path / fn)
        blocks[name]["sha256"] = {k: _sha_file(path / fn) for k, fn in blocks[name]["files"].items()}
    manifest["blocks"] = blocks
    manifest["errors"] = sorted((e for c in chunks for e in c["errors"]), key=lambda e: e[0])
    manifest["complete"] = True
    manifest["chunks"] = {}
    _write_json_atomic(path / "manifest.json", manifest)
    shutil.rmtree(path / "chunks", ignore_errors=True)


def _open_blocks(path, manifest, verify):
    blocks = {}
    for name, meta in manifest["blocks"].items():
        arrays = {}
        for k, fn in meta["files"].items():
            p = path / fn
            if verify and _sha_file(p) != meta["sha256"][k]:
                raise ValueError(f"feature cache file {p} does not match its checksum (modified or damaged); "
                                 f"delete {path} to recompute the features")
            arrays[k] = np.load(p, mmap_mode="r", allow_pickle=False)
        if meta["kind"] == "csr":
            # index arrays as scipy keeps them (int32 while they fit): no copy of the data
            blocks[name] = sp.csr_matrix((arrays["data"], arrays["indices"], arrays["indptr"]),
                                         shape=tuple(meta["shape"]))
        else:
            blocks[name] = arrays["array"]
    return blocks
