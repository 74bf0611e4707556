#!/usr/bin/env bash
# Checks the `kiln-bert` command's contract: `tokenize` output (one line of ids per input line,
# \n-only line splitting, a last line without \n, --seq-len rows), exit codes, and that train and
# eval document their options and refuse bad command lines; in a build without the kernel
# libraries both say they are not implemented.
# Usage: cli_test.sh KILN_BERT VOCAB
set -u
kb=$1 vocab=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

check() { # check NAME EXPECTED_RC CMD... ; stdout in $tmp/out, stderr in $tmp/err
  local name=$1 want=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err" <"$tmp/in"
  local rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL $name: exit $rc, expected $want"; sed 's/^/    /' "$tmp/err" | head -20
    fails=$((fails + 1)); return 1
  fi
  echo "ok   $name"
}

contains() { # contains NAME FILE PATTERN (grep -E)
  if ! grep -qE -- "$3" "$2"; then
    echo "FAIL $1: $(basename "$2") lacks /$3/"; sed 's/^/    /' "$2" | head -20
    fails=$((fails + 1)); return 1
  fi
}

same() { # same NAME EXPECTED_TEXT (compared with $tmp/out byte for byte)
  printf '%s' "$2" >"$tmp/want"
  if ! cmp -s "$tmp/want" "$tmp/out"; then
    echo "FAIL $1: output differs"; diff "$tmp/want" "$tmp/out" | head -20
    fails=$((fails + 1)); return 1
  fi
}

# --- tokenize: ids of the lines in tests/kilnbert/vocab.txt ([PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3)
printf 'The movie was GREAT!\n\nI love it\r\nCaf\xc3\xa9, na\xc3\xafve.\nunwanted maxx\n\xe4\xb8\xad\xe5\x9b\xbd\nhel\xfflo world' >"$tmp/in"
check tokenize 0 "$kb" tokenize --vocab "$vocab" &&
  same tokenize "2 5 6 7 8 9 3
2 3
2 19 20 21 3
2 16 10 17 11 3
2 12 13 14 1 3
2 22 23 3
2 41 42 3
"
check tokenize-seq-len 0 "$kb" tokenize --vocab "$vocab" --seq-len 5 &&
  same tokenize-seq-len "2 5 6 7 3
2 3 0 0 0
2 19 20 21 3
2 16 10 17 3
2 12 13 14 3
2 22 23 3 0
2 41 42 3 0
"
printf 'a\n' >"$tmp/in"
check final-newline 0 "$kb" tokenize --vocab "$vocab" && same final-newline "2 53 3
"
: >"$tmp/in"
check empty-input 0 "$kb" tokenize --vocab "$vocab" && same empty-input ""
printf '\n\n' >"$tmp/in"
check empty-lines 0 "$kb" tokenize --vocab "$vocab" --seq-len 2 && same empty-lines "2 3
2 3
"

# --- command line and input errors
: >"$tmp/in"
check no-vocab 64 "$kb" tokenize
check seq-len-1 64 "$kb" tokenize --vocab "$vocab" --seq-len 1
check seq-len-word 64 "$kb" tokenize --vocab "$vocab" --seq-len ten
check unknown-option 64 "$kb" tokenize --vocab "$vocab" --frobnicate
check missing-vocab 2 "$kb" tokenize --vocab "$tmp/no-such-vocab.txt" &&
  contains missing-vocab "$tmp/err" 'no-such-vocab.txt'
printf '[PAD]\n[UNK]\n[CLS]\n' >"$tmp/small.txt"
check vocab-without-sep 1 "$kb" tokenize --vocab "$tmp/small.txt" &&
  contains vocab-without-sep "$tmp/err" '\[SEP\]'
check no-args 64 "$kb"
check unknown-command 64 "$kb" frobnicate

