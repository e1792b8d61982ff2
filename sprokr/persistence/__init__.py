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
error naming the attribute and its type; state is never dropped silently.  An object whose
class defines ``__sprokr_save__()`` is written as the object that method returns: its
portable form (an estimator fitted on a Dask cluster without its client, a distributed
candidate index gathered), so that a file never refers to a process or a cluster.  Its
counterpart on loading, ``__sprokr_load__()``, is called on every rebuilt object whose class
defines it, once the whole model is rebuilt: it brings, in place, state written by an
earlier sprokr to that portable form (a file saved before an estimator fitted on Dask wrote
its ``executor_`` as a local one loads with a local ``executor_``).

>>> import tempfile, pathlib, numpy as np, sprokr
>>> X = np.random.default_rng(0).standard_normal((30, 3)); Y = (X > 0).astype(int)
>>> model = sprokr.SIOKR(m_x=10, random_state=0).fit(X, Y)
>>> path = model.save(pathlib.Path(tempfile.mkdtemp()) / "model.sprokr")
>>> again = sprokr.load(path)
>>> bool((again.predict(X) == model.predict(X)).all())
True

A :class:`~sprokr.CandidateIndex` is saved on its own (``index.save(path)``) and loaded
with ``sprokr.load(path, model=model)``, which checks that it belongs to that model.

Submodules: ``_spec`` (constants, errors, allow-list), ``_container`` (zip, checksums,
streamed ``.npy`` entries), ``_encode`` (the generic object walk of :func:`save`),
``_decode`` (rebuilding, for :func:`load`) and ``_cache`` (:class:`FeatureCache`: features
of many items on disk, content-addressed, resumable, memory-mapped).  User guide:
``docs/reliability.md``; the feature cache: ``docs/scaling.md``.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from ._cache import FeatureCache, FeatureChunk, FeatureTable, file_checksum, items_checksum
from ._container import open_verified, write_model
from ..deprecation import collect_renames
from ._decode import Reader, warn_renamed, warn_versions
from ._encode import Writer
from ._spec import (
    FORMAT_NAME, FORMAT_VERSION, MIN_FORMAT_VERSION, MissingPluginError, ModelFormatError,
    UnsavableObjectError, allow_class, check_metadata, library_versions, qualname,
)

if TYPE_CHECKING:  # imported for the annotations only
    from ..types import PathLike

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "MIN_FORMAT_VERSION",
    "ModelFormatError",
    "MissingPluginError",
    "UnsavableObjectError",
    "SaveMixin",
    "save",
    "load",
    "read_manifest",
    "allow_class",
    "FeatureCache",
    "FeatureChunk",
    "FeatureTable",
    "file_checksum",
    "items_checksum",
]


class SaveMixin:
    """``save(path)`` for sprokr estimators and candidate indexes (see :mod:`sprokr.persistence`)."""

    def save(self, path: PathLike, metadata: Mapping[str, Any] | None = None) -> PathLike:
        """Write this object to ``path`` in the safe model format; returns the path.

        Load it with :func:`sprokr.load` (a candidate index: ``sprokr.load(path, model=...)``).
        ``metadata``: optional plain-JSON dict stored with the model (see :func:`save`).
        Raises :class:`~sprokr.persistence.UnsavableObjectError` naming the attribute when
        some state (e.g. a user-defined kernel class or a callable) cannot be represented.
        """
        return save(self, path, metadata=metadata)

    @classmethod
    def load(cls, path: PathLike, **kwargs: Any) -> Any:
        """Read an object saved with :meth:`save` and check that it is a ``cls``."""
        obj = load(path, **kwargs)
        if not isinstance(obj, cls):
            raise TypeError(f"{path} holds an object of type {type(obj).__name__}, not of type {cls.__name__}")
        return obj


