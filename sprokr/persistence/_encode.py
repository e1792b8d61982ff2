"""Saving: the generic walk of an object graph into JSON nodes and arrays."""
from __future__ import annotations

import math
import sys

import numpy as np

from ._spec import (
    ARRAY_DIR, BIT_GENERATORS, GRAPH_CLASSES, SKIPPED_ATTRS, SPARSE_CLASSES, TORCH_LAYERS,
    TORCH_NETWORKS,
    UnsavableObjectError, allowed_classes, plugin_distributions, qualname, resolve_allowed,
)


#: lists of at least this many strings are stored as arrays (``strlist`` nodes)
STRLIST_MIN = 1000


class Writer:
    """Encodes an object graph into JSON nodes and ``.npy`` entries (shared objects once)."""

    def __init__(self):
        self.memo = {}  # id(obj) -> node id
        self.alive = []  # keeps every memoised object alive: ids are never reused mid-walk
        self.portable = {}  # id(obj) -> what is written in its place (__sprokr_save__)
        self.arrays = {}  # entry name -> array (written by save, streamed)
        self.array_table = {}
        self.components = []
        self.plugins = set()
        self._component_types = None

    def plugin_table(self):
        dists = plugin_distributions()
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
            if len(value) >= STRLIST_MIN and all(type(v) is str for v in value):
                return self._strlist(value, path)
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

        portable = self._portable(value)
        if portable is not value:
            return self.encode(portable, path)
        if type(value) is np.ndarray:
            return self._array(value, path)
        if isinstance(value, np.memmap):  # saved (and loaded) as a plain array
            return self._array(np.asarray(value), path)
        if sp.issparse(value):
            return self._sparse(value, path)
        if isinstance(value, np.random.Generator):
            k = self._new_id(value)
            name = type(value.bit_generator).__name__
            if name not in BIT_GENERATORS:
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
            f"cannot save {path} of type {qualname(type(value))}: the safe model format "
            f"holds arrays, sparse matrices, plain Python values, networkx graphs, components "
            f"registered through the sprokr plugin hooks and the allow-listed sprokr classes "
            f"(register the component in a plugin, or sprokr.persistence.allow_class a plain "
            f"data class)")

    def _portable(self, value):
        """What is written in place of ``value``: ``value.__sprokr_save__()`` when it defines
        one (e.g. an estimator or executor holding a connection to a cluster, a candidate
        index held by workers), else ``value`` itself.

        Asked once per object: an object met twice is written once, as the same node.
        """
        hook = getattr(type(value), "__sprokr_save__", None)  # looked up on the class, as dunders are
        if hook is None or isinstance(value, type):
            return value
        got = self.portable.get(id(value))
        if got is None:
            got = hook(value)
            self.portable[id(value)] = got
            self.portable[id(got)] = got  # written as it is (its own hook is not asked again)
            self.alive.extend((value, got))
        return got

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
        name = f"{ARRAY_DIR}{k}.npy"
        self.arrays[name] = a
        self.array_table[name] = {"sha256": None, "dtype": a.dtype.str, "shape": list(a.shape)}
        return {"@": "ndarray", "id": k, "entry": name}

    def _strlist(self, value, path):
        """A long list of strings (a million SMILES) as two arrays, not a JSON list."""
        encoded = [v.encode("utf-8", "surrogatepass") for v in value]
        ends = np.cumsum([len(b) for b in encoded], dtype=np.int64)
        data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        return {"@": "strlist", "data": self._array(data, f"{path} bytes"), "ends": self._array(ends, f"{path} ends")}

    def _sparse(self, M, path):
        cls = type(M).__name__
        if cls not in SPARSE_CLASSES:
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
        if type(G) is not getattr(nx, cls, None) or cls not in GRAPH_CLASSES:
            raise UnsavableObjectError(f"cannot save {path}: graph class {qualname(type(G))} is not a "
                                       f"plain networkx {'/'.join(GRAPH_CLASSES)}")
        k = self._new_id(G)
        try:
            data = nx.node_link_data(G, edges="edges")
        except TypeError:  # networkx < 3.4
            data = nx.node_link_data(G, link="edges")
        return {"@": "networkx", "id": k, "class": cls, "data": self.encode(data, f"{path}")}

    def _torch_module(self, module, path, torch):
        k = self._new_id(module)
        return {"@": "torch", "id": k, **torch_spec(module, path, self, torch)}

    # -- objects ------------------------------------------------------------------------
    def _registered(self, value, path):
        """(kind, name, plugin) when ``type(value)`` is a registered component class."""
        if self._component_types is None:
            self._component_types = registered_types()
        hit = self._component_types.get(type(value))
        own = getattr(value, "name", None)
        if hit is None:
            hit = probe_factory(value, own)
            if hit is None:
                return None
        attr = path.rpartition(".")[2]
        # prefer the name the class gives itself (nystrom == subsample), then the kind the
        # attribute names (a kernel class is registered as input and output kernel)
        return min(hit, key=lambda c: (c[1] != own, c[0] not in attr))

    @staticmethod
    def _allowed_key(cls):
        for key in allowed_classes():
            if key.rpartition(":")[2].rpartition(".")[2] == cls.__name__ and resolve_allowed(key) is cls:
                return key
        return None

    def _split_state(self, value, path):
        if not hasattr(value, "__dict__"):
            raise UnsavableObjectError(f"cannot save {path}: {qualname(type(value))} has no __dict__")
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
                "class": qualname(type(value))}
        node["params"] = self._encode_fields(params, path)
        node["state"] = self._encode_fields(state, path)
        self.components.append({"path": path, "kind": kind, "name": name, "plugin": plugin,
                                "params": node["params"]})
        return node

    def _object(self, value, path, key):
        k = self._new_id(value)
        params, state = self._split_state(value, path)
        plugin = allowed_classes()[key]
        skip = SKIPPED_ATTRS.get(key, ())
        node = {"@": "object", "id": k, "class": key, "params": self._encode_fields(params, path, skip),
                "state": self._encode_fields(state, path, skip)}
        if plugin is not None:  # named when the model is loaded without the plugin
            self.plugins.add(plugin)
            node["plugin"] = plugin
        return node


