#!/usr/bin/env bash
# A short BERT fine-tuning run of `kiln-bert train` (the tiny model: 2 layers, hidden 128, 2
# heads, FFN 512; fp32; dropout 0) on the cpu device, then `kiln-bert eval` of the saved model
# on the test split, and both summary tables (the reference benchmark's metrics, tokens per
# second and peak device memory; eval adds eval_loss and accuracy).
#
# The data is an aclImdb-layout folder made here (no dataset is downloaded): 64 training and 32
# test reviews of the test vocabulary's words whose label is decided by word choice (great/love
# against naive/walk among shared filler words), so accuracy means something. KILN_IMDB=DIR
# points the run at a real aclImdb instead (train/ and test/ with neg/ and pos/);
# KILN_EVAL_SAMPLES=N then limits eval to the first N test reviews (contract order: all neg/
# before pos/, so a small N is all one label) since the full 25,000 take long on a CPU.
# Batches are padded dynamically (to 32, 64 or a multiple of 128 tokens, at most SEQ_LEN).
# Training reads the train/ split alone, so train does not evaluate at its end; the separate
# eval is the measure. The logs are kept in BUILD_DIR/bert-train/ (train.jsonl, eval.jsonl),
# the model in BUILD_DIR/bert-train/model.
# KILN_BERT=EXE runs another kiln-bert (the tuned one scripts/bert-tune.sh builds) and
# KILN_BERT_TRAIN_OUT=DIR keeps its logs and model apart (default BUILD_DIR/bert-train).
# Usage: bench/bert-train.sh BUILD_DIR [STEPS] [BATCH] [SEQ_LEN]   (defaults: 40, 8, 128)
set -euo pipefail
build=${1:-build}
steps=${2:-40}
batch=${3:-8}
seq=${4:-128}
out=${KILN_BERT_TRAIN_OUT:-$build/bert-train}
kb=${KILN_BERT:-$build/tools/kiln-bert}
vocab=tests/kilnbert/vocab.txt

# one review: 8-14 filler words with 2 of its label's cue words among them (bash's RANDOM,
# seeded, so the data is the same on every run)
review() {
  local label=$1 fill=(the movie was i it a b hello world cafe max istanbul resume want) w=()
  local pos=(great love) neg=(naive walk) n=$((8 + RANDOM % 7)) k
  for ((k = 0; k < n; k++)); do w+=("${fill[RANDOM % ${#fill[@]}]}"); done
  for k in 1 2; do
    if [ "$label" = pos ]; then w[RANDOM % n]=${pos[RANDOM % 2]}; else w[RANDOM % n]=${neg[RANDOM % 2]}; fi
  done
  echo "${w[*]}"
}

if [ -n "${KILN_IMDB:-}" ]; then
  data=$KILN_IMDB
else
  data="$out/data"
  rm -rf "$data"
  RANDOM=7
  for split in train test; do
    n=32
    [ $split = test ] && n=16
    for label in pos neg; do
      mkdir -p "$data/$split/$label"
      for ((i = 0; i < n; i++)); do review $label >"$data/$split/$label/${i}_7.txt"; done
    done
  done
fi
mkdir -p "$out"
eval_limit=()
[ -n "${KILN_EVAL_SAMPLES:-}" ] && eval_limit=(--max-samples "$KILN_EVAL_SAMPLES")

"$kb" train --model tiny --data "$data/train" --vocab "$vocab" --device cpu --precision fp32 \
  --steps "$steps" --batch "$batch" --seq-len "$seq" --padding dynamic --dropout 0 --lr 1e-3 \
  --warmup 2 --seed 1 --log "$out/train.jsonl" --save "$out/model"
echo
"$kb" eval --model "$out/model" --data "$data" --vocab "$vocab" --device cpu --precision fp32 \
  --batch "$batch" --seq-len "$seq" --padding dynamic "${eval_limit[@]}" --log "$out/eval.jsonl"
