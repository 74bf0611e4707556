#!/bin/sh
# Long fuzzing run of the frontend.  Usage: tests/fuzz/run-long.sh BUILD_DIR [SECONDS]
# BUILD_DIR must be configured with -DKILN_FUZZ=ON -DCMAKE_C_COMPILER=clang-19.
# The growing corpus goes to BUILD_DIR/fuzz-corpus; crashes to BUILD_DIR/fuzz-artifacts/.
set -eu
build=${1:?usage: run-long.sh BUILD_DIR [SECONDS]}
secs=${2:-3600}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
mkdir -p "$build/fuzz-corpus" "$build/fuzz-artifacts"
exec "$build/tests/fuzz/kiln_fuzz_frontend" -max_total_time="$secs" -rss_limit_mb=2048 \
    -timeout=10 -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/" \
    "$build/fuzz-corpus" "$src/tests/frontend/kernels" "$src/tests/frontend/diag"
