#!/usr/bin/env bash
# The code of an untuned library's cols%8 copy, read by `kiln stat`: `kiln lib` on the BERT
# bias+GELU kernels (f16, no cache, --args with cols = 128) notes the default config each
# kernel gets and the promises of its copies; this test takes that config and the cols%8
# promise, compiles it for sm_90 as the library would for a cuda device, and requires every
# global load and store to be 128 bits (x, bias, y / dy, dx: 16-byte vectors of 8 f16) with 0
# spill bytes. The generic copy at the same config (no promise) must not be all 128-bit: the
# tier is what makes the row body vector code for a row length such as 1000.
# Skipped (exit 77) without ptxas. Usage: tier_stat_test.sh KILN KERNELS_BERT_DIR PTXAS
set -u
kiln=$1 kdir=$2 ptxas=$3
if [ ! -x "$ptxas" ]; then
  echo "skip: no ptxas ($ptxas)"
  exit 77
fi
export KILN_PTXAS=$ptxas
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

if ! "$kiln" lib "$kdir/gelu.kiln" --device emu -D T=f16 -o "$tmp/lib" --lib-name tiers \
    --args "kernel=bias_gelu_fwd; rows=3; cols=128; x: f16[rows*cols]; bias: f16[cols]; y: f16[rows*cols]; grid=cdiv(rows, BLOCK_R), cdiv(cols, BLOCK_C)" \
    --args "kernel=bias_gelu_bwd; rows=3; cols=128; x: f16[rows*cols]; bias: f16[cols]; dy: f16[rows*cols]; dx: f16[rows*cols]; grid=cdiv(rows, BLOCK_R), cdiv(cols, BLOCK_C)" \
    2>"$tmp/lib.txt"; then
  echo "FAIL: kiln lib failed"; sed 's/^/    /' "$tmp/lib.txt" | head -20
  exit 1
fi

# check KERNEL: the config and the cols%8 copy from kiln lib's notes, then kiln stat of both
# copies at that config.
check() {
  local kernel=$1
  if ! grep -q "'$kernel' also gets its default config specialized on cols%8" "$tmp/lib.txt"; then
    echo "FAIL $kernel: the library has no cols%8 copy"; sed 's/^/    /' "$tmp/lib.txt"
    fails=$((fails + 1)); return
  fi
  local config defs=()
  config=$(sed -n "s/.*no timing of '$kernel' .* default config \([^ ]*\) (untuned).*/\1/p" "$tmp/lib.txt")
  IFS=, read -ra pairs <<<"$config"
  for p in "${pairs[@]}"; do defs+=(-D "$p"); done
  if [ ${#defs[@]} -eq 0 ]; then
    echo "FAIL $kernel: no default config in the notes"; fails=$((fails + 1)); return
  fi
  for copy in tier8 generic; do
    local promise=()
    [ "$copy" = tier8 ] && promise=(--multiple-of cols=8)
    if ! "$kiln" stat "$kdir/gelu.kiln" --kernel "$kernel" "${defs[@]}" "${promise[@]}" \
        --target sm_90 --json -o "$tmp/$copy.json" >"$tmp/err" 2>&1; then
      echo "FAIL $kernel $copy: kiln stat failed"; sed 's/^/    /' "$tmp/err" | head -20
      fails=$((fails + 1)); return
    fi
  done
  if python3 - "$tmp/tier8.json" "$tmp/generic.json" "$kernel" "$config" <<'PY'; then
import json, sys
def widths(path):
    k = json.load(open(path))["kernels"][0]
    t = k["total"]
    return k, {w: n for w, n in t["ld_global_bits"].items() if n}, \
        {w: n for w, n in t["st_global_bits"].items() if n}
k8, ld8, st8 = widths(sys.argv[1])
kg, ldg, stg = widths(sys.argv[2])
print(f"    {sys.argv[3]} at {sys.argv[4]}: cols%8 copy loads {ld8} stores {st8}, "
      f"spills {k8['spill_stores']}/{k8['spill_loads']}; generic loads {ldg} stores {stg}")
ok = (set(ld8) == {"128"} and set(st8) == {"128"} and k8["spill_stores"] == 0
      and k8["spill_loads"] == 0 and not (set(ldg) == {"128"} and set(stg) == {"128"}))
sys.exit(0 if ok else 1)
PY
    echo "ok   $kernel"
  else
    echo "FAIL $kernel"
    fails=$((fails + 1))
  fi
}

check bias_gelu_fwd
check bias_gelu_bwd
[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all tier checks passed"
