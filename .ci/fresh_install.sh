#!/usr/bin/env bash
# Fresh install, end to end (issue 13, "done means"): in a new virtual environment,
# `pip install ".[all]"` from the checkout (a regular, non-editable install), then, from
# another directory, `sprokr demo` and `sprokr fit` / `predict` / `evaluate` / `select`
# on the samples shipped in the package (Bibtex multi-label, QM9 molecules), through the
# saved model files.  Uses only PyPI (pip's configured indexes) and the checkout; nothing
# else is downloaded.  A few minutes with a warm pip cache.
#
#   .ci/fresh_install.sh            # PYTHON=python3.12 .ci/fresh_install.sh for another interpreter
set -euo pipefail

CHECKOUT="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/sprokr-fresh.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
# nothing from the developer's environment: not the checkout on the path, not its data
unset PYTHONPATH SPROKR_DATA PYTHONHOME
export MPLBACKEND=Agg

step() { printf '\n== %s\n' "$*"; }
check() { printf '   ok: %s\n' "$*"; }
fail() { printf '   FAILED: %s\n' "$*" >&2; exit 1; }

step "copy of the checkout (tracked and new files; the build writes build/ and *.egg-info there, not in $CHECKOUT)"
SRC="$WORK/src"
mkdir -p "$SRC"
if git -C "$CHECKOUT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$CHECKOUT" && git ls-files -z --cached --others --exclude-standard |
        xargs -0 -I{} sh -c 'test -e "{}" && printf "%s\0" "{}"' | tar --null -T - -cf -) | tar -xf - -C "$SRC"
else
    cp -r "$CHECKOUT/." "$SRC"
fi
check "$SRC"

step "fresh virtual environment ($("$PYTHON" --version))"
"$PYTHON" -m venv "$WORK/venv"
VENV_PY="$WORK/venv/bin/python"
export PATH="$WORK/venv/bin:$PATH"
check "$WORK/venv"

step 'pip install "<checkout>[all]"  (non-editable: sprokr, sprokr-chem, sprokr-graphs, sprokr-ot, dask, matplotlib)'
t0=$SECONDS
# pip's messages go to the log; shown (without this machine's notes on missing local index
# directories) on failure or when it warns
if ! "$VENV_PY" -m pip install --quiet "$SRC[all]" 2> "$WORK/pip.log"; then
    cat "$WORK/pip.log" >&2
    fail "pip install"
fi
grep -v "is ignored: it is neither a file nor a directory" "$WORK/pip.log" >&2 || true
check "installed in $((SECONDS - t0)) s"

RUN="$WORK/elsewhere"          # every command runs from a directory that is not the checkout
mkdir -p "$RUN"
cd "$RUN"

