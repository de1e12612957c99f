#!/usr/bin/env bash
# The compile and link launcher of test/fuzz (RULE_LAUNCH_COMPILE/LINK in
# its CMakeLists.txt): runs CMake's command for a fuzz target with the
# project's compiler replaced by clang++ and libFuzzer, ASan and UBSan
# (without recovery) added, so those objects alone are instrumented and the
# rest of the build keeps its compiler.
#   clang-wrap.sh CLANG compile|link [ccache] COMPILER ARGS...
set -euo pipefail
clang=$1 mode=$2
shift 2
launcher=()
if [[ $(basename "$1") == ccache ]]; then launcher=("$1"); shift; fi
shift # the project's compiler
sanitizers=address,undefined
case $mode in
  compile) exec "${launcher[@]}" "$clang" "$@" -O1 -g -fno-omit-frame-pointer \
                 "-fsanitize=fuzzer-no-link,$sanitizers" -fno-sanitize-recover=undefined ;;
  link) exec "$clang" "$@" "-fsanitize=fuzzer,$sanitizers" ;;
  *) echo "clang-wrap.sh: unknown mode '$mode'" >&2; exit 2 ;;
esac
