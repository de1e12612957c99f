#!/usr/bin/env bash
# The GPU bring-up in one command, ON THE GPU MACHINE, from the repository
# root, with build-carry/ and build-bench/ carried (test/gpu/bundle.sh made
# them here). ../shared/gpu-bringup.md is the checklist; this runs:
#
#   phase 1, correctness (concurrently: none of it is timed)
#     gpu-tests   the ctest `gpu` entry (tcc-gpu-tests), verbose
#     models      test/gpu/check_models.py check: CUDA vs PyTorch and the CPU
#                 backend, fp32/bf16/fp16, graphs == eager, remat == plain
#     memcheck    compute-sanitizer --tool memcheck over tcc-gpu-tests
#     racecheck   compute-sanitizer --tool racecheck over the kernel tests
#   phase 2, alone on the GPU
#     attention   test/bench/attention_bench.cpp (this tree's kernels and
#                 an A/B commit's) and attention_torch.py (PyTorch's sdpa)
#     bench-fp32, bench-bf16   test/bench/gpt_bench.py --stage run, GPT-2
#                 124M, PyTorch eager and torch.compile in the same run,
#                 tcc-run --profile
#     bench-VARIANT   the GPT-2 variants of bench-config.sh's EXTRA_BENCHES
#                 (a memory budget, --accum) that were carried
#     bench-pad-fp32, bench-pad-bf16   test/bench/pad_skip_bench.py --stage
#                 run: a BERT-base-size encoder at 0-75% padding, --pad-skip
#                 auto vs off, and PyTorch eager on the padded batch
#
# Every step has a time limit and writes its log, so a late failure
# leaves the rest. The last lines are a
# summary table. Environment: PHASES (default "1 2"), BENCH_STEPS (10),
# BENCH_WARMUP (3), T1 (phase-1 limit, s), TB (per benchmark limit, s),
# RACECHECK_FILTER (the gtest filter racecheck runs; default the kernels),
# MODELS_ONLY (check_models.py --only: a comma list of case names),
# SANITIZERS=0 (skip memcheck and racecheck), BENCH_PRECISIONS ("fp32
# bf16"), BENCH_BASELINES_fp32 / _bf16 (gpt_bench.py --baselines),
# PAD_BENCH=0 (skip bench-pad), PAD_PRECISIONS ("fp32 bf16"), ATTENTION=0
# (skip the attention kernels' benchmark).
set -uo pipefail
cd "$(dirname "$0")/../.."
# PAD_ARGS, EXTRA_BENCHES, extra_work (bundle.sh compiles with the same).
source test/gpu/bench-config.sh
ROOT=$PWD
# Logs go to build-bundle/out; the device tool returns at most 8 files, so
# $OUT gets summary.txt (written as the steps finish) and logs.tgz (at exit).
FINAL=${OUT:-$ROOT/build-bundle}
OUTD=$ROOT/build-bundle/out
rm -rf "$OUTD"; mkdir -p "$OUTD" "$FINAL"
T0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$OUTD/summary.txt"; cp "$OUTD/summary.txt" "$FINAL/"; }
trap 'cp "$OUTD/summary.txt" "$FINAL/"; tar -czf "$FINAL/logs.tgz" -C "$ROOT/build-bundle" out' EXIT

if [[ -f build-carry/bundle.tgz && ! -x build-bundle/bin/tcc-run ]]; then
  tar -xzf build-carry/bundle.tgz
fi
export PATH=$PATH:/usr/local/cuda/bin
# tcc's binaries get the bundled OpenBLAS and, where the loader does not
# find them, the toolkit's CUDA 13 libraries; PyTorch keeps its own (so the
# library path is set for tcc alone, through build-bundle/wrap/).
BIN=$ROOT/build-bundle/bin
LIBS=$ROOT/build-bundle/lib
if LD_LIBRARY_PATH=$LIBS ldd "$BIN/tcc-run" | grep -q "=> not found"; then
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
           "$(dirname "$(find / -xdev -name 'libcublasLt.so.13*' 2>/dev/null | head -1)")"; do
    if [[ -e $d/libcublasLt.so.13 ]]; then LIBS=$LIBS:$d; break; fi
  done
fi
# NCCL (dlopened by the runtime for test/unit/gpu/CudaNcclTest.cpp): the
# toolkit's, or PyTorch's wheel's, when the loader does not find it.
if ! ldconfig -p 2>/dev/null | grep -q libnccl.so.2; then
  nccl=$(find /usr/local/cuda/lib64 / -xdev -name 'libnccl.so.2' 2>/dev/null | head -1)
  [[ -n $nccl ]] && LIBS=$LIBS:$(dirname "$nccl")
