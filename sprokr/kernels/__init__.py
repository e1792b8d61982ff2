"""Kernels: the :class:`Kernel` protocol and the numeric built-ins on vectors."""
from .base import Kernel, VectorKernel
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
    )
}

__all__ = ["Kernel", "VectorKernel", "BUILTIN_KERNELS", *(c.__name__ for c in BUILTIN_KERNELS.values())]
