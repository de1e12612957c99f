#!/usr/bin/env bash
# Builds the libFuzzer targets of test/fuzz (the target tcc-fuzzers of the
# build: Debian's clang 14 with -fsanitize=fuzzer,address,undefined over the
# runtime's readers and the ONNX importer), makes their seed corpora from the
# repository's test files, ONNX's node tests and an artifact of examples/mlp,
# and runs each one (docs/fuzzing.md).
#
#   scripts/fuzz.sh [RUNS]      RUNS inputs per target (default 10000)
#   TCC_FUZZ_SECONDS=S          ... or at most S seconds each instead
#   TCC_FUZZ_OUT=DIR            corpus and log directory (build/fuzz)
#   TCC_FUZZ_TARGETS="a b"      only these targets (default: all six)
#   TCC_BUILD_DIR=DIR           the configured build (build)
#   TCC_BIN=PATH                the tcc for the artifact seeds (build/bin/tcc)
#
# Needs a configured and built tree (scripts/bootstrap.sh). Exits non-zero
# on the first target that crashes, hangs (-timeout=10 s an input), leaks or
# trips a sanitizer; the reproducer is left in DIR/crashes.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-10000}
OUT=${TCC_FUZZ_OUT:-build/fuzz}
BUILD=${TCC_BUILD_DIR:-build}
TCC=${TCC_BIN:-$BUILD/bin/tcc}
read -r -a TARGETS <<<"${TCC_FUZZ_TARGETS:-safetensors npz tokens plan checkpoint import}"

command -v clang++-14 >/dev/null || { echo "fuzz: clang++-14 not found (apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 1; }
cmake --build "$BUILD" -j "${TCC_JOBS:-2}" --target tcc-fuzzers
BIN=$(cd "$BUILD/test/fuzz" && pwd)
mkdir -p "$OUT/crashes"

# Seed corpora: the test fixtures, an artifact and a checkpoint of the MLP.
seeds="$OUT/seeds"
rm -rf "$seeds" && mkdir -p "$seeds"/{safetensors,npz,tokens,plan,checkpoint,import}
cp test/unit/fixtures/*.safetensors "$seeds/safetensors/"
cp test/unit/fixtures/*.npz test/unit/fixtures/*.npy examples/mlp/*.npz "$seeds/npz/"
if [[ -x $TCC ]]; then
  "$TCC" compile examples/mlp/model.onnx --loss 'mse(y,target)' \
    --optimizer adamw:lr=1e-2 --no-cuda -o "$seeds/mlp.tcc" >/dev/null
  cp "$seeds/mlp.tcc/weights.safetensors" "$seeds/safetensors/mlp-weights.safetensors"
  cp "$seeds/mlp.tcc/plan.json" "$seeds/plan/plan.json"
  { printf '\x01'; cat "$seeds/mlp.tcc/manifest.json"; } > "$seeds/plan/manifest"
  "$TCC" compile examples/mlp/model.onnx --no-cuda -o "$seeds/inf.tcc" >/dev/null
  cp "$seeds/inf.tcc/plan.json" "$seeds/plan/inference-plan.json"
  "$TCC" run "$seeds/mlp.tcc" --data examples/mlp/train.npz --steps 2 \
    --checkpoint-dir "$seeds/ck" --checkpoint-every 2 --progress none >/dev/null
  cp "$seeds/ck/step-2/state.json" "$seeds/checkpoint/state.json"
  cp "$seeds/ck/step-2/params.safetensors" "$seeds/safetensors/ckpt-params.safetensors"
  rm -rf "$seeds/mlp.tcc" "$seeds/inf.tcc" "$seeds/ck"
fi
printf '{"format_version": 1, "step": 1, "data_position": 0, "model": "", "rng": {}}' \
  > "$seeds/checkpoint/minimal.json"
# Token shards: raw uint16, and llm.c's header (20240520, 1, 16 tokens).
python3 - "$seeds/tokens" <<'PY'
import struct, sys
d = sys.argv[1]
open(d + "/raw.bin", "wb").write(struct.pack("<32H", *range(32)))
open(d + "/llmc.bin", "wb").write(struct.pack("<256i", 20240520, 1, 16, *([0] * 253))
                                  + struct.pack("<16H", *range(16)))
PY
# ONNX models: the MLP example and every 8th of the pinned onnx's node
# tests (test/conformance/gen_node_data.py; only the MLP without the venv).
cp examples/mlp/model.onnx "$seeds/import/mlp.onnx"
if [[ -x .venv/bin/python ]]; then
  .venv/bin/python test/conformance/gen_node_data.py "$OUT/node-tests" >/dev/null
  i=0
  for m in "$OUT"/node-tests/test_*/model.onnx; do
    (( i++ % 8 == 0 )) && cp "$m" "$seeds/import/$(basename "$(dirname "$m")").onnx"
  done
fi

for t in "${TARGETS[@]}"; do
  corpus="$OUT/corpus/$t"
  mkdir -p "$corpus"
  limit=(-runs="$RUNS")
  [[ -n ${TCC_FUZZ_SECONDS:-} ]] && limit=(-max_total_time="$TCC_FUZZ_SECONDS")
  echo "== fuzz_$t: ${limit[*]}"
  # Inputs are capped at 64 KiB; -timeout makes a hang a failure.
  rm -rf "$OUT/tmp" && mkdir -p "$OUT/tmp"
  if ! (cd "$OUT/crashes" && TMPDIR="$(cd ../tmp && pwd)" "$BIN/fuzz_$t" "${limit[@]}" -max_len=65536 \
        -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        "../corpus/$t" "../seeds/$t" 2>"../fuzz_$t.log"); then
    tail -40 "$OUT/fuzz_$t.log" >&2
    echo "fuzz: fuzz_$t failed; reproducer in $OUT/crashes" >&2
    exit 1
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$OUT/fuzz_$t.log" | tr '\n' ' '
  echo
done
rm -rf "$OUT/tmp"
echo "fuzz: ${#TARGETS[@]} targets, no crash, hang, leak or sanitizer report"
