"""Evaluation metrics (scikit-learn order ``(y_true, y_pred)``), one module per family."""
from .labels import f1_samples, f1_samples_scorer

__all__ = ["f1_samples", "f1_samples_scorer"]
from .regression import arrmse, crossing_loss, pinball_loss, rrmse  # noqa: E402

__all__ += ["rrmse", "arrmse", "pinball_loss", "crossing_loss"]