# json_get FILE EXPR: evaluate the Python expression EXPR on the JSON document d of FILE
json_get() { "$VENV_PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
# expect FILE EXPR WHAT: fail unless EXPR holds on the JSON document of FILE
expect() { [ "$(json_get "$1" "$2")" = "True" ] || fail "$3: $2 on $(cat "$1")"; check "$3"; }

step "the installed package, not the checkout"
"$VENV_PY" - "$SRC" <<'EOF'
import importlib.metadata as md, pathlib, sys
import sprokr, sprokr_chem, sprokr_graphs, sprokr_ot
src = pathlib.Path(sys.argv[1]).resolve()
for mod in (sprokr, sprokr_chem, sprokr_graphs, sprokr_ot):
    path = pathlib.Path(mod.__file__).resolve()
    assert "site-packages" in path.parts and src not in path.parents, path
    print(f"   ok: {mod.__name__} {path.parent}")
pkg = pathlib.Path(sprokr.__file__).parent
assert (pkg / "py.typed").is_file() and (pkg / "data" / "qm9_sample.csv").is_file(), "package data missing"
assert md.distribution("sprokr").read_text("direct_url.json").count('"editable": true') == 0
print("   ok: py.typed and the data samples are installed; not an editable install")
EOF
sprokr --version
"$VENV_PY" -m sprokr --help >/dev/null && check "python -m sprokr --help"

step "benchmark data (not shipped): the error says how to give their location, no path inside site-packages"
"$VENV_PY" - <<'EOF'
from sprokr.datasets import load_bibtex
try:
    load_bibtex()
except FileNotFoundError as exc:
    msg = str(exc)
    assert "SPROKR_DATA" in msg and "--data" in msg and "site-packages" not in msg, msg
    print("   ok:", msg[:110] + " ...")
else:
    raise SystemExit("load_bibtex() found data in a fresh environment")
EOF

step "sprokr plugins: the three first-party plugins are registered through their entry points"
sprokr plugins --json > plugins.json
expect plugins.json '{"morgan_tanimoto", "wl", "fgw_barycenter"} <= {r["name"] for r in d}' \
    "morgan_tanimoto (chem), wl (graphs), fgw_barycenter (ot) registered"

step "sprokr demo --json: one JSON object on stdout, the text on stderr"
sprokr demo --json > demo.json 2> demo.txt
expect demo.json 'set(d) == {"multilabel", "molecules"}' "stdout is one JSON object with both demos"
expect demo.json 'all(r["f1"] > 0.2 for r in d["multilabel"].values())' "multi-label demo F1 > 0.2"
expect demo.json 'd["molecules"]["fingerprints"]["top10"] > 10 / 300' "molecule demo top-10 above chance (10/300)"
grep -q "sprokr demo" demo.txt && check "the text went to stderr"

step "sprokr samples --export data: the shipped samples as command-line files"
sprokr samples --export data --json > samples.json
expect samples.json 'len(d["files"]["bibtex"]) == 3 and len(d["files"]["qm9"]) == 4' "files written"
cd data

step "multi-label (Bibtex sample): fit -> model file -> predict / evaluate"
sprokr fit --config bibtex.toml --train bibtex_train.npz -o bibtex.sprokr --json > fit.json
expect fit.json 'd["n_train"] == 800' "fitted on 800 documents -> bibtex.sprokr"
sprokr predict bibtex.sprokr --input bibtex_test.npz -o tags.csv
[ "$(wc -l < tags.csv)" -eq 401 ] && check "tags.csv: header + 400 predicted tag sets" || fail "tags.csv rows"
sprokr evaluate bibtex.sprokr --test bibtex_test.npz --json > eval.json
expect eval.json 'd["f1_samples"] > 0.25' "evaluate: f1_samples $(json_get eval.json 'round(d["f1_samples"], 3)')"
"$VENV_PY" - <<'EOF'
# the CLI's predictions are the saved model's, read back from Python
import csv
import numpy as np
import sprokr
from sprokr.io import read_table
model = sprokr.load("bibtex.sprokr")
t = read_table("bibtex_test.npz")
tags = [c for c in t.columns if c.startswith("tag_")]
P = model.predict(np.asarray(t.column("X"), dtype=float))
rows = list(csv.DictReader(open("tags.csv")))
cli = [set(filter(None, r["prediction"].split(";"))) for r in rows]
assert cli == [{tags[j] for j in np.flatnonzero(p)} for p in P]
print("   ok: sprokr.load(bibtex.sprokr).predict equals the CLI's tags.csv")
EOF

step "molecules (QM9 sample): fit -> model file -> predict top-5 / evaluate over the candidate pool"
sprokr fit --config qm9.toml --train qm9_train.csv -o qm9.sprokr --json > fit.json
expect fit.json 'd["n_train"] == 240' "fitted on 240 molecules -> qm9.sprokr"
sprokr predict qm9.sprokr --input qm9_test.csv --candidates qm9_pool.smi --top-k 5 -o top5.csv
[ "$(wc -l < top5.csv)" -eq 301 ] && check "top5.csv: header + 60 queries x 5 SMILES" || fail "top5.csv rows"
sprokr evaluate qm9.sprokr --test qm9_test.csv --candidates qm9_pool.smi --json > eval.json
expect eval.json 'd["truth_in_candidates"] == 1.0 and d["top10"] > 10 / 300' \
    "evaluate: top10 $(json_get eval.json 'round(d["top10"], 3)') (chance 0.033), MRR $(json_get eval.json 'round(d["mrr"], 3)')"

step "sprokr select: lam path, perfect h (m_y) and m_x growth, one figure"
sprokr select --config qm9.toml --train qm9_train.csv -o chosen.toml --figure select.png --json > select.json
expect select.json 'd["figure_panels"] == ["lam path", "perfect h (output sketch size)", "input sketch size", "accuracy vs fit time"]' \
    "select.png panels: $(json_get select.json '", ".join(d["figure_panels"])')"
[ "$(head -c 4 select.png | od -An -c | tr -d ' ')" = '211PNG' ] && check "select.png is a PNG" || fail "select.png"
sprokr fit --config chosen.toml --train qm9_train.csv -o chosen.sprokr >/dev/null && check "the chosen configuration fits"

step "all checks passed (fresh install, $((SECONDS)) s in total)"
