#!/usr/bin/env bash
# The project's pinned Python environment in .venv (ignored by git): current
# PyTorch (its dynamo-based ONNX exporter), torchvision, onnx, onnxscript,
# onnxruntime, transformers, safetensors, numpy, pytest, cmake (>= 3.26,
# which ONNX's C++ build needs), nanobind (the Python package's extension,
# python/) and scikit-build-core (its `pip install .`). Every package,
# direct or not, is pinned in
# python/requirements.lock. Idempotent: a venv made from the same lock file
# is kept. The PyPI torch wheel is CUDA-built (it also runs on the CPU):
# about 5.9 GB installed, 3 to 4 minutes on a fast link (see the README).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv
LOCK=python/requirements.lock
want=$(sha256sum <"$LOCK" | cut -d' ' -f1)
stamp=$VENV/.tcc-lock-sha256
if [[ -x $VENV/bin/python && -f $stamp && $(cat "$stamp") == "$want" ]]; then
  exit 0
fi
echo "tcc: creating the Python environment $VENV from $LOCK (large: PyTorch)"
start=$SECONDS
python3 -m venv "$VENV"
"$VENV/bin/pip" install --disable-pip-version-check --no-input -q -r "$LOCK"
echo "$want" >"$stamp"
echo "tcc: $VENV ready in $((SECONDS - start)) s ($(du -sh "$VENV" | cut -f1))"
