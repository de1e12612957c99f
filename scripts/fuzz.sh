#!/usr/bin/env bash
# Builds the libFuzzer targets of test/fuzz with Debian's clang 14
# (-fsanitize=fuzzer,address,undefined) over the runtime's readers, makes
# their seed corpora from the repository's test files and an artifact of
# examples/mlp, and runs each one (docs/fuzzing.md).
#
#   scripts/fuzz.sh [RUNS]      RUNS inputs per target (default 10000)
#   TCC_FUZZ_SECONDS=S          ... or at most S seconds each instead
#   TCC_FUZZ_OUT=DIR            build and corpus directory (build/fuzz)
#
#   TCC_BIN=PATH                the tcc for the artifact seeds (build/bin/tcc)
#
# Needs tcc (scripts/bootstrap.sh) for the artifact seeds. Exits
# non-zero on the first target that crashes, hangs (-timeout=10 s an input),
# leaks or trips a sanitizer; the reproducer is left in DIR/crashes.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-10000}
OUT=${TCC_FUZZ_OUT:-build/fuzz}
CXX=${TCC_FUZZ_CXX:-clang++-14}
JOBS=${TCC_JOBS:-2}
TCC=${TCC_BIN:-build/bin/tcc}
TARGETS=(safetensors npz tokens plan checkpoint)

command -v "$CXX" >/dev/null || { echo "fuzz: $CXX not found (apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 1; }
mkdir -p "$OUT/obj" "$OUT/crashes"
FLAGS=(-std=c++17 -O1 -g -fno-omit-frame-pointer
       -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
       -Iruntime -Itest/fuzz)

# The runtime sources the readers need (no LLVM/MLIR), compiled once each.
SOURCES=(runtime/data/{fileio,npz,safetensors,batcher,finite,sha256}.cpp
         runtime/plan/{calls,library_ops,liveness,plan,plan_read,plan_write,schedule}.cpp
         runtime/checkpoint/{checkpoint,compat,digests,fingerprint}.cpp)
objs=()
pids=()
for src in "${SOURCES[@]}"; do
  obj="$OUT/obj/$(echo "${src%.cpp}" | tr / _).o"
  objs+=("$obj")
  if [[ ! -f $obj || $src -nt $obj || -n $(find runtime -name '*.h' -newer "$obj" -o -name '*.inc' -newer "$obj" | head -1) ]]; then
    "$CXX" "${FLAGS[@]}" -c "$src" -o "$obj" &
    pids+=($!)
    if ((${#pids[@]} >= JOBS)); then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
  fi
done
for p in "${pids[@]}"; do wait "$p"; done
for t in "${TARGETS[@]}"; do
  "$CXX" "${FLAGS[@]/fuzzer-no-link/fuzzer}" "test/fuzz/fuzz_$t.cpp" "${objs[@]}" -lz \
    -o "$OUT/fuzz_$t"
done

# Seed corpora: the test fixtures, an artifact and a checkpoint of the MLP.
seeds="$OUT/seeds"
rm -rf "$seeds" && mkdir -p "$seeds"/{safetensors,npz,tokens,plan,checkpoint}
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

for t in "${TARGETS[@]}"; do
  corpus="$OUT/corpus/$t"
  mkdir -p "$corpus"
  limit=(-runs="$RUNS")
  [[ -n ${TCC_FUZZ_SECONDS:-} ]] && limit=(-max_total_time="$TCC_FUZZ_SECONDS")
  echo "== fuzz_$t: ${limit[*]}"
  # Inputs are capped at 64 KiB; -timeout makes a hang a failure.
  rm -rf "$OUT/tmp" && mkdir -p "$OUT/tmp"
  if ! (cd "$OUT/crashes" && TMPDIR="$(cd ../tmp && pwd)" "../fuzz_$t" "${limit[@]}" -max_len=65536 \
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
