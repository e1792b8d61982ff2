"""Estimators: the IOKR family (IOKR, SIOKR, ISOKR, SISOKR)."""
from .sisokr import IOKR, ISOKR, SIOKR, SISOKR
from .sketched_features import SketchedFeatures
from .dsokr import DSOKR, DSOKREnsemble
from .regressors import KernelRidgeRegressor, MLPSurrogate, TorchRegressor

__all__ = ["IOKR", "SIOKR", "ISOKR", "SISOKR", "SketchedFeatures"]
__all__ += ["DSOKR", "DSOKREnsemble", "KernelRidgeRegressor", "MLPSurrogate", "TorchRegressor"]
from .kernel_machine import JointQuantileRegressor, SketchedKernelMachine
from .output_matrix import graph_laplacian_matrix, joint_quantile_matrix

__all__ += ["SketchedKernelMachine", "JointQuantileRegressor", "graph_laplacian_matrix", "joint_quantile_matrix"]
from .rff import RFFKernelMachine  # noqa: E402

__all__ += ["RFFKernelMachine"]
