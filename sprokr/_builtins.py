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
    from sklearn.linear_model import Ridge
    from sklearn.neural_network import MLPRegressor

    return {"ridge": Ridge, "mlp": MLPRegressor}


@hookimpl
def sprokr_losses():
    from .losses import BUILTIN_LOSSES

    return dict(BUILTIN_LOSSES)
