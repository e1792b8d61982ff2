"""Entry point of sprokr-graphs: registers the graph kernels on both sides."""
import sprokr


def _kernels():
    from .wl import CoreWLKernel, GrakelKernel, WLKernel

    return {k.name: k for k in (WLKernel, CoreWLKernel, GrakelKernel)}


@sprokr.hookimpl
def sprokr_input_kernels():
    return _kernels()


@sprokr.hookimpl
def sprokr_output_kernels():
    return _kernels()
