#!/usr/bin/env bash
# The whole test suite: installs what is missing, then builds and runs ctest three ways:
#   build/        plain RelWithDebInfo build
#   build-asan/   AddressSanitizer + UndefinedBehaviorSanitizer
#   build-fuzz/   clang-19 libFuzzer targets, each run for a short bounded time
# Usage: scripts/test.sh [--quick]   (--quick: the plain build only)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
kiln_install_deps

jobs=$(nproc 2>/dev/null || echo 2)
quick=0
[ "${1:-}" = "--quick" ] && quick=1

# run_suite DIR TARGETS TEST_REGEX CMAKE_ARGS...  (TARGETS space-separated; all / . for everything)
run_suite() {
  local dir=$1 target=$2 tests=$3; shift 3
  echo "== $dir: configure ==" >&2
  cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
  echo "== $dir: build ==" >&2
  # shellcheck disable=SC2086
  cmake --build "$dir" -j "$jobs" --target $target
  echo "== $dir: test ==" >&2
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" --timeout 900 -R "$tests"
}

run_suite build all . -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++
if [ "$quick" -eq 0 ]; then
  ASAN_OPTIONS=detect_leaks=1 run_suite build-asan all . -DCMAKE_C_COMPILER=gcc \
    -DCMAKE_CXX_COMPILER=g++ -DKILN_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
  # The fuzz build instruments the frontend, kilnbert, the library generator's text handling and
  # the cache reader with the library planner for libFuzzer; only the fuzz targets are built there.
  run_suite build-fuzz "kiln_fuzz_frontend kiln_fuzz_bert kiln_fuzz_libgen kiln_fuzz_cache" '^fuzz_' \
    -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 -DKILN_FUZZ=ON
fi
echo "kiln: all test suites passed" >&2
