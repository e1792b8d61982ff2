"""Loaders for the benchmark data (Mulan ARFF) and the small samples shipped with sprokr.

The benchmark data live outside the package and nothing is downloaded: the loaders take a
``path``, the benchmark scripts ``--data PATH``, and both default to
:func:`default_data_dir` -- ``$SPROKR_DATA`` when set (a directory holding ``bibtex/``,
``rf1/``, ``qm9/``, ``chebi20/``), else ``shared/data`` beside the checkout, the current
directory or one of its parents.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # imported for the annotations only
    from .types import PathLike

__all__ = ["read_arff", "load_bibtex", "load_bibtex_sample", "load_rf1", "default_data_dir", "sample_path",
           "data_not_found", "ENV_DATA"]

#: environment variable naming the directory of the benchmark data
ENV_DATA = "SPROKR_DATA"

_SAMPLES = Path(__file__).resolve().parent / "data"


def sample_path(name: str) -> Path:
    """Path of a small data sample shipped inside the package (``sprokr/data``)."""
    p = _SAMPLES / name
    if not p.exists():
        raise FileNotFoundError(f"no shipped sample {name!r}; available: {sorted(os.listdir(_SAMPLES))}")
    return p


def default_data_dir() -> Path:
    """Where the benchmark data live.

    ``$SPROKR_DATA`` if set, else the first existing ``shared/data`` beside the source
    checkout (editable installs) or beside the current directory or one of its parents (a
    regular install run from the checkout).  When there is none: ``shared/data`` beside
    the checkout for a source checkout, else beside the current directory -- never a path
    inside the installed package; the loaders then report it as missing, with how to give
    the location (:func:`data_not_found`).

    Returns
    -------
    pathlib.Path
    """
    env = os.environ.get(ENV_DATA)
    if env:
        return Path(env)
    checkout = Path(__file__).resolve().parents[1]
    beside_source = checkout.parent / "shared" / "data"
    cwd = Path.cwd().resolve()
    for root in (checkout.parent, cwd, *cwd.parents):
        candidate = root / "shared" / "data"
        if candidate.is_dir():
            return candidate
    if (checkout / "pyproject.toml").is_file():  # running from a source checkout
        return beside_source
    return cwd / "shared" / "data"


def data_not_found(path: PathLike, what: str) -> FileNotFoundError:
    """The ``FileNotFoundError`` of missing benchmark data, saying how to give their location.

    Parameters
    ----------
    path : str or Path
        The path that does not exist.
    what : str
        The data set, e.g. ``"Bibtex (bibtex-train.arff)"``.

    Returns
    -------
    FileNotFoundError
        To be raised by the caller.
    """
    return FileNotFoundError(
        f"{what} not found: {path} does not exist.  The benchmark data are not shipped with sprokr: "
        f"pass their location (benchmark scripts: --data PATH; loaders: path=...) or set the environment "
        f"variable {ENV_DATA} to the directory holding bibtex/, rf1/, qm9/ and chebi20/ "
        f"(now {'set to ' + repr(os.environ[ENV_DATA]) if os.environ.get(ENV_DATA) else 'unset'}).")


def read_arff(path: PathLike, missing: float = np.nan) -> tuple[Any, list[str]]:
    """Read a numeric (dense or sparse) ARFF file.

    Parameters
    ----------
    path : str or Path
    missing : float
        Value used for ``?`` entries.

    Returns
    -------
    data : scipy.sparse.csr_matrix (sparse files) or ndarray (dense files), float64,
        shape (n_samples, n_attributes)
    names : list of str
        Attribute names.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"ARFF file not found: {path}")
    names, rows, sparse = [], [], None
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            s = line.strip()
            if not s or s.startswith("%"):
                continue
            low = s.lower()
            if low.startswith("@attribute"):
                rest = s[len("@attribute"):].strip()
                if rest.startswith("'"):
                    names.append(rest[1:rest.index("'", 1)])
                else:
                    names.append(rest.split()[0])
                continue
            if low.startswith("@relation") or low.startswith("@data"):
                continue
            if sparse is None:
                sparse = s.startswith("{")
            rows.append(s)
    d = len(names)
    if sparse:
        import scipy.sparse as sp  # here, not at import: the command line's parser imports this module

        indptr, indices, values = [0], [], []
        for s in rows:
            body = s.strip("{}").strip()
            if body:
                for tok in body.split(","):
                    j, v = tok.split()
                    indices.append(int(j))
                    values.append(missing if v == "?" else float(v))
            indptr.append(len(indices))
        X = sp.csr_matrix((np.asarray(values), np.asarray(indices), np.asarray(indptr)), shape=(len(rows), d))
        return X, names
    X = np.array([[missing if v.strip() == "?" else float(v) for v in s.split(",")] for s in rows])
    if X.shape[1] != d:
        raise ValueError(f"{path}: rows have {X.shape[1]} values but {d} attributes are declared")
    return X, names


def load_bibtex(path: PathLike | None = None) -> tuple[Any, ...]:
    """Bibtex multi-label data (Katakis et al., 2008): 1836 binary features, 159 labels.

    Returns
    -------
    X_train : csr_matrix (4880, 1836), Y_train : ndarray int8 (4880, 159),
    X_test : csr_matrix (2515, 1836), Y_test : ndarray int8 (2515, 159)
    """
    root = Path(path) if path else default_data_dir() / "bibtex"
    out = []
    for split in ("train", "test"):
        if not (root / f"bibtex-{split}.arff").is_file():
            raise data_not_found(root / f"bibtex-{split}.arff", f"Bibtex (bibtex-{split}.arff)")
        M, _ = read_arff(root / f"bibtex-{split}.arff")
        X = M[:, :1836].tocsr()
        Y = M[:, 1836:].toarray().astype(np.int8)
        out += [X, Y]
    return tuple(out)


def load_rf1(path: PathLike | None = None) -> tuple[np.ndarray, ...]:
    """River Flow 1 multi-target regression (64 inputs, 8 targets); ``?`` read as 0.

    Returns X_train (4108, 64), Y_train (4108, 8), X_test (5017, 64), Y_test (5017, 8).
    """
    root = Path(path) if path else default_data_dir() / "rf1"
    out = []
    for split in ("train", "test"):
        if not (root / f"rf1-{split}.arff").is_file():
            raise data_not_found(root / f"rf1-{split}.arff", f"River Flow 1 (rf1-{split}.arff)")
        M, _ = read_arff(root / f"rf1-{split}.arff", missing=0.0)
        out += [M[:, :64], M[:, 64:]]
    return tuple(out)


def load_bibtex_sample() -> tuple[Any, ...]:
    """A shipped 800 / 400 sample of Bibtex (same format as :func:`load_bibtex`).

    Binary features are stored as CSR structure only; labels are bit-packed.
    """
    import scipy.sparse as sp

    z = np.load(sample_path("bibtex_sample.npz"))
    out = []
    for split in ("train", "test"):
        indices, indptr = z[f"{split}_indices"].astype(np.int32), z[f"{split}_indptr"]
        X = sp.csr_matrix((np.ones(indices.size), indices, indptr), shape=(indptr.size - 1, 1836))
        Y = np.unpackbits(z[f"{split}_Y"], axis=1)[:, :159].astype(np.int8)
        out += [X, Y]
    return tuple(out)