fi
# cuDNN for the conv steps (runtime/kernels/cuda/cudnn_conv.h): the system's
# libcudnn.so.9, else PyTorch's pip copy (nvidia-cudnn), whose directory
# also holds the sub-libraries the libcudnn.so.9 shim loads.
if [[ -z ${TCC_CUDNN_LIBRARY:-} ]] && ! ldconfig -p | grep "libcudnn.so.9 " >/dev/null; then
  d=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null)
  if [[ -n $d && -e $d/libcudnn.so.9 ]]; then
    export TCC_CUDNN_LIBRARY=$d/libcudnn.so.9
    LIBS=$LIBS:$d
  fi
fi
mkdir -p build-bundle/wrap
for b in tcc-run tcc-gpu-tests; do
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %s "$@"\n' \
    "$LIBS" "$BIN/$b" >build-bundle/wrap/$b
  chmod +x build-bundle/wrap/$b
done
# The GPU tests were built at /work/main (fixture and kernel paths are
# compiled in); make that path this checkout.
if [[ ! -e /work/main/test/unit/fixtures ]]; then mkdir -p /work; ln -sfn "$ROOT" /work/main; fi
[[ -x /usr/bin/c++ ]] || ln -s "$(command -v g++)" /usr/bin/c++ 2>/dev/null
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
  nvcc --version | tail -1
  python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name())'
  echo "tcc library path: $LIBS"
  LD_LIBRARY_PATH=$LIBS ldd "$BIN/tcc-run" | grep -E "not found|cublas|cudart|openblas"
  echo "cuDNN: ${TCC_CUDNN_LIBRARY:-$(ldconfig -p | grep -m1 'libcudnn.so.9 ' || echo 'none (conv on tcc kernels)')}"
} >"$OUTD/env.txt" 2>&1
stamp "env: $(head -2 "$OUTD/env.txt" | tail -1)"
stamp "$(grep -m1 '^cuDNN: ' "$OUTD/env.txt")"
if grep -q "=> not found" "$OUTD/env.txt"; then
  stamp "missing libraries: $(grep '=> not found' "$OUTD/env.txt" | tr '\n' ' ')"
fi
W=$ROOT/build-bundle/wrap
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
PHASES=${PHASES:-1 2}

if [[ " $PHASES " == *" 1 "* ]]; then
  T1=${T1:-150}
  ( timeout "$T1" "$W/tcc-gpu-tests" --gtest_output=xml:"$OUTD/gpu-tests.xml" \
      >"$OUTD/gpu-tests.log" 2>&1; echo $? >"$OUTD/gpu-tests.rc" ) &
  ( timeout "$T1" python3 test/gpu/check_models.py check --dir build-bundle/models \
      --tcc-run "$W/tcc-run" --log-dir "$OUTD" ${MODELS_ONLY:+--only "$MODELS_ONLY"} \
      >"$OUTD/models.out" 2>&1
    echo $? >"$OUTD/models.rc" ) &
  if [[ ${SANITIZERS:-1} == 1 ]]; then
  # --report-api-errors no: NCCL's communicator set-up asks for attributes
  # of kernels it has no sm_90 image of (cudaErrorNoKernelImageForDevice,
  # handled inside NCCL); memory errors are still reported.
  ( LD_LIBRARY_PATH=$LIBS timeout "$T1" "$SAN" --tool memcheck --leak-check no \
      --report-api-errors no --error-exitcode 3 "$BIN/tcc-gpu-tests" >"$OUTD/memcheck.log" 2>&1; echo $? >"$OUTD/memcheck.rc" ) &
  ( LD_LIBRARY_PATH=$LIBS timeout "$T1" "$SAN" --tool racecheck --error-exitcode 3 \
      "$BIN/tcc-gpu-tests" \
      --gtest_filter="${RACECHECK_FILTER:-Gpu.*:Gemm.*:HalfDispatch.*:Types/HalfKernels.*}" >"$OUTD/racecheck.log" 2>&1
    echo $? >"$OUTD/racecheck.rc" ) &
  fi
  wait
  for s in gpu-tests models memcheck racecheck; do
    stamp "$s: exit $(cat "$OUTD/$s.rc" 2>/dev/null || echo '?') (124 = time limit)"
  done
  grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" "$OUTD/gpu-tests.log" | tee -a "$OUTD/summary.txt"
  grep -m1 "cuDNN not loaded" "$OUTD/gpu-tests.log" | tee -a "$OUTD/summary.txt"
  grep -E "ERROR SUMMARY|Error|error" "$OUTD/memcheck.log" | sort | uniq -c | head -8 | tee -a "$OUTD/summary.txt"
  grep -E "RACECHECK SUMMARY|hazard" "$OUTD/racecheck.log" | sort | uniq -c | head -5 | tee -a "$OUTD/summary.txt"
  grep -h FAIL "$OUTD/check_models.txt" | head -20 | tee -a "$OUTD/summary.txt"
  grep -E "Traceback|Error" "$OUTD/models.out" | head -3 | tee -a "$OUTD/summary.txt"
  tail -1 "$OUTD/models.out" | tee -a "$OUTD/summary.txt"
