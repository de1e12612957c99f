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
# 64 MiB at most). Idempotent; TCC_BUNDLE_FRESH=1 redoes the model cases.
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
if [[ ${TCC_BUNDLE_FRESH:-0} == 1 || ! -f build-bundle/models/cases.json ]]; then
  "$PY" test/gpu/check_models.py prepare --out build-bundle/models
fi
for p in fp32 bf16; do
  if [[ ! -f build-bench/gpt2-124m-$p-b8-t1024/model.tcc/plan.json ]]; then
    "$PY" test/bench/gpt_bench.py --config gpt2-124m --stage compile --device cuda \
      --tcc build/bin --precision $p
  fi
done
# Pad-skipping on the GPU (test/bench/pad_skip_bench.py; bringup.sh passes
# the same model flags to its run stage).
PAD_ARGS=$(sed -n 's/^PAD_ARGS="\(.*\)"$/\1/p' test/gpu/bringup.sh)
for p in fp32 bf16; do
  w=build-bench/pad-skip-cuda$([[ $p == fp32 ]] || echo "-$p")
  if [[ ! -f $w/bert-off.tcc/plan.json ]]; then
    "$PY" test/bench/pad_skip_bench.py --device cuda --precision $p --stage compile \
      --tcc build/bin $PAD_ARGS
  fi
done
mkdir -p build-bundle/bin build-bundle/lib build-carry
cp $B/bin/tcc-run $B/bin/tcc-gpu-tests build-bundle/bin/
for l in $(ldd $B/bin/tcc-run | awk '/openblas|gfortran|quadmath/ {print $3}'); do
  cp -L "$l" build-bundle/lib/
done
tar -czf build-carry/bundle.tgz --exclude=build-bundle/out --exclude=build-bundle/wrap --exclude="build-bundle/*.tgz" --exclude=build-bundle/summary.txt build-bundle
du -sh build-carry/bundle.tgz build-bench/gpt2-* build-bench/pad-skip-cuda*
echo "carry: build-carry build-bench/gpt2-124m-fp32-b8-t1024 build-bench/gpt2-124m-bf16-b8-t1024 build-bench/pad-skip-cuda build-bench/pad-skip-cuda-bf16"
