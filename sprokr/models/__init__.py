"""Estimators: the IOKR family, DSOKR, and sketched kernel machines with Lipschitz losses."""
from .dsokr import DSOKR, DSOKREnsemble
from .kernel_machine import JointQuantileRegressor, SketchedKernelMachine
from .local_ridge import LocalKernelRidgeRegressor, NeighbourKernelRidgeRegressor
from .output_matrix import graph_laplacian_matrix, joint_quantile_matrix
from .regressors import KernelRidgeRegressor, MLPSurrogate, TorchRegressor
from .rff import RFFKernelMachine
from .sisokr import IOKR, ISOKR, SIOKR, SISOKR
from .tokenizers import SmilesTokenizer, WordTokenizer
from .torch_regressors import SequenceRegressor, SmilesRegressor, TextRegressor

__all__ = [
    "IOKR", "SIOKR", "ISOKR", "SISOKR",
    "DSOKR", "DSOKREnsemble", "KernelRidgeRegressor", "LocalKernelRidgeRegressor", "MLPSurrogate", "NeighbourKernelRidgeRegressor", "TorchRegressor",
    "SequenceRegressor", "SmilesRegressor", "TextRegressor", "SmilesTokenizer", "WordTokenizer",
    "SketchedKernelMachine", "JointQuantileRegressor", "RFFKernelMachine",
    "graph_laplacian_matrix", "joint_quantile_matrix",
]
