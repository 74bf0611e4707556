#!/usr/bin/env bash
# A short BERT fine-tuning run of `kiln-bert train` (the tiny model: 2 layers, hidden 128, 2
# heads, FFN 512; fp32; dropout 0) on a synthetic aclImdb-layout folder made here (64 short
# reviews of the test vocabulary's words: no dataset is downloaded), on the cpu device, and
# its summary table (the reference benchmark's metrics, plus tokens per second and the last
# loss). The per-step log and the summary record are kept in BUILD_DIR/bert-train/log.jsonl.
# Usage: bench/bert-train.sh BUILD_DIR [STEPS] [BATCH] [SEQ_LEN]   (defaults: 20, 8, 128)
set -euo pipefail
build=${1:-build}
steps=${2:-20}
batch=${3:-8}
seq=${4:-128}
out="$build/bert-train"
rm -rf "$out/data"
for label in pos neg; do
  mkdir -p "$out/data/train/$label"
  for i in $(seq 0 31); do
    if [ $label = pos ]; then words="the movie was great ! i love it , great great"
    else words="the movie was naive . i want un ##want walk"; fi
    # longer texts than the words alone: each review repeats its sentence
    for _ in 1 2 3 4 5 6; do printf '%s %d ' "$words" "$i"; done >"$out/data/train/$label/${i}_7.txt"
  done
done
"$build/tools/kiln-bert" train --model tiny --data "$out/data" --vocab tests/kilnbert/vocab.txt \
  --device cpu --precision fp32 --steps "$steps" --batch "$batch" --seq-len "$seq" \
  --dropout 0 --lr 1e-3 --warmup 2 --seed 1 --log "$out/log.jsonl"
