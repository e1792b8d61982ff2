"""Format constants, errors and the class allow-list of the safe model format."""
from __future__ import annotations

import math
import re
import sys

import numpy as np

from ..version import __version__

#: name written in every manifest
FORMAT_NAME = "sprokr-model"
#: version of the container and object-tree layout written by this sprokr
FORMAT_VERSION = 1
#: oldest format version this sprokr still reads
MIN_FORMAT_VERSION = 1
MANIFEST = "manifest.json"
ARRAY_DIR = "arrays/"
FIXED_DATE = (1980, 1, 1, 0, 0, 0)  # fixed entry times: the same model gives the same bytes
TRAILER_PREFIX = b"sprokr-model "
TRAILER_RE = re.compile(rb"sprokr-model (\d{1,6}) manifest-sha256=([0-9a-f]{64}) file-sha256=([0-9a-f]{64})")
CHUNK = 1 << 20


class ModelFormatError(ValueError):
    """A file is not a sprokr model, is corrupted or truncated, was tampered with, or
    needs a format version this sprokr cannot read."""


class MissingPluginError(ModelFormatError):
    """A saved model needs a component (or class) of a plugin that is not installed."""


class UnsavableObjectError(TypeError):
    """Part of an object cannot be represented in the safe format (raised by :func:`save`)."""


#: sprokr's own classes rebuilt from their attributes (``cls.__new__`` + ``__dict__``),
#: keyed by ``"importable.module:Name"``, with the plugin providing them (None: sprokr or a
#: required dependency).  Plugins declare theirs through the ``sprokr_saveable_classes``
#: hook (:func:`allowed_classes` joins both).  Components registered through the plugin
#: hooks need no entry: they are rebuilt by registered name.
ALLOWED: dict[str, str | None] = {
    **{f"sprokr.models:{c}": None for c in (
        "IOKR", "SIOKR", "ISOKR", "SISOKR", "DSOKR", "DSOKREnsemble", "SketchedKernelMachine",
        "JointQuantileRegressor", "RFFKernelMachine")},
    "sprokr.models.regressors:KernelRidgeRegressor": None,
    "sprokr.model_selection:LambdaSearchCV": None,  # the fitted search, with its best_estimator_
    "sprokr.models.local_ridge:LocalKernelRidgeRegressor": None,
    "sprokr.models.local_ridge:NeighbourKernelRidgeRegressor": None,
    "sprokr.models.regressors:MLPSurrogate": None,
    "sprokr.models.torch_regressors:TorchRegressor": None,
    "sprokr.models.regressors:TorchRegressor": None,  # its former home (models saved before the move)
    "sprokr.kernels:KernelFeatures": None,
    "sprokr.models.tokenizers:SmilesTokenizer": None,
    "sprokr.models.tokenizers:WordTokenizer": None,
    "sprokr.sketches:SketchMatrix": None,  # written while sprokr.sketches is imported (always, for a model)
    "sprokr.numerics:SketchMatrix": None,  # where the class lives (a SketchMatrix saved without sprokr.sketches)
    "sprokr.numerics:SketchedFeatures": None,
    "sprokr.numerics:KernelExpansion": None,
    "sprokr.numerics:Screen": None,
    "sprokr.decoders:CandidateIndex": None,
    "sprokr.decoders:CandidateSets": None,
    "sklearn.neural_network:MLPRegressor": None,
}


def allowed_classes() -> dict[str, str | None]:
    """The allow-list of the safe format: ``{"module:Name": plugin or None}``.

    sprokr's own classes (:data:`ALLOWED`, with those added by :func:`allow_class`) and
    the classes every registered plugin declares through the ``sprokr_saveable_classes``
    hook (a class of sprokr's list keeps its entry).
    """
    from ..registry import get_saveable_classes

    return {**get_saveable_classes(), **ALLOWED}


