"""Loading: rebuilding an object graph from verified JSON nodes and arrays (no code from the file)."""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..deprecation import REMOVED_IN, RenamedParameterWarning, upgrade_state
from ..extras import builtin_extra_hint, install_hint
from ..version import __version__
from ._container import map_array, read_array
from ._spec import (
    BIT_GENERATORS, GRAPH_CLASSES, SPARSE_CLASSES, TORCH_LAYERS, TORCH_NETWORKS, MissingPluginError,
    ModelFormatError, allowed_classes, plugin_distributions, plugin_of_class, qualname, resolve_allowed,
)


def warn_versions(manifest, path):
    """Warn when the model was saved with another sprokr or plugin version than installed."""
    created = manifest.get("created_by") or {}
    saved = created.get("sprokr") if isinstance(created, dict) else None
    if saved is not None and saved != __version__:
        warnings.warn(f"{path} was saved with sprokr {saved}; this is sprokr {__version__}: "
                      f"predictions may differ", UserWarning, stacklevel=3)
    plugins = manifest.get("plugins") or {}
    if not isinstance(plugins, dict):
        return
    installed = plugin_distributions()
    for name, info in plugins.items():
        if name == "sprokr" or not isinstance(info, dict) or name not in installed:
            continue
        have, want = installed[name][1], info.get("version")
        if want is not None and have is not None and have != want:
            warnings.warn(f"{path} was saved with plugin {name!r} {info.get('distribution')} {want}; "
                          f"installed is {have}: predictions may differ", UserWarning, stacklevel=3)


def warn_renamed(path, renamed):
    """One ``FutureWarning`` for a model file written with parameter names since renamed."""
    pairs = sorted({f"{owner}.{old} -> {new}" for owner, old, new in renamed})
    warnings.warn(f"{path} was saved with parameter names that sprokr {REMOVED_IN} removes ({', '.join(pairs)}); "
                  f"the model was read under the new names: save it again (model.save(path)) to keep it "
                  f"loadable", RenamedParameterWarning, stacklevel=3)


def missing_plugin_hint(manifest, plugin):
    """``plugin 'chem' (distribution sprokr-chem 0.1.0); install it: pip install sprokr-chem``."""
    info = (manifest.get("plugins") or {}).get(plugin)
    info = info if isinstance(info, dict) else {}
    dist, ver = info.get("distribution"), info.get("version")
    if plugin == "sprokr":
        return f"sprokr itself (saved with sprokr {ver}); this sprokr does not provide it"
    if not dist:
        return f"plugin {plugin!r}; install that plugin"
    return f"plugin {plugin!r} (distribution {dist} {ver or ''}".rstrip() + f"); install it: pip install {dist}"


def _registered_plugins():
    """Names of the plugins registered in this process (sprokr's built-ins included)."""
    from ..registry import get_registry

    return {name for name, _ in get_registry().pm.list_name_plugin()}


#: arrays at least this large are memory-mapped by ``load(..., mmap=True)``
MMAP_MIN_BYTES = 1 << 20


