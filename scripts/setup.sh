#!/usr/bin/env bash
# The README's first command: set everything up on a fresh Debian machine,
# build tcc, and run the main job on the bundled example.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
echo
echo "== tcc eval: the bundled MLP's forward pass, checked against PyTorch's outputs"
build/bin/tcc eval examples/mlp/model.onnx --inputs examples/mlp/inputs.npz \
  --expected examples/mlp/expected.npz
echo
echo "== tcc compile: the MLP's training step (MSE loss, AdamW, cosine schedule) to an artifact"
rm -rf build/example-checkpoints build/example-log.csv
build/bin/tcc compile examples/mlp/model.onnx --loss 'mse(y,target)' \
  --optimizer adamw:lr=1e-2,weight_decay=0.01 \
  --lr-schedule cosine:warmup=5,total=40,min=1e-3 \
  -o build/example.tcc --report build/example-report.html
echo
echo "== tcc inspect: what the artifact holds"
build/bin/tcc inspect build/example.tcc
echo
echo "== tcc run: 40 steps on examples/mlp/train.npz in the CPU runtime"
build/bin/tcc run build/example.tcc --data examples/mlp/train.npz --steps 40 \
  --checkpoint-dir build/example-checkpoints --checkpoint-every 20 \
  --log build/example-log.csv
