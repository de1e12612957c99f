#!/usr/bin/env bash
# The runtime's unit tests (tcc-unit-tests, tcc-runtime-tests) built with
# AddressSanitizer and UndefinedBehaviorSanitizer into build-sanitize/ (the
# runtime-only configuration: no LLVM/MLIR) and run. Any report fails.
# Not in CI (a from-scratch build takes minutes on two cores); see
# docs/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${TCC_SANITIZE_DIR:-build-sanitize}
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
if [[ ! -f $dir/CMakeCache.txt ]]; then
  cmake -G Ninja -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTCC_BUILD_COMPILER=OFF \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined"
fi
cmake --build "$dir" -j "${TCC_JOBS:-2}" --target tcc-unit-tests tcc-runtime-tests
# allocator_may_return_null: the runtime refuses a huge arena by its NULL
# (TCC_ERROR_MEMORY), which RuntimeTest.CorruptedPlans... provokes.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1
"$dir/bin/tcc-unit-tests" --gtest_brief=1
"$dir/bin/tcc-runtime-tests" --gtest_brief=1
echo "sanitize: unit tests clean under ASan/UBSan"
