"""Evaluation metrics (scikit-learn order ``(y_true, y_pred)``), one module per family."""
from .labels import f1_samples, f1_samples_scorer

__all__ = ["f1_samples", "f1_samples_scorer"]
from .regression import arrmse, crossing_loss, pinball_loss, rrmse  # noqa: E402

__all__ += ["rrmse", "arrmse", "pinball_loss", "crossing_loss"]
from .ranking import hits_at_k, mean_reciprocal_rank, ranks_from_scores, top_k_accuracy, true_ranks  # noqa: E402

__all__ += ["top_k_accuracy", "hits_at_k", "mean_reciprocal_rank", "ranks_from_scores", "true_ranks"]
from .graphs import exact_graph_edit_distance, graph_edit_distance, mean_graph_edit_distance  # noqa: E402

__all__ += ["graph_edit_distance", "mean_graph_edit_distance", "exact_graph_edit_distance"]
