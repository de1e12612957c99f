"""`python -m tcc export CKPT --to OUT`: what `tcc export` runs."""

import sys

from .export import main

if len(sys.argv) < 2 or sys.argv[1] != "export":
    print("usage: python -m tcc export CKPT_DIR --to OUT.onnx|OUT.safetensors|OUT.pt",
          file=sys.stderr)
    sys.exit(1)
sys.exit(main(sys.argv[2:]))
