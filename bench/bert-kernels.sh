#!/usr/bin/env bash
# Tunes the kernels of one BERT-base encoder layer (hidden 768, 12 heads of 64, FFN 3072, a
# batch of 2 sequences of 128 tokens), plus the MLM loss over the 30522-word vocabulary and the
# AdamW step over a 1M-parameter slice, on the device given (`kiln tune`, default mode), and
# prints each kernel's winner and time. The BERT trainer will link these kernels; until it
# exists this is the layer-level measure of the BERT path.
# Usage: bench/bert-kernels.sh BUILD_DIR [DEVICE] [ELEMENT_TYPE]   (defaults: cpu, f32)
set -euo pipefail
build=${1:-build}
device=${2:-cpu}
T=${3:-f32}
kiln="$build/tools/kiln"
kdir=kernels-bert
out="$build/bert-kernels"
mkdir -p "$out"
jobs=$(nproc 2>/dev/null || echo 2)

# name | file | kernel | pins | --args
cases() {
  cat <<EOF
qkv projection + bias|gemm|gemm|-D EPI=1|M=256; N=2304; K=768; sam=K; sak=1; sbk=N; sbn=1; scm=N; scn=1; splits=1; a: $T[M*K]; b: $T[K*N]; c: $T[M*N]; bias: $T[N]; res: $T[1]; grid=cdiv(M, BM), cdiv(N, BN)
attention forward|attention|attn_fwd|-D D=64|S=128; H=12; sb=S*H*64; sh=64; ss=H*64; osb=S*H*64; osh=64; oss=H*64; scale=0.125; p_drop=0.1; seed=1; offset=0; q: $T[2*S*H*64]; k: $T[2*S*H*64]; v: $T[2*S*H*64]; o: $T[2*S*H*64]; lse: f32[2*H*S]; kv_len: i32[2]=128; grid=cdiv(S, BM), 2*H
output projection + residual|gemm|gemm|-D EPI=3|M=256; N=768; K=768; sam=K; sak=1; sbk=N; sbn=1; scm=N; scn=1; splits=1; a: $T[M*K]; b: $T[K*N]; c: $T[M*N]; bias: $T[N]; res: $T[M*N]; grid=cdiv(M, BM), cdiv(N, BN)
dropout + residual|dropout|dropout_add_fwd||n=256*768; p=0.1; seed=1; offset=0; x: $T[n]; res: $T[n]; y: $T[n]; grid=cdiv(n, BLOCK)
dropout + residual + layernorm|layernorm|layernorm_fwd||cols=768; eps=1e-12; p=0.1; seed=12345; offset=0; x: $T[256*cols]; res: $T[256*cols]; gamma: $T[cols]; beta: $T[cols]; s_out: $T[256*cols]; y: $T[256*cols]; mean: f32[256]; rstd: f32[256]; grid=256
FFN up + bias + GELU|gemm|gemm|-D EPI=2|M=256; N=3072; K=768; sam=K; sak=1; sbk=N; sbn=1; scm=N; scn=1; splits=1; a: $T[M*K]; b: $T[K*N]; c: $T[M*N]; bias: $T[N]; res: $T[1]; grid=cdiv(M, BM), cdiv(N, BN)
FFN down + residual|gemm|gemm|-D EPI=3|M=256; N=768; K=3072; sam=K; sak=1; sbk=N; sbn=1; scm=N; scn=1; splits=1; a: $T[M*K]; b: $T[K*N]; c: $T[M*N]; bias: $T[N]; res: $T[M*N]; grid=cdiv(M, BM), cdiv(N, BN)
MLM cross-entropy|xent|xent_fwd|--index-bits 64|classes=30522; ignore_index=-100; x: $T[256*classes]; labels: i32[256]; loss: f32[256]; lse_out: f32[256]; grid=256
AdamW step (1M params)|adamw|adamw_step|-D WRITE_F16=0|n=1048576; lr=1e-4; beta1=0.9; beta2=0.999; eps=1e-8; weight_decay=0.01; step=1; inv_scale=1.0; max_norm=1.0; p: f32[n]; grad: f32[n]; m: f32[n]; v: f32[n]=0; p16: f16[1]; sumsq: f32[1]=1; found_inf: i32[1]=0; grid=cdiv(n, BLOCK)
EOF
}

report="$out/report.txt"
: > "$report"
printf '%-30s %-10s %12s  %s\n' "kernel (BERT-base, 2x128 tokens)" "$T" "median ms" "winner" | tee -a "$report"
total=0
while IFS='|' read -r name file kernel pins args; do
  log="$out/$kernel-${name// /_}.txt"
  tpins=(-D "T=$T")
  [ "$kernel" = adamw_step ] && tpins=()  # AdamW keeps f32 master weights and moments
  # shellcheck disable=SC2086  # $pins is zero or more -D NAME=V words
  if ! "$kiln" tune "$kdir/$file.kiln" --kernel "$kernel" "${tpins[@]}" $pins --device "$device" \
      --mode default --jobs "$jobs" --reps 3 --cache "$out/tune-cache.json" --args "$args" \
      > "$log" 2> "$log.err"; then
    printf '%-30s %-10s %12s  %s\n' "$name" "$kernel" "failed" "(see $log.err)" | tee -a "$report"
    continue
  fi
  # the winner's row of the tuner's table: "  * CONFIG  ok  MEDIAN  P25..P75 ..."
  row=$(grep -m1 '^  \* ' "$log" || true)
  ms=$(awk '{print $4}' <<<"$row")
  cfg=$(awk '{print $2}' <<<"$row")
  printf '%-30s %-10s %12s  %s\n' "$name" "$kernel" "${ms:--}" "${cfg:-none}" | tee -a "$report"
  [ -n "$ms" ] && total=$(awk -v a="$total" -v b="$ms" 'BEGIN {printf "%.4f", a + b}')
done < <(cases)
printf '%-30s %-10s %12s\n' "sum of the above" "" "$total" | tee -a "$report"
echo "kiln: tuner reports in $out" >&2