def factory_class(factory):
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


def probe_factory(value, name):
    """Components registered by a factory *function* under the object's own ``name``.

    The class a function builds is unknown until it is called, so the factory is called
    with the object's parameters and the result's class compared (at save time only).
    """
    from ..hookspecs import MODEL_KINDS
    from ..registry import get_registry

    if not isinstance(name, str) or not hasattr(value, "get_params"):
        return None
    reg = get_registry()
    found = []
    for kind in MODEL_KINDS:
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


def registered_types():
    """``{class: [(kind, name, plugin), ...]}`` of the registered components."""
    from ..hookspecs import MODEL_KINDS
    from ..registry import get_registry

    reg = get_registry()
    out = {}
    for kind in MODEL_KINDS:
        for name in reg.names(kind):
            try:
                comp = reg.get(kind, name)
            except Exception:  # a name clash between plugins: not usable by name
                continue
            cls = factory_class(comp.factory)
            if cls is not None:
                out.setdefault(cls, []).append((kind, name, comp.plugin))
    return out


def torch_spec(module, path, writer, torch):
    """Architecture (allow-listed layers) and parameters of a torch module, as arrays."""
    key = f"{type(module).__module__}:{type(module).__qualname__}"
    if key in TORCH_NETWORKS:  # a sprokr network: its configuration and state_dict
        state = {n: writer._array(t.detach().cpu().numpy().copy(), f"{path}.{n}")
                 for n, t in module.state_dict().items()}
        return {"network": key, "config": writer.encode(module.config, f"{path}.config"), "state": state,
                "training": bool(module.training)}
    cls = type(module).__name__
    if type(module) is not getattr(torch.nn, cls, None) or cls not in TORCH_LAYERS:
        raise UnsavableObjectError(
            f"cannot save {path}: torch module {qualname(type(module))} is not one of the layers "
            f"the safe format rebuilds ({', '.join(sorted(TORCH_LAYERS))}) or a sprokr network "
            f"({', '.join(TORCH_NETWORKS)})")
    args = {a: getattr(module, a) for a in TORCH_LAYERS[cls]}
    if cls == "Linear":
        args["bias"] = module.bias is not None
    children = []
    if cls == "Sequential":
        children = [{"@": "torch", **torch_spec(m, f"{path}[{i}]", writer, torch)}
                    for i, m in enumerate(module)]
    tensors = {n: writer._array(t.detach().cpu().numpy().copy(), f"{path}.{n}")
               for n, t in module.named_parameters(recurse=False)}
    tensors.update({f"buffer:{n}": writer._array(t.detach().cpu().numpy().copy(), f"{path}.{n}")
                    for n, t in module.named_buffers(recurse=False)})
    return {"class": cls, "args": writer.encode(args, path), "children": children, "tensors": tensors,
            "training": bool(module.training)}
