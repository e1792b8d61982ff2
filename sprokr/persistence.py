"""The safe model format: ``model.save(path)``, ``sprokr.load(path)``.

A saved model is a zip archive holding

* ``manifest.json``: the format name and version, the versions of sprokr, Python, numpy,
  scipy, scikit-learn and of every plugin the model uses, the registered kind, name,
  plugin and parameters of each component, the table of arrays (entry, dtype, shape,
  sha256) and the object tree of the estimator;
* ``arrays/<k>.npy``: every numpy array of the model (sparse matrices as their component
  arrays), read back with ``numpy.load(..., allow_pickle=False)``;
* a zip comment at the very end of the file, ``sprokr-model 1 manifest-sha256=<64 hex>
  file-sha256=<64 hex>``: the sha256 of the manifest and of every byte of the file before
  the last 64 (so any flipped or missing byte anywhere is detected).

Loading runs no code from the file: there is no pickle anywhere, classes are taken only
from an explicit allow-list of sprokr classes (plus the few scikit-learn / numpy /
networkx types listed below), and components (kernels, sketches, losses, decoders,
regressors, executors) are rebuilt by their *registered names* through
:mod:`sprokr.registry`, so a component of a plugin that is not installed gives an error
naming the plugin.  Anything the format cannot represent makes :func:`save` fail with an
error naming the attribute and its type; state is never dropped silently.

>>> import tempfile, pathlib, numpy as np, sprokr
>>> X = np.random.default_rng(0).standard_normal((30, 3)); Y = (X > 0).astype(int)
>>> model = sprokr.SIOKR(m_x=10, random_state=0).fit(X, Y)
>>> path = model.save(pathlib.Path(tempfile.mkdtemp()) / "model.sprokr")
>>> again = sprokr.load(path)
>>> bool((again.predict(X) == model.predict(X)).all())
True

A :class:`~sprokr.CandidateIndex` is saved on its own (``index.save(path)``) and loaded
with ``sprokr.load(path, model=model)``, which checks that it belongs to that model.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import sys
import uuid
import warnings
import zipfile
from pathlib import Path

import numpy as np

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "ModelFormatError",
    "MissingPluginError",
    "UnsavableObjectError",
    "SaveMixin",
    "save",
    "load",
    "read_manifest",
    "allow_class",
]

#: name written in every manifest
FORMAT_NAME = "sprokr-model"
#: version of the container and object-tree layout written by this sprokr
FORMAT_VERSION = 1
#: oldest format version this sprokr still reads
MIN_FORMAT_VERSION = 1

_MANIFEST = "manifest.json"
_ARRAY_DIR = "arrays/"
_FIXED_DATE = (1980, 1, 1, 0, 0, 0)  # fixed entry times: the same model gives the same bytes
_TRAILER_PREFIX = b"sprokr-model "
_TRAILER_RE = re.compile(rb"sprokr-model (\d{1,6}) manifest-sha256=([0-9a-f]{64}) file-sha256=([0-9a-f]{64})")
_CHUNK = 1 << 20


class ModelFormatError(ValueError):
    """A file is not a sprokr model, is corrupted or truncated, was tampered with, or
    needs a format version this sprokr cannot read."""


class MissingPluginError(ModelFormatError):
    """A saved model needs a component (or class) of a plugin that is not installed."""


class UnsavableObjectError(TypeError):
    """Part of an object cannot be represented in the safe format (raised by :func:`save`)."""


# ---------------------------------------------------------------------------- allow-list
#: Classes rebuilt from their attributes (``cls.__new__`` + ``__dict__``), keyed by
#: ``"importable.module:Name"``, with the plugin providing them (None: sprokr or a
#: required dependency).  Components registered through the plugin hooks need no entry:
#: they are rebuilt by registered name.
_ALLOWED: dict[str, str | None] = {
    **{f"sprokr.models:{c}": None for c in (
        "IOKR", "SIOKR", "ISOKR", "SISOKR", "DSOKR", "DSOKREnsemble", "SketchedKernelMachine",
        "JointQuantileRegressor", "RFFKernelMachine")},
    "sprokr.models.regressors:KernelRidgeRegressor": None,
    "sprokr.models.regressors:MLPSurrogate": None,
    "sprokr.models.regressors:TorchRegressor": None,
    "sprokr.sketches:SketchMatrix": None,
    "sprokr.numerics:SketchedFeatures": None,
    "sprokr.decoders:CandidateIndex": None,
    "sprokr.decoders:CandidateSets": None,
    "sklearn.neural_network:MLPRegressor": None,
    "sprokr_graphs.wl:WLFeatures": "graphs",
}

#: attributes of allow-listed foreign classes that are deliberately not saved (with why)
_SKIPPED_ATTRS = {
    # Adam's moment estimates: only used to continue training with partial_fit, which
    # then starts a fresh optimiser (scikit-learn re-creates a missing one)
    "sklearn.neural_network:MLPRegressor": {"_optimizer"},
}

_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")
_SPARSE_CLASSES = ("csr_matrix", "csc_matrix", "coo_matrix", "csr_array", "csc_array", "coo_array")
_GRAPH_CLASSES = ("Graph", "DiGraph", "MultiGraph", "MultiDiGraph")


def allow_class(cls, plugin=None):
    """Add a class to the allow-list of the safe format (for a plugin's own data types).

    Parameters
    ----------
    cls : type or str
        The class, or its ``"importable.module:Name"`` path (no import happens here).
    plugin : str, optional
        Name of the plugin providing it (named in the error when it is missing).

    Instances are saved as their ``__dict__`` and rebuilt with ``cls.__new__`` (their
    ``__init__`` is not called), so only plain data classes should be allowed.
    """
    key = cls if isinstance(cls, str) else f"{cls.__module__}:{cls.__qualname__}"
    if ":" not in key:
        raise ValueError(f"allow_class needs a class or 'module:Name', got {cls!r}")
    _ALLOWED[key] = plugin
    return key


def _resolve_allowed(key, importing=False):
    """The class of an allow-list key (importing its module only when ``importing``)."""
    module, _, attr = key.partition(":")
    mod = sys.modules.get(module)
    if mod is None and importing:
        import importlib

        mod = importlib.import_module(module)
    obj = mod
    for part in attr.split(".") if mod is not None else ():
        obj = getattr(obj, part, None)
    return obj if isinstance(obj, type) else None


def _qualname(cls):
    return f"{cls.__module__}.{cls.__qualname__}"


# ---------------------------------------------------------------------------- save
class SaveMixin:
    """``save(path)`` for sprokr estimators and candidate indexes (see :mod:`sprokr.persistence`)."""

    def save(self, path, metadata=None):
        """Write this object to ``path`` in the safe model format; returns the path.

        Load it with :func:`sprokr.load` (a candidate index: ``sprokr.load(path, model=...)``).
        ``metadata``: optional plain-JSON dict stored with the model (see :func:`save`).
        Raises :class:`~sprokr.persistence.UnsavableObjectError` naming the attribute when
        some state (e.g. a user-defined kernel class or a callable) cannot be represented.
        """
        return save(self, path, metadata=metadata)

    @classmethod
    def load(cls, path, **kwargs):
        """Read an object saved with :meth:`save` and check that it is a ``cls``."""
        obj = load(path, **kwargs)
        if not isinstance(obj, cls):
            raise TypeError(f"{path} holds a {type(obj).__name__}, not a {cls.__name__}")
        return obj


def save(obj, path, metadata=None):
    """Save an estimator (or CandidateIndex / CandidateSets) to ``path``; returns the path.

    Parameters
    ----------
    obj : estimator, CandidateIndex or CandidateSets
    path : str or path-like
    metadata : dict, optional
        Plain JSON data (str keys; str, numbers, bools, None, lists, dicts) kept verbatim
        in the manifest, e.g. the configuration and column names a command-line tool
        needs; read it back with ``read_manifest(path)["metadata"]``.

    The file is written to a temporary file next to ``path`` and moved into place, so an
    error (or a crash) never leaves a half-written model at ``path``.
    """
    path = Path(path)
    _check_metadata(metadata)
    writer = _Writer()
    try:
        root = writer.encode(obj, type(obj).__name__)
    except RecursionError:
        raise UnsavableObjectError(f"cannot save {type(obj).__name__}: its attributes are nested too "
                                   f"deeply or hold a list/dict that contains itself") from None
    if not isinstance(root, dict) or root.get("@") not in ("object", "component"):
        raise UnsavableObjectError(
            f"save expects a sprokr estimator, CandidateIndex or CandidateSets; got {_qualname(type(obj))}")
    if not path.parent.is_dir():
        raise FileNotFoundError(f"cannot save to {path}: directory {path.parent} does not exist")
    # a fresh name beside the target (same file system: os.replace is atomic); "x" mode
    # creates it with the user's umask, unlike mkstemp's private 0600
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "x+b") as fh:
            with zipfile.ZipFile(fh, "w") as zf:
                # arrays are streamed into the archive (no second copy in memory) and hashed
                # on the way; the manifest, which holds their checksums, comes last
                for name, a in writer.arrays.items():
                    writer.array_table[name]["sha256"] = _write_array(zf, name, a)
                manifest = {
                    "format": FORMAT_NAME,
                    "format_version": FORMAT_VERSION,
                    "created_by": _library_versions(),
                    "plugins": writer.plugin_table(),
                    "components": writer.components,
                    "class": root.get("class"),
                    "metadata": metadata,
                    "arrays": writer.array_table,
                    "root": root,
                }
                manifest_bytes = json.dumps(manifest, indent=1, allow_nan=False).encode()
                manifest_sha = hashlib.sha256(manifest_bytes).hexdigest()
                _write_entry(zf, _MANIFEST, manifest_bytes)
                zf.comment = (_TRAILER_PREFIX + f"{FORMAT_VERSION} manifest-sha256={manifest_sha} "
                              f"file-sha256=".encode() + b"0" * 64)
            fh.flush()
            size = fh.tell()
            fh.seek(0)
            digest = _sha256_of(fh, size - 64)
            fh.seek(size - 64)
            fh.write(digest.encode())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _check_metadata(value, where="metadata"):
    """Raise unless ``value`` is plain JSON (so that it is stored and read back unchanged)."""
    if value is None or type(value) in (bool, int, str):
        return
    if type(value) is float:
        if not math.isfinite(value):
            raise ValueError(f"{where} holds {value!r}; only finite numbers are JSON")
        return
    if type(value) is list:
        for i, v in enumerate(value):
            _check_metadata(v, f"{where}[{i}]")
        return
    if type(value) is dict:
        for k, v in value.items():
            if type(k) is not str:
                raise ValueError(f"{where} has the key {k!r}; metadata keys must be strings")
            _check_metadata(v, f"{where}[{k!r}]")
        return
    raise ValueError(f"{where} holds a {type(value).__name__}; metadata must be plain JSON "
                     f"(dict with str keys, list, str, int, float, bool, None)")


def _zip_info(name, compression):
    info = zipfile.ZipInfo(name, date_time=_FIXED_DATE)
    info.compress_type = compression
    info.external_attr = 0o644 << 16
    return info


def _write_entry(zf, name, data):
    zf.writestr(_zip_info(name, zipfile.ZIP_DEFLATED), data)


class _HashingIO:
    """File-like wrapper hashing (sha256) and counting every byte read or written."""

    def __init__(self, raw):
        self.raw, self.sha, self.count = raw, hashlib.sha256(), 0

    def write(self, data):
        self.sha.update(data)
        self.count += len(data)
        return self.raw.write(data)

    def read(self, n=-1):
        data = self.raw.read(n)
        self.sha.update(data)
        self.count += len(data)
        return data

    def drain(self):
        while self.read(_CHUNK):
            pass
        return self.sha.hexdigest()


def _write_array(zf, name, a):
    """Write ``a`` as a stored (uncompressed) ``.npy`` entry; return its sha256."""
    from numpy.lib import format as npy

    with zf.open(_zip_info(name, zipfile.ZIP_STORED), "w", force_zip64=a.nbytes > 2**30) as raw:
        out = _HashingIO(raw)
        npy.write_array(out, a, allow_pickle=False)
    return out.sha.hexdigest()


def _sha256_of(fh, n_bytes):
    h = hashlib.sha256()
    left = n_bytes
    while left > 0:
        block = fh.read(min(_CHUNK, left))
        if not block:
            break
        h.update(block)
        left -= len(block)
    return h.hexdigest()


def _library_versions():
    import platform

    import scipy
    import sklearn

    from . import __version__

    return {"sprokr": __version__, "python": platform.python_version(), "numpy": np.__version__,
            "scipy": scipy.__version__, "scikit-learn": sklearn.__version__}


def _plugin_distributions():
    """``{plugin name: (distribution, version)}`` of the entry points of group ``sprokr``."""
    import importlib.metadata

    from . import __version__

    out = {"sprokr": ("sprokr", __version__)}
    for ep in importlib.metadata.entry_points(group="sprokr"):
        dist = getattr(ep, "dist", None)
        out.setdefault(ep.name, (dist.name if dist else None, dist.version if dist else None))
    return out


class _Writer:
    """Encodes an object graph into JSON nodes and ``.npy`` entries (shared objects once)."""

    def __init__(self):
        self.memo = {}  # id(obj) -> node id
        self.alive = []  # keeps every memoised object alive: ids are never reused mid-walk
        self.arrays = {}  # entry name -> array (written by save, streamed)
        self.array_table = {}
        self.components = []
        self.plugins = set()
        self._component_types = None

    def plugin_table(self):
        dists = _plugin_distributions()
        return {p: {"distribution": dists.get(p, (None, None))[0], "version": dists.get(p, (None, None))[1]}
                for p in sorted(self.plugins)}

    # -- dispatch ---------------------------------------------------------------------
    def encode(self, value, path):
        if value is None or type(value) in (bool, str, int):  # subclasses (enums...) are refused
            return value
        if isinstance(value, np.generic):
            return self._scalar(value, path)
        if type(value) is float:
            return value if math.isfinite(value) else {"@": "float", "v": repr(value)}
        if type(value) is list:
            return [self.encode(v, f"{path}[{i}]") for i, v in enumerate(value)]
        if type(value) is tuple:
            return {"@": "tuple", "items": [self.encode(v, f"{path}[{i}]") for i, v in enumerate(value)]}
        if type(value) is dict:
            return {"@": "dict", "items": [[self.encode(k, f"{path} key"), self.encode(v, f"{path}[{k!r}]")]
                                            for k, v in value.items()]}
        if type(value) in (set, frozenset):
            return {"@": type(value).__name__,
                    "items": [self.encode(v, f"{path} item") for v in sorted(value, key=repr)]}
        if type(value) is bytes:
            return {"@": "bytes", "hex": value.hex()}
        if isinstance(value, np.dtype):
            return {"@": "dtype", "v": self._dtype_str(value, path)}
        ref = self.memo.get(id(value))
        if ref is not None:
            return {"@": "ref", "id": ref}
        node = self._memoised(value, path)
        return node

    def _new_id(self, value):
        k = len(self.memo)
        self.memo[id(value)] = k
        self.alive.append(value)
        return k

    def _memoised(self, value, path):
        import scipy.sparse as sp

        if type(value) is np.ndarray:
            return self._array(value, path)
        if isinstance(value, np.memmap):  # saved (and loaded) as a plain array
            return self._array(np.asarray(value), path)
        if sp.issparse(value):
            return self._sparse(value, path)
        if isinstance(value, np.random.Generator):
            k = self._new_id(value)
            name = type(value.bit_generator).__name__
            if name not in _BIT_GENERATORS:
                raise UnsavableObjectError(f"cannot save {path}: bit generator {name} is not supported")
            return {"@": "generator", "id": k, "bit_generator": name,
                    "state": self.encode(value.bit_generator.state, f"{path}.state")}
        if isinstance(value, np.random.RandomState):
            k = self._new_id(value)
            return {"@": "randomstate", "id": k, "state": self.encode(value.get_state(legacy=False), f"{path}.state")}
        nx = sys.modules.get("networkx")
        if nx is not None and isinstance(value, nx.Graph):
            return self._graph(value, path, nx)
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(value, torch.nn.Module):
            return self._torch_module(value, path, torch)
        comp = self._registered(value, path)
        if comp is not None:
            return self._component(value, path, comp)
        key = self._allowed_key(type(value))
        if key is not None:
            return self._object(value, path, key)
        raise UnsavableObjectError(
            f"cannot save {path} of type {_qualname(type(value))}: the safe model format "
            f"holds arrays, sparse matrices, plain Python values, networkx graphs, components "
            f"registered through the sprokr plugin hooks and the allow-listed sprokr classes "
            f"(register the component in a plugin, or sprokr.persistence.allow_class a plain "
            f"data class)")

    # -- leaves -------------------------------------------------------------------------
    @staticmethod
    def _dtype_str(dt, path):
        if dt.hasobject or dt.fields is not None or dt.subdtype is not None:
            raise UnsavableObjectError(f"cannot save {path}: dtype {dt} is not a plain numeric or string dtype")
        return dt.str

    def _scalar(self, value, path):
        dt = value.dtype
        if dt.kind in "biu" or (dt.kind == "f" and dt.itemsize <= 8):  # exact as a JSON number
            v = value.item()
            if dt.kind == "f" and not math.isfinite(v):
                v = {"@": "float", "v": repr(v)}
            return {"@": "npscalar", "dtype": self._dtype_str(dt, path), "v": v}
        # anything else (long double, complex, strings, datetimes): a 0-d array entry
        return {"@": "npscalar", "dtype": self._dtype_str(dt, path), "array": self._array(np.asarray(value), path)}

    def _array(self, a, path):
        ref = self.memo.get(id(a))
        if ref is not None:
            return {"@": "ref", "id": ref}
        if a.dtype.hasobject:
            k = self._new_id(a)
            return {"@": "objarray", "id": k, "shape": list(a.shape),
                    "items": [self.encode(v, f"{path}[{i}]") for i, v in enumerate(a.ravel(order="C"))]}
        self._dtype_str(a.dtype, path)
        k = self._new_id(a)
        name = f"{_ARRAY_DIR}{k}.npy"
        self.arrays[name] = a
        self.array_table[name] = {"sha256": None, "dtype": a.dtype.str, "shape": list(a.shape)}
        return {"@": "ndarray", "id": k, "entry": name}

    def _sparse(self, M, path):
        cls = type(M).__name__
        if cls not in _SPARSE_CLASSES:
            raise UnsavableObjectError(
                f"cannot save {path}: sparse {cls} is not supported (convert it to CSR, CSC or COO)")
        k = self._new_id(M)
        if M.format == "coo":
            parts = {"data": M.data, "row": M.row, "col": M.col}
        else:
            parts = {"data": M.data, "indices": M.indices, "indptr": M.indptr}
        return {"@": "sparse", "id": k, "class": cls, "shape": list(M.shape),
                "parts": {n: self._array(np.asarray(a), f"{path}.{n}") for n, a in parts.items()}}

    def _graph(self, G, path, nx):
        cls = type(G).__name__
        if type(G) is not getattr(nx, cls, None) or cls not in _GRAPH_CLASSES:
            raise UnsavableObjectError(f"cannot save {path}: graph class {_qualname(type(G))} is not a "
                                       f"plain networkx {'/'.join(_GRAPH_CLASSES)}")
        k = self._new_id(G)
        try:
            data = nx.node_link_data(G, edges="edges")
        except TypeError:  # networkx < 3.4
            data = nx.node_link_data(G, link="edges")
        return {"@": "networkx", "id": k, "class": cls, "data": self.encode(data, f"{path}")}

    def _torch_module(self, module, path, torch):
        k = self._new_id(module)
        return {"@": "torch", "id": k, **_torch_spec(module, path, self, torch)}

    # -- objects ------------------------------------------------------------------------
    def _registered(self, value, path):
        """(kind, name, plugin) when ``type(value)`` is a registered component class."""
        if self._component_types is None:
            self._component_types = _registered_types()
        hit = self._component_types.get(type(value))
        own = getattr(value, "name", None)
        if hit is None:
            hit = _probe_factory(value, own)
            if hit is None:
                return None
        attr = path.rpartition(".")[2]
        # prefer the name the class gives itself (nystrom == subsample), then the kind the
        # attribute names (a kernel class is registered as input and output kernel)
        return min(hit, key=lambda c: (c[1] != own, c[0] not in attr))

    @staticmethod
    def _allowed_key(cls):
        for key in _ALLOWED:
            if key.rpartition(":")[2].rpartition(".")[2] == cls.__name__ and _resolve_allowed(key) is cls:
                return key
        return None

    def _split_state(self, value, path):
        if not hasattr(value, "__dict__"):
            raise UnsavableObjectError(f"cannot save {path}: {_qualname(type(value))} has no __dict__")
        attrs = vars(value)
        params = {}
        if hasattr(value, "get_params"):
            try:
                params = value.get_params(deep=False)
            except Exception as exc:
                raise UnsavableObjectError(f"cannot save {path}: get_params() failed: {exc}") from None
        state = {k: v for k, v in attrs.items() if k not in params or v is not params[k]}
        return params, state

    def _encode_fields(self, fields, path, skip=()):
        out = {}
        for name, v in fields.items():
            if not isinstance(name, str):
                raise UnsavableObjectError(f"cannot save {path}: attribute name {name!r} is not a string")
            if name in skip:
                continue
            out[name] = self.encode(v, f"{path}.{name}")
        return out

    def _component(self, value, path, comp):
        kind, name, plugin = comp
        k = self._new_id(value)
        params, state = self._split_state(value, path)
        self.plugins.add(plugin)
        node = {"@": "component", "id": k, "kind": kind, "name": name, "plugin": plugin,
                "class": _qualname(type(value))}
        node["params"] = self._encode_fields(params, path)
        node["state"] = self._encode_fields(state, path)
        self.components.append({"path": path, "kind": kind, "name": name, "plugin": plugin,
                                "params": node["params"]})
        return node

    def _object(self, value, path, key):
        k = self._new_id(value)
        params, state = self._split_state(value, path)
        plugin = _ALLOWED[key]
        if plugin is not None:
            self.plugins.add(plugin)
        skip = _SKIPPED_ATTRS.get(key, ())
        return {"@": "object", "id": k, "class": key, "params": self._encode_fields(params, path, skip),
                "state": self._encode_fields(state, path, skip)}


def _factory_class(factory):
    """The class a registry factory builds, if known without importing anything."""
    if isinstance(factory, type):
        return factory
    target = getattr(factory, "target", None)  # sprokr.registry.lazy_factory
    if isinstance(target, str) and ":" in target:
        module, _, attr = target.partition(":")
        mod = sys.modules.get(module)
        cls = getattr(mod, attr, None) if mod is not None else None
        return cls if isinstance(cls, type) else None
    return None


def _probe_factory(value, name):
    """Components registered by a factory *function* under the object's own ``name``.

    The class a function builds is unknown until it is called, so the factory is called
    with the object's parameters and the result's class compared (at save time only).
    """
    from .hookspecs import KINDS
    from .registry import get_registry

    if not isinstance(name, str) or not hasattr(value, "get_params"):
        return None
    reg = get_registry()
    found = []
    for kind in KINDS.values():
        if name not in reg.names(kind):
            continue
        try:
            comp = reg.get(kind, name)
            if isinstance(comp.factory, type) or hasattr(comp.factory, "target"):
                continue  # a class or a lazy class: already compared by class
            probe = comp.factory(**value.get_params(deep=False))
        except Exception:
            continue
        if type(probe) is type(value):
            found.append((kind, name, comp.plugin))
    return found or None


def _registered_types():
    """``{class: [(kind, name, plugin), ...]}`` of the registered components."""
    from .hookspecs import KINDS
    from .registry import get_registry

    reg = get_registry()
    out = {}
    for kind in KINDS.values():
        for name in reg.names(kind):
            try:
                comp = reg.get(kind, name)
            except Exception:  # a name clash between plugins: not usable by name
                continue
            cls = _factory_class(comp.factory)
            if cls is not None:
                out.setdefault(cls, []).append((kind, name, comp.plugin))
    return out


# ---------------------------------------------------------------------------- torch
_TORCH_LAYERS = {
    "Linear": ("in_features", "out_features"),
    "ReLU": ("inplace",),
    "Tanh": (),
    "GELU": ("approximate",),
    "Dropout": ("p", "inplace"),
    "Sequential": (),
}


def _torch_spec(module, path, writer, torch):
    """Architecture (allow-listed layers) and parameters of a torch module, as arrays."""
    cls = type(module).__name__
    if type(module) is not getattr(torch.nn, cls, None) or cls not in _TORCH_LAYERS:
        raise UnsavableObjectError(
            f"cannot save {path}: torch module {_qualname(type(module))} is not one of the layers "
            f"the safe format rebuilds ({', '.join(sorted(_TORCH_LAYERS))})")
    args = {a: getattr(module, a) for a in _TORCH_LAYERS[cls]}
    if cls == "Linear":
        args["bias"] = module.bias is not None
    children = []
    if cls == "Sequential":
        children = [{"@": "torch", **_torch_spec(m, f"{path}[{i}]", writer, torch)}
                    for i, m in enumerate(module)]
    tensors = {n: writer._array(t.detach().cpu().numpy().copy(), f"{path}.{n}")
               for n, t in module.named_parameters(recurse=False)}
    tensors.update({f"buffer:{n}": writer._array(t.detach().cpu().numpy().copy(), f"{path}.{n}")
                    for n, t in module.named_buffers(recurse=False)})
    return {"class": cls, "args": writer.encode(args, path), "children": children, "tensors": tensors,
            "training": bool(module.training)}


# ---------------------------------------------------------------------------- load
def read_manifest(path):
    """The verified manifest of a saved model (dict), without rebuilding the model.

    Checks the trailer, the whole-file checksum, the manifest checksum and the format
    version, exactly as :func:`load` does.
    """
    zf, manifest = _open(path)
    zf.close()
    return manifest


def load(path, model=None):
    """Read a model (or CandidateIndex / CandidateSets) written by :func:`save`.

    Parameters
    ----------
    path : str or path-like
    model : fitted estimator, optional
        For a saved :class:`~sprokr.CandidateIndex`: the model it must belong to (the
        model it was built with, or that model saved and loaded); an index of another
        model (or of an earlier fit) is refused.

    Raises
    ------
    ModelFormatError
        Not a sprokr model file, corrupted, truncated or tampered with (checksums), a
        newer or unsupported format version, or a class outside the allow-list.
    MissingPluginError
        A component's plugin is not installed (the error names it).
    """
    zf, manifest = _open(path)
    with zf:
        _warn_versions(manifest, path)
        reader = _Reader(zf, manifest, path)
        try:
            obj = reader.decode(manifest["root"], manifest.get("class") or "model")
        except ModelFormatError:
            raise
        except RecursionError:
            raise ModelFormatError(f"{path}: the manifest's object tree is nested too deeply") from None
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise ModelFormatError(f"{path}: malformed model manifest ({type(exc).__name__}: {exc})") from None
    from .decoders.candidates import CandidateIndex

    if model is not None:
        if not isinstance(obj, CandidateIndex):
            raise TypeError(f"model= is only for a saved CandidateIndex; {path} holds a {type(obj).__name__}")
        token = getattr(model, "index_token_", None)
        if token is None or obj.owner != token:
            raise ValueError(
                f"the CandidateIndex in {path} was built by another model (or before the model's "
                f"last fit); rebuild it with model.make_candidate_index(candidates)")
    return obj


def _open(path):
    """Verify trailer, checksums and version; return the open ZipFile and the manifest."""
    path = Path(path)
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        raise FileNotFoundError(f"model file not found: {path}") from None
    with fh:
        fh.seek(0, 2)
        size = fh.tell()
        fh.seek(0)
        head = fh.read(4)
        tail_len = len(_TRAILER_PREFIX) + 200
        fh.seek(max(0, size - tail_len))
        tail = fh.read()
        m = None
        start = tail.rfind(_TRAILER_PREFIX)
        if start >= 0:
            m = _TRAILER_RE.fullmatch(tail[start:])
        if m is None:
            if head[:1] == b"\x80":
                raise ModelFormatError(
                    f"{path} looks like a pickle file; sprokr.load reads only the safe model format "
                    f"and never unpickles (never load pickle files from untrusted sources)")
            if head[:2] != b"PK":
                raise ModelFormatError(f"{path} is not a sprokr model file (no zip container)")
            raise ModelFormatError(
                f"{path} is truncated, corrupted or not a sprokr model file: the sprokr trailer "
                f"(format version and checksums) is missing or damaged at its end")
        version, manifest_sha, file_sha = int(m.group(1)), m.group(2).decode(), m.group(3).decode()
        fh.seek(0)
        actual = _sha256_of(fh, size - 64)
        if actual != file_sha:  # checked first: a damaged version digit is a corruption
            raise ModelFormatError(
                f"{path} is corrupted: its checksum does not match (sha256 {actual[:16]}... instead "
                f"of {file_sha[:16]}...); the file was modified or damaged after it was saved")
        _check_version(version, path)
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise ModelFormatError(f"{path} is corrupted: unreadable zip container ({exc})") from None
    try:
        names = zf.namelist()
        bad = [n for n in names if n != _MANIFEST and not re.fullmatch(r"arrays/\d+\.npy", n)]
        if bad or _MANIFEST not in names or len(set(names)) != len(names):
            raise ModelFormatError(f"{path}: unexpected entries in the model container: {bad[:5]}")
        data = _read_entry(zf, _MANIFEST, path)
        if hashlib.sha256(data).hexdigest() != manifest_sha:
            raise ModelFormatError(f"{path} is corrupted: the manifest checksum does not match")
        try:
            manifest = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ModelFormatError(f"{path} is corrupted: the manifest is not valid JSON ({exc})") from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
            raise ModelFormatError(f"{path} is not a sprokr model (format {manifest.get('format')!r})"
                                   if isinstance(manifest, dict) else f"{path}: malformed manifest")
        fv = manifest.get("format_version")
        if not isinstance(fv, int) or isinstance(fv, bool) or fv != version:
            raise ModelFormatError(f"{path}: the manifest's format version {fv!r} differs from the "
                                   f"trailer's ({version})")
        _check_version(fv, path)
        for key in ("root", "arrays"):
            if key not in manifest:
                raise ModelFormatError(f"{path}: the manifest has no {key!r}")
    except BaseException:
        zf.close()
        raise
    return zf, manifest


def _check_version(version, path):
    if version > FORMAT_VERSION:
        raise ModelFormatError(
            f"{path} was written in sprokr model format {version}, newer than the formats this "
            f"sprokr reads ({MIN_FORMAT_VERSION}..{FORMAT_VERSION}); upgrade sprokr to load it")
    if version < MIN_FORMAT_VERSION:
        raise ModelFormatError(
            f"{path} was written in sprokr model format {version}, which this sprokr no longer "
            f"reads ({MIN_FORMAT_VERSION}..{FORMAT_VERSION}); load it with an older sprokr and save again")


def _read_entry(zf, name, path):
    try:
        return zf.read(name)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, KeyError, RuntimeError) as exc:
        raise ModelFormatError(f"{path} is corrupted: entry {name} is unreadable ({exc})") from None
    except Exception as exc:  # zlib.error and friends
        raise ModelFormatError(f"{path} is corrupted: entry {name} is unreadable ({exc})") from None


def _read_array(zf, name, meta):
    """An ``.npy`` entry, checked against the manifest before any allocation, then hashed.

    The header's dtype and shape must match the manifest, the entry must be stored
    uncompressed with exactly the size they imply (so nothing larger than the file is ever
    allocated), and the sha256 of the entry must match.  Object dtypes are refused
    (``allow_pickle=False``).
    """
    from numpy.lib import format as npy

    info = zf.getinfo(name)
    if info.compress_type != zipfile.ZIP_STORED:
        raise ModelFormatError(f"{name} is compressed; array entries are stored uncompressed")
    with zf.open(info) as raw:
        head = _HashingIO(raw)
        version = npy.read_magic(head)
        if version not in ((1, 0), (2, 0)):
            raise ModelFormatError(f"{name}: unsupported .npy version {version}")
        reader = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
        shape, fortran, dtype = reader(head)
    if dtype.hasobject:
        raise ModelFormatError(f"{name} is not a valid .npy array: object arrays are refused "
                               f"(they would need pickle)")
    if dtype.str != meta.get("dtype") or list(shape) != meta.get("shape"):
        raise ModelFormatError(f"{name} has dtype/shape {dtype.str} {list(shape)}, the manifest says "
                               f"{meta.get('dtype')} {meta.get('shape')}")
    if head.count + math.prod(shape) * dtype.itemsize != info.file_size:
        raise ModelFormatError(f"{name} has {info.file_size} bytes, not the size of a {dtype} array of "
                               f"shape {tuple(shape)}")
    try:
        with zf.open(info) as raw:
            src = _HashingIO(raw)
            a = npy.read_array(src, allow_pickle=False)
            digest = src.drain()
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise ModelFormatError(f"{name} is corrupted: {exc}") from None
    if digest != meta.get("sha256"):
        raise ModelFormatError(f"corrupted: checksum mismatch of {name}")
    return a


def _warn_versions(manifest, path):
    from . import __version__

    created = manifest.get("created_by") or {}
    saved = created.get("sprokr") if isinstance(created, dict) else None
    if saved is not None and saved != __version__:
        warnings.warn(f"{path} was saved with sprokr {saved}; this is sprokr {__version__}: "
                      f"predictions may differ", UserWarning, stacklevel=3)
    plugins = manifest.get("plugins") or {}
    if not isinstance(plugins, dict):
        return
    installed = _plugin_distributions()
    for name, info in plugins.items():
        if name == "sprokr" or not isinstance(info, dict) or name not in installed:
            continue
        have, want = installed[name][1], info.get("version")
        if want is not None and have is not None and have != want:
            warnings.warn(f"{path} was saved with plugin {name!r} {info.get('distribution')} {want}; "
                          f"installed is {have}: predictions may differ", UserWarning, stacklevel=3)


def _missing_plugin_hint(manifest, plugin):
    """``plugin 'chem' (distribution sprokr-chem 0.1.0); install it: pip install sprokr-chem``."""
    info = (manifest.get("plugins") or {}).get(plugin)
    info = info if isinstance(info, dict) else {}
    dist, ver = info.get("distribution"), info.get("version")
    if plugin == "sprokr":
        return f"sprokr itself (saved with sprokr {ver}); this sprokr does not provide it"
    if not dist:
        return f"plugin {plugin!r}; install that plugin"
    return f"plugin {plugin!r} (distribution {dist} {ver or ''}".rstrip() + f"); install it: pip install {dist}"


class _Reader:
    def __init__(self, zf, manifest, path):
        self.zf, self.manifest, self.path = zf, manifest, path
        self.objects = {}
        self.table = manifest["arrays"]
        if not isinstance(self.table, dict):
            raise ModelFormatError(f"{path}: malformed array table")
        self.registry = None

    def decode(self, node, path):
        if node is None or isinstance(node, (bool, int, str, float)):
            return node
        if isinstance(node, list):
            return [self.decode(v, f"{path}[{i}]") for i, v in enumerate(node)]
        if not isinstance(node, dict) or not isinstance(node.get("@"), str):
            raise ModelFormatError(f"{self.path}: malformed node at {path}")
        handler = getattr(self, "_d_" + node["@"], None)
        if handler is None:
            raise ModelFormatError(f"{self.path}: unknown node type {node['@']!r} at {path}")
        return handler(node, path)

    def _remember(self, node, obj):
        k = node["id"]
        if not isinstance(k, int) or k in self.objects:
            raise ModelFormatError(f"{self.path}: malformed or duplicate object id {k!r}")
        self.objects[k] = obj
        return obj

    # -- leaves -------------------------------------------------------------------------
    def _d_ref(self, node, path):
        try:
            return self.objects[node["id"]]
        except (KeyError, TypeError):
            raise ModelFormatError(f"{self.path}: reference to an unknown object at {path}") from None

    def _d_float(self, node, path):
        v = node["v"]
        if v not in ("nan", "inf", "-inf"):
            raise ModelFormatError(f"{self.path}: malformed float at {path}")
        return float(v)

    def _d_tuple(self, node, path):
        return tuple(self.decode(node["items"], path))

    def _d_dict(self, node, path):
        out = {}
        for item in node["items"]:
            k, v = item
            out[self.decode(k, f"{path} key")] = self.decode(v, f"{path}[{k!r}]")
        return out

    def _d_set(self, node, path):
        return set(self.decode(node["items"], path))

    def _d_frozenset(self, node, path):
        return frozenset(self.decode(node["items"], path))

    def _d_bytes(self, node, path):
        return bytes.fromhex(node["hex"])

    def _d_dtype(self, node, path):
        dt = np.dtype(str(node["v"]))
        if dt.hasobject:
            raise ModelFormatError(f"{self.path}: object dtype at {path}")
        return dt

    def _d_npscalar(self, node, path):
        dt = self._d_dtype({"v": node["dtype"]}, path)
        if "array" in node:
            return self.decode(node["array"], path)[()]
        v = self.decode(node["v"], path)
        if not isinstance(v, (bool, int, float)):
            raise ModelFormatError(f"{self.path}: malformed numpy scalar at {path}")
        return dt.type(v)

    def _d_ndarray(self, node, path):
        name = node["entry"]
        meta = self.table.get(name)
        if not isinstance(meta, dict):
            raise ModelFormatError(f"{self.path}: array {name!r} at {path} is not in the array table")
        try:
            a = _read_array(self.zf, name, meta)
        except ModelFormatError as exc:
            raise ModelFormatError(f"{self.path}: {exc} ({path})") from None
        except Exception as exc:  # a header or payload that is not a plain .npy
            raise ModelFormatError(f"{self.path}: {name} ({path}) is not a valid .npy array: "
                                   f"{type(exc).__name__}: {exc}") from None
        return self._remember(node, a)

    def _d_objarray(self, node, path):
        shape = tuple(int(s) for s in node["shape"])
        items = node["items"]
        if not isinstance(items, list) or len(items) != math.prod(shape) or min(shape, default=0) < 0:
            raise ModelFormatError(f"{self.path}: malformed object array at {path} (shape {shape})")
        a = self._remember(node, np.empty(shape, dtype=object))
        flat = a.reshape(-1)
        for i, v in enumerate(items):
            flat[i] = self.decode(v, f"{path}[{i}]")
        return a

    def _d_sparse(self, node, path):
        import scipy.sparse as sp

        cls_name = node["class"]
        if cls_name not in _SPARSE_CLASSES:
            raise ModelFormatError(f"{self.path}: sparse class {cls_name!r} at {path} is not allowed")
        cls = getattr(sp, cls_name)
        shape = tuple(int(s) for s in node["shape"])
        parts = {n: self.decode(v, f"{path}.{n}") for n, v in node["parts"].items()}
        if cls_name.startswith("coo"):
            M = cls((parts["data"], (parts["row"], parts["col"])), shape=shape)
        else:
            M = cls((parts["data"], parts["indices"], parts["indptr"]), shape=shape)
            # the constructor may narrow the index dtype: keep the saved arrays as they were
            M.indices, M.indptr, M.data = parts["indices"], parts["indptr"], parts["data"]
            M.check_format(full_check=True)  # indices in range, indptr monotone
        return self._remember(node, M)

    def _d_generator(self, node, path):
        name = node["bit_generator"]
        if name not in _BIT_GENERATORS:
            raise ModelFormatError(f"{self.path}: bit generator {name!r} at {path} is not allowed")
        bg = getattr(np.random, name)()
        g = self._remember(node, np.random.Generator(bg))
        bg.state = self.decode(node["state"], f"{path}.state")
        return g

    def _d_randomstate(self, node, path):
        rs = self._remember(node, np.random.RandomState())
        rs.set_state(self.decode(node["state"], f"{path}.state"))
        return rs

    def _d_networkx(self, node, path):
        import networkx as nx

        if node["class"] not in _GRAPH_CLASSES:
            raise ModelFormatError(f"{self.path}: graph class {node['class']!r} at {path} is not allowed")
        data = self.decode(node["data"], path)
        try:
            G = nx.node_link_graph(data, edges="edges")
        except TypeError:  # networkx < 3.4
            G = nx.node_link_graph(data, link="edges")
        if type(G).__name__ != node["class"]:
            raise ModelFormatError(f"{self.path}: graph at {path} is not a {node['class']}")
        return self._remember(node, G)

    def _d_torch(self, node, path):
        try:
            import torch
        except ImportError:
            raise MissingPluginError(f"{self.path}: the model holds a torch network ({path}); "
                                     f"install torch: pip install 'sprokr[torch]'") from None
        module = self._torch_build(node, path, torch)
        return self._remember(node, module) if "id" in node else module

    def _torch_build(self, node, path, torch):
        cls = node["class"]
        if cls not in _TORCH_LAYERS:
            raise ModelFormatError(f"{self.path}: torch layer {cls!r} at {path} is not allowed")
        args = self.decode(node["args"], path)
        if not isinstance(args, dict) or not set(args) <= set(_TORCH_LAYERS[cls]) | {"bias"}:
            raise ModelFormatError(f"{self.path}: malformed torch layer arguments at {path}")
        if cls == "Sequential":
            module = torch.nn.Sequential(*[self._torch_build(c, f"{path}[{i}]", torch)
                                           for i, c in enumerate(node["children"])])
        else:
            module = getattr(torch.nn, cls)(**args)
        with torch.no_grad():
            for name, ref in node["tensors"].items():
                arr = torch.as_tensor(self.decode(ref, f"{path}.{name}"))
                if name.startswith("buffer:"):
                    getattr(module, name[7:]).copy_(arr)
                else:
                    getattr(module, name).copy_(arr)
        module.train(bool(node["training"]))
        return module

    # -- objects ------------------------------------------------------------------------
    def _fields(self, node, key, path):
        fields = node[key]
        if not isinstance(fields, dict):
            raise ModelFormatError(f"{self.path}: malformed {key} at {path}")
        return {str(n): self.decode(v, f"{path}.{n}") for n, v in fields.items()}

    def _d_object(self, node, path):
        key = node["class"]
        if key not in _ALLOWED:
            raise ModelFormatError(
                f"{self.path}: class {key!r} at {path} is not in the allow-list of the safe format; "
                f"refusing to load it")
        try:
            cls = _resolve_allowed(key, importing=True)
        except ImportError as exc:
            plugin = _ALLOWED[key]
            if plugin is None:
                raise ModelFormatError(f"{self.path}: cannot import {key} ({exc})") from None
            raise MissingPluginError(f"{self.path}: the model needs class {key} ({path}) of "
                                     f"{_missing_plugin_hint(self.manifest, plugin)}") from None
        if cls is None:
            raise ModelFormatError(f"{self.path}: class {key} ({path}) does not exist in this installation")
        obj = self._remember(node, cls.__new__(cls))
        obj.__dict__.update(self._fields(node, "params", path))
        obj.__dict__.update(self._fields(node, "state", path))
        return obj

    def _d_component(self, node, path):
        from .registry import get_registry

        kind, name, plugin = node["kind"], node["name"], node["plugin"]
        reg = get_registry()
        try:
            reg.get(kind, name)
        except ValueError as exc:
            if "unknown component kind" in str(exc):
                raise ModelFormatError(f"{self.path}: unknown component kind {kind!r} at {path}") from None
            if type(exc).__name__ == "PluginConflictError":
                raise ModelFormatError(f"{self.path}: cannot rebuild {kind} {name!r} ({path}): {exc}") from None
            raise MissingPluginError(
                f"{self.path}: the model needs the {kind} {name!r} ({path}), provided by "
                f"{_missing_plugin_hint(self.manifest, plugin)}") from None
        params = self._fields(node, "params", path)
        try:
            obj = reg.create(kind, name, params)
        except ImportError as exc:
            raise MissingPluginError(
                f"{self.path}: the {kind} {name!r} ({path}) of plugin {plugin!r} cannot be imported "
                f"({exc}); {_missing_plugin_hint(self.manifest, plugin)}") from None
        except Exception as exc:
            raise ModelFormatError(
                f"{self.path}: cannot rebuild the {kind} {name!r} ({path}) of plugin {plugin!r} with "
                f"its saved parameters: {type(exc).__name__}: {exc}") from None
        if _qualname(type(obj)) != node.get("class"):
            warnings.warn(f"{self.path}: the {kind} {name!r} ({path}) is now a {_qualname(type(obj))}; "
                          f"it was saved as a {node.get('class')}", UserWarning, stacklevel=4)
        self._remember(node, obj)
        obj.__dict__.update(self._fields(node, "state", path))
        return obj
