#!/usr/bin/env bash
# bench/bert-gpu.sh — BERT fine-tuning end to end on one device: Kiln's kiln-bert against
# PyTorch on the same model, batch, length and data, with the reference benchmark's metrics.
#
# In this order, each part in its own process under its own time limit (a slow part is killed
# and recorded as timed out, and cannot eat the others' time; a part that the whole script's
# limit leaves under 10 s for is skipped and recorded so):
#   0. Kiln fp16, --batch 24, 3 steps with --profile: where a step's time goes, kernel call by
#      kernel call (the report's "Where Kiln's step goes", the 15 calls that take the most);
#   1. Kiln fp16 train + end-of-run eval, --batch 24 (BERT-large, seq 512 on cuda); with
#      --kiln-bert-tuned EXE, then the same with EXE, a kiln-bert built against the kernel
#      libraries tuned for this device (bench/gpu-check.sh): the row "kiln-bert (tuned)";
#   2. Kiln fp32, --batch 16 (on cpu and emu also with the --kiln-bert-tuned EXE);
#   3. Kiln fp16 with --padding dynamic (batches padded to their longest sample's bucket), in
#      the data order, then with --group-by-length (shuffled, each run of 50 batches sorted by
#      length): the steps are one epoch of the data, so every batch is cut from the sorted
#      reviews, as in most of a long run's epochs;
#   4. where PyTorch is present: the ceilings of step 0's calls (bert_gpu.py ceilings, 40 s:
#      PyTorch's own matrix product at each gemm call's shape, layouts and type, a device copy
#      for the rest; the report's "of ceiling"), then PyTorch eager fp32 and fp16 (autocast +
#      GradScaler);
#   5. fp32 with TF32 tensor cores: Kiln fp32 --tf32 (its gemms' operands rounded to TF32) and
#      PyTorch eager fp32 with torch.backends.cuda.matmul.allow_tf32 (bert_gpu.py --tf32; on
#      the cpu that flag does nothing, so that row is skipped there); precision "fp32+tf32".
#      These two are the first parts skipped when time is short: each runs only if
#      TF32_KEEP (120) seconds are still left after its own limit, for torch.compile default;
#   6. torch.compile default, reduce-overhead and max-autotune (fp16), each where it finishes
#      inside its limit.
# The data (bench/bert_gpu.py data): IMDB-like reviews of realistic lengths over a synthetic
# 30522-token vocabulary, read by both sides in kiln-bert's --no-shuffle order. PyTorch is
# optional and benchmark-only (Debian 12: `apt-get install python3-torch` gives 1.13, eager
# only; that package is for Debian's /usr/bin/python3: KILN_TORCH_PYTHON=/usr/bin/python3
# names it where another python3 comes first on PATH); without it the Kiln rows stand alone.
# Writes OUT/bert-gpu-NAME.json and .md (NAME: the GPU's name, or the device), see bert_gpu.py.
#
# usage: bench/bert-gpu.sh [--device cuda|cpu|emu] [--kiln-bert EXE] [--kiln-bert-tuned EXE]
#          [--model M] [--seq-len L]
#          [--steps N] [--batch-fp16 B] [--batch-fp32 B] [--limit S] [--out DIR] [--name NAME]
#          [--part-limit S]
# Defaults: on cuda large, 512, 10 steps, 24 / 16, a limit of 300 s; on cpu and emu tiny, 128,
# 4 steps, 8 / 8, 300 s. --part-limit caps every part (a dry run uses it to show the limits
# working).
set -uo pipefail
cd "$(dirname "$0")/.."

