#!/usr/bin/env bash
# The GPU benchmark in two commands, one per machine (docs/benchmarks.md).
#
#   test/bench/gpu_bench.sh prepare [gpt_bench.py flags]
#       HERE, on a machine with the compiler (LLVM/MLIR, nvcc): exports and
#       compiles the model (gpt_bench.py --stage compile, --tcc $TCC_BIN or
#       build/bin) into build-bench/CONFIG-PRECISION-bB-tT/ without its
#       weights, and bundles the runtime's build dependencies that a bare
#       GPU image may lack (nlohmann_json, zlib, a CBLAS) into
#       build-bench/deps/. Prints the two paths to carry.
#
#   test/bench/gpu_bench.sh build
#       only the build of tcc-run below (to check it without a GPU).
#
#   test/bench/gpu_bench.sh [gpt_bench.py flags]
#       ON THE GPU MACHINE, from the repository root, with those two paths
#       carried: builds tcc-run with the CUDA backend into build-cuda/
#       (-DTCC_BUILD_COMPILER=OFF: no LLVM needed), runs gpt_bench.py
#       --stage run --device cuda, and leaves the results under $OUT when
#       it is set (else build-bench/out/): run.log, section.md (the
#       docs/benchmarks.md section), benchmarks.md (the docs with it
#       merged), result.json, tcc-log.csv, the build log.
#
# Flags go to gpt_bench.py as they are, in both modes: e.g. --config
# gpt2-124m (the default here), --precision bf16, --batch 4, --tf32,
# --steps 50; give the same --config/--precision/--batch/--seq to both.
# Environment: PYTHON (default python3: the one with torch), TCC_BIN
# (prepare), TCC_BUILD_DIR (default build-cuda), CUDA_ARCH (default: the
# GPU's, e.g. 90), TCC_BENCH_NO_DOCS=1 (do not touch docs/benchmarks.md),
# TCC_REBUILD=1 (configure and build again), TCC_BENCH_BUNDLED_BLAS=1 (link
# the bundled CBLAS even where the system has OpenBLAS).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
PY=${PYTHON:-python3}
DEPS=build-bench/deps

mode=run
if [[ ${1:-} == prepare || ${1:-} == build ]]; then mode=$1; shift; fi
has_config=0
for x in "$@"; do if [[ $x == --config || $x == --config=* ]]; then has_config=1; fi; done
if [[ $has_config == 0 ]]; then set -- --config gpt2-124m "$@"; fi

if [[ $mode == prepare ]]; then
  PYPREP=${PYTHON:-/usr/bin/python3}
  "$PYPREP" test/bench/gpt_bench.py --stage compile --device cuda --tcc "${TCC_BIN:-build/bin}" "$@"
  rm -rf "$DEPS"
  mkdir -p "$DEPS/include" "$DEPS/lib" "$DEPS/share/cmake" "$DEPS/blas/include" "$DEPS/blas/lib"
  # nlohmann_json (header-only) with its CMake package, prefix-relative.
  cp -r /usr/include/nlohmann "$DEPS/include/"
  cp -r /usr/share/cmake/nlohmann_json "$DEPS/share/cmake/"
  # zlib: headers and the shared library (found through CMAKE_PREFIX_PATH).
  cp /usr/include/zlib.h /usr/include/zconf.h "$DEPS/include/"
  z=$(readlink -f /usr/lib/x86_64-linux-gnu/libz.so)
  cp "$z" "$DEPS/lib/libz.so"; cp "$z" "$DEPS/lib/libz.so.1"
  # A CBLAS for the CPU kernels (the CUDA benchmark never calls it, but
  # tcc-run links it): netlib's reference BLAS, 0.4 MB, needs only libc.
  # Named libopenblas.so so the runtime's find_package(BLAS) (vendor
  # OpenBLAS) takes it; its SONAME is libblas.so.3, hence the second copy.
  b=$(readlink -f /usr/lib/x86_64-linux-gnu/blas/libblas.so.3)
  cp "$b" "$DEPS/blas/lib/libopenblas.so"; cp "$b" "$DEPS/blas/lib/libblas.so.3"
  cp /usr/include/x86_64-linux-gnu/cblas-netlib.h /usr/include/x86_64-linux-gnu/cblas_mangling.h \
    "$DEPS/blas/include/"
  # runtime/kernels/cpu/gemm.cpp uses OpenBLAS's name for the BLAS integer.
  printf '%s\n' '/* netlib CBLAS as OpenBLAS spells it (gpu_bench.sh) */' \
    '#include "cblas-netlib.h"' 'typedef CBLAS_INT blasint;' >"$DEPS/blas/include/cblas.h"
  work=$("$PYPREP" - "$@" <<'EOF'
import sys
sys.path.insert(0, "test/bench")
import gpt_bench
a = gpt_bench.parse(["--stage", "compile"] + sys.argv[1:])
gpt_bench.resolve(a)
import os
print(os.path.relpath(a.work))
EOF
)
  du -sh "$work" "$DEPS"
  echo "carry: $work $DEPS"
  exit 0
