"""Entry point of sprokr-chem: registers the molecule kernels on both sides."""
import sprokr


@sprokr.hookimpl
def sprokr_input_kernels():
    from .kernels import KERNELS

    return dict(KERNELS)


@sprokr.hookimpl
def sprokr_output_kernels():
    from .kernels import KERNELS

    return dict(KERNELS)