def save(obj: Any, path: PathLike, metadata: Mapping[str, Any] | None = None) -> PathLike:
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
    if metadata is not None and type(metadata) is not dict:  # (a plain-JSON list passed check_metadata)
        raise ValueError(f"metadata must be a dict (str keys, plain JSON values) or None, got "
                         f"{type(metadata).__name__}")
    check_metadata(metadata)
    writer = Writer()
    try:
        root = writer.encode(obj, type(obj).__name__)
    except RecursionError:
        raise UnsavableObjectError(f"cannot save {type(obj).__name__}: its attributes are nested too "
                                   f"deeply or hold a list/dict that contains itself") from None
    if not isinstance(root, dict) or root.get("@") not in ("object", "component"):
        raise UnsavableObjectError(
            f"save expects a sprokr estimator, CandidateIndex or CandidateSets; got {qualname(type(obj))}")
    manifest = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "created_by": library_versions(),
        "plugins": writer.plugin_table(),
        "components": writer.components,
        "class": root.get("class"),
        "metadata": metadata,
        "arrays": writer.array_table,  # checksums filled in while the arrays are written
        "root": root,
    }
    write_model(path, writer.arrays, manifest)
    return path


def read_manifest(path: PathLike) -> dict[str, Any]:
    """The verified manifest of a saved model (dict), without rebuilding the model.

    Checks the trailer, the whole-file checksum, the manifest checksum and the format
    version, exactly as :func:`load` does.
    """
    zf, manifest = open_verified(path)
    zf.close()
    return manifest


def load(path: PathLike, model: Any | None = None, mmap: bool = False) -> Any:
    """Read a model (or CandidateIndex / CandidateSets) written by :func:`save`.

    Parameters
    ----------
    path : str or path-like
    model : fitted estimator, optional
        For a saved :class:`~sprokr.CandidateIndex`: the model it must belong to (the
        model it was built with, or that model saved and loaded); an index of another
        model (or of an earlier fit) is refused.  The check is the loaded object's
        ``check_owner(model, where)`` (which raises ``ValueError``); an object without one
        is refused with ``TypeError``.
    mmap : bool
        Memory-map the arrays of at least 1 MiB read-only in place instead of reading
        them (array entries are stored uncompressed and aligned): a candidate index of
        millions of molecules loads in the time of the checksum and occupies the page
        cache, not the process's memory.  The whole-file checksum is verified as always;
        do not modify or replace the file while the object is in use.  Files saved before
        entries were aligned are read as usual.

    Raises
    ------
    ModelFormatError
        Not a sprokr model file, corrupted, truncated or tampered with (checksums), a
        newer or unsupported format version, or a class outside the allow-list.
    MissingPluginError
        A component's plugin is not installed (the error names it).
    """
    zf, manifest = open_verified(path)
    with zf:
        warn_versions(manifest, path)
        reader = Reader(zf, manifest, path, mmap=mmap)
        try:
            with collect_renames() as renamed:  # old parameter names: one warning for the file
                obj = reader.decode(manifest["root"], manifest.get("class") or "model")
                reader.finish()  # the objects' __sprokr_load__ (files of an earlier sprokr)
        except ModelFormatError:
            raise
        except RecursionError:
            raise ModelFormatError(f"{path}: the manifest's object tree is nested too deeply") from None
        except Exception as exc:  # KeyError, TypeError, OverflowError, ...: any inconsistency
            raise ModelFormatError(f"{path}: malformed model manifest ({type(exc).__name__}: {exc})") from None
    if renamed:
        warn_renamed(path, renamed)
    if model is not None:
        # the owner check is the loaded object's (a CandidateIndex's ``check_owner``): the
        # format knows no class of the layers above it
        check_owner = getattr(obj, "check_owner", None)
        if not callable(check_owner):
            raise TypeError(f"model= is only for a saved CandidateIndex; {path} holds an object of type "
                            f"{type(obj).__name__}")
        check_owner(model, where=f"the {type(obj).__name__} in {path}")
    return obj
