#!/usr/bin/env bash
# The torch surrogate regressors and encoders (`torch_mlp`, `torch_smiles`, `torch_text`, the
# saved torch networks, the docstring examples of the torch modules) are skipped by the
# README's test command when PyTorch is absent (it is an optional extra).  Here PyTorch's CPU
# build is installed (`torch==2.13.0`; pip takes the CPU wheel kept on this machine, no CUDA
# libraries) and those tests run; a skip is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
python -c "import torch" 2>/dev/null || pip install "torch==2.13.0"
python -c "import torch; print('torch', torch.__version__)"
out=$(python -m pytest -q -rs tests/test_torch_encoders.py tests/test_dsokr.py tests/test_persistence.py \
      tests/test_plugins.py tests/test_docstring_examples.py -k "torch or Torch" 2>&1) || { printf '%s\n' "$out"; exit 1; }
printf '%s\n' "$out" | tail -3
if printf '%s\n' "$out" | grep -q "^SKIPPED"; then
    echo "torch tests were skipped although torch is installed" >&2
    exit 1
fi