fi

if [[ " $PHASES " == *" 2 "* ]]; then
  TB=${TB:-150}
  # The attention kernels alone at GPT-2's shape: this tree's, the A/B
  # commit's (bundle.sh) and PyTorch's sdpa, one after the other.
  if [[ ${ATTENTION:-1} == 1 && -x build-bundle/bin/attention-bench ]]; then
    {
      timeout 60 "$BIN/attention-bench"
      [[ -x build-bundle/bin/attention-bench-ab ]] &&
        echo "A/B: the kernels of $(cat build-bundle/bin/attention-bench-ab.commit):" &&
        timeout 60 build-bundle/bin/attention-bench-ab
      timeout 90 python3 test/bench/attention_torch.py
    } >"$OUTD/attention.log" 2>&1
    stamp "attention-bench: exit $?"
    grep -E "^attention|^A/B" "$OUTD/attention.log" | tee -a "$OUTD/summary.txt"
  fi
  for p in ${BENCH_PRECISIONS:-fp32 bf16}; do
    extra=()
    [[ $p == fp32 ]] && extra=(--tf32)
    bl=BENCH_BASELINES_$p
    [[ -n ${!bl:-} ]] && extra+=(--baselines "${!bl}")
    PYTHONUNBUFFERED=1 TCC_BENCH_NO_DOCS=1 timeout "$TB" python3 test/bench/gpt_bench.py \
      --config gpt2-124m --stage run --device cuda --precision $p "${extra[@]}" \
      --steps "${BENCH_STEPS:-10}" --warmup "${BENCH_WARMUP:-3}" --tcc "$W" \
      >"$OUTD/bench-$p.log" 2>&1
    stamp "bench-$p: exit $?"
    w=build-bench/gpt2-124m-$p-b8-t1024
    [[ -f $w/section.md ]] && cp "$w/section.md" "$OUTD/section-$p.md"
    [[ -f $w/result.json ]] && cp "$w/result.json" "$OUTD/result-$p.json"
    [[ -f $w/profile.json ]] && cp "$w/profile.json" "$OUTD/profile-$p.json"
    grep -E "^\|" "$OUTD/bench-$p.log" | head -8 | tee -a "$OUTD/summary.txt"
  done
  # The variants of EXTRA_BENCHES (bench-config.sh) that were carried.
  while read -r p flag bl; do
    w=$(extra_work "$p" "$flag")
    [[ -d $w ]] || continue
    name=bench-$(basename "$w" | sed 's/^gpt2-124m-//')
    extra=(--work "$w" --baselines "${bl/none/}")
    [[ $p == fp32 ]] && extra+=(--tf32)
    PYTHONUNBUFFERED=1 TCC_BENCH_NO_DOCS=1 timeout "$TB" python3 test/bench/gpt_bench.py \
      --config gpt2-124m --stage run --device cuda --precision $p "$flag" "${extra[@]}" \
      --steps "${BENCH_STEPS:-10}" --warmup "${BENCH_WARMUP:-3}" --tcc "$W" \
      >"$OUTD/$name.log" 2>&1
    stamp "$name: exit $?"
    [[ -f $w/section.md ]] && cp "$w/section.md" "$OUTD/section-${name#bench-}.md"
    grep -E "^\||^tcc compile" "$OUTD/$name.log" | head -8 | tee -a "$OUTD/summary.txt"
  done <<<"$EXTRA_BENCHES"
  for p in ${PAD_PRECISIONS:-fp32 bf16}; do
    w=build-bench/pad-skip-cuda$([[ $p == fp32 ]] || echo "-$p")
    [[ ${PAD_BENCH:-1} == 1 && -d $w ]] || continue
    PYTHONUNBUFFERED=1 timeout "$TB" python3 test/bench/pad_skip_bench.py --device cuda \
      --precision $p --stage run --tcc "$W" $PAD_ARGS >"$OUTD/bench-pad-$p.log" 2>&1
    stamp "bench-pad-$p: exit $?"
    grep -E "^\||^BERT|^Largest" "$OUTD/bench-pad-$p.log" | tee -a "$OUTD/summary.txt"
  done
fi
stamp "done"
