#!/usr/bin/env bash
# The code of an untuned library's %8 copies, read by `kiln stat`: `kiln lib` on the
# memory-bound BERT kernels (f16, no cache, --args of the BERT library's shapes) notes the
# default config each kernel gets and the promises of its copies; this test takes that config
# and the %8 promise (cols%8, or n%8 for the flat kernels), compiles it for sm_90 as the
# library would for a cuda device, and requires every global access of the f16 data to be
# 128 bits (16-byte vectors of 8 f16): no 8-, 16- or 64-bit load or store, the only 32-bit ones
# layernorm's f32 row statistics; and 0 spill bytes. The generic copy at the same config (no
# promise) must have narrower accesses: the tier is what makes the row body vector code for a
# row length such as 1000. Kernels: bias_gelu_fwd/bwd, layernorm_fwd/bwd, dropout_fwd/bwd,
# dropout_add_fwd.
# Skipped (exit 77) without ptxas. Usage: tier_stat_test.sh KILN KERNELS_BERT_DIR PTXAS
source "$(dirname "$0")/stat_prelude.sh"

# lib FILE SPEC...: kiln lib of FILE with one --args per SPEC, notes appended to lib.txt
lib() {
  local file=$1; shift
  local args=()
  for spec in "$@"; do args+=(--args "$spec"); done
  if ! "$kiln" lib "$kdir/$file" --device emu -D T=f16 -o "$tmp/lib" --lib-name tiers \
      "${args[@]}" 2>>"$tmp/lib.txt"; then
    echo "FAIL: kiln lib $file failed"; sed 's/^/    /' "$tmp/lib.txt" | head -20
    exit 1
  fi
}
lib gelu.kiln \
  "kernel=bias_gelu_fwd; rows=3; cols=128; x: f16[rows*cols]; bias: f16[cols]; y: f16[rows*cols]; grid=cdiv(rows, BLOCK_R), cdiv(cols, BLOCK_C)" \
  "kernel=bias_gelu_bwd; rows=3; cols=128; x: f16[rows*cols]; bias: f16[cols]; dy: f16[rows*cols]; dx: f16[rows*cols]; grid=cdiv(rows, BLOCK_R), cdiv(cols, BLOCK_C)"
lib layernorm.kiln \
  "kernel=layernorm_fwd; cols=128; eps=1e-12; p=0.1; seed=12345; offset=0; x: f16[256*cols]; res: f16[256*cols]; gamma: f16[cols]; beta: f16[cols]; s_out: f16[256*cols]; y: f16[256*cols]; mean: f32[256]; rstd: f32[256]; grid=256" \
  "kernel=layernorm_bwd; rows=256; cols=1024; p=0.1; seed=12345; offset=0; s: f16[rows*cols]; dy: f16[rows*cols]; gamma: f16[cols]; mean: f32[rows]; rstd: f32[rows]; dx: f16[rows*cols]; dx_drop: f16[rows*cols]; dgamma_part: f32[64*cols]; dbeta_part: f32[64*cols]; grid=64" \
  "kernel=layernorm_bwd_reduce; parts=64; cols=128; part: f32[parts*cols]; out: f32[cols]; grid=cdiv(cols, BLOCK)"
lib dropout.kiln \
  "kernel=dropout_fwd; n=32768; p=0.1; seed=12345; offset=0; x: f16[n]; y: f16[n]; grid=cdiv(n, BLOCK)" \
  "kernel=dropout_bwd; n=32768; p=0.1; seed=12345; offset=0; dy: f16[n]; dx: f16[n]; grid=cdiv(n, BLOCK)" \
  "kernel=dropout_add_fwd; n=32768; p=0.1; seed=12345; offset=0; x: f16[n]; res: f16[n]; y: f16[n]; grid=cdiv(n, BLOCK)"

# check FILE KERNEL PARAM: the config and the PARAM%8 copy from kiln lib's notes, then kiln
# stat of both copies at that config.
check() {
  local file=$1 kernel=$2 param=$3
  if ! grep -q "'$kernel' also gets its default config specialized on.*$param%8" "$tmp/lib.txt"; then
    echo "FAIL $kernel: the library has no $param%8 copy"; sed 's/^/    /' "$tmp/lib.txt"
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
    [ "$copy" = tier8 ] && promise=(--multiple-of "$param=8")
    if ! "$kiln" stat "$kdir/$file" --kernel "$kernel" "${defs[@]}" "${promise[@]}" \
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
print(f"    {sys.argv[3]} at {sys.argv[4]}: %8 copy loads {ld8} stores {st8}, "
      f"spills {k8['spill_stores']}/{k8['spill_loads']}; generic loads {ldg} stores {stg}")
# 32-bit: layernorm's f32 mean and rstd, one per row; everything else 128-bit
stats32 = sys.argv[3].startswith("layernorm")
allowed = {"128", "32"} if stats32 else {"128"}
narrow = {"8", "16", "64"}
ok = ("128" in ld8 and "128" in st8 and set(ld8) <= allowed and set(st8) <= allowed
      and k8["spill_stores"] == 0 and k8["spill_loads"] == 0
      and bool(narrow & (set(ldg) | set(stg))))
sys.exit(0 if ok else 1)
PY
    echo "ok   $kernel"
  else
    echo "FAIL $kernel"
    fails=$((fails + 1))
  fi
}

check gelu.kiln bias_gelu_fwd cols
check gelu.kiln bias_gelu_bwd cols
check layernorm.kiln layernorm_fwd cols
check layernorm.kiln layernorm_bwd cols
check dropout.kiln dropout_fwd n
check dropout.kiln dropout_bwd n
check dropout.kiln dropout_add_fwd n
[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all tier checks passed"
