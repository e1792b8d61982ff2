"""Losses: values, (sub)gradients, minimisers, validation, registry and plugin extension."""
import numpy as np
import pytest

from sprokr import hookimpl
from sprokr.losses import (
    EpsilonInsensitiveLoss,
    HingeLoss,
    HuberLoss,
    Loss,
    PinballLoss,
    SquareLoss,
)
from sprokr.metrics import crossing_loss, pinball_loss
from sprokr.registry import Registry, get_registry

SMOOTH_LOSSES = [SquareLoss(), HuberLoss(kappa=0.7), EpsilonInsensitiveLoss(epsilon=0.2),
                 PinballLoss(tau=[0.2, 0.5, 0.9]), HingeLoss()]


@pytest.mark.parametrize("loss", SMOOTH_LOSSES, ids=lambda l: type(l).__name__)
def test_gradient_matches_finite_differences(loss, rng):
    P = rng.standard_normal((30, 3))
    Y = np.sign(rng.standard_normal((30, 3))) if isinstance(loss, HingeLoss) else rng.standard_normal((30, 3))
    loss.validate(3)
    G = loss.gradient(P, Y)
    h = 1e-6
    for j in range(3):
        E = np.zeros_like(P)
        E[:, j] = h
        fd = (loss.value(P + E, Y) - loss.value(P - E, Y)) / (2 * h)
        # kinks have measure zero: random points avoid them
        np.testing.assert_allclose(G[:, j], fd, rtol=1e-4, atol=1e-6)


def test_loss_values():
    P, Y = np.array([[0.0], [3.0]]), np.array([[1.0], [0.0]])
    np.testing.assert_allclose(SquareLoss().value(P, Y), [0.5, 4.5])
    np.testing.assert_allclose(HuberLoss(kappa=1.0).value(P, Y), [0.5, 2.5])  # 1*(3 - 1/2)
    np.testing.assert_allclose(EpsilonInsensitiveLoss(epsilon=0.5).value(P, Y), [0.5, 2.5])
    np.testing.assert_allclose(PinballLoss(tau=0.9).value(P, Y), [0.9, 0.3])
    np.testing.assert_allclose(HingeLoss().value(np.array([[2.0], [0.5]]), np.ones((2, 1))), [0.0, 0.5])


def test_multi_output_huber_uses_residual_norm():
    P, Y = np.array([[3.0, 4.0]]), np.zeros((1, 2))  # |r| = 5
    np.testing.assert_allclose(HuberLoss(kappa=1.0).value(P, Y), [4.5])
    np.testing.assert_allclose(HuberLoss(kappa=1.0).gradient(P, Y), [[0.6, 0.8]])


@pytest.mark.parametrize("tau", [0.1, 0.5, 0.8])
def test_pinball_minimiser_is_the_quantile(tau, rng):
    y = rng.exponential(size=1001)[:, None]
    grid = np.linspace(0, 4, 801)
    risks = [PinballLoss(tau=tau).value(np.full_like(y, c), y).mean() for c in grid]
    assert abs(grid[int(np.argmin(risks))] - np.quantile(y, tau)) < 0.02


def test_pinball_metric_matches_loss_and_crossing(rng):
    taus = np.array([0.1, 0.5, 0.9])
    y = rng.standard_normal(50)
    Q = rng.standard_normal((50, 3))
    expected = PinballLoss(tau=taus).value(Q, np.repeat(y[:, None], 3, axis=1)).mean()
    assert pinball_loss(y, Q, taus) == pytest.approx(expected)
    assert crossing_loss(np.sort(Q, axis=1), taus) == 0.0
    assert crossing_loss(np.array([[1.0, 0.5, 0.7]])) == pytest.approx(0.5)


@pytest.mark.parametrize("make", [lambda: HuberLoss(kappa=-1.0), lambda: HuberLoss(kappa=0.0),
                                  lambda: EpsilonInsensitiveLoss(epsilon=-0.1),
                                  lambda: PinballLoss(tau=0.0), lambda: PinballLoss(tau=1.2),
                                  lambda: PinballLoss(tau=[0.1, 0.5])])
def test_invalid_loss_parameters(make):
    with pytest.raises(ValueError):
        make().validate(3)


def test_registry_and_plugin_loss():
    assert {"square", "huber", "epsilon_insensitive", "pinball", "hinge"} <= set(get_registry().names("loss"))
    assert get_registry().create("loss", "huber", {"kappa": 2.0}, base=Loss).kappa == 2.0

    class LogCosh(Loss):
        def value(self, P, Y):
            return np.sum(np.log(np.cosh(P - Y)), axis=1)

        def gradient(self, P, Y):
            return np.tanh(P - Y)

    class Plugin:
        @hookimpl
        def sprokr_losses(self):
            return {"logcosh": LogCosh}

    reg = Registry(entry_points=False)
    reg.register(Plugin(), name="logcosh-plugin")
    loss = reg.create("loss", "logcosh", base=Loss)
    assert isinstance(loss, LogCosh)
    assert reg.get("loss", "logcosh").plugin == "logcosh-plugin"


SCALAR = [SquareLoss(), HuberLoss(kappa=0.7), PinballLoss(tau=0.3), EpsilonInsensitiveLoss(epsilon=0.4), HingeLoss()]


