"""sprokr's own components, registered through the same hooks as any third-party plugin.

Every built-in is named by ``"module:Name"`` (:func:`sprokr.hookspecs.lazy_factory`): the
plugin host imports no component module, so it sits below every component in the layers
of ``docs/architecture.md``, and building the registry imports nothing heavy.  The names
listed here are the packages' ``BUILTIN_KERNELS`` / ``BUILTIN_SKETCHES`` /
``BUILTIN_DECODERS`` / ``BUILTIN_LOSSES`` (``tests/test_plugins.py`` checks that they agree).
"""
from __future__ import annotations

from .hookspecs import hookimpl, lazy_factory

#: registered name -> public class, per kind (``"package:Name"``)
KERNELS = {
    "linear": "sprokr.kernels:LinearKernel",
    "polynomial": "sprokr.kernels:PolynomialKernel",
    "gaussian": "sprokr.kernels:GaussianKernel",
    "laplacian": "sprokr.kernels:LaplacianKernel",
    "cosine": "sprokr.kernels:CosineKernel",
    "tanimoto": "sprokr.kernels:TanimotoKernel",
    "minmax": "sprokr.kernels:MinMaxKernel",
    "precomputed": "sprokr.kernels:PrecomputedKernel",
    "text": "sprokr.kernels:TextKernel",
}
SKETCHES = {
    "subsample": "sprokr.sketches:SubSample",
    "nystrom": "sprokr.sketches:SubSample",
    "gaussian": "sprokr.sketches:GaussianSketch",
    "psparsified": "sprokr.sketches:PSparsified",
    "psr": "sprokr.sketches:PSR",
    "psg": "sprokr.sketches:PSG",
    "accumulation": "sprokr.sketches:Accumulation",
    "countsketch": "sprokr.sketches:CountSketch",
    "identity": "sprokr.sketches:IdentitySketch",
}
DECODERS = {"candidates": "sprokr.decoders:CandidateDecoder"}
LOSSES = {
    "square": "sprokr.losses:SquareLoss",
    "huber": "sprokr.losses:HuberLoss",
    "epsilon_insensitive": "sprokr.losses:EpsilonInsensitiveLoss",
    "pinball": "sprokr.losses:PinballLoss",
    "hinge": "sprokr.losses:HingeLoss",
}
EXECUTORS = {"local": "sprokr.numerics:LocalExecutor", "dask": "sprokr.numerics:DaskExecutor"}
READERS = {"csv": "sprokr.readers:CSVReader", "tsv": "sprokr.readers:TSVReader", "npz": "sprokr.readers:NPZReader",
           "arff": "sprokr.readers:ARFFReader"}
COLUMN_TYPES = {"numeric": "sprokr.column_types:NumericColumns", "text": "sprokr.column_types:TextColumn",
                "labels": "sprokr.column_types:LabelColumns"}
DEPICTIONS = {"text": "sprokr.plotting:TextDepiction"}
DEMOS = {"multilabel": "sprokr.cli.demo:MultilabelDemo"}


def _lazy(targets):
    return {name: lazy_factory(target) for name, target in targets.items()}


@hookimpl
def sprokr_input_kernels():
    return _lazy(KERNELS)


@hookimpl
def sprokr_output_kernels():
    return _lazy(KERNELS)


@hookimpl
def sprokr_sketches():
    return _lazy(SKETCHES)


@hookimpl
def sprokr_decoders():
    return _lazy(DECODERS)


@hookimpl
def sprokr_regressors():
    """Surrogate regressors of DSOKR (see :mod:`sprokr.models.regressors`).

    ``kernel_ridge`` (DSOKR with it is ISOKR), ``local_kernel_ridge`` (one sketched ridge per
    k-means region of the inputs), ``neighbour_kernel_ridge`` (one ridge on each query's
    nearest training samples), ``mlp`` (scikit-learn MLP with early
    stopping on the kernel-induced loss), ``ridge`` (plain scikit-learn ``Ridge``) and, only
    when torch is installed (extra ``torch``), ``torch_mlp`` (robust losses, residual MLP),
    ``torch_smiles`` (SMILES strings in: atom tokens, CNN or transformer) and ``torch_text``
    (texts in: word tokens, CNN or transformer).  Without torch, asking for one of those says
    that torch is missing (``sprokr.extras.BUILTIN_EXTRAS``, which lists them), not that the
    name is unknown.
    """
    import importlib.util

    # lazy: scikit-learn's linear_model / neural_network imports cost ~0.3 s
    regs = {
        "ridge": "sklearn.linear_model:Ridge",
        "mlp": "sprokr.models.regressors:MLPSurrogate",
        "kernel_ridge": "sprokr.models.regressors:KernelRidgeRegressor",
        "local_kernel_ridge": "sprokr.models.local_ridge:LocalKernelRidgeRegressor",
        "neighbour_kernel_ridge": "sprokr.models.local_ridge:NeighbourKernelRidgeRegressor",
    }
    if importlib.util.find_spec("torch") is not None:
        regs["torch_mlp"] = "sprokr.models.torch_regressors:TorchRegressor"
        regs["torch_smiles"] = "sprokr.models.torch_regressors:SmilesRegressor"
        regs["torch_text"] = "sprokr.models.torch_regressors:TextRegressor"
    return _lazy(regs)


@hookimpl
def sprokr_losses():
    """Losses of the sketched kernel machines (:mod:`sprokr.losses`)."""
    return _lazy(LOSSES)


@hookimpl
def sprokr_executors():
    """Executors of the chunked passes: ``local`` (this process) and ``dask``."""
    return _lazy(EXECUTORS)


@hookimpl
def sprokr_readers():
    """File readers (:mod:`sprokr.readers`): ``.csv``, ``.tsv``, ``.npz``, ``.arff``."""
    return _lazy(READERS)


@hookimpl
def sprokr_column_types():
    """Column types of the command line (:mod:`sprokr.column_types`): numeric, text, labels."""
    return _lazy(COLUMN_TYPES)


@hookimpl
def sprokr_depictions():
    """The fallback depiction of figures: any value written as text (:mod:`sprokr.plotting`)."""
    return _lazy(DEPICTIONS)


@hookimpl
def sprokr_demos():
    """``sprokr demo``'s multi-label section: IOKR and SISOKR on the shipped Bibtex sample."""
    return _lazy(DEMOS)
