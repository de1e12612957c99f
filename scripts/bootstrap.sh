#!/usr/bin/env bash
# Installs what tcc needs (Debian packages), configures and builds it in
# build/. Idempotent: packages already present are not reinstalled and the
# build is incremental. Used by setup.sh and test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  cmake ninja-build g++ zlib1g-dev
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  libfmt-dev nlohmann-json3-dev libgtest-dev libopenblas-dev
  clang-14 libclang-rt-14-dev
  python3 python3-numpy python3-onnx python3-torch
  chromium python3-pil  # screenshots of the compile report (test/lit/Tools)
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

if [[ ! -f build/build.ninja ]]; then
  cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release
fi
cmake --build build -j "${TCC_JOBS:-2}"
