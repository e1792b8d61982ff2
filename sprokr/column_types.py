"""sprokr's own column types for the command line: ``numeric``, ``text``, ``labels``.

Registered through :mod:`sprokr._builtins` (hook ``sprokr_column_types``) exactly as a
plugin registers its own (sprokr-chem: ``smiles``, ``molecule``).  A model file's
``[input]`` / ``[output]`` table names one with ``type = "..."``; :class:`sprokr.io.ColumnSpec`
calls its ``parse`` on the file's columns and its ``format`` on each prediction (see
:func:`sprokr.hookspecs.sprokr_column_types`).
"""
from __future__ import annotations

from typing import Any, List, Mapping, Optional

import numpy as np

from .io import DataFileError, Table

__all__ = ["NumericColumns", "TextColumn", "LabelColumns", "numeric_matrix", "column_strings"]


#: what an array of another kind than numbers or strings holds (numeric columns refuse them)
_NOT_NUMBERS = {"c": "complex numbers", "M": "dates", "m": "time spans", "V": "records",
                "O": "Python objects"}


def _plain(value: Any) -> Any:
    """``value`` as a Python scalar if it is a NumPy one (``np.float64(2.0)`` -> ``2.0``), so
    that a message quoting it with ``!r`` shows the value, not NumPy's repr."""
    return value.item() if isinstance(value, np.generic) else value


def numeric_matrix(values: Mapping[str, Any], table: Table) -> np.ndarray:
    """The columns ``values`` stacked as a float64 matrix of shape (n_rows, n_features).

    A numeric array column (``.npz``) may be 2-D (several features); an array of complex
    numbers, dates, time spans or records is refused, naming the file and column (the
    conversion would drop the imaginary part, or count days); a text column must hold
    numbers, else :class:`sprokr.io.DataFileError` names the file, line and column.
    NaN and infinite values are refused the same way (no model accepts them; the file's
    line is what the user needs, not the estimator's count of NaNs).
    """
    cols = []
    for name, col in values.items():
        if isinstance(col, np.ndarray) and col.dtype.kind in "biuf":
            a = col.astype(np.float64)
            a = a.reshape(a.shape[0], -1)
        elif isinstance(col, np.ndarray) and col.dtype.kind in _NOT_NUMBERS:
            raise DataFileError(f"{table.path}: column {name!r} holds {_NOT_NUMBERS[col.dtype.kind]} "
                                f"(dtype {col.dtype}); expected real numbers")
        else:
            a = np.empty((len(col), 1))
            for i, v in enumerate(col):
                try:
                    a[i, 0] = float(v)
                except (TypeError, ValueError):
                    raise DataFileError(f"{table.where(i)}: column {name!r} holds {_plain(v)!r}; "
                                        "expected a number") from None
        bad = ~np.isfinite(a)
        if bad.any():
            i = int(np.argwhere(bad)[0][0])
            raise DataFileError(f"{table.where(i)}: column {name!r} holds {float(a[bad][0])!r}; expected a finite number")
        cols.append(a)
    return np.hstack(cols) if cols else np.empty((len(table), 0))


class NumericColumns:
    """``numeric``: any number of columns stacked as features (or a kernel machine's targets).

    Inputs may be standardised (``standardize = true``: :class:`sprokr.io.ColumnSpec`);
    predictions are written as space-separated numbers with 8 significant digits.
    """

    n_columns: Optional[int] = None

    def parse(self, values: Mapping[str, Any], table: Table) -> np.ndarray:
        """Float matrix (n_rows, n_features)."""
        return numeric_matrix(values, table)

    def format(self, value: Any, columns: List[str]) -> str:
        """``"0.5 1.25"``: the predicted numbers."""
        return " ".join(f"{float(v):.8g}" for v in np.atleast_1d(np.asarray(value, dtype=float)))


def column_strings(column: Any, name: str, table: Table) -> List[str]:
    """A column's values as strings (text, SMILES, ...): bytes (an ``.npz`` array of dtype
    ``S``) are decoded as UTF-8 -- ``str()`` would give ``"b'hello'"`` -- and bytes that are
    not UTF-8 raise :class:`sprokr.io.DataFileError` naming the line and the column ``name``."""
    texts = []
    for i, v in enumerate(column):
        if isinstance(v, bytes):  # (np.bytes_ is a bytes too)
            try:
                v = v.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataFileError(f"{table.where(i)}: column {name!r} holds bytes that are not UTF-8 text "
                                    f"({exc.reason} at byte {exc.start})") from None
        texts.append(str(v))
    return texts


class TextColumn:
    """``text``: one column of free text (e.g. for ``input_kernel = "text"``)."""

    n_columns: Optional[int] = 1

    def parse(self, values: Mapping[str, Any], table: Table) -> List[str]:
        """The texts, as strings (:func:`column_strings`)."""
        ((name, column),) = values.items()
        return column_strings(column, name, table)

    def format(self, value: Any, columns: List[str]) -> str:
        """The text itself."""
        return str(value)


class LabelColumns:
    """``labels``: one 0/1 column per label, read as a multilabel matrix.

    Predictions are written as the ``;``-joined names of the predicted labels; ``sprokr
    evaluate`` reports ``f1_samples`` and the exact-match rate.
    """

    n_columns: Optional[int] = None

    def parse(self, values: Mapping[str, Any], table: Table) -> np.ndarray:
        """0/1 float matrix (n_rows, n_labels); another value names its file, line and column.

        Each column is one label: an array column of several dimensions (an ``.npz`` array
        of shape (n_rows, 2)) is refused, naming it -- its values would be several labels
        under one name, and the predictions' names would be paired with the wrong labels.
        """
        for name, col in values.items():
            if getattr(col, "ndim", 1) != 1:
                raise DataFileError(f"{table.path}: label column {name!r} has shape {tuple(col.shape)}; a labels "
                                    "column holds one 0/1 value per row (a 1-D array): give one column per label")
        Y = numeric_matrix(values, table)
        bad = ~np.isin(Y, (0.0, 1.0))
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise DataFileError(f"{table.where(int(i))}: label column {list(values)[j]!r} holds "
                                f"{float(Y[i, j])!r}; expected 0 or 1")
        return Y

    def format(self, value: Any, columns: List[str]) -> str:
        """``"sports;music"``: the names of the labels predicted 1 (one value per column,
        else a ``ValueError``: the names would be paired with the wrong labels)."""
        row = np.asarray(value).ravel()
        if row.size != len(columns):
            raise ValueError(f"a prediction holds {row.size} labels but the [output] table names {len(columns)} "
                             f"label columns ({', '.join(columns)})")
        return ";".join(c for c, v in zip(columns, row) if v > 0.5)
