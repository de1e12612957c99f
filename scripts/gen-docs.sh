#!/usr/bin/env bash
# Regenerates the reference pages that come from TableGen: the pass reference
# (docs/passes.md) and the op references of the tcc and exec dialects
# (docs/dialect.md, docs/exec-dialect.md).
# test/lit/Docs checks that the committed pages are current.
set -euo pipefail
cd "$(dirname "$0")/.."
TBLGEN=${MLIR_TBLGEN:-/usr/lib/llvm-22/bin/mlir-tblgen}
INC=${MLIR_INCLUDE:-/usr/lib/llvm-22/include}
"$TBLGEN" -gen-pass-doc -I "$INC" include/tcc/Transforms/Passes.td > docs/passes.md
"$TBLGEN" -gen-op-doc -I "$INC" -I dialects/tcc dialects/tcc/TccOps.td > docs/dialect.md
"$TBLGEN" -gen-op-doc -I "$INC" -I dialects/exec dialects/exec/ExecOps.td > docs/exec-dialect.md