class Reader:
    def __init__(self, zf, manifest, path, mmap=False):
        self.zf, self.manifest, self.path = zf, manifest, path
        self.mmap = bool(mmap)
        self.objects = {}
        self.table = manifest["arrays"]
        if not isinstance(self.table, dict):
            raise ModelFormatError(f"{path}: malformed array table")
        self.registry = None
        self.to_finish = []  # objects whose class defines __sprokr_load__, in the order they were completed

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

    def finish(self):
        """Calls ``obj.__sprokr_load__()`` on every rebuilt object whose class defines it, once
        the whole tree is rebuilt (an object's state may refer to objects completed after it),
        inner objects first.

        The hook brings, in place, a state written by an earlier sprokr to what the current
        ``__sprokr_save__`` would have written (e.g. a fitted ``executor_`` that was a
        ``DaskExecutor`` before estimators wrote it as a local one), so that a file never
        needs a process or a cluster to be used; the format itself knows no such class.
        """
        for obj in self.to_finish:
            type(obj).__sprokr_load__(obj)  # looked up on the class, as dunders are

    def _loaded(self, obj):
        """``obj`` rebuilt with its whole state: its ``__sprokr_load__`` runs in :meth:`finish`."""
        if getattr(type(obj), "__sprokr_load__", None) is not None:
            self.to_finish.append(obj)
        return obj

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
            a = None
            if self.mmap and _nbytes(meta) >= MMAP_MIN_BYTES:
                a = map_array(self.path, self.zf, name, meta)
            if a is None:
                a = read_array(self.zf, name, meta)
        except ModelFormatError as exc:
            raise ModelFormatError(f"{self.path}: {exc} ({path})") from None
        except Exception as exc:  # a header or payload that is not a plain .npy
            raise ModelFormatError(f"{self.path}: {name} ({path}) is not a valid .npy array: "
                                   f"{type(exc).__name__}: {exc}") from None
        return self._remember(node, a)

    def _d_strlist(self, node, path):
        """A long list of strings: UTF-8 bytes and their end offsets (two arrays)."""
        data = self.decode(node["data"], path)
        ends = self.decode(node["ends"], path)
        if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or not isinstance(ends, np.ndarray) \
                or ends.dtype.kind != "i" or ends.ndim != 1 or (ends.size and (ends[-1] != data.size or
                                                                               (np.diff(ends) < 0).any() or ends[0] < 0)):
            raise ModelFormatError(f"{self.path}: malformed string list at {path}")
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError:
            raise ModelFormatError(f"{self.path}: string list at {path} is not UTF-8") from None
        if len(text) == data.size:  # ASCII: byte offsets are character offsets
            starts = np.concatenate([[0], ends[:-1]]).tolist()
            return [text[a:b] for a, b in zip(starts, ends.tolist())]
        raw = bytes(data)
        starts = np.concatenate([[0], ends[:-1]]).tolist()
        return [raw[a:b].decode("utf-8") for a, b in zip(starts, ends.tolist())]

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
        if cls_name not in SPARSE_CLASSES:
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
        if name not in BIT_GENERATORS:
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

        if node["class"] not in GRAPH_CLASSES:
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
            raise MissingPluginError(f"{self.path}: the model holds a torch network ({path}); it needs torch, "
                                     f"which is not installed (the torch extra): {install_hint('torch')}") from None
        module = self._torch_build(node, path, torch)
        return self._remember(node, module) if "id" in node else module

    def _torch_network(self, node, path, torch):
        key = node["network"]
        if key not in TORCH_NETWORKS:
            raise ModelFormatError(f"{self.path}: torch network {key!r} at {path} is not allowed")
        # the allow-listed class, imported by its key; it rebuilds itself through its public
        # ``from_state(config, state)`` (the format imports no module of the layers above)
        cls = resolve_allowed(key, importing=True)
        if cls is None or not issubclass(cls, torch.nn.Module) or not callable(getattr(cls, "from_state", None)):
            raise ModelFormatError(f"{self.path}: torch network {key!r} at {path} does not exist in this installation")
        config = self.decode(node["config"], f"{path}.config")
        if not isinstance(config, dict) or not all(isinstance(k, str) for k in config):
            raise ModelFormatError(f"{self.path}: malformed torch network configuration at {path}")
        state = {name: torch.as_tensor(self.decode(ref, f"{path}.{name}")) for name, ref in node["state"].items()}
        try:
            module = cls.from_state(config, state)
        except RuntimeError as exc:
            raise ModelFormatError(f"{self.path}: torch network at {path} does not match its saved state "
                                   f"({str(exc).splitlines()[0]})") from None
        module.train(bool(node["training"]))
        return module

    def _torch_build(self, node, path, torch):
        if "network" in node:
            return self._torch_network(node, path, torch)
        cls = node["class"]
        if cls not in TORCH_LAYERS:
            raise ModelFormatError(f"{self.path}: torch layer {cls!r} at {path} is not allowed")
        args = self.decode(node["args"], path)
        if not isinstance(args, dict) or not set(args) <= set(TORCH_LAYERS[cls]) | {"bias"}:
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
        allowed = allowed_classes()
        if key not in allowed:
            plugin = node.get("plugin") or plugin_of_class(self.manifest, key)
            if isinstance(plugin, str) and plugin not in _registered_plugins():
                # a plugin's class: allowed when that plugin is installed, which it is not
                raise MissingPluginError(f"{self.path}: the model needs class {key} ({path}) of "
                                         f"{missing_plugin_hint(self.manifest, plugin)}")
            raise ModelFormatError(
                f"{self.path}: class {key!r} at {path} is not in the allow-list of the safe format; "
                f"refusing to load it")
        try:
            cls = resolve_allowed(key, importing=True)
        except ImportError as exc:
            plugin = allowed[key]
            if plugin is None:
                raise ModelFormatError(f"{self.path}: cannot import {key} ({exc})") from None
            raise MissingPluginError(f"{self.path}: the model needs class {key} ({path}) of "
                                     f"{missing_plugin_hint(self.manifest, plugin)}") from None
        if cls is None:
            raise ModelFormatError(f"{self.path}: class {key} ({path}) does not exist in this installation")
        obj = self._remember(node, cls.__new__(cls))
        obj.__dict__.update(self._fields(node, "params", path))
        obj.__dict__.update(self._fields(node, "state", path))
        upgrade_state(obj)  # parameters saved under their former names (sprokr.deprecation)
        return self._loaded(obj)

    def _d_component(self, node, path):
        from ..hookspecs import MODEL_KINDS
        from ..registry import get_registry

        kind, name, plugin = node["kind"], node["name"], node["plugin"]
        if kind not in MODEL_KINDS:  # readers, demos ... are never parts of a model
            raise ModelFormatError(f"{self.path}: unknown component kind {kind!r} at {path}")
        reg = get_registry()
        qualified = f"{plugin}:{name}"  # the saved component itself, whatever the bare name means now
        try:
            reg.get(kind, qualified)
        except ValueError as exc:
            if "unknown component kind" in str(exc):
                raise ModelFormatError(f"{self.path}: unknown component kind {kind!r} at {path}") from None
            if type(exc).__name__ == "PluginConflictError":
                raise ModelFormatError(f"{self.path}: cannot rebuild {kind} {name!r} ({path}): {exc}") from None
            missing = builtin_extra_hint(kind, name) if plugin == "sprokr" else None
            if missing is not None:  # sprokr's own, not registered without its extra's library
                raise MissingPluginError(f"{self.path}: the model needs the {kind} {name!r} ({path}) of sprokr; "
                                         f"it {missing}") from None
            raise MissingPluginError(
                f"{self.path}: the model needs the {kind} {name!r} ({path}), provided by "
                f"{missing_plugin_hint(self.manifest, plugin)}") from None
        params = self._fields(node, "params", path)
        try:
            obj = reg.create(kind, qualified, params)
        except ImportError as exc:
            raise MissingPluginError(
                f"{self.path}: the {kind} {name!r} ({path}) of plugin {plugin!r} cannot be imported "
                f"({exc}); {missing_plugin_hint(self.manifest, plugin)}") from None
        except Exception as exc:
            raise ModelFormatError(
                f"{self.path}: cannot rebuild the {kind} {name!r} ({path}) of plugin {plugin!r} with "
                f"its saved parameters: {type(exc).__name__}: {exc}") from None
        if qualname(type(obj)) != node.get("class"):
            warnings.warn(f"{self.path}: the {kind} {name!r} ({path}) is now a {qualname(type(obj))}; "
                          f"it was saved as a {node.get('class')}", UserWarning, stacklevel=4)
        self._remember(node, obj)
        obj.__dict__.update(self._fields(node, "state", path))
        upgrade_state(obj)
        return self._loaded(obj)


def _nbytes(meta):
    try:
        return int(np.prod(meta.get("shape"))) * np.dtype(str(meta.get("dtype"))).itemsize
    except (TypeError, ValueError):
        return 0
