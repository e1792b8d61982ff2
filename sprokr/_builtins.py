"""sprokr's own components, registered through the same hooks as any third-party plugin."""
from __future__ import annotations

from .hookspecs import hookimpl


@hookimpl
def sprokr_input_kernels():
    from .kernels import BUILTIN_KERNELS

    return dict(BUILTIN_KERNELS)


@hookimpl
def sprokr_output_kernels():
    from .kernels import BUILTIN_KERNELS

    return dict(BUILTIN_KERNELS)


@hookimpl
def sprokr_sketches():
    from .sketches import BUILTIN_SKETCHES

    return dict(BUILTIN_SKETCHES)


@hookimpl
def sprokr_decoders():
    from .decoders import BUILTIN_DECODERS

    return dict(BUILTIN_DECODERS)


@hookimpl
def sprokr_regressors():
    """Surrogate regressors of DSOKR (see :mod:`sprokr.models.regressors`).

    ``kernel_ridge`` (DSOKR with it is ISOKR), ``mlp`` (scikit-learn MLP with early
    stopping on the kernel-induced loss), ``ridge`` (plain scikit-learn ``Ridge``) and, only
    when torch is installed (extra ``torch``), ``torch_mlp`` (robust losses, residual MLP),
    ``torch_smiles`` (SMILES strings in: atom tokens, CNN or transformer) and ``torch_text``
    (texts in: word tokens, CNN or transformer).
    """
    import importlib.util

    from .registry import lazy_factory

    # lazy: scikit-learn's linear_model / neural_network imports cost ~0.3 s
    regs = {
        "ridge": lazy_factory("sklearn.linear_model:Ridge"),
        "mlp": lazy_factory("sprokr.models.regressors:MLPSurrogate"),
        "kernel_ridge": lazy_factory("sprokr.models.regressors:KernelRidgeRegressor"),
    }
    if importlib.util.find_spec("torch") is not None:
        regs["torch_mlp"] = lazy_factory("sprokr.models.torch_regressors:TorchRegressor")
        regs["torch_smiles"] = lazy_factory("sprokr.models.torch_regressors:SmilesRegressor")
        regs["torch_text"] = lazy_factory("sprokr.models.torch_regressors:TextRegressor")
    return regs


@hookimpl
def sprokr_losses():
    """Losses of the sketched kernel machines (:mod:`sprokr.losses`)."""
    from .losses import BUILTIN_LOSSES

    return dict(BUILTIN_LOSSES)


@hookimpl
def sprokr_executors():
    """Executors of the chunked passes: ``local`` (this process) and ``dask``."""
    from .numerics import DaskExecutor, LocalExecutor

    return {"local": LocalExecutor, "dask": DaskExecutor}


@hookimpl
def sprokr_readers():
    """File readers (:mod:`sprokr.readers`): ``.csv``, ``.tsv``, ``.npz``, ``.arff``."""
    from .registry import lazy_factory

    return {name: lazy_factory(f"sprokr.readers:{cls}")
            for name, cls in (("csv", "CSVReader"), ("tsv", "TSVReader"), ("npz", "NPZReader"),
                              ("arff", "ARFFReader"))}


@hookimpl
def sprokr_column_types():
    """Column types of the command line (:mod:`sprokr.column_types`): numeric, text, labels."""
    from .registry import lazy_factory

    return {name: lazy_factory(f"sprokr.column_types:{cls}")
            for name, cls in (("numeric", "NumericColumns"), ("text", "TextColumn"), ("labels", "LabelColumns"))}


@hookimpl
def sprokr_depictions():
    """The fallback depiction of figures: any value written as text (:mod:`sprokr.plotting`)."""
    from .registry import lazy_factory

    return {"text": lazy_factory("sprokr.plotting:TextDepiction")}


@hookimpl
def sprokr_demos():
    """``sprokr demo``'s multi-label section: IOKR and SISOKR on the shipped Bibtex sample."""
    from .registry import lazy_factory

    return {"multilabel": lazy_factory("sprokr.cli.demo:MultilabelDemo")}
