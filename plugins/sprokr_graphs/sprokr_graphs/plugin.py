"""Entry point of sprokr-graphs: registers the graph kernels on both sides (lazily) and
declares the WL feature vectors safe to save in the model format."""
import sprokr
from sprokr.registry import lazy_factory


def _kernels():
    return {"wl": lazy_factory("sprokr_graphs.wl:WLKernel"), "core_wl": lazy_factory("sprokr_graphs.wl:CoreWLKernel"),
            "grakel": lazy_factory("sprokr_graphs.grakel_kernel:GrakelKernel")}


@sprokr.hookimpl
def sprokr_input_kernels():
    return _kernels()


@sprokr.hookimpl
def sprokr_output_kernels():
    return _kernels()


@sprokr.hookimpl
def sprokr_saveable_classes():
    # the WL count vectors a fitted model keeps (prepared candidates, support points)
    return ["sprokr_graphs.wl:WLFeatures"]
