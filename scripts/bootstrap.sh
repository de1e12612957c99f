#!/usr/bin/env bash
# Installs what tcc needs (Debian packages, the pinned Python environment,
# the ONNX C++ library), configures and builds it in build/. Idempotent:
# packages already present are not reinstalled, the venv and ONNX are kept,
# and the build is incremental. Used by setup.sh and test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  cmake ninja-build g++ zlib1g-dev
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  libprotobuf-dev protobuf-compiler libonnx-testdata
  libfmt-dev nlohmann-json3-dev libgtest-dev libopenblas-dev
  clang-14 libclang-rt-14-dev
  python3 python3-venv python3-numpy python3-onnx python3-torch
  python3-dev  # the headers the Python package's extension builds against (python/)
  chromium python3-pil  # report screenshots (test/lit/Tools), tcc plot PNGs (Run/plot.test)
  openmpi-bin libopenmpi-dev  # data-parallel training (mpirun, the runtime's MPI module)
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "tcc: installing ${missing[*]}"
  SUDO=()
  if [[ $(id -u) != 0 ]]; then
    if command -v sudo >/dev/null; then
      SUDO=(sudo)
    else
      echo "tcc: not root and no sudo; please install: ${missing[*]}" >&2
      exit 1
    fi
  fi
  "${SUDO[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The pinned Python environment (.venv), then the ONNX C++ library the
# importer links, built from the same onnx version's source (.deps/).
scripts/venv.sh
scripts/onnx-lib.sh

if [[ ! -f build/build.ninja ]]; then
  cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release
fi
cmake --build build -j "${TCC_JOBS:-2}"
