"""Kernels: the :class:`Kernel` protocol, the numeric built-ins on vectors, ``"text"`` and ``"precomputed"``."""
from .base import Kernel, VectorKernel, fit_on_training_inputs, model_dtype, resolve_kernel
from .features import KernelFeatures
from .precomputed import GramBlock, PrecomputedKernel
from .text import TextKernel
from .vector import (
    CosineKernel,
    GaussianKernel,
    LaplacianKernel,
    LinearKernel,
    MinMaxKernel,
    PolynomialKernel,
    TanimotoKernel,
)

BUILTIN_KERNELS = {
    cls.name: cls
    for cls in (
        LinearKernel,
        PolynomialKernel,
        GaussianKernel,
        LaplacianKernel,
        CosineKernel,
        TanimotoKernel,
        MinMaxKernel,
        PrecomputedKernel,
        TextKernel,
    )
}

__all__ = ["Kernel", "VectorKernel", "fit_on_training_inputs", "resolve_kernel", "model_dtype", "KernelFeatures", "GramBlock", "BUILTIN_KERNELS", *(c.__name__ for c in BUILTIN_KERNELS.values())]
