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
from sprokr.model_selection import perfect_h_curve, select_m_x  # noqa: E402


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
    from sprokr_chem import plot_molecules

    truth = ["CCO", "c1ccccc1"]
    predicted = [["OCC", "CCC"], ["C1CCCCC1", "c1ccccc1"]]  # "OCC" is the same molecule as "CCO"
    fig = plot_molecules(predicted, truth, scores=[[0.9, 0.1], [0.5, 0.4]], path=tmp_path / "m.png")
    assert isinstance(fig, Figure) and (tmp_path / "m.png").stat().st_size > 0
    axes = np.array(fig.axes).reshape(2, 3)
    assert [ax.get_xlabel() for ax in axes[0]] == ["truth", "#1  0.9", "#2  0.1"]
    assert all(ax.images for ax in axes.ravel())
    from matplotlib.colors import to_rgba

    green = [[ax.spines["left"].get_edgecolor() == to_rgba("tab:green") for ax in row[1:]] for row in axes]
    assert green == [[True, False], [False, True]]  # framed: exactly the correct predictions
    with pytest.raises(ValueError, match="invalid SMILES"):
        plot_molecules(["not a smiles"])
    # the generic grid draws the same molecules through the registered depiction (sprokr-chem's)
    fig = plotting.plot_outputs(predicted, truth, scores=[[0.9, 0.1], [0.5, 0.4]])
    axes = np.array(fig.axes).reshape(2, 3)
    assert all(ax.images for ax in axes.ravel())
    assert [[ax.spines["left"].get_edgecolor() == to_rgba("tab:green") for ax in row[1:]] for row in axes] == green


def test_plot_outputs_falls_back_to_text_and_checks_its_arguments():
    Y = np.array([[1, 0, 1], [0, 1, 0]])
    fig = plotting.plot_outputs([[Y[0], Y[1]], [Y[1]]], [Y[0], Y[0]])  # label sets: no plugin draws them
    axes = np.array(fig.axes).reshape(2, 3)
    assert [ax.texts[0].get_text() for ax in axes[0]] == ["{0, 2}", "{0, 2}", "{1}"]
    assert not axes[1][2].axison and not axes[1][2].texts  # query 2 has one prediction only
    from matplotlib.colors import to_rgba

    assert axes[0][1].spines["left"].get_edgecolor() == to_rgba("tab:green")  # equal to the truth
    assert axes[0][2].spines["left"].get_edgecolor() == to_rgba("0.6")
    with pytest.raises(ValueError, match="unknown depiction 'nope'.*text"):
        plotting.plot_outputs(["a"], depiction="nope")
    with pytest.raises(ValueError, match="truth has 1 entries for 2 queries"):
        plotting.plot_outputs(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="empty"):
        plotting.plot_outputs([])


