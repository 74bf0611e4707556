#!/usr/bin/env bash
# The GPU check, run on a machine with a GPU (the CUDA toolkit and driver, cmake, gcc; PyTorch
# and Triton optional; no LLVM/MLIR, no network). Prepare the kernels first on a build machine
# (bench/gpu/prepare.sh) and bring bench/gpu/bundle along. Within 8 minutes it:
#   1. builds libkilnrt and the check programs (KILN_RUNTIME_ONLY), runs the runtime tests,
#      the cuda device's included;
#   2. runs every numeric test kernel (precompiled) against its C reference, and the BERT kernel
#      tests (every kernel family, f32/f16/bf16, finite differences included) likewise;
#   3. checks and times the Kiln kernels against a device copy and cuBLAS (bench/gpu/gpu_bench.c);
#   4. tunes vector_add, softmax_rows and matmul_f16 in both modes with kiln-tune-runner from
#      the precompiled candidates (bundle/tune): tuning time, winners and their speed;
#   5. times PyTorch and a Triton matmul on the same shapes (bench/gpu/torch_ref.py), if present.
# Results: bench/results/gpu-check-<date>.json (+ -torch.json), gpu-tune-<date>-<mode>.json
# (summary) and gpu-tune-<date>-<mode>-cache.json (the records, for `kiln lib --device cuda`).
set -uo pipefail
cd "$(dirname "$0")/.."
build=${KILN_GPU_BUILD:-build-gpu-check}
bundle=${KILN_GPU_BUNDLE:-bench/gpu/bundle}
stamp=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p bench/results
status=0

echo "== build (runtime only) ==" >&2
cmake -S . -B "$build" -DKILN_RUNTIME_ONLY=ON -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 2
cmake --build "$build" -j "$(nproc)" || exit 2

echo "== runtime tests on this machine ==" >&2
timeout 120 ctest --test-dir "$build" --output-on-failure || status=1

echo "== numeric tests of every kernel on the GPU ==" >&2
timeout 180 "$build/tests/numeric/kiln_numeric_test" --device cuda --bundle "$bundle/numeric" \
  --warps 4,8 all | tee "bench/results/gpu-check-$stamp-numeric.txt" | grep -E 'FAIL|^[a-z_]+ on' || status=1

echo "== BERT kernel tests on the GPU ==" >&2
timeout 240 "$build/tests/bert/kiln_bert_test" --device cuda --bundle "$bundle/bert" all \
  | tee "bench/results/gpu-check-$stamp-bert.txt" | grep -E 'FAIL|^[a-z]+$' || status=1

echo "== Kiln kernels vs copy and cuBLAS ==" >&2
timeout 300 "$build/bench/gpu/gpu-bench" --bundle "$bundle" \
  --json "bench/results/gpu-check-$stamp.json" || status=1

echo "== tuning on the GPU: both modes, from the precompiled candidates ==" >&2
# kiln-tune-runner is the tuner's runner (warm-up, repetitions, medians, an L2 flush, crashes
# and wrong results skipped). The caches feed `kiln lib --device cuda` on the build machine.
if [ -f "$bundle/tune/manifest.txt" ]; then
  for mode in default max-autotune; do
    budget=60; [ "$mode" = max-autotune ] && budget=150
    timeout $((budget + 60)) "$build/autotune/kiln-tune-runner" "$bundle/tune" --device cuda \
      --mode "$mode" --budget "$budget" --cache "bench/results/gpu-tune-$stamp-$mode-cache.json" \
      --json "bench/results/gpu-tune-$stamp-$mode.json" || status=1
  done
else
  echo "no tuning bundle ($bundle/tune): run bench/gpu/prepare.sh" >&2
  status=1
fi

if python3 -c 'import torch' 2>/dev/null; then
  echo "== PyTorch / Triton on the same shapes ==" >&2
  timeout 180 python3 bench/gpu/torch_ref.py --json "bench/results/gpu-check-$stamp-torch.json" || status=1
else
  echo "PyTorch not installed: no side-by-side numbers" >&2
fi
exit $status
