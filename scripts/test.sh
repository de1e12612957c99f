#!/usr/bin/env bash
# The README's second command: every test. Works on a fresh clone by itself
# (installs and builds first, incrementally).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
ctest --test-dir build --output-on-failure -j "${TCC_JOBS:-2}"