@pytest.mark.parametrize("loss", SCALAR, ids=lambda l: type(l).__name__)
def test_curvature_matches_finite_differences_of_the_gradient(loss, rng):
    """The entry-wise second derivative Newton uses: of the loss when smooth, else of its
    Moreau envelope, equal to the gradient's finite difference away from the band edges."""
    Y = np.where(rng.random((300, 1)) < 0.5, -1.0, 1.0) if isinstance(loss, HingeLoss) else rng.normal(size=(300, 1))
    P = Y + rng.normal(scale=0.8, size=(300, 1))
    f = loss if loss.smooth else loss.smoothed(0.25)
    h, eps = f.curvature(P, Y), 1e-7
    fd = (f.gradient(P + eps, Y) - f.gradient(P - eps, Y)) / (2 * eps)
    # entries within eps of a piece boundary have one-sided derivatives: skip them
    mask = np.abs(fd - (f.gradient(P + 2 * eps, Y) - f.gradient(P, Y)) / (2 * eps)) < 1e-3
    assert mask.mean() > 0.95
    np.testing.assert_allclose(h[mask], fd[mask], atol=1e-5)
    assert set(np.unique(h)) <= {0.0, 1.0, 4.0}  # piecewise constant: 0, 1 (square/Huber) or 1/mu


@pytest.mark.parametrize("loss", SCALAR[2:], ids=lambda l: type(l).__name__)
def test_piecewise_linear_description_matches_the_loss(loss, rng):
    """Kinks and slopes: the loss is linear with the given slope between consecutive kinks."""
    Y = np.where(rng.random((50, 1)) < 0.5, -1.0, 1.0) if isinstance(loss, HingeLoss) else rng.normal(size=(50, 1))
    pts, slopes = loss.piecewise_linear(Y)
    pts = np.broadcast_to(pts, Y.shape + (np.shape(pts)[-1],))
    slopes = np.broadcast_to(slopes, Y.shape + (pts.shape[-1] + 1,))
    assert np.all(np.diff(pts, axis=-1) >= 0) and np.all(np.diff(slopes, axis=-1) > 0)  # convex
    edges = np.concatenate([pts[..., :1] - 3.0, pts, pts[..., -1:] + 3.0], axis=-1)
    for k in range(slopes.shape[-1]):
        a = edges[..., k] + 0.25 * (edges[..., k + 1] - edges[..., k])
        b = edges[..., k] + 0.75 * (edges[..., k + 1] - edges[..., k])
        ok = b > a
        slope = (loss.value(b, Y) - loss.value(a, Y))[ok[:, 0]] / (b - a)[ok]
        np.testing.assert_allclose(slope, slopes[..., k][ok], atol=1e-12)


@pytest.mark.parametrize("loss", [HuberLoss(kappa=0.7), EpsilonInsensitiveLoss(epsilon=0.3).smoothed(0.25),
                                  EpsilonInsensitiveLoss(epsilon=0.0).smoothed(0.25)],
                         ids=["huber", "epsilon_envelope", "l2_envelope"])
def test_radial_losses_give_hessian_blocks_for_vector_targets(loss, rng):
    """On a residual norm the outputs are coupled: ``curvature`` gives the per-sample d x d
    Hessians, equal to the gradient's finite differences (column by column) away from the
    band edges, symmetric and positive semi-definite."""
    Y = rng.normal(size=(400, 3))
    P = Y + rng.normal(scale=0.5, size=(400, 3))
    H, eps = loss.curvature(P, Y), 1e-7
    assert H.shape == (400, 3, 3)
    fd = np.stack([(loss.gradient(P + eps * e, Y) - loss.gradient(P - eps * e, Y)) / (2 * eps) for e in np.eye(3)],
                  axis=2)
    ok = np.abs(H - fd).max(axis=(1, 2)) < 1e-5
    assert ok.mean() > 0.97  # the others sit within eps of a band edge
    np.testing.assert_array_equal(H, H.transpose(0, 2, 1))
    assert np.linalg.eigvalsh(H).min() >= -1e-12


def test_radial_losses_have_no_kinks_for_vector_targets():
    Y = np.ones((3, 2))
    assert EpsilonInsensitiveLoss().piecewise_linear(Y) is None
    assert PinballLoss(tau=[0.2, 0.8]).piecewise_linear(Y)[1].shape == (1, 2, 2)


@pytest.mark.parametrize("loss, name", [(HuberLoss, "kappa"), (EpsilonInsensitiveLoss, "epsilon")])
def test_loss_parameters_that_are_not_python_or_numpy_numbers_are_named(loss, name):
    """A ``fractions.Fraction`` is a ``numbers.Real``: it passed the type test and ended in
    numpy's TypeError from ``np.isfinite``; a bool is not a number."""
    from fractions import Fraction

    for value in (Fraction(1, 10), True, "0.1"):
        with pytest.raises(ValueError, match=rf"{name} must be a real number >= 0, got"):
            loss(**{name: value}).validate(1, np.zeros((3, 1)))
    loss(**{name: np.float32(0.5)}).validate(1, np.zeros((3, 1)))
