#!/usr/bin/env bash
# The main job: installs what is missing, builds Kiln, and runs the kernels on the device
# present (the CPU backend when there is no GPU), printing a table of what ran.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
kiln_install_deps

jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -G Ninja -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ >/dev/null
cmake --build build -j "$jobs"
exec bash bench/cpu-kernels.sh build
