#!/usr/bin/env bash
# The GPU check, run on a machine with a GPU (the CUDA toolkit and driver, cmake, gcc; PyTorch
# and Triton optional; no LLVM/MLIR, no network). Prepare the kernels first on a build machine
# (bench/gpu/prepare.sh) and bring bench/gpu/bundle along (it is ignored by git: name it when
# carrying the tree). Within 9 minutes (KILN_GPU_CHECK_LIMIT seconds, default 530) it:
#   1. builds libkilnrt, the check programs and kiln-bert against the bundle's kernel
#      libraries (KILN_RUNTIME_ONLY, KILN_BERT_LIBS), runs the runtime tests, the cuda
#      device's included;
#   2. runs the BERT kernel tests (every kernel family, f32/f16/bf16, finite differences
#      included) against their C references, the trainer's kernels first;
#   3. checks and times the Kiln kernels against a device copy and cuBLAS (bench/gpu/gpu_bench.c),
#      then runs every numeric test kernel (precompiled) against its C reference;
#   4. tunes vector_add, softmax_rows and matmul_f16 in both modes with kiln-tune-runner from
#      the precompiled candidates (bundle/tune): tuning time, winners and their speed; then the
#      BERT trainer's own calls at BERT-large (bundle/bert-tune, default mode) into a cache and,
#      with --tuned-libs, into the cuda libraries of step 1 (NAME.tuned.h beside NAME.c: rows
#      for the winners, their cubins from the bundle; no compiler needed);
#   4b. the tuned kiln-bert: the untuned one kept aside (KILN_GPU_BUILD/kiln-bert-untuned), the
#      same build configured again compiles the libraries that got rows and links kiln-bert
#      once more; step 5 then gives it its own row;
#   5. BERT fine-tuning end to end, Kiln against PyTorch (bench/bert-gpu.sh), with at least
#      KILN_GPU_BERT_SECONDS (default 200) kept for it whatever the steps before took (its
#      fp32+tf32 rows are the first parts it skips when that time is short);
#   6. times PyTorch and a Triton matmul on the same shapes (bench/gpu/torch_ref.py), if present.
# Every step runs under the smaller of its own limit and what is left of the whole (less what
# is kept for step 5); a step left under 10 s is skipped and says so. KILN_GPU_CHECK_DRY_RUN=1
# proves the limits anywhere: nothing is built or run, every step sleeps until its limit ends
# it (the worst case), and the script must still end within KILN_GPU_CHECK_LIMIT.
# Results: bench/results/gpu-check-<date>.json (+ -torch.json), gpu-tune-<date>-<mode>.json
# (summary) and gpu-tune-<date>-<mode>-cache.json (the records, for `kiln lib --device cuda`);
# gpu-bert-tune-<date>-cache.json, the trainer's calls (for `kiln lib --cache` on the build
# machine, libraries with a cubin per arch and PTX).
set -uo pipefail
cd "$(dirname "$0")/.."
build=${KILN_GPU_BUILD:-build-gpu-check}
bundle=${KILN_GPU_BUNDLE:-bench/gpu/bundle}
stamp=$(date -u +%Y%m%dT%H%M%SZ)
status=0
start=$(date +%s)
deadline=$((start + ${KILN_GPU_CHECK_LIMIT:-530}))
bert_keep=${KILN_GPU_BERT_SECONDS:-200}
dry=${KILN_GPU_CHECK_DRY_RUN:-0}
# results: bench/results; a dry run's (empty) files go to a scratch folder instead
res=bench/results
[ "$dry" = 1 ] && res=$(mktemp -d)
mkdir -p "$res"

# limit OWN [KEEP]: the seconds a step may take: OWN, or what is left before the deadline less
# KEEP (the time promised to the steps after it) when that is less.
limit() {
  local own=$1 keep=${2:-0} left
  left=$((deadline - $(date +%s) - keep))
  [ "$left" -lt "$own" ] && own=$left
  echo "$own"
}
# step NAME OWN KEEP CMD...: runs CMD under limit OWN KEEP, or skips it when under 10 s are left
# (skipped=1 then, else 0)
skipped=0
step() {
  local name=$1 t; t=$(limit "$2" "$3"); shift 3
  skipped=0
  if [ "$t" -lt 10 ]; then
    echo "== $name: skipped, short of time ($(($(date +%s) - start)) s gone) ==" >&2
    status=1
    skipped=1
    return 0
  fi
  echo "== $name (limit ${t}s, $(($(date +%s) - start)) s gone) ==" >&2
  if [ "$dry" = 1 ]; then
    timeout "$t" sleep 100000
    return
  fi
  timeout --kill-after=5 "$t" "$@"
}