def plugin_of_class(manifest, key):
    """The plugin a saved model names for the class ``key`` (of an object node), or None.

    Models record it with the object (``"plugin"``); for a model saved before that, the
    plugin whose distribution is the class's top-level package (distribution
    ``my-plugin`` for ``my_plugin.data:Vocabulary``) in the manifest's plugin table.
    """
    package = key.partition(":")[0].partition(".")[0]
    for name, info in (manifest.get("plugins") or {}).items():
        dist = info.get("distribution") if isinstance(info, dict) else None
        if isinstance(dist, str) and dist.replace("-", "_").lower() == package.lower() and name != "sprokr":
            return name
    return None


#: attributes of allow-listed foreign classes that are deliberately not saved (with why)
SKIPPED_ATTRS = {
    # Adam's moment estimates: only used to continue training with partial_fit, which
    # then starts a fresh optimiser (scikit-learn re-creates a missing one)
    "sklearn.neural_network:MLPRegressor": {"_optimizer"},
    # forms derived from the index by the models that search it (recomputed on demand)
    "sprokr.decoders:CandidateIndex": {"_derived"},
    # the support as the kernel prepared it for this process (e.g. a CSR memo): prepared
    # again on the first prediction of a loaded model
    "sprokr.numerics:KernelExpansion": {"_operand"},
}


BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")


SPARSE_CLASSES = ("csr_matrix", "csc_matrix", "coo_matrix", "csr_array", "csc_array", "coo_array")


GRAPH_CLASSES = ("Graph", "DiGraph", "MultiGraph", "MultiDiGraph")


TORCH_LAYERS = {
    "Linear": ("in_features", "out_features"),
    "ReLU": ("inplace",),
    "Tanh": (),
    "GELU": ("approximate",),
    "Dropout": ("p", "inplace"),
    "Sequential": (),
}

#: sprokr's own torch networks (``sprokr.models._torch_nets``): saved as their plain
#: ``config`` and ``state_dict`` arrays, rebuilt by the allow-listed class's public
#: ``from_state(config, state)`` (``cls(**config)`` + a strict ``load_state_dict``)
TORCH_NETWORKS = tuple(f"sprokr.models._torch_nets:{c}" for c in ("ResidualMLP", "TokenCNN", "TokenTransformer"))


def allow_class(cls: type | str, plugin: str | None = None) -> str:
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
    ALLOWED[key] = plugin
    return key


def resolve_allowed(key, importing=False):
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


def qualname(cls):
    return f"{cls.__module__}.{cls.__qualname__}"


def check_metadata(value, where="metadata"):
    """Raise unless ``value`` is plain JSON (so that it is stored and read back unchanged)."""
    if value is None or type(value) in (bool, int, str):
        return
    if type(value) is float:
        if not math.isfinite(value):
            raise ValueError(f"{where} holds {value!r}; only finite numbers are JSON")
        return
    if type(value) is list:
        for i, v in enumerate(value):
            check_metadata(v, f"{where}[{i}]")
        return
    if type(value) is dict:
        for k, v in value.items():
            if type(k) is not str:
                raise ValueError(f"{where} has the key {k!r}; metadata keys must be strings")
            check_metadata(v, f"{where}[{k!r}]")
        return
    raise ValueError(f"{where} holds a value of type {type(value).__name__}; metadata must be plain JSON "
                     f"(dict with str keys, list, str, int, float, bool, None)")


def library_versions():
    import platform

    import scipy
    import sklearn

    return {"sprokr": __version__, "python": platform.python_version(), "numpy": np.__version__,
            "scipy": scipy.__version__, "scikit-learn": sklearn.__version__}


def plugin_distributions():
    """``{plugin name: (distribution, version)}`` of the entry points of group ``sprokr``."""
    import importlib.metadata

    out = {"sprokr": ("sprokr", __version__)}
    for ep in importlib.metadata.entry_points(group="sprokr"):
        dist = getattr(ep, "dist", None)
        out.setdefault(ep.name, (dist.name if dist else None, dist.version if dist else None))
    return out