# --- help
check help 0 "$kb" --help && contains help "$tmp/out" 'tokenize' && contains help "$tmp/out" 'train'
check version 0 "$kb" --version && contains version "$tmp/out" '^kiln-bert [0-9]+\.[0-9]+'
check help-tokenize 0 "$kb" tokenize --help && contains help-tokenize "$tmp/out" '--seq-len'
check help-train 0 "$kb" train --help
for opt in --data --max-samples --model --vocab --seq-len --padding --batch --epochs --steps \
    --lr --schedule --warmup --weight-decay --clip --dropout --precision --tf32 --no-shuffle --seed \
    --log --save --save-every --resume --stop-after --eval-data --eval-max-samples \
    --max-device-bytes; do
  contains "help-train $opt" "$tmp/out" "$opt"
done
check help-eval 0 "$kb" help eval
for opt in --model --data --max-samples --dump-logits --seq-len --max-device-bytes --tf32; do
  contains "help-eval $opt" "$tmp/out" "$opt"
done
# train exists where the kernel libraries were built (its help says what this build runs); a
# dropout that is not a probability below 1 and a precision it does not know are refused as
# bad command lines
if "$kb" train --help | grep -q 'This build:'; then
  check train-dropout 64 "$kb" train --data x --dropout 1 && contains train-dropout "$tmp/err" 'dropout'
  check train-no-data 64 "$kb" train --dropout 0
  # a build without the cuda copy refuses cuda as a bad command line; one with it (its help
  # names cuda) opens the GPU for the memory check: without one, 2 with the runtime's reason;
  # with one, the next problem of this command line (no --vocab), 64
  if "$kb" train --help | grep -q 'cuda\[:N\]\.'; then
    if ! check train-device 2 "$kb" train --data x --device cuda; then
      fails=$((fails - 1))
      check train-device-gpu 64 "$kb" train --data x --device cuda && contains train-device-gpu "$tmp/err" '--vocab'
    fi
  else
    check train-device 64 "$kb" train --data x --device cuda && contains train-device "$tmp/err" 'device'
  fi
  check train-device-spec 64 "$kb" train --data x --device cuda:x &&
    contains train-device-spec "$tmp/err" 'cuda:N'
  check train-save-every 64 "$kb" train --data x --dropout 0 --save-every 3 &&
    contains train-save-every "$tmp/err" '--save DIR'
  check train-precision 64 "$kb" train --data x --dropout 0 --precision fp8 &&
    contains train-precision "$tmp/err" 'fp32, fp16 or bf16'
  # numbers that are not finite, and Adam betas outside [0, 1), are bad command lines (an
  # --lr of inf used to be taken and train to NaN weights; a beta of 1 divides by zero)
  for bad in "--lr inf" "--lr nan" "--clip -inf" "--adam-eps 1e999" "--weight-decay infinity"; do
    check "train $bad" 64 "$kb" train --data x --dropout 0 $bad && contains "train $bad" "$tmp/err" 'bad value'
  done
  for bad in "--adam-beta1 1" "--adam-beta2 1.5"; do
    check "train $bad" 64 "$kb" train --data x --dropout 0 $bad &&
      contains "train $bad" "$tmp/err" 'must be in \[0, 1\)'
  done
else
  check train-pending 2 "$kb" train --data x && contains train-pending "$tmp/err" 'not implemented'
fi
# tune (where it is built): a budget of inf used to be taken and never end
if ! "$kb" tune --frobnicate 2>&1 </dev/null | grep -q "not implemented"; then
  check "tune --budget inf" 64 "$kb" tune --budget inf && contains "tune --budget inf" "$tmp/err" 'bad value'
fi
if "$kb" eval --help | grep -q 'This build:'; then
  check eval-no-data 64 "$kb" eval --model x && contains eval-no-data "$tmp/err" '--data'
  check eval-no-model 64 "$kb" eval --data x && contains eval-no-model "$tmp/err" '--model'
  check eval-bad-batch 64 "$kb" eval --model x --data x --batch 0
  check eval-missing-model 2 "$kb" eval --model "$tmp/no-model" --data x --vocab "$vocab" &&
    contains eval-missing-model "$tmp/err" 'no-model/config.json'
else
  check eval-pending 2 "$kb" eval --model x && contains eval-pending "$tmp/err" 'not implemented'
fi

[ "$fails" -eq 0 ] && echo "all passed" || echo "$fails failed"
[ "$fails" -eq 0 ]