# unpack_xz TARBALL DIR: tar's xz, else Python's (a machine without xz-utils)
unpack_xz() {
  if command -v xz >/dev/null; then
    tar xJf "$1" -C "$2"
  else
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$1" "$2"
  fi
}

echo "== build (runtime only) ==" >&2
# the trainer's kernel libraries (cpu and cuda), packed by prepare.sh, unpacked into the build
libs=()
if [ "$dry" != 1 ] && [ -f "$bundle/bert-libs.tar.xz" ]; then
  mkdir -p "$build/bert-libs"
  unpack_xz "$bundle/bert-libs.tar.xz" "$build/bert-libs" &&
    libs=(-DKILN_BERT_LIBS="$(cd "$build/bert-libs" && pwd)")
fi
# the numeric and BERT test kernels (prepare.sh packs them: as files they are over the bundle's
# size limit), unpacked into the build
tests=$build/bundle-tests
if [ "$dry" != 1 ]; then
  rm -rf "$tests" && mkdir -p "$tests"
  if [ -f "$bundle/tests.tar.xz" ]; then
    unpack_xz "$bundle/tests.tar.xz" "$tests" || status=1
  else
    echo "no test kernels ($bundle/tests.tar.xz): run bench/gpu/prepare.sh" >&2
    status=1
  fi