device=cuda kb=${KILN_BERT:-build/tools/kiln-bert} kbt= model= seq= steps= b16= b32= limit=300
out=bench/results name= part_cap=0 torch_py=${KILN_TORCH_PYTHON:-python3}
command="KILN_TORCH_PYTHON=$torch_py bash bench/bert-gpu.sh $*"
while [ $# -gt 0 ]; do
  case $1 in
    --device) device=$2 ;;
    --kiln-bert) kb=$2 ;;
    --kiln-bert-tuned) kbt=$2 ;;
    --model) model=$2 ;;
    --seq-len) seq=$2 ;;
    --steps) steps=$2 ;;
    --batch-fp16) b16=$2 ;;
    --batch-fp32) b32=$2 ;;
    --limit) limit=$2 ;;
    --part-limit) part_cap=$2 ;;
    --out) out=$2 ;;
    --name) name=$2 ;;
    -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
    *) echo "bert-gpu.sh: unknown option $1 (see --help)" >&2; exit 64 ;;
  esac
  [ $# -ge 2 ] || { echo "bert-gpu.sh: $1 needs a value" >&2; exit 64; }
  shift 2
done
case $device in
  cuda|cuda:[0-9]*) : "${model:=large}" "${seq:=512}" "${steps:=10}" "${b16:=24}" "${b32:=16}"
                    torch_dev=cuda ;;
  cpu|emu) : "${model:=tiny}" "${seq:=128}" "${steps:=4}" "${b16:=8}" "${b32:=8}"
           torch_dev=cpu ;;
  *) echo "bert-gpu.sh: --device $device: expected cuda, cuda:N, cpu or emu" >&2; exit 64 ;;
esac
for v in "$seq" "$steps" "$b16" "$b32" "$limit" "$part_cap"; do
  [[ $v =~ ^[0-9]+$ ]] || { echo "bert-gpu.sh: '$v' is not a number" >&2; exit 64; }
done
[ -x "$kb" ] || { echo "bert-gpu.sh: no kiln-bert at $kb (build it, or --kiln-bert EXE)" >&2; exit 2; }
[ -z "$kbt" ] || [ -x "$kbt" ] || { echo "bert-gpu.sh: --kiln-bert-tuned: no kiln-bert at $kbt" >&2; exit 2; }
if [ -z "$name" ]; then
  name=$device
  if [ "$torch_dev" = cuda ] && command -v nvidia-smi >/dev/null; then
    name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
  fi
  name=$(echo "${name:-$device}" | tr -c 'A-Za-z0-9\n' '-' | tr 'A-Z' 'a-z' | sed 's/--*/-/g; s/-$//')
fi

start=$(date +%s)
deadline=$((start + limit))
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
parts=$work/parts.jsonl
: >"$parts"
mkdir -p "$out"

# The seconds a part may take: its own limit, the --part-limit cap, and what is left of the
# whole script's limit, less 20 s: the 5 s a killed part may take to end and 15 s for the
# report (Python's start-up alone takes seconds on a loaded machine), less KEEP (default 0)
# seconds kept for the parts after it.
part_limit() {
  local own=$1 left=$((deadline - $(date +%s) - 20 - ${2:-0}))
  [ "$part_cap" -gt 0 ] && [ "$part_cap" -lt "$own" ] && own=$part_cap
  [ "$left" -lt "$own" ] && own=$left
  echo "$own"
}

# note SYSTEM MODE PRECISION BATCH PADDING STATUS WHY: a part without numbers
note() {
  printf '{"system": "%s", "mode": "%s", "precision": "%s", "batch": %s, "padding": "%s", "status": "%s", "why": "%s"}\n' \
    "$@" >>"$parts"
  echo "bert-gpu: $1 $2 $3: $6 ($7)" >&2
}

# run_part SECONDS LOG CMD...: rc 124 when the limit killed it
run_part() {
  local t=$1 log=$2; shift 2
  timeout --kill-after=5 "$t" "$@" >"$log" 2>&1
}

echo "== data: $((b16 * steps)) training and $((2 * b16)) test reviews ==" >&2
python3 bench/bert_gpu.py data "$work/data" --train $((b16 * steps)) --test $((2 * b16)) || exit 2

