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
    when torch is installed (extra ``torch``), ``torch_mlp`` (robust losses).
    """
    from sklearn.linear_model import Ridge

    from .models.regressors import KernelRidgeRegressor, MLPSurrogate, TorchRegressor, torch_available

    regs = {"ridge": Ridge, "mlp": MLPSurrogate, "kernel_ridge": KernelRidgeRegressor}
    if torch_available():
        regs["torch_mlp"] = TorchRegressor
    return regs


@hookimpl
def sprokr_losses():
    """Losses of the sketched kernel machines (:mod:`sprokr.losses`)."""
    from .losses import BUILTIN_LOSSES

    return dict(BUILTIN_LOSSES)