fi
# cJSON from the bundle where this machine has no libcjson-dev (kiln-bert needs it)
if [ ${#libs[@]} -gt 0 ] && ! pkg-config --exists libcjson 2>/dev/null && [ -d "$bundle/cjson" ]; then
  libs+=(-DKILN_CJSON_DIR="$(cd "$bundle/cjson" && pwd)")
fi
[ ${#libs[@]} -eq 0 ] && echo "no trainer libraries ($bundle/bert-libs.tar.xz): no kiln-bert; run bench/gpu/prepare.sh" >&2
# KILN_GPU_NO_WERROR=1: a newer gcc's new warnings must not stop the only run there is
werror=ON
[ "${KILN_GPU_NO_WERROR:-0}" = 1 ] && werror=OFF
[ "$dry" = 1 ] || cmake -S . -B "$build" -DKILN_RUNTIME_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
  "${libs[@]}" -DKILN_WERROR=$werror >/dev/null || exit 2
step "build" 200 "$bert_keep" cmake --build "$build" -j "$(nproc)" || [ "$dry" = 1 ] || exit 2

# the runtime's tests and kiln-bert's command-line tests (the model tests train on the cpu
# device for minutes: they ran on the build machine)
step "runtime tests on this machine" 60 "$bert_keep" \
  ctest --test-dir "$build" --output-on-failure -R '^runtime\.|^kilnbert\.(cli|tokenizer)' || status=1

step "BERT kernel tests on the GPU" 90 "$bert_keep" "$build/tests/bert/kiln_bert_test" --device cuda --bundle "$tests/bert" all \
  | tee "$res/gpu-check-$stamp-bert.txt" | grep -E 'FAIL|^[a-z]+$' || status=1

step "Kiln kernels vs copy and cuBLAS" 90 "$bert_keep" "$build/bench/gpu/gpu-bench" --bundle "$bundle" \
  --json "$res/gpu-check-$stamp.json" || status=1

step "numeric tests of every kernel on the GPU" 90 "$bert_keep" "$build/tests/numeric/kiln_numeric_test" --device cuda --bundle "$tests/numeric" \
  --warps 4,8 all | tee "$res/gpu-check-$stamp-numeric.txt" | grep -E 'FAIL|^[a-z_]+ on' || status=1

echo "== tuning on the GPU: both modes, from the precompiled candidates ==" >&2
# kiln-tune-runner is the tuner's runner (warm-up, repetitions, medians, an L2 flush, crashes
# and wrong results skipped). The caches feed `kiln lib --device cuda` on the build machine.
if [ "$dry" = 1 ] || [ -f "$bundle/tune/manifest.txt" ]; then
  for mode in default max-autotune; do
    budget=30; [ "$mode" = max-autotune ] && budget=60
    t=$(limit $((budget + 20)) "$bert_keep")
    [ "$t" -lt $((budget + 5)) ] && [ "$t" -ge 10 ] && budget=$((t - 5))
    step "tuning, $mode, budget ${budget}s" $((budget + 20)) "$bert_keep" "$build/autotune/kiln-tune-runner" "$bundle/tune" --device cuda \
      --mode "$mode" --budget "$budget" --cache "$res/gpu-tune-$stamp-$mode-cache.json" \
      --json "$res/gpu-tune-$stamp-$mode.json" || status=1
  done
else
  echo "no tuning bundle ($bundle/tune): run bench/gpu/prepare.sh" >&2
  status=1
fi

# the trainer's own calls at BERT-large (prepare.sh: one bundle per call), all in one runner
# under one budget into one cache, and their winners into the cuda libraries (--tuned-libs)
tuned_rows=()
[ -d "$build/bert-libs/cuda" ] && tuned_rows=(--tuned-libs "$build/bert-libs/cuda")
tuned_ok=0
if [ "$dry" = 1 ] || [ -f "$bundle/bert-tune/calls.txt" ]; then
  tb=${KILN_GPU_BERT_TUNE_SECONDS:-60}
  mapfile -t tdirs < <(awk -v d="$bundle/bert-tune" '!/^#/ && NF {print d "/" $1}' "$bundle/bert-tune/calls.txt" 2>/dev/null)
  step "tuning the trainer's calls, budget ${tb}s" $((tb + 15)) "$bert_keep" "$build/autotune/kiln-tune-runner" \
    "${tdirs[@]}" --device cuda --mode default --budget "$tb" "${tuned_rows[@]}" \
    --cache "$res/gpu-bert-tune-$stamp-cache.json" --json "$res/gpu-bert-tune-$stamp.json" &&
    [ $skipped = 0 ] && tuned_ok=1 || status=1
fi

# 4b. the tuned kiln-bert: the cuda libraries that got rows (NAME.tuned.h) compiled again in the
# same build (configured again, it defines KILN_GEN_TUNED for them), kiln-bert linked once more;
# the untuned kiln-bert is kept aside for its own row
kb_untuned=$build/tools/kiln-bert
tuned=()
if [ "$dry" = 1 ] || { [ $tuned_ok = 1 ] && ls "$build"/bert-libs/cuda/*.tuned.h >/dev/null 2>&1; }; then
  kb_untuned=$build/kiln-bert-untuned
  if [ "$dry" != 1 ]; then
    cp "$build/tools/kiln-bert" "$kb_untuned" || kb_untuned=
    cmake "$build" >/dev/null || kb_untuned=
  fi
  if [ -z "$kb_untuned" ]; then
    status=1
    kb_untuned=$build/tools/kiln-bert
  else
    step "tuned trainer libraries: build kiln-bert with them" 150 "$bert_keep" \
      cmake --build "$build" -j "$(nproc)" --target kiln-bert
    rc=$?
    if [ $skipped = 0 ] && { [ "$dry" = 1 ] || [ $rc = 0 ]; }; then
      tuned=(--kiln-bert-tuned "$build/tools/kiln-bert")
    else
      status=1 # a build cut short may have left either binary: the untuned copy only
      [ "$dry" = 1 ] || cp "$kb_untuned" "$build/tools/kiln-bert"
    fi
  fi
  [ ${#tuned[@]} -gt 0 ] || echo "no tuned kiln-bert: step 5 has no tuned row" >&2
else
  echo "no tuned trainer libraries (no rows from step 4): no tuned row" >&2
fi

if [ "$dry" = 1 ] || { [ -x "$kb_untuned" ] && [ ${#libs[@]} -gt 0 ]; }; then
  # all that is left, less 40 s for the last step when more than the kept time is left;
  # bert-gpu.sh shares it out among its parts (the tuned row, when there is one, comes right
  # after the untuned fp16 row with a limit of its own)
  left=$(limit 100000 0)
  keep=0
  [ "$left" -ge $((bert_keep + 40)) ] && keep=40
  t=$((left - keep))
  step "BERT end to end, Kiln${tuned:+ (untuned and tuned)} and PyTorch" "$t" "$keep" \
    bash bench/bert-gpu.sh --device cuda --kiln-bert "$kb_untuned" "${tuned[@]}" \
    --limit $((t - 5)) || status=1
else
  echo "no kiln-bert in $build: no end-to-end BERT numbers" >&2
  status=1
fi

if [ "$dry" = 1 ] || python3 -c 'import torch' 2>/dev/null; then
  step "PyTorch / Triton on the same shapes" 40 0 python3 bench/gpu/torch_ref.py --json "$res/gpu-check-$stamp-torch.json" || status=1
else
  echo "PyTorch not installed: no side-by-side numbers" >&2
fi
echo "gpu-check: $(($(date +%s) - start)) s of ${KILN_GPU_CHECK_LIMIT:-530}" >&2
exit $status
