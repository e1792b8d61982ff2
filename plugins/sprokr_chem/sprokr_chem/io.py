"""Reading molecules: SMILES lists and SDF files (plain or zipped), with their properties.

Invalid records never disappear silently.  With ``on_error="raise"`` (the default) the
first invalid record raises :class:`MoleculeReadError`, whose message names the record's
index and text; with ``on_error="skip"`` invalid records are left out and listed in the
returned :class:`ReadReport` (``report.skipped`` = ``[(index, text, reason), ...]``).
"""
from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from rdkit import Chem, RDLogger

from sprokr.utils import RowError

if TYPE_CHECKING:  # imported for the annotations only
    from rdkit.Chem import Mol
    from sprokr.types import PathLike

__all__ = ["MoleculeReadError", "ReadReport", "read_smiles", "read_sdf", "mol_from_smiles", "to_mol",
           "is_molecule_graph", "blank_inside"]


class MoleculeReadError(RowError, ValueError):
    """A SMILES string or SDF record could not be turned into a valid molecule.

    Attributes ``index`` (position of the record), ``record`` (its text, shortened),
    ``reason``, ``where`` (what holds it: an argument name or a file, or None) and
    ``others`` (positions of up to five other invalid records) with ``n_others`` (how many
    there are).  A :class:`sprokr.utils.RowError`: raised on a chunk of a larger input (a
    pass's chunk, a Dask partition, a task of a process pool), the executors renumber it
    so that ``index`` and the message name the record of the whole input.

    Parameters
    ----------
    index : int
        Position of the record.
    record : object
        The record (its text), shown shortened in the message.
    reason : str
        Why it is not a valid molecule.
    where : str, optional
        What holds the record: an argument name or a file.
    others : sequence of int, default ()
        Positions of up to five other invalid records.
    n_others : int, optional
        How many other invalid records there are (default: ``len(others)``).
    """

    def __init__(self, index: int, record: Any, reason: str, where: str | None = None,
                 others: Sequence[int] = (), n_others: int | None = None) -> None:
        self.index, self.record, self.reason, self.where = index, record, reason, where
        self.others = [int(j) for j in others]
        self.n_others = len(self.others) if n_others is None else int(n_others)
        prefix = f"{where}: " if where else ""
        super().__init__(prefix + self.row_text())

    def row_text(self) -> str:
        """``invalid molecule at record i: 'text' (reason[; k more ...])``: the message
        after its context (``where``, or an argument name added when re-raised)."""
        more = f"; {self.n_others} more invalid record(s), e.g. at {self.others}" if self.n_others else ""
        return f"invalid molecule at record {self.index}: {self.record!r} ({self.reason}{more})"

    @classmethod
    def from_skipped(cls, skipped: Sequence[tuple[int, Any, str]], where: str | None) -> MoleculeReadError:
        """The error for the invalid records ``[(index, text, reason), ...]`` of ``where``:
        the first one, with up to five others named and how many there are."""
        i, text, reason = skipped[0]
        return cls(i, text, reason, where=where, others=[j for j, _, _ in skipped[1:6]], n_others=len(skipped) - 1)

    def skipped_entry(self) -> tuple[int, str, str]:
        """``(index, text, reason)`` as :attr:`ReadReport.skipped` lists it (text shortened)."""
        return self.index, _short(self.record), self.reason

    def shift_rows(self, offset: int) -> None:
        """Add ``offset`` to ``index`` and to ``others``."""
        self.index += offset
        self.others = [j + offset for j in self.others]

    def __reduce__(self):
        # picklable (process pools, Dask workers): rebuilt from its fields, then its message
        # (possibly reworded with context) and notes restored
        return (type(self), (self.index, self.record, self.reason, self.where, self.others, self.n_others),
                {**self.__dict__, "args": self.args})


@dataclass
class ReadReport:
    """What a reader kept and skipped: ``kept`` indices and ``skipped`` (index, text, reason).

    Parameters
    ----------
    kept : list of int, default []
        Indices of the records kept.
    skipped : list of (int, str, str), default []
        ``(index, text, reason)`` of each record skipped.
    """

    kept: list = field(default_factory=list)
    skipped: list = field(default_factory=list)

    def __str__(self):
        lines = [f"{len(self.kept)} molecule(s) read, {len(self.skipped)} skipped"]
        lines += [f"  record {i}: {t!r} ({r})" for i, t, r in self.skipped]
        return "\n".join(lines)


def _check_on_error(on_error):
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")


def _short(text, n=80):
    text = str(text)
    return text if len(text) <= n else text[: n - 3] + "..."


#: a SMILES followed by blanks and more text (a name, or a CXSMILES extension "|...|")
_INNER_BLANK = re.compile(r"(\S+)\s+(.+)", re.S)


def blank_inside(smiles: str) -> bool:
    """Whether a SMILES string holds whitespace inside it (not around it) that does not start a
    CXSMILES extension (``|...|``): what RDKit would read as the end of the SMILES and a name.

    Parameters
    ----------
    smiles : str
        The SMILES string.
    """
    return _name_after(smiles) is not None


def _name_after(smiles):
    """``(SMILES, name)`` when blanks inside ``smiles`` are followed by a name (not by a
    CXSMILES extension), else None."""
    inside = _INNER_BLANK.match(smiles.strip())
    if inside is None or inside.group(2).startswith("|"):
        return None
    return inside.group(1), inside.group(2)