# kiln PRECISION BATCH PADDING OWN_LIMIT [KEEP [EXE LABEL]]: PRECISION fp32, fp16, bf16, or
# fp32+tf32 (--precision fp32 --tf32); EXE (default --kiln-bert's) runs it, LABEL names its row's
# mode ("kiln-bert (LABEL)"; default the padding)
kiln() {
  local prec=$1 batch=$2 pad=$3 t exe=${6:-$kb} label=${7:-$3}
  t=$(part_limit "$4" "${5:-0}")
  if [ "$t" -lt 10 ]; then note kiln "$label" "$prec" "$batch" "$pad" skipped "short of time"; return; fi
  echo "== Kiln $prec, batch $batch, $pad padding, kiln-bert ($label) (limit ${t}s) ==" >&2
  local log=$work/kiln-$prec-$label.jsonl olog=$work/kiln-$prec-$label.out
  local pflags=(--precision "$prec")
  [ "$prec" = fp32+tf32 ] && pflags=(--precision fp32 --tf32)
  # grouped: dynamic padding over the shuffled order grouped by length (the data order stays
  # for the others, as PyTorch reads it)
  local order=(--padding "$pad" --no-shuffle)
  [ "$pad" = grouped ] && order=(--padding dynamic --group-by-length)
  # what whole-step replay did (on by default on cuda) goes into the row
  KILN_BERT_GRAPH_STATS=1 run_part "$t" "$olog" "$exe" train --model "$model" \
    --data "$work/data/imdb" --vocab "$work/data/vocab.txt" --device "$device" "${pflags[@]}" \
    --batch "$batch" --seq-len "$seq" "${order[@]}" "${optim[@]}" --steps "$steps" --log "$log"
  local rc=$?
  tail -3 "$olog" >&2
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then note kiln "$label" "$prec" "$batch" "$pad" timeout "over ${t}s"; return; fi
  if [ $rc -ne 0 ]; then
    note kiln "$label" "$prec" "$batch" "$pad" failed "exit $rc: $(tail -1 "$olog" | tr -d '"\\' | cut -c1-200)"
    return
  fi
  python3 - "$log" "$prec" "$batch" "$pad" "$model" "$seq" "$olog" "$label" >>"$parts" <<'EOF'
import json, sys
log, prec, batch, pad, model, seq, out, label = sys.argv[1:]
recs = [json.loads(x) for x in open(log)]
s = next(r for r in recs if r.get("summary"))
loss = [r["loss"] for r in recs if "step" in r][-1]
graphs = next((x.strip() for x in open(out, errors="replace") if x.startswith("graphs: ")), "")
print(json.dumps(dict(s, system="kiln", status="ok", mode=f"kiln-bert ({label})", precision=prec,
                      batch=int(batch), padding=pad, model=model, seq_len=int(seq), loss=loss,
                      graphs=graphs)))
EOF
}

# kiln_profile OWN_LIMIT: 3 steps of fp16 with --profile; its {"profile": true} records go to
# the report (profile.jsonl), a failure to the parts as a row
profile=$work/profile.jsonl
# bert_gpu.py's optimizer: AdamW at a constant 2e-5 (no warmup, no decay), weight decay 0.01,
# the global norm clipped to 1; kiln-bert's defaults are the HF Trainer's (5e-5, linear decay),
# so without these the two sides would train different runs and their loss columns differ
optim=(--lr 2e-5 --schedule constant --weight-decay 0.01 --clip 1)
kiln_profile() {
  local t
  t=$(part_limit "$1")
  if [ "$t" -lt 10 ]; then note kiln profile fp16 "$b16" fixed skipped "short of time"; return; fi
  echo "== Kiln fp16, batch $b16, 3 steps with --profile (limit ${t}s) ==" >&2
  local log=$work/kiln-profile.jsonl
  run_part "$t" "$work/kiln-profile.out" "$kb" train --model "$model" --data "$work/data/imdb" \
    --vocab "$work/data/vocab.txt" --device "$device" --precision fp16 --batch "$b16" \
    --seq-len "$seq" --steps 3 --no-shuffle "${optim[@]}" --profile --log "$log"
  local rc=$?
  tail -3 "$work/kiln-profile.out" >&2
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then note kiln profile fp16 "$b16" fixed timeout "over ${t}s"; return; fi
  if [ $rc -ne 0 ]; then
    note kiln profile fp16 "$b16" fixed failed "exit $rc: $(tail -1 "$work/kiln-profile.out" | tr -d '"\\' | cut -c1-200)"
    return
  fi
  grep '"profile": true' "$log" >"$profile"
}

# the fp32+tf32 parts keep this much for torch.compile default after them (see the top)
TF32_KEEP=120
kiln_profile 60
kiln fp16 "$b16" fixed 90
[ -n "$kbt" ] && kiln fp16 "$b16" fixed 90 0 "$kbt" tuned
kiln fp32 "$b32" fixed 90
# fp32 tuned too where time allows it: the cpu's headline precision (a GPU's visit is short)
[ -n "$kbt" ] && [ "$device" != cuda ] && kiln fp32 "$b32" fixed 90 0 "$kbt" tuned
kiln fp16 "$b16" dynamic 60
kiln fp16 "$b16" grouped 60

