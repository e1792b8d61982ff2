"""Figures: returned ``Figure`` objects with the data asked for, saved only on request, and
matplotlib's global state (backend, pyplot) left alone."""
import json
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("matplotlib")
from matplotlib.figure import Figure  # noqa: E402

from sprokr import plotting  # noqa: E402
from sprokr.selection import perfect_h_curve, plot_curve, select_m_x  # noqa: E402


def test_plot_curve_returns_figure_and_saves_only_with_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fig = plotting.plot_curve([1, 2, 4], [3.0, 2.0, 1.5], xlabel="m", ylabel="err", mark=2)
    assert isinstance(fig, Figure)
    assert list(tmp_path.iterdir()) == []  # nothing written without a path
    (ax,) = fig.axes
    np.testing.assert_array_equal(ax.lines[0].get_ydata(), [3.0, 2.0, 1.5])
    assert ax.get_xlabel() == "m" and ax.lines[1].get_xdata()[0] == 2  # the marker
    fig = plotting.plot_curve([1, 2], [1, 0], path=tmp_path / "c.svg")
    assert (tmp_path / "c.svg").read_text().lstrip().startswith("<?xml")
    # the selection module's helper returns the same kind of figure
    assert isinstance(plot_curve([1, 2], [1, 0], tmp_path / "s.png", "m", "e"), Figure)
    assert (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="same length"):
        plotting.plot_curve([1, 2], [1])


def test_sketch_size_curves_from_selection_results(rng):
    Y = rng.standard_normal((200, 5)) @ rng.standard_normal((5, 30))
    ph = perfect_h_curve(Y[:150], Y[150:], "linear", [2, 5, 10], random_state=0)
    fig = plotting.plot_sketch_size_curve(ph)
    (ax,) = fig.axes
    np.testing.assert_allclose(ax.lines[0].get_ydata(), ph["projection_error"])
    assert ax.lines[1].get_xdata()[0] == ph["plateau_m"]
    ph2 = perfect_h_curve(Y[:150], Y[150:], "linear", [2, 5], random_state=0, candidates=Y[:150])
    assert len(plotting.plot_sketch_size_curve(ph2).axes) == 2  # metric + projection error
    X = rng.standard_normal((120, 3))
    sel = select_m_x(X[:80], Y[:80], X[80:], Y[80:120], [10, 20], budget_s=60.0, random_state=0,
                     input_kernel="gaussian", output_kernel="linear", lam=1e-3)
    fig = plotting.plot_sketch_size_curve(sel)
    a0, a1 = fig.axes
    np.testing.assert_allclose(a0.lines[0].get_ydata(), sel["errors"])
    np.testing.assert_allclose(a1.lines[0].get_ydata(), sel["fit_times"])
    with pytest.raises(TypeError, match="perfect_h_curve or select_m_x"):
        plotting.plot_sketch_size_curve({"x": 1})


def test_accuracy_vs_time_and_leverage_scores():
    res = {"SISOKR": [{"m": 100, "f1": 0.40, "fit_s": 0.2}, {"m": 400, "f1": 0.44, "fit_s": 0.6}],
           "IOKR": {"f1": 0.449, "fit_s": 3.1}}
    fig = plotting.plot_accuracy_vs_time(res, metric="f1")
    (ax,) = fig.axes
    assert [ln.get_label() for ln in ax.lines] == ["SISOKR", "IOKR"]
    np.testing.assert_allclose(ax.lines[0].get_xdata(), [0.2, 0.6])
    assert [t.get_text() for t in ax.texts] == ["m=100", "m=400"]
    with pytest.raises(KeyError, match="lacks"):
        plotting.plot_accuracy_vs_time({"a": {"fit_s": 1}}, metric="f1")
    fig = plotting.plot_leverage_scores([0.1, 0.9, 0.5], top=2)
    np.testing.assert_allclose(fig.axes[0].lines[0].get_ydata(), [0.9, 0.5])


def test_predicted_molecules_next_to_truth(tmp_path):
    pytest.importorskip("rdkit")
    truth = ["CCO", "c1ccccc1"]
    predicted = [["OCC", "CCC"], ["C1CCCCC1", "c1ccccc1"]]  # "OCC" is the same molecule as "CCO"
    fig = plotting.plot_molecules(predicted, truth, scores=[[0.9, 0.1], [0.5, 0.4]], path=tmp_path / "m.png")
    assert isinstance(fig, Figure) and (tmp_path / "m.png").stat().st_size > 0
    axes = np.array(fig.axes).reshape(2, 3)
    assert [ax.get_xlabel() for ax in axes[0]] == ["truth", "#1  0.9", "#2  0.1"]
    assert all(ax.images for ax in axes.ravel())
    from matplotlib.colors import to_rgba

    green = [[ax.spines["left"].get_edgecolor() == to_rgba("tab:green") for ax in row[1:]] for row in axes]
    assert green == [[True, False], [False, True]]  # framed: exactly the correct predictions
    with pytest.raises(ValueError, match="invalid SMILES"):
        plotting.plot_molecules(["not a smiles"])


SCRIPT = r"""
import json, sys
import matplotlib
before = matplotlib.get_backend()
import numpy as np
from sprokr import plotting
from sprokr.selection import plot_leverage_scores, perfect_h_curve
Y = np.random.default_rng(0).standard_normal((60, 4))
figs = [plotting.plot_curve([1, 2], [2, 1]), plot_leverage_scores([0.3, 0.2]),
        plotting.plot_sketch_size_curve(perfect_h_curve(Y[:40], Y[40:], "linear", [2, 3], random_state=0,
                                                        plot=sys.argv[1])),
        plotting.plot_accuracy_vs_time({"a": {"f1": 0.5, "fit_s": 1.0}}, metric="f1")]
try:
    import rdkit  # noqa: F401
    figs.append(plotting.plot_molecules(["CCO"], ["CCO"]))
except ImportError:
    pass
print(json.dumps({"before": before, "after": matplotlib.get_backend(), "n": len(figs),
                  "pyplot": "matplotlib.pyplot" in sys.modules}))
"""


def test_global_backend_and_pyplot_untouched(tmp_path):
    """Under a non-default backend (svg), the backend stays and pyplot is never imported."""
    import os

    env = dict(os.environ, MPLBACKEND="svg")
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "ph.png")], capture_output=True,
                         text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["before"] == res["after"] == "svg"
    assert res["pyplot"] is False and res["n"] >= 4
    assert (tmp_path / "ph.png").read_bytes()[:4] == b"\x89PNG"
