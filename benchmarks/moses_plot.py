"""The MOSES learning-curve figure from the JSON of ``benchmarks/moses.py`` runs.

    python benchmarks/moses.py --task smiles --json > smiles.out
    python benchmarks/moses.py --task properties --json > properties.out
    python benchmarks/moses_plot.py smiles.out properties.out --out docs/moses_learning_curve.png

Runs of the same task (e.g. the whole curve, then one longer DSOKR run at the largest
``n``) are merged into one row of the figure; a method measured twice at the same ``n``
is drawn with the later file's point.  The figure in the docs is drawn from the recorded
outputs in ``benchmarks/results/``:

    python benchmarks/moses_plot.py benchmarks/results/moses_smiles_curve.out \
        benchmarks/results/moses_smiles_dsokr_1.58M_20_epochs.out \
        benchmarks/results/moses_properties_1.58M.out \
        benchmarks/results/moses_properties_neighbours_1.58M.out

For each task: top-10 accuracy against the number of training molecules ``n`` (left) and
against the fit time (right; the baselines have no fit and are drawn at their neighbour
search time), every method of the run (SISOKR, DSOKR, exact IOKR at its largest ``n``,
nearest neighbour, k-NN regression).  Each input file's last line is the JSON object.
"""
from __future__ import annotations

import argparse
import json

STYLE = {"sisokr": ("SISOKR", "o-"), "dsokr": ("DSOKR", "s-"), "iokr": ("exact IOKR", "D"),
         "nn": ("nearest input", "v--"), "knn": ("k-NN regression", "^--"),
         "dsokr_local": ("DSOKR, regional ridges", "P-"), "dsokr_neighbours": ("DSOKR, neighbour ridges", "X-")}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runs", nargs="+", help="outputs of benchmarks/moses.py --json (JSON on the last line)")
    p.add_argument("--out", default="docs/moses_learning_curve.png")
    args = p.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks: dict = {}  # task -> {(method, n): run}, later files replacing earlier points
    for path in args.runs:
        with open(path) as fh:
            res = json.loads(fh.read().strip().splitlines()[-1])
        merged = tasks.setdefault(res["task"], {"task": res["task"], "points": {}})
        merged["points"].update({(r["method"], r["n"]): r for r in res["runs"]})
        merged["n_candidates"] = res.get("n_candidates", merged.get("n_candidates"))
    results = [dict(t, runs=list(t["points"].values())) for t in tasks.values()]
    fig, axes = plt.subplots(len(results), 2, figsize=(11, 4.2 * len(results)), squeeze=False)
    for row, res in zip(axes, results):
        for method, (label, fmt) in STYLE.items():
            runs = sorted((r for r in res["runs"] if r["method"] == method), key=lambda r: r["n"])
            if not runs:
                continue
            n = [r["n"] for r in runs]
            top10 = [r["top10"] for r in runs]
            t = [r["fit_s"] if method not in ("nn", "knn") else r.get("neighbours_s", r["decode_s"]) for r in runs]
            row[0].plot(n, top10, fmt, label=label)
            row[1].plot(t, top10, fmt, label=label)
        title = {"smiles": "SMILES -> molecule", "properties": "properties -> molecule"}.get(res["task"], res["task"])
        n_c = res.get("n_candidates")
        suffix = f" ({n_c:,} candidates)" if n_c else ""
        row[0].set(xscale="log", xlabel="training molecules n", ylabel="top-10 accuracy",
                   title=f"{title}{suffix}")
        row[1].set(xscale="log", xlabel="fit time (s; baselines: neighbour search)", ylabel="top-10 accuracy",
                   title=f"{title}: accuracy against time")
        for ax in row:
            xs = [x for line in ax.get_lines() for x in line.get_xdata()]
            if xs and max(xs) < 10 * min(xs):  # less than a decade: a log axis has no labels
                ax.set_xscale("linear")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(args.out)


if __name__ == "__main__":
    main()