def mol_from_smiles(smiles: str, index: int = 0) -> Mol:
    """One sanitised RDKit molecule from a SMILES string; :class:`MoleculeReadError` if invalid.

    Whitespace around the SMILES is ignored.  Whitespace inside it is an error unless what
    follows is a CXSMILES extension (``"C[C@H](O)CC |&1:1|"``): RDKit would read the SMILES up
    to the first blank and take the rest for a name, so that ``"CC O"`` was ethane.  (A
    ``.smi`` file's ``SMILES name`` lines are split by its reader first.)

    Parameters
    ----------
    smiles : str
        The SMILES string.
    index : int, default 0
        Its position, named by the error.
    """
    if smiles is None or (isinstance(smiles, float) and smiles != smiles):
        raise MoleculeReadError(index, smiles, "missing value (None or NaN), expected a SMILES string")
    if not isinstance(smiles, str):
        raise MoleculeReadError(index, smiles, f"expected a SMILES string, got {type(smiles).__name__}")
    if not smiles.strip():
        raise MoleculeReadError(index, smiles, "empty SMILES")
    named = _name_after(smiles)
    if named is not None:
        head, rest = named
        raise MoleculeReadError(index, smiles, f"whitespace inside the SMILES: RDKit would read {head!r} and take "
                                               f"{rest!r} for a name; remove the whitespace (or the name)")
    RDLogger.DisableLog("rdApp.*")
    try:
        mol = Chem.MolFromSmiles(smiles)
    finally:
        RDLogger.EnableLog("rdApp.*")
    if mol is None:
        raise MoleculeReadError(index, smiles, "RDKit could not parse or sanitise it")
    return mol


def to_mol(x: str | Mol, index: int = 0) -> Mol:
    """An RDKit molecule from a SMILES string or a molecule (returned unchanged).

    Parameters
    ----------
    x : str or rdkit.Chem.Mol
        A SMILES string or a molecule (with atoms).
    index : int, default 0
        Its position, named by :class:`MoleculeReadError`.
    """
    if isinstance(x, Chem.Mol):
        if x.GetNumAtoms() == 0:
            raise MoleculeReadError(index, Chem.MolToSmiles(x), "molecule has no atoms")
        return x
    return mol_from_smiles(x, index)


def is_molecule_graph(x: Any) -> bool:
    """True for a graph object (networkx's interface: what :func:`sprokr_chem.mol_to_graph`
    makes), without importing networkx."""
    return hasattr(x, "nodes") and hasattr(x, "edges") and hasattr(x, "number_of_nodes")


def read_smiles(smiles: Sequence[str], on_error: str = "raise") -> tuple[list[Mol], ReadReport]:
    """Parse a sequence of SMILES strings.

    Parameters
    ----------
    smiles : sequence of str
    on_error : {"raise", "skip"}

    Returns
    -------
    mols : list of rdkit.Chem.Mol
    report : ReadReport  (``report.kept`` maps each molecule to its input index)
    """
    _check_on_error(on_error)
    if isinstance(smiles, str):
        raise TypeError("read_smiles expects a sequence of SMILES strings, not one string")
    mols, report = [], ReadReport()
    for i, s in enumerate(smiles):
        try:
            mols.append(mol_from_smiles(s, i))
            report.kept.append(i)
        except MoleculeReadError as exc:
            if on_error == "raise":
                raise
            report.skipped.append((i, _short(s), exc.reason))
    return mols, report


def _open_sdf_text(path):
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"SDF file not found: {path}")
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as zf:
            names = [n for n in zf.namelist() if n.lower().endswith(".sdf")]
            if not names:
                raise ValueError(f"{path} holds no .sdf file (members: {zf.namelist()[:5]})")
            return zf.read(names[0]).decode("utf-8", errors="replace")
    return path.read_text(encoding="utf-8", errors="replace")


def read_sdf(path: PathLike, on_error: str = "raise", properties: bool = True) -> tuple[Any, ...]:
    """Read an SDF file (``.sdf`` or a ``.zip`` holding one) with its properties.

    Parameters
    ----------
    path : str or Path
    on_error : {"raise", "skip"}
        Empty or invalid records raise :class:`MoleculeReadError` (naming the record index
        and its first line), or are skipped and listed in the report.
    properties : bool
        Also return each molecule's SD properties (e.g. ``Description`` of ChEBI-20).

    Returns
    -------
    mols : list of rdkit.Chem.Mol
    props : list of dict (only if ``properties``)
    report : ReadReport
    """
    _check_on_error(on_error)
    text = _open_sdf_text(path)
    blocks = text.split("$$$$")
    if blocks and not blocks[-1].strip():
        blocks = blocks[:-1]
    mols, props, report = [], [], ReadReport()
    RDLogger.DisableLog("rdApp.*")
    try:
        for i, block in enumerate(blocks):
            if i > 0:  # drop the end of the preceding "$$$$" line, keep the title line
                block = block[2:] if block.startswith("\r\n") else block[1:] if block.startswith("\n") else block
            head = _short(block.splitlines()[0] if block.strip() else "")
            reason = None
            if not block.strip():
                reason = "empty SDF record"
            else:
                sup = Chem.SDMolSupplier()
                sup.SetData(block + "$$$$\n")
                mol: Any = sup[0] if len(sup) else None
                if mol is None:
                    reason = "RDKit could not parse or sanitise the record"
                elif mol.GetNumAtoms() == 0:
                    reason = "empty SDF record (no atoms)"
            if reason is not None:
                if on_error == "raise":
                    raise MoleculeReadError(i, head, reason)
                report.skipped.append((i, head, reason))
                continue
            mols.append(mol)
            report.kept.append(i)
            if properties:
                props.append(mol.GetPropsAsDict(includePrivate=False, includeComputed=False))
    finally:
        RDLogger.EnableLog("rdApp.*")
    return (mols, props, report) if properties else (mols, report)
