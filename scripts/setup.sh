#!/usr/bin/env bash
# The README's first command: set everything up on a fresh Debian machine,
# build tcc, and run the main job on the bundled example.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
echo
echo "== tcc eval: the bundled MLP (examples/mlp), checked against PyTorch's outputs"
build/bin/tcc eval examples/mlp/model.onnx --inputs examples/mlp/inputs.npz \
  --expected examples/mlp/expected.npz