# torch MODE PRECISION BATCH OWN_LIMIT [KEEP]: PRECISION fp32, fp16 or fp32+tf32 (--tf32)
torch_part() {
  local mode=$1 prec=$2 batch=$3 t
  t=$(part_limit "$4" "${5:-0}")
  if [ "$t" -lt 10 ]; then note pytorch "$mode" "$prec" "$batch" fixed skipped "short of time"; return; fi
  echo "== PyTorch $mode $prec, batch $batch (limit ${t}s) ==" >&2
  local pflags=(--precision "$prec")
  [ "$prec" = fp32+tf32 ] && pflags=(--precision fp32 --tf32)
  run_part "$t" "$work/torch-$mode-$prec.out" "$torch_py" bench/bert_gpu.py run --data "$work/data" \
    --model "$model" "${pflags[@]}" --batch "$batch" --seq-len "$seq" --steps "$steps" \
    --mode "$mode" --device "$torch_dev" --json "$parts"
  local rc=$?
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then note pytorch "$mode" "$prec" "$batch" fixed timeout "over ${t}s"
  elif [ $rc -eq 3 ]; then
    note pytorch "$mode" "$prec" "$batch" fixed unavailable "$(tail -1 "$work/torch-$mode-$prec.out" | tr -d '"\\' | cut -c1-200)"
  elif [ $rc -ne 0 ]; then
    note pytorch "$mode" "$prec" "$batch" fixed failed "exit $rc: $(tail -1 "$work/torch-$mode-$prec.out" | tr -d '"\\' | cut -c1-200)"
  fi
}

torch_ok=1
if ! "$torch_py" -c 'import torch' 2>/dev/null; then
  note pytorch all all 0 fixed skipped "PyTorch is not installed"
  torch_ok=0
elif [ "$torch_dev" = cuda ] && ! "$torch_py" -c 'import torch, sys; sys.exit(not torch.cuda.is_available())'; then
  note pytorch all all 0 fixed skipped "PyTorch sees no GPU"
  torch_ok=0
fi
# the ceilings of the profiled calls (the report's "of ceiling"): PyTorch's own product at each
# gemm call's shape, a device-to-device copy for the rest
ceil=$work/ceilings.json
if [ $torch_ok = 1 ] && [ -s "$profile" ]; then
  t=$(part_limit 40 0)
  if [ "$t" -ge 10 ]; then
    echo "== ceilings of the profiled calls (limit ${t}s) ==" >&2
    run_part "$t" "$work/ceilings.out" "$torch_py" bench/bert_gpu.py ceilings --profile "$profile" \
      --device "$torch_dev" --json "$ceil" || tail -3 "$work/ceilings.out" >&2
  fi
fi
if [ $torch_ok = 1 ]; then
  torch_part eager fp32 "$b32" 60
  torch_part eager fp16 "$b16" 60
fi
kiln fp32+tf32 "$b32" fixed 90 "$TF32_KEEP"
if [ $torch_ok = 1 ]; then
  if [ "$torch_dev" = cuda ]; then
    torch_part eager fp32+tf32 "$b32" 60 "$TF32_KEEP"
  else
    note pytorch eager fp32+tf32 "$b32" fixed skipped "allow_tf32 does nothing on the cpu"
  fi
  for mode in default reduce-overhead max-autotune; do
    torch_part "$mode" fp16 "$b16" 120
  done
fi

python3 bench/bert_gpu.py report --parts "$parts" --profile "$profile" --ceilings "$ceil" --out "$out/bert-gpu-$name" \
  --title "BERT fine-tuning on $name: model $model, seq $seq, $steps steps" \
  --command "$command ($(date -u +%Y-%m-%d), load average $(cut -d' ' -f1 /proc/loadavg) at the end)" >&2 || exit 2
echo "bert-gpu: wrote $out/bert-gpu-$name.json and .md in $(($(date +%s) - start)) s (limit ${limit}s)" >&2