fi

OUTDIR=${OUT:-$ROOT/build-bench/out}
mkdir -p "$OUTDIR"
BUILD=${TCC_BUILD_DIR:-build-cuda}

# --- build tcc-run with the CUDA backend --------------------------------
if [[ ! -x $BUILD/bin/tcc-run ]] || [[ ${TCC_REBUILD:-0} == 1 ]] || \
   ! grep -q TCC_HAVE_CUDA_BACKEND "$BUILD/build.ninja" 2>/dev/null; then
  cmake_flags=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DTCC_BUILD_COMPILER=OFF -DTCC_BUILD_TESTS=OFF)
  arch=${CUDA_ARCH:-}
  if [[ -z $arch ]] && command -v nvidia-smi >/dev/null; then
    arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
  fi
  if [[ -n $arch ]]; then cmake_flags+=(-DCMAKE_CUDA_ARCHITECTURES="$arch"); fi
  command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
  if [[ -d $DEPS ]]; then
    # nlohmann_json and zlib from the bundle (harmless where the system has them)
    cmake_flags+=(-DCMAKE_PREFIX_PATH="$ROOT/$DEPS")
    # the bundled CBLAS only where the system has none
    if [[ ${TCC_BENCH_BUNDLED_BLAS:-0} == 1 ]] || \
       ! echo '#include <cblas.h>' | c++ -E -x c++ - >/dev/null 2>&1 || \
       ! { ldconfig -p | grep -q libopenblas; }; then
      echo "gpu_bench: linking the bundled reference CBLAS (no system OpenBLAS/cblas.h, or TCC_BENCH_BUNDLED_BLAS=1)"
      cmake_flags+=(-DCMAKE_CXX_FLAGS="-I$ROOT/$DEPS/blas/include"
                    -DCMAKE_LIBRARY_PATH="$ROOT/$DEPS/blas/lib")
      export PKG_CONFIG_LIBDIR=/nonexistent  # no system openblas.pc in the way
    fi
  fi
  set +e
  { cmake -S . -B "$BUILD" "${cmake_flags[@]}" && ninja -C "$BUILD" tcc-run; } \
    >"$OUTDIR/build.log" 2>&1
  rc=$?
  set -e
  tail -n 25 "$OUTDIR/build.log"
  [[ $rc == 0 ]] || { echo "gpu_bench: building tcc-run failed (exit $rc, $OUTDIR/build.log)"; exit 1; }
fi
"$BUILD/bin/tcc-run" --help | grep -q cuda || echo "gpu_bench: warning: tcc-run --help names no cuda backend"
if [[ $mode == build ]]; then exit 0; fi

# --- the run stage --------------------------------------------------------
docs=()
if [[ ${TCC_BENCH_NO_DOCS:-0} != 1 ]]; then docs=(--write-docs docs/benchmarks.md); fi
set +e
PYTHONUNBUFFERED=1 "$PY" test/bench/gpt_bench.py --stage run --device cuda \
  --tcc "$BUILD/bin" ${docs[@]+"${docs[@]}"} "$@" 2>&1 | tee "$OUTDIR/run.log"
rc=${PIPESTATUS[0]}
set -e
work=$("$PY" - "$@" <<'EOF'
import sys
sys.path.insert(0, "test/bench")
import gpt_bench
a = gpt_bench.parse(["--stage", "run", "--device", "cuda"] + sys.argv[1:])
gpt_bench.resolve(a)
print(a.work)
EOF
)
for f in section.md result.json tcc-log.csv; do
  if [[ -f $work/$f ]]; then cp "$work/$f" "$OUTDIR/"; fi
done
if [[ ${#docs[@]} -gt 0 && -f docs/benchmarks.md ]]; then cp docs/benchmarks.md "$OUTDIR/benchmarks.md"; fi
echo "gpu_bench: exit $rc; outputs in $OUTDIR"
exit "$rc"
