#!/usr/bin/env bash
# Build-machine half of the GPU check: compiles the benchmark kernels to cubin (through ptxas)
# and PTX for sm_80 and sm_90, the kernels of the numeric and BERT kernel tests (packed in
# bundle/tests.tar.xz), every tuning candidate of the test kernels for sm_90 (bundle/tune,
# `kiln tune --emit-bundle`) and of the trainer's calls (bundle/bert-tune), and the BERT trainer's kernel libraries for cpu and
# cuda (bundle/bert-libs, the C sources `kiln lib` generates with their images embedded), into
# a bundle that travels to the GPU machine, which has no LLVM/MLIR: there a runtime-only build
# compiles kiln-bert against bert-libs (-DKILN_BERT_LIBS). Usage: bench/gpu/prepare.sh
# [BUILD_DIR] [BUNDLE_DIR]. The bundle is ignored by git: name it when carrying the tree. It
# must stay within 48 MiB (the carry to the GPU machine is 64 MiB with the tree): over that,
# this script says so and exits 1.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
bundle=${2:-bench/gpu/bundle}
kiln="$build/tools/kiln"
kdir=dsl/examples
[ -x "$kiln" ] || { echo "prepare: build Kiln first ($kiln not found)" >&2; exit 2; }
mkdir -p "$bundle"

# NAME FILE KERNEL NUM_WARPS DEFINES... : the names are the contract with gpu_bench.c. Options in
# the array `extra` are passed on too.
extra=()
compile() {
  local name=$1 file=$2 kernel=$3 warps=$4; shift 4
  local defs=("${extra[@]}") d
  for d in "$@"; do defs+=(-D "$d"); done
  for arch in sm_80 sm_90; do
    "$kiln" compile "$kdir/$file" --kernel "$kernel" --target "$arch" --num-warps "$warps" \
      "${defs[@]}" --emit ptx -o "$bundle/$name.$arch.ptx"
    "$kiln" compile "$kdir/$file" --kernel "$kernel" --target "$arch" --num-warps "$warps" \
      "${defs[@]}" --emit cubin -o "$bundle/$name.$arch.cubin"
  done
  echo "prepared $name" >&2
}

compile vector_add vector_add.kiln vector_add 4 BLOCK=1024
compile softmax_rows softmax_rows.kiln softmax_rows 8 BLOCK=4096
compile matmul_f16_128x128x32 matmul_f16.kiln matmul_f16 8 BM=128 BN=128 BK=32
compile matmul_f16_64x64x32 matmul_f16.kiln matmul_f16 4 BM=64 BN=64 BK=32
# The same tiles promised row-major operands (unit inner strides, row strides multiples of 8, as
# gpu_bench passes them): 128-bit loads and the K loop software-pipelined with cp.async.
extra=(--specialize sak=1 --specialize sbn=1 --multiple-of sam=8 --multiple-of sbk=8 --num-stages 3)
compile matmul_f16_128x128x32_pipelined matmul_f16.kiln matmul_f16 8 BM=128 BN=128 BK=32
compile matmul_f16_64x64x32_pipelined matmul_f16.kiln matmul_f16 4 BM=64 BN=64 BK=32
# The pipelined 128x128 tile on sm_90's wgmma (docs/gpu-lowering.md, "wgmma on sm_90"; sm_80
# runs it on mma.sync): 3 stages (each K step waits for its own MMA group), and BK 64 on a
# 4-stage ring (one group kept in flight across K steps).
compile matmul_f16_128x128x32_wgmma matmul_f16.kiln matmul_f16 8 BM=128 BN=128 BK=32 wgmma=1
extra=(--specialize sak=1 --specialize sbn=1 --multiple-of sam=8 --multiple-of sbk=8 --num-stages 4)
compile matmul_f16_128x128x64_wgmma4 matmul_f16.kiln matmul_f16 8 BM=128 BN=128 BK=64 wgmma=1
extra=()
# Every numeric test configuration, for the numeric checks on the GPU (bench/gpu-check.sh), and
# every kernel the BERT kernel tests ask for (their emulator shapes and tiles), compiled without
# running anything, for kiln_bert_test --device cuda --bundle there. The harnesses write an image
# once and keep one that exists, so they start from empty folders. Their 1,400 images (PTX and
# cubin for sm_80 and sm_90) are 47 MB as files, more than the bundle's limit with the rest, and
# 4 MB as tests.tar.xz, which bench/gpu-check.sh unpacks into its build.
rm -rf "$bundle/numeric" "$bundle/bert" # loose folders of the packing before tests.tar.xz
tests_tmp=$(mktemp -d)
mkdir -p "$tests_tmp/numeric" "$tests_tmp/bert"
for arch in sm_80 sm_90; do
  "$build/tests/numeric/kiln_numeric_test" --emit-bundle "$tests_tmp/numeric" --arch "$arch" \
    --warps 4,8 all >/dev/null
  "$build/tests/bert/kiln_bert_test" --emit-bundle "$tests_tmp/bert" --arch "$arch" all >/dev/null
