#!/usr/bin/env bash
# Times the test kernels on the device present (cpu when there is no GPU) and prints a table.
# Usage: bench/cpu-kernels.sh BUILD_DIR [kernels-bench options]
set -euo pipefail
build=${1:-build}; shift || true
device=cpu
echo "kiln: running the kernels on device '$device'" >&2
"$build/bench/kernels-bench" --device "$device" "$@"
