#!/usr/bin/env bash
# The memory-bound BERT kernels at BERT shapes (f16, a 1024-wide tile over 4 warps, the row
# widths promised multiples of 8) keep at most one kiln.convert_layout each after
# kiln-gpu-layouts and kiln-gpu-convert-cse (`kiln compile --emit gpu-mlir`): a convert is a
# round trip through shared memory behind two barriers.  The elementwise chains of AdamW and
# layernorm take one layout (0 converts); bias+GELU keeps the one that moves the bias row into
# the tile's layout.  No ptxas needed: this checks the IR.
# Usage: bert_converts_test.sh KILN KERNELS_BERT_DIR
set -u
kiln=$1 kdir=$2
fails=0

check() { # check KERNEL FILE MAX [compile args...]
  local kernel=$1 file=$2 max=$3; shift 3
  local out n
  if ! out=$("$kiln" compile "$kdir/$file" --kernel "$kernel" "$@" --target sm_90 --emit gpu-mlir 2>&1); then
    echo "FAIL $kernel: kiln compile failed"; echo "$out" | head -20 | sed 's/^/    /'
    fails=$((fails + 1)); return
  fi
  n=$(grep -c '"kiln.convert_layout"' <<<"$out")
  if [ "$n" -gt "$max" ]; then
    echo "FAIL $kernel: $n convert_layout ops, at most $max expected"
    fails=$((fails + 1)); return
  fi
  echo "ok   $kernel: $n convert_layout (at most $max)"
}

row=(-D T=f16 -D BLOCK=1024 -D num_warps=4 --multiple-of cols=8)
check layernorm_fwd layernorm.kiln 0 "${row[@]}"
check layernorm_bwd layernorm.kiln 0 "${row[@]}"
check adamw_step adamw.kiln 0 -D WRITE_F16=1 -D TW=f16 -D BLOCK=1024 -D num_warps=4 --multiple-of n=8
for k in bias_gelu_fwd bias_gelu_bwd; do
  check $k gelu.kiln 1 -D T=f16 -D BLOCK_R=1 -D BLOCK_C=1024 -D num_warps=4 --multiple-of cols=8
done
[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
