#!/usr/bin/env bash
# Prepare the GPU bring-up (../shared/gpu-bringup.md) HERE, on a machine with
# the compiler, so the GPU machine (no LLVM/MLIR, few minutes) only runs:
#
#   test/gpu/bundle.sh        # here: builds, compiles, bundles
#   test/gpu/bringup.sh       # there, from the repository root, carrying
#                             # build-carry and the build-bench folders
#                             # this prints last
#
# Builds the runtime alone with the CUDA backend and its tests for sm_90
# (build-gpu/, -DTCC_BUILD_COMPILER=OFF, no MPI), prepares the model checks
# (test/gpu/check_models.py prepare) and the GPT-2 124M benchmark artifacts
# (test/bench/gpt_bench.py --stage compile, fp32 and bf16, without weights),
# and packs the binaries, the OpenBLAS they link (the GPU image has none)
# and the model cases into build-carry/bundle.tgz (the device tool carries
# 64 MiB at most). Idempotent: what HEAD compiled already is kept;
# TCC_BUNDLE_FRESH=1 compiles everything again.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-/usr/bin/python3}
B=build-gpu
if [[ ! -f $B/build.ninja ]]; then
  cmake -G Ninja -S . -B $B -DCMAKE_BUILD_TYPE=Release -DTCC_BUILD_COMPILER=OFF \
    -DTCC_BUILD_TESTS=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON
fi
ninja -C $B tcc-run tcc-gpu-tests
cmake --build build --target tcc tcc-run
# Compiled artifacts are kept between runs while the commit that compiled
# them is HEAD (their .tcc-commit); a new commit, or TCC_BUNDLE_FRESH=1,
# compiles them again.
HEAD_COMMIT=$(git rev-parse HEAD)
fresh() { [[ ${TCC_BUNDLE_FRESH:-0} != 1 && -f $1 && $(cat "$2/.tcc-commit" 2>/dev/null) == "$HEAD_COMMIT" ]]; }
if ! fresh build-bundle/models/cases.json build-bundle/models; then
  "$PY" test/gpu/check_models.py prepare --out build-bundle/models
  echo "$HEAD_COMMIT" >build-bundle/models/.tcc-commit
fi
for p in fp32 bf16; do
  w=build-bench/gpt2-124m-$p-b8-t1024
  if ! fresh $w/model.tcc/plan.json $w; then
    "$PY" test/bench/gpt_bench.py --config gpt2-124m --stage compile --device cuda \
      --tcc build/bin --precision $p
    echo "$HEAD_COMMIT" >$w/.tcc-commit
  fi
done
# Pad-skipping on the GPU (test/bench/pad_skip_bench.py) and the GPT-2
# variants: bench-config.sh says which, for bringup.sh too.
source test/gpu/bench-config.sh
for p in fp32 bf16; do
  w=build-bench/pad-skip-cuda$([[ $p == fp32 ]] || echo "-$p")
  if ! fresh $w/bert-off.tcc/plan.json $w; then
    "$PY" test/bench/pad_skip_bench.py --device cuda --precision $p --stage compile \
      --tcc build/bin $PAD_ARGS
    echo "$HEAD_COMMIT" >$w/.tcc-commit
  fi
done
while read -r p flag bl; do
  w=$(extra_work "$p" "$flag")
  if ! fresh $w/model.tcc/plan.json $w; then
    "$PY" test/bench/gpt_bench.py --config gpt2-124m --stage compile --device cuda \
      --tcc build/bin --precision $p "$flag" --work "$w"
    echo "$HEAD_COMMIT" >$w/.tcc-commit
  fi
done <<<"$EXTRA_BENCHES"
mkdir -p build-bundle/bin build-bundle/lib build-carry
cp $B/bin/tcc-run $B/bin/tcc-gpu-tests build-bundle/bin/
# The attention kernels timed alone (test/bench/attention_bench.cpp), built
# from this tree and, for an A/B on one GPU, from the commit in
# TCC_ATTENTION_AB (default cfd77f8: the kernels before the unmasked-tile
# path of 2026-11-27; empty: no A/B build).
NVCC=(/usr/local/cuda/bin/nvcc -O3 -std=c++17 --expt-relaxed-constexpr
      -gencode arch=compute_90,code=sm_90 -x cu)
ATT="attention.cu attention_tc.cu attention_tc_bwd.cu"
"${NVCC[@]}" -I runtime test/bench/attention_bench.cpp \
  $(for f in $ATT; do echo runtime/kernels/cuda/$f; done) -o build-bundle/bin/attention-bench
AB=${TCC_ATTENTION_AB-cfd77f8}
if [[ -n $AB ]]; then
  rm -rf build-bundle/ab && mkdir -p build-bundle/ab
  git archive "$AB" runtime | tar -x -C build-bundle/ab
  "${NVCC[@]}" -I build-bundle/ab/runtime test/bench/attention_bench.cpp \
    $(for f in $ATT; do echo build-bundle/ab/runtime/kernels/cuda/$f; done) \
    -o build-bundle/bin/attention-bench-ab
  echo "$AB" >build-bundle/bin/attention-bench-ab.commit
  rm -rf build-bundle/ab
fi
for l in $(ldd $B/bin/tcc-run | awk '/openblas|gfortran|quadmath/ {print $3}'); do
  cp -L "$l" build-bundle/lib/
done
tar -czf build-carry/bundle.tgz --exclude=build-bundle/out --exclude=build-bundle/wrap --exclude="build-bundle/*.tgz" --exclude=build-bundle/summary.txt build-bundle
extras=$(while read -r p flag bl; do extra_work "$p" "$flag"; done <<<"$EXTRA_BENCHES" | tr '\n' ' ')
carry="build-carry build-bench/gpt2-124m-fp32-b8-t1024 build-bench/gpt2-124m-bf16-b8-t1024 build-bench/pad-skip-cuda build-bench/pad-skip-cuda-bf16 $extras"
du -shc $carry
echo "carry: $carry"