SCRIPT = r"""
import json, sys
import matplotlib
before = matplotlib.get_backend()
import numpy as np
from sprokr import plotting
from sprokr.model_selection import perfect_h_curve
Y = np.random.default_rng(0).standard_normal((60, 4))
figs = [plotting.plot_curve([1, 2], [2, 1]), plotting.plot_leverage_scores([0.3, 0.2]),
        plotting.plot_sketch_size_curve(perfect_h_curve(Y[:40], Y[40:], "linear", [2, 3], random_state=0,
                                                        plot=sys.argv[1])),
        plotting.plot_accuracy_vs_time({"a": {"f1": 0.5, "fit_s": 1.0}}, metric="f1")]
try:
    from sprokr_chem import plot_molecules
    figs.append(plot_molecules(["CCO"], ["CCO"]))
except ImportError:
    pass
figs.append(plotting.plot_outputs([["CCO", "a label"]], ["CCO"]))
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
    assert res["pyplot"] is False and res["n"] >= 5
    assert (tmp_path / "ph.png").read_bytes()[:4] == b"\x89PNG"


@pytest.fixture(scope="module")
def bibtex_selection():
    """select_model on the shipped Bibtex sample with every search that has a panel."""
    from sprokr import SISOKR
    from sprokr.datasets import load_bibtex_sample
    from sprokr.model_selection import select_model

    X, Y, _, _ = load_bibtex_sample()
    est = SISOKR(input_kernel="tanimoto", output_kernel="tanimoto", input_sketch="subsample", m_x=100,
                 output_sketch="psg", m_y=50, output_sketch_params={"p": 0.05})
    return select_model(est, X[:300], Y[:300], lams=[1e-4, 1e-2, 1.0], m_y_grid=[20, 40, 80],
                        m_x_grid=[30, 60, 120], n_iter_no_change=3, random_state=0)  # patience: try every m_x


def test_model_selection_figure_has_one_panel_per_search(bibtex_selection, tmp_path):
    res = bibtex_selection
    fig = plotting.plot_model_selection(res, title="SISOKR", path=tmp_path / "sel.png")
    assert isinstance(fig, Figure) and (tmp_path / "sel.png").read_bytes()[:4] == b"\x89PNG"
    lam_ax, ph_ax, mx_ax, time_ax = fig.axes
    assert [ax.get_title() for ax in fig.axes] == ["lam path", "perfect h (output sketch size)",
                                                   "input sketch size", "accuracy vs fit time"]
    growth = res["m_x"]
    assert growth["m"] == [30, 60, 120]
    # lam path: one line per m_x tried, then the chosen lam
    for line, scores in zip(lam_ax.lines, growth["scores"]):
        np.testing.assert_allclose(line.get_ydata(), scores)
        np.testing.assert_allclose(line.get_xdata(), res["grid"][0]["lams"])
    assert lam_ax.lines[len(growth["m"])].get_xdata()[0] == res["best_params"]["lam"]
    assert lam_ax.get_xscale() == "log"
    # perfect h: the curve of m_y and the plateau (the chosen m_y)
    np.testing.assert_allclose(ph_ax.lines[0].get_xdata(), res["perfect_h"]["m"])
    np.testing.assert_allclose(ph_ax.lines[0].get_ydata(), res["perfect_h"]["projection_error"])
    assert ph_ax.lines[1].get_xdata()[0] == res["best_params"]["m_y"] == res["perfect_h"]["plateau_m"]
    # m_x growth: best score per size, selected size marked; the same scores against fit time
    np.testing.assert_allclose(mx_ax.lines[0].get_ydata(), growth["best_scores"])
    assert mx_ax.lines[1].get_xdata()[0] == res["best_params"]["m_x"] == growth["selected_m"]
    np.testing.assert_allclose(time_ax.lines[0].get_xdata(), growth["fit_times"])
    np.testing.assert_allclose(time_ax.lines[0].get_ydata(), growth["best_scores"])
    assert [t.get_text() for t in time_ax.texts] == ["m_x=30", "m_x=60", "m_x=120"]
    # the m_x entry alone: score and fit time per size
    a0, a1 = plotting.plot_sketch_size_curve(growth).axes
    np.testing.assert_allclose(a0.lines[0].get_ydata(), growth["best_scores"])
    np.testing.assert_allclose(a1.lines[0].get_ydata(), growth["fit_times"])


def test_model_selection_figure_without_sketch_searches(bibtex_selection):
    res = {**bibtex_selection, "perfect_h": None, "m_x": None}
    (ax,) = plotting.plot_model_selection(res).axes
    best = max(res["grid"], key=lambda g: g["best_score"])
    np.testing.assert_allclose(ax.lines[0].get_ydata(), best["scores"])
    with pytest.raises(TypeError, match="select_model"):
        plotting.plot_model_selection({"m": [1]})


def test_moses_figure_merges_the_runs_of_one_task(tmp_path):
    # the recorded curve and a later run at the largest n make one row; the later point wins
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "benchmarks"))
    try:
        import moses_plot
    finally:
        sys.path.pop(0)

    def run(method, n, top10):
        return {"n": n, "method": method, "top10": top10, "fit_s": 1.0 + n / 1e4, "decode_s": 1.0}

    a = {"task": "smiles", "runs": [run("sisokr", 10, 0.2), run("dsokr", 100, 0.4)], "n_candidates": 50}
    b = {"task": "smiles", "runs": [run("dsokr", 100, 0.6)]}
    c = {"task": "properties", "runs": [run("dsokr_local", 100, 0.3), run("nn", 100, 0.2)]}
    paths = []
    for i, res in enumerate((a, b, c)):
        paths.append(tmp_path / f"{i}.out")
        paths[-1].write_text("a log line\n" + json.dumps(res) + "\n")
    figs = []
    import matplotlib.pyplot as plt

    real = plt.subplots
    plt_subplots = lambda *args, **kw: figs.append(real(*args, **kw)) or figs[-1]  # noqa: E731
    plt.subplots = plt_subplots
    try:
        moses_plot.main([str(p) for p in paths] + ["--out", str(tmp_path / "fig.png")])
    finally:
        plt.subplots = real
    fig, axes = figs[0]
    assert axes.shape == (2, 2) and (tmp_path / "fig.png").exists()
    lines = {ln.get_label(): ln for ln in axes[0, 0].get_lines()}
    assert list(lines["DSOKR"].get_ydata()) == [0.6]  # the later file's point
    assert "DSOKR, regional ridges" in {ln.get_label() for ln in axes[1, 0].get_lines()}


def test_model_selection_figure_ignores_a_skipped_grid_point(bibtex_selection):
    """A grid point skipped for scoring NaN at every lam (best_score NaN) was the 'best' line of
    the lam panel when it came first (max over NaN)."""
    kept = bibtex_selection["grid"][0]
    skipped = {**kept, "params": {"rcond": 1.0}, "scores": [float("nan")] * len(kept["scores"]),
               "best_lam": float("nan"), "best_score": float("nan")}
    res = {**bibtex_selection, "perfect_h": None, "m_x": None, "grid": [skipped, kept]}
    (ax,) = plotting.plot_model_selection(res).axes
    np.testing.assert_allclose(ax.lines[0].get_ydata(), kept["scores"])