done
tar cJf "$bundle/tests.tar.xz.tmp" -C "$tests_tmp" numeric bert
mv "$bundle/tests.tar.xz.tmp" "$bundle/tests.tar.xz"
echo "prepared the numeric and BERT test kernels ($(ls "$tests_tmp/numeric" | wc -l) and $(ls "$tests_tmp/bert" | wc -l) images, $(du -h "$bundle/tests.tar.xz" | cut -f1) packed)" >&2
rm -rf "$tests_tmp"
# The tuning bundle: every candidate of both modes (default, max-autotune) of three test kernels
# compiled for sm_90 (the GPU machine is an H200), with the manifest kiln-tune-runner reads there
# (bench/gpu-check.sh). softmax_rows needs BLOCK >= cols (its tune block says so), so cols is the smallest BLOCK.
rm -rf "$bundle/tune"
"$kiln" tune "$kdir/vector_add.kiln" "$kdir/softmax_rows.kiln" "$kdir/matmul_f16.kiln" \
  --device cuda --arch sm_90 --emit-bundle "$bundle/tune" --jobs "$(nproc)" \
  --args 'kernel=vector_add; n=16777216; x: f32[n]; y: f32[n]; out: f32[n]; grid=cdiv(n, BLOCK)' \
  --args 'kernel=softmax_rows; cols=128; x_stride=cols; y_stride=cols; x: f32[65536*cols]; y: f32[65536*cols]; grid=65536' \
  --args 'kernel=matmul_f16; M=2048; N=2048; K=2048; sam=K; sak=1; sbk=N; sbn=1; scm=N; scn=1; a: f16[M*K]; b: f16[K*N]; c: f16[M*N]; grid=cdiv(M, BM), cdiv(N, BN)'
echo "prepared the tuning bundle ($(grep -c '^cand ' "$bundle/tune/manifest.txt") candidates)" >&2
# The trainer's calls at BERT-large, seq 512, batch 24, fp16 (bench/bert-gpu.sh's first part):
# every call's default-mode candidates for sm_90, one bundle per call (bundle/bert-tune/cNNN,
# listed in calls.txt), which bench/gpu-check.sh times with kiln-tune-runner into a cache and,
# with --tuned-libs, into the cuda libraries there.
rm -rf "$bundle/bert-tune"
cmake --build "$build" --target kiln-bert >/dev/null
"$build/tools/kiln-bert" tune --model large --precision fp16 --batch 24 --seq-len 512 \
  --device cuda --arch sm_90 --mode default --emit-bundle "$bundle/bert-tune" >/dev/null
echo "prepared the trainer's tuning bundle ($(grep -vc '^#' "$bundle/bert-tune/calls.txt") calls, $(du -sh "$bundle/bert-tune" | cut -f1))" >&2
# The trainer's 44 kernel libraries (runtime/bert/CMakeLists.txt: one per kernel file and pins,
# three element types) for cpu and for cuda (a cubin per sm_80 and sm_90 plus PTX; no GPU
# needed), from the build's tune cache when it was configured with -DKILN_TUNE_CACHE, else
# from the kernels' default configs. Their C sources spell the images out as decimal bytes
# (28 MB for cpu, 71 MB for cuda), so they travel as bert-libs.tar.xz (3.8 MB; gzip made 13 MB
# of them, which with the rest would not fit the bundle's 48 MiB); bench/gpu-check.sh
# unpacks it and builds kiln-bert against it (-DKILN_BERT_LIBS), the cpu copy and the cuda one.
# Each library's NAME.plan comes along: there kiln-tune-runner --tuned-libs adds the winners of
# the trainer's calls to the cuda set (NAME.tuned.h), and kiln-bert is built again with them.
cmake --build "$build" --target kilnbert_cuda_libs kilnbert_model >/dev/null
libs_tmp=$(mktemp -d)
mkdir -p "$libs_tmp/cpu" "$libs_tmp/cuda"
cp "$build"/runtime/bert/kernels/kb_*.[ch] "$build"/runtime/bert/kernels/kb_*.plan "$libs_tmp/cpu/"
cp "$build"/runtime/bert/kernels-cuda/kb_*.[ch] "$build"/runtime/bert/kernels-cuda/kb_*.plan "$libs_tmp/cuda/"
rm -f "$bundle/bert-libs.tar.gz" # the gzip packing before xz
tar cJf "$bundle/bert-libs.tar.xz.tmp" -C "$libs_tmp" cpu cuda
mv "$bundle/bert-libs.tar.xz.tmp" "$bundle/bert-libs.tar.xz"
echo "prepared the trainer's kernel libraries ($(ls "$libs_tmp/cuda" | grep -c '\.c$') for cpu and cuda: $(du -sh "$libs_tmp" | cut -f1), $(du -h "$bundle/bert-libs.tar.xz" | cut -f1) packed)" >&2
rm -rf "$libs_tmp"
rm -f "$bundle/bert-libs-tuned.tar.xz" # the two-visit packing before --tuned-libs
# cJSON, which kiln-bert reads its config and logs with, for a GPU machine without libcjson-dev:
# the header and the shared library as the build machine has them (-DKILN_CJSON_DIR there).
rm -rf "$bundle/cjson"
mkdir -p "$bundle/cjson/include/cjson" "$bundle/cjson/lib"
cjson_inc=$(pkg-config --variable=includedir libcjson)
cjson_lib=$(pkg-config --variable=libdir libcjson)
cp "$cjson_inc/cjson/cJSON.h" "$bundle/cjson/include/cjson/"
cp -L "$cjson_lib/libcjson.so.1" "$bundle/cjson/lib/"
echo "prepared cJSON for a machine without libcjson-dev" >&2
# The limit the bundle is held to (the carry to the GPU machine): the files' own bytes.
size=$(du -sb "$bundle" | cut -f1)
limit=$((48 * 1024 * 1024))
echo "bundle: $((size / 1048576)) MiB of $((limit / 1048576)) MiB" >&2
if [ "$size" -gt "$limit" ]; then
  echo "prepare: the bundle ($size bytes) is over its limit of $limit bytes" >&2
  exit 1
fi
