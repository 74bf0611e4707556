#!/usr/bin/env bash
# The main job: installs what is missing, builds Kiln, tunes kernels for the device present
# (the CPU backend when there is no GPU), generates a kernel library from the winners, times
# the kernels, tunes and times the BERT kernels of one BERT-base layer, runs a short BERT
# fine-tuning with the trainer, tunes the trainer's own kernel calls and runs it again on the
# tuned libraries, printing tables.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
kiln_install_deps

jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -G Ninja -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ >/dev/null
cmake --build build -j "$jobs"

# The device: the first GPU when the driver reports one, else the CPU backend. Should tuning on
# the GPU fail (a driver without a usable device, say), the job says so and tunes on the CPU.
device=cpu
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU 0'; then
  device=cuda:0
fi
kiln=build/tools/kiln
kdir=dsl/examples
out=build/main-job
mkdir -p "$out"

tune() {
  echo "== kiln tune (device $1, default mode) ==" >&2
  "$kiln" tune "$kdir/vector_add.kiln" "$kdir/matmul_f16.kiln" --device "$1" --mode default \
    --jobs "$jobs" --cache "$out/tune-cache.json" --emit-lib "$out/lib" \
    --args 'kernel=vector_add; n=1048576; x: f32[n]; y: f32[n]; out: f32[n]=0; grid=cdiv(n, BLOCK)' \
    --args 'kernel=matmul_f16; M=256; N=256; K=256; sam=256; sak=1; sbk=256; sbn=1; scm=256; scn=1;
            a: f16[M*K]; b: f16[K*N]; c: f16[M*N]=0; grid=cdiv(M, BM), cdiv(N, BN)'
}
if ! tune "$device" && [ "$device" != cpu ]; then
  echo "kiln: tuning on $device failed; tuning on the CPU backend instead" >&2
  device=cpu
  tune cpu
fi
echo "generated kernel library: $out/lib" >&2

echo "== kernels on $device ==" >&2
bash bench/cpu-kernels.sh build

# The BERT kernels at BERT-base shapes, tuned for the device: f16 activations on a GPU, f32 on
# the CPU backend (which computes f16 through f32 conversions).
echo "== BERT-base layer kernels on $device ==" >&2
bert_t=f32
[ "$device" = cpu ] || bert_t=f16
bash bench/bert-kernels.sh build "$device" "$bert_t"

# A short BERT fine-tuning run through the trainer, an evaluation of the model it saves on a
# test split (kiln-bert: every operation a Kiln kernel of the libraries generated at build
# time), and their summary tables. The trainer runs on the cpu device here (docs/trainer.md);
# KILN_IMDB=DIR runs it on a real aclImdb.
echo "== BERT fine-tuning: kiln-bert train + eval (tiny model, fp32, cpu, untuned libraries) ==" >&2
bash bench/bert-train.sh build

# Whole-model tuning: every kernel call of that run's training and eval steps (batch 8, every
# dynamic-padding length up to 128) tuned on the cpu, the trainer's libraries made again from
# the winners and kiln-bert built against them (scripts/bert-tune.sh), then the same run with
# the tuned trainer and the two side by side. KILN_MAIN_TUNE_BUDGET bounds the tuning (seconds).
echo "== kiln-bert tune: the trainer's kernel calls, tuned on cpu ==" >&2
tuned="$out/bert-tuned"
bash scripts/bert-tune.sh --build build --out "$tuned" --model tiny --precision fp32 --batch 8 \
  --seq-len 128 --padding dynamic --device cpu --budget "${KILN_MAIN_TUNE_BUDGET:-900}"
echo "== BERT fine-tuning again with the tuned libraries ==" >&2
KILN_BERT="$tuned/build/tools/kiln-bert" KILN_BERT_TRAIN_OUT="$out/bert-train-tuned" \
  bash bench/bert-train.sh build
python3 - build/bert-train/train.jsonl "$out/bert-train-tuned/train.jsonl" <<'PY'
import json, sys
rows = []
for name, path in zip(("untuned", "tuned"), sys.argv[1:]):
    with open(path) as f:
        s = [json.loads(line) for line in f if '"summary"' in line][-1]
    rows.append((name, s["first_iter_time"], s["avg_iter_time"], s["samples_per_sec"]))
print("\nkiln-bert train (tiny, fp32, cpu, batch 8, seq <= 128): libraries untuned and tuned")
print(f"{'libraries':<10} {'first_iter_time':>16} {'avg_iter_time':>14} {'samples_per_sec':>16}")
for r in rows:
    print(f"{r[0]:<10} {r[1]:>16.4f} {r[2]:>14.4f} {r[3]:>16.2f}")
print(f"tuned / untuned samples per second: {rows[1][3] / rows[0][3]:.2f}x")
PY
