"""Input validation of sprokr.metrics: clear errors naming the argument, never numpy's."""
import numpy as np
import pytest

from sprokr.metrics import arrmse, rrmse


def test_rrmse_names_a_y_train_mean_of_the_wrong_length(rng):
    Y = rng.standard_normal((20, 3))
    P = Y + 0.1 * rng.standard_normal((20, 3))
    mu = rng.standard_normal(3)
    want = np.sqrt(((Y - P) ** 2).sum(0) / ((Y - mu) ** 2).sum(0))
    np.testing.assert_allclose(rrmse(Y, P, mu), want)
    np.testing.assert_allclose(rrmse(Y, P, list(mu)), want)
    assert arrmse(Y[:, :1], P[:, :1], 0.5) == pytest.approx(rrmse(Y[:, 0], P[:, 0], [0.5])[0])  # a scalar: every target
    for bad in (np.zeros(2), np.zeros(4), np.zeros(1), np.zeros((1, 3)), np.zeros((3, 1))):
        for f in (rrmse, arrmse):
            with pytest.raises(ValueError, match=r"^y_train_mean must hold one mean per target: shape \(3,\) "
                                                 r"for the 3 target\(s\) of y_true, got shape "):
                f(Y, P, bad)
