"""sprokr's version, in one place: the package (``sprokr.__version__``), the manifest of a
saved model and ``sprokr --version`` read it here (a bottom-layer module: no imports)."""

__version__ = "0.1.0"

__all__ = ["__version__"]
