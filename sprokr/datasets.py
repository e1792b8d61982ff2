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

from .io import DataFileError

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


def read_arff(path: PathLike, missing: float = np.nan, return_lines: bool = False) -> tuple[Any, ...]:
    """Read a numeric (dense or sparse) ARFF file.

    The header (``@relation``, one ``@attribute`` per column, ``@data``) is followed by the
    data rows: dense (``v1,v2,...``, one value per attribute) or sparse (``{j v, ...}``,
    0-based attribute indices, the others 0), as the first data row says.

    Parameters
    ----------
    path : str or Path
    missing : float
        Value used for ``?`` entries.
    return_lines : bool, default False
        Also return the line of the file (1-based) of each data row (for messages).

    Returns
    -------
    data : scipy.sparse.csr_matrix (sparse files) or ndarray (dense files), float64,
        shape (n_samples, n_attributes)
    names : list of str
        Attribute names.
    lines : list of int
        With ``return_lines`` only: the file's line of each row of ``data``.

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    sprokr.io.DataFileError
        (a ``ValueError``) A file that is not numeric ARFF, naming the file and the line: no
        attribute declared, a line before ``@data`` that is no declaration, a value that is
        not a number, a dense row with another number of values than attributes, a sparse
        entry whose index is out of range or given twice, a sparse row in a dense file (or
        the reverse).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"ARFF file not found: {path}")
    names: list[str] = []
    rows: list[str] = []
    lines: list[int] = []
    in_data = False
    with open(path, encoding="utf-8", errors="replace") as fh:
        for k, line in enumerate(fh, 1):
            s = line.strip()
            if not s or s.startswith("%"):
                continue
            if in_data:
                rows.append(s)
                lines.append(k)
                continue
            low = s.lower()
            if low.startswith("@attribute"):
                names.append(_attribute_name(s, f"{path} line {k}"))
            elif low.startswith("@data"):
                in_data = True
            elif not low.startswith("@relation"):
                raise DataFileError(f"{path} line {k}: expected @relation, @attribute or @data before the data rows, "
                                    f"got {_clip(s)!r} (sprokr reads numeric ARFF files)")
    d = len(names)
    if not d:
        raise DataFileError(f"{path}: no @attribute declared (an empty file?); expected a numeric ARFF file: "
                            "@relation, one @attribute per column, @data, then the rows")
    sparse = bool(rows) and rows[0].startswith("{")
    for s, k in zip(rows, lines):
        if s.startswith("{") != sparse:  # the first data row sets the format, as in Weka
            raise DataFileError(f"{path} line {k}: a {'dense' if sparse else 'sparse'} row in a "
                                f"{'sparse' if sparse else 'dense'} ARFF file (the first data row, line {lines[0]}, "
                                "sets the format)")
    X = _sparse_rows(path, rows, lines, names, missing) if sparse else _dense_rows(path, rows, lines, names, missing)
    return (X, names, lines) if return_lines else (X, names)


def _clip(s: str, n: int = 40) -> str:
    """``s`` cut to ``n`` characters (a line quoted in a message)."""
    return s if len(s) <= n else s[:n] + "..."


def _attribute_name(s: str, where: str) -> str:
    """The name of an ``@attribute <name> <type>`` line (``'quoted names'`` too)."""
    rest = s[len("@attribute"):].strip()
    if rest.startswith("'") and rest.find("'", 1) > 0:
        return rest[1:rest.index("'", 1)]
    if not rest or rest.startswith("'"):
        raise DataFileError(f"{where}: expected '@attribute <name> <type>', got {_clip(s)!r}")
    return rest.split()[0]


def _value(v: str, missing: float, where: str, name: str) -> float:
    """One ARFF value: a number, or ``?`` (``missing``)."""
    v = v.strip()
    if v == "?":
        return missing
    try:
        return float(v)
    except ValueError:
        raise DataFileError(f"{where}: attribute {name!r} holds {_clip(v)!r}; expected a number or ? "
                            "(sprokr reads numeric ARFF files)") from None


def _dense_rows(path: Path, rows: list[str], lines: list[int], names: list[str], missing: float) -> np.ndarray:
    """The float matrix of dense rows ``v1,v2,...`` (one value per attribute)."""
    d = len(names)
    X = np.empty((len(rows), d))
    for i, (s, k) in enumerate(zip(rows, lines)):
        values = s.split(",")
        if len(values) != d:
            raise DataFileError(f"{path} line {k}: {len(values)} values, but {d} attributes are declared")
        try:  # the common case, fast; a failure is located value by value
            X[i] = [missing if v.strip() == "?" else float(v) for v in values]
        except ValueError:
            X[i] = [_value(v, missing, f"{path} line {k}", name) for v, name in zip(values, names)]
    return X


def _sparse_rows(path: Path, rows: list[str], lines: list[int], names: list[str], missing: float) -> Any:
    """The CSR matrix of sparse rows ``{j v, ...}`` (0-based attribute indices)."""
    import scipy.sparse as sp  # here, not at import: the command line's parser imports this module

    d = len(names)
    indptr, indices, values = [0], [], []
    for s, k in zip(rows, lines):
        where = f"{path} line {k}"
        if not s.endswith("}"):
            raise DataFileError(f"{where}: a sparse row starts with '{{' and ends with '}}', got {_clip(s)!r}")
        body = s[1:-1].strip()
        seen = set()
        for entry in body.split(",") if body else ():
            parts = entry.split()
            if len(parts) != 2:
                raise DataFileError(f"{where}: sparse entry {_clip(entry.strip())!r}; expected '<index> <value>'")
            try:
                j = int(parts[0])
            except ValueError:
                raise DataFileError(f"{where}: sparse entry {_clip(entry.strip())!r}: the attribute index "
                                    f"{_clip(parts[0])!r} is not an integer") from None
            # an index out of range would make scipy index outside its arrays (a crash, or a value lost)
            if not 0 <= j < d:
                raise DataFileError(f"{where}: attribute index {j} out of range [0, {d})")
            if j in seen:  # scipy would add the two values up
                raise DataFileError(f"{where}: attribute index {j} given twice")
            seen.add(j)
            indices.append(j)
            values.append(_value(parts[1], missing, where, names[j]))
        indptr.append(len(indices))
    return sp.csr_matrix((np.asarray(values, dtype=np.float64), np.asarray(indices, dtype=np.int64),
                          np.asarray(indptr, dtype=np.int64)), shape=(len(rows), d))


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
