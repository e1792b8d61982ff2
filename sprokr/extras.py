"""What to install for an optional part of sprokr that is missing (packaging knowledge only).

The first-party plugins (sprokr-chem, sprokr-graphs, sprokr-ot) register through the same
hooks as any third party; this module only knows which *extra* provides which of their
component names, so that an error about a missing file reader, column type or depiction can
say what to install.  It imports no plugin.  Likewise for sprokr's own components that are
registered only when an extra's library is installed (the torch regressors): a model or a
``DSOKR(regressor=...)`` asking for one says which library is missing.
"""
from __future__ import annotations

import json
from typing import Optional

__all__ = ["PLUGIN_EXTRAS", "FIRST_PARTY", "FIRST_PARTY_DEMOS", "BUILTIN_EXTRAS", "install_hint", "provider_hint",
           "builtin_extra_hint"]

#: first-party plugin distribution of each extra (its directory under plugins/ is the
#: distribution name with ``_`` for ``-``)
PLUGIN_EXTRAS = {"chem": "sprokr-chem", "graphs": "sprokr-graphs", "ot": "sprokr-ot"}

#: components of the first-party plugins by kind and name -> extra providing them: what to
#: install when a model file, a data file or a figure asks for one that is not registered
FIRST_PARTY = {
    "reader": {".smi": "chem", ".smiles": "chem", ".smi.gz": "chem", ".smiles.gz": "chem", ".sdf": "chem",
               ".sdf.zip": "chem"},
    "column_type": {"smiles": "chem", "molecule": "chem"},
    "depiction": {"molecule": "chem"},
}
#: ``sprokr demo`` sections of the first-party plugins: name -> (extra, title)
FIRST_PARTY_DEMOS = {"molecules": ("chem", "molecule demo")}

#: sprokr's own components registered only when the library of an extra is installed
#: (``sprokr._builtins``), by kind and name -> (extra, library): what to install when one is asked for
BUILTIN_EXTRAS = {
    "regressor": {name: ("torch", "torch") for name in ("torch_mlp", "torch_smiles", "torch_text")},
}


def provider_hint(kind: str, name: str) -> Optional[str]:
    """How to get the component ``name`` of ``kind`` when a first-party plugin provides it.

    Parameters
    ----------
    kind : str
        A component kind (``"reader"`` (by suffix), ``"column_type"``, ``"depiction"``).
    name : str
        The component's name (a reader's suffix, e.g. ``".sdf"``).

    Returns
    -------
    str or None
        ``"'.sdf' is provided by the chem plugin (sprokr-chem): pip install ..."``, or
        None when no first-party plugin provides it.
    """
    extra = FIRST_PARTY.get(kind, {}).get(name)
    if extra is None:
        return None
    return f"{name!r} is provided by the {extra} plugin ({PLUGIN_EXTRAS[extra]}), not installed: {install_hint(extra)}"


def builtin_extra_hint(kind: str, name: str) -> Optional[str]:
    """What is missing for sprokr's own component ``name`` of ``kind`` when it needs an extra.

    Called when the name is not registered: sprokr registers such a component only when the
    extra's library is installed, so that library is missing.

    Parameters
    ----------
    kind : str
        A component kind (``"regressor"``).
    name : str
        The component's bare name (``"torch_mlp"``).

    Returns
    -------
    str or None
        ``"needs torch, which is not installed (the torch extra): pip install ..."``, to
        follow the component's name; None for a name that needs no extra.
    """
    extra = BUILTIN_EXTRAS.get(kind, {}).get(name)
    if extra is None:
        return None
    extra_name, library = extra
    return f"needs {library}, which is not installed (the {extra_name} extra): {install_hint(extra_name)}"


def install_hint(extra: str) -> str:
    """A ``pip`` command that installs the extra ``extra`` for *this* installation of sprokr.

    The first-party plugins are not on an index: they are installed from the source sprokr
    was installed from, which pip records (PEP 610 ``direct_url.json``).  An editable
    install from a checkout gets ``pip install -e <checkout>/plugins/<plugin>``, an install
    from a directory or archive ``pip install "<source>[extra]"``, anything else
    ``pip install "sprokr[extra]"``.

    Parameters
    ----------
    extra : str
        ``"chem"``, ``"graphs"``, ``"ot"``, ``"dask"``, ``"torch"``, ``"plot"`` or ``"all"``.

    Returns
    -------
    str
    """
    import importlib.metadata as md
    from urllib.parse import unquote, urlparse

    fallback = f'pip install "sprokr[{extra}]"'
    try:
        info = json.loads(md.distribution("sprokr").read_text("direct_url.json") or "null")
    except (md.PackageNotFoundError, ValueError, OSError):
        return fallback
    url = info.get("url", "") if isinstance(info, dict) else ""
    if not url.startswith("file://"):
        return fallback
    from pathlib import Path

    source = Path(unquote(urlparse(url).path))
    if info.get("dir_info", {}).get("editable"):
        plugin_dir = source / "plugins" / PLUGIN_EXTRAS[extra].replace("-", "_") if extra in PLUGIN_EXTRAS else None
        if plugin_dir is not None and plugin_dir.is_dir():
            return f'pip install -e "{plugin_dir}"'
        return f'pip install -e "{source}[{extra}]"'
    return f'pip install "{source}[{extra}]"'
