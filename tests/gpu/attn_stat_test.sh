#!/usr/bin/env bash
# The structure of the attention kernels' sm_90 code, read by `kiln stat` from the PTX and
# ptxas -v (static counts per inner loop, i.e. per KV block of the forward): what the FA2-style
# layouts of docs/gpu-lowering.md ("Attention") promise, so a change that sends S or P back
# through shared memory, adds barriers or spills fails here.  f16, D = 64, the strides promised
# multiples of 8 (as the BERT library's fused QKV layout has them), sm_90:
#   attn_fwd 64x64, 4 warps: per KV block 1 bar.sync (K and V both pipelined through the
#     cp.async ring: >= 8 cp.async, K staged as loaded and read with ldmatrix for trans(K)), no
#     ld.shared (S and P never go through shared memory; operands are read by ldmatrix),
#     st.shared only for a ring chunk at a tile edge (<= 8), >= 64 mma.sync per warp, the
#     scaled scores' subtraction s * scale2 - m as one fma an element (>= 32), 0 spill bytes;
#   attn_bwd_dq 64x64, 4 warps: per iteration 1 bar.sync (K, read by two dots, and V both
#     pipelined: >= 8 cp.async, no st.shared), 0 spill bytes (64x32 with dropout: the same
#     with >= 4 cp.async);
#   attn_bwd_dkdv BM=32 x BN=64, 4 warps: per iteration 1 bar.sync (Q and dO, each read by two
#     dots, staged once each in the ring: >= 4 cp.async, no st.shared), no ld.shared (P^T and
#     dS^T are A operands in registers, lse and delta are loaded in the fragments' layout),
#     0 spill bytes;
#   on wgmma (-D wgmma = 1, the presets bwd_wgmma and bwd_wgmma_narrow), dK/dV 64x64 and 32x64
#     and dQ 64x64 and 64x32 on 4 warps, with dropout and without: every dot of the loop a
#     wgmma (16 and 12 in dK/dV, 12 and 10 in dQ; no mma.sync), no ldmatrix (B read by
#     descriptors from rings two dots share, A in registers), 1 bar.sync, 0 spill bytes.
# Skipped (exit 77) without ptxas, which the register and spill counts need.
# Usage: attn_stat_test.sh KILN KERNELS_BERT_DIR PTXAS
source "$(dirname "$0")/stat_prelude.sh"
promises=(--multiple-of sb=8 --multiple-of sh=8 --multiple-of ss=8 --multiple-of osb=8
          --multiple-of osh=8 --multiple-of oss=8)

drop=0   # DROPOUT of the kernels `check` reads
extra=() # more compile options of the kernels `check` reads
# check NAME KERNEL BM BN WARPS PYTHON_CONDITIONS: stat as JSON, then each condition (a Python
# expression over k = the kernel's report and lp = its inner loop's) must hold.
check() {
  local name=$1 kernel=$2 bm=$3 bn=$4 nw=$5 conds=$6
  if ! "$kiln" stat "$kdir/attention.kiln" --kernel "$kernel" -D T=f16 -D D=64 -D DROPOUT="$drop" \
      -D BM="$bm" -D BN="$bn" -D num_warps="$nw" "${promises[@]}" ${extra[@]+"${extra[@]}"} \
      --json -o "$tmp/$name.json" \
      >"$tmp/err" 2>&1; then
    echo "FAIL $name: kiln stat failed"; sed 's/^/    /' "$tmp/err" | head -20
    fails=$((fails + 1)); return
  fi
  if python3 - "$tmp/$name.json" "$conds" <<'PY'; then
import json, sys
k = json.load(open(sys.argv[1]))["kernels"][0]
loops = [l for l in k["loops"] if l["inner"]]
if len(loops) != 1:
    print(f"    expected one inner loop, found {len(loops)}")
    sys.exit(1)
lp = loops[0]
bad = [c for c in sys.argv[2].split(";") if not eval(c, {}, {"k": k, "lp": lp})]
for c in bad:
    print(f"    fails: {c}")
print(f"    registers {k['registers']}, spills {k['spill_stores']}/{k['spill_loads']}; loop: "
      f"bar.sync {lp['bar_sync']}, ld/st.shared {lp['ld_shared']}/{lp['st_shared']}, "
      f"ldmatrix {lp['ldmatrix']}, cp.async {lp['cp_async']}, mma {lp['mma']}, insts {lp['insts']}")
sys.exit(1 if bad else 0)
PY
    echo "ok   $name"
  else
    echo "FAIL $name"
    fails=$((fails + 1))
  fi
}

check fwd_64x64_w4 attn_fwd 64 64 4 \
  "lp['fma'] >= 32;lp['bar_sync'] <= 1;lp['cp_async'] >= 8;lp['ld_shared'] == 0;lp['st_shared'] <= 8;lp['mma'] >= 64;k['spill_stores'] == 0;k['spill_loads'] == 0"
check dq_64x64_w4 attn_bwd_dq 64 64 4 \
  "lp['bar_sync'] <= 1;lp['cp_async'] >= 8;lp['st_shared'] == 0;k['spill_stores'] == 0;k['spill_loads'] == 0"
check dkdv_32x64_w4 attn_bwd_dkdv 32 64 4 \
  "lp['bar_sync'] <= 1;lp['cp_async'] >= 4;lp['st_shared'] == 0;lp['ld_shared'] == 0;k['spill_stores'] == 0;k['spill_loads'] == 0"
# Dropout (DROPOUT = 1) on the mma layout: each thread holds rows r and r + 8 of S and pairs of
# consecutive columns in n8 tiles 8 apart (queries by keys; in dK/dV, on S^T, keys by queries),
# and the kernels' counters put queries i, i + 1, i + 8, i + 9 by keys j, j + 1, j + 8, j + 9
# in one Philox block (a byte an element), so one block serves 8 elements of a thread: its two
# rows' column pairs of two n8 tiles forward and in dQ, its two keys' column pairs of queries 8
# apart in dK/dV (docs/gpu-lowering.md, "Random numbers"). The other 8 elements of each block
# are those of the lane 4 apart (rows g and g + 1 of the mma layout; the counter ignores bit 0
# of the query, and in dK/dV of the key), so the two lanes compute one block each of every two
# and trade the words with shuffles. Count the PTX multiplies by Philox's constant
# M0 = 0xD2511F53 (-766435501 as s32): at 64x64 on 4 warps a thread holds 32 elements of S per
# KV block, 4 groups of 8, so 2 blocks: 19 such multiplies (each lane's 4 groups within one half
# of their blocks: 33; a block per 4 elements, 16 bits each, 65; one per pair 129). dK/dV at
# 32x64: 16 elements, 2 groups, one block: 10 (19 unshared, 37 a block per 4, 73 per pair). The
# kernel's only rand is in the KV loop. And no spills with dropout on, at 64x64/4 and
# 128x64/8 (forward, whose loop at 64x64/4 is at most 800 instructions: 744, 863 each lane its
# own blocks, 1176 with a block per 4, 1744 with a block per pair, 1904 with the keep mask in
# f32, P scaled per element and the softmax in base e) and 32x64/4 (dK/dV, whose loop is at
# most 600 instructions: 544, 613 unshared, 758 with a block per 4, 1063 per pair, 2005 with one
# block per element).
philox_muls() { # KERNEL BM BN WARPS: M0 multiplies in its sm_90 PTX with dropout, or -1
  if ! "$kiln" compile "$kdir/attention.kiln" --kernel "$1" -D T=f16 -D D=64 -D DROPOUT=1 \
      -D BM="$2" -D BN="$3" -D num_warps="$4" "${promises[@]}" --target sm_90 --emit ptx \
      -o "$tmp/drop.ptx" >"$tmp/err" 2>&1; then
    echo -1; return
  fi
  grep -cE 'mul\.[a-z0-9.]+[[:space:]].*(3528531795|-766435501)' "$tmp/drop.ptx"
}
for v in "attn_fwd 64 64 20" "attn_bwd_dq 64 64 20" "attn_bwd_dkdv 32 64 11"; do
  read -r k bm bn most <<<"$v"
  n=$(philox_muls "$k" "$bm" "$bn" 4)
  if [ "$n" -lt 0 ] || [ "$n" -gt "$most" ]; then
    echo "FAIL ${k}_dropout_philox: $n Philox multiplies (at most $most: a block per 16, shared)"
    fails=$((fails + 1))
  else
    echo "ok   ${k}_dropout_philox: $n Philox multiplies"
  fi
done
# The keep mask compared as integers (bytes of the Philox words, no cvt.rn.f32.u32 of them)
# and P packed for the PV product by cvt.rn.f16x2.f32 (16 pairs a thread at 64x64 on 4 warps),
# in the forward's sm_90 PTX with dropout (docs/gpu-lowering.md, "Attention, FA2 style").
if "$kiln" compile "$kdir/attention.kiln" --kernel attn_fwd -D T=f16 -D D=64 -D DROPOUT=1 \
    -D BM=64 -D BN=64 -D num_warps=4 "${promises[@]}" --target sm_90 --emit ptx \
    -o "$tmp/fwd_drop.ptx" >"$tmp/err" 2>&1; then
  u2f=$(grep -c 'cvt\.rn\.f32\.u32' "$tmp/fwd_drop.ptx")
  x2=$(grep -c 'cvt\.rn\.f16x2\.f32' "$tmp/fwd_drop.ptx")
  if [ "$u2f" -ne 0 ] || [ "$x2" -lt 16 ]; then
    echo "FAIL fwd_dropout_ptx: $u2f cvt.rn.f32.u32 (want 0), $x2 cvt.rn.f16x2.f32 (want >= 16)"
    fails=$((fails + 1))
  else
    echo "ok   fwd_dropout_ptx: no cvt.rn.f32.u32, $x2 cvt.rn.f16x2.f32"
  fi
else
  echo "FAIL fwd_dropout_ptx: kiln compile failed"
  fails=$((fails + 1))
fi
drop=1
check fwd_dropout_64x64_w4 attn_fwd 64 64 4 \
  "lp['insts'] <= 800;lp['shfl'] >= 16;k['spill_stores'] == 0;k['spill_loads'] == 0"
check fwd_dropout_128x64_w8 attn_fwd 128 64 8 "k['spill_stores'] == 0;k['spill_loads'] == 0"
check dkdv_dropout_32x64_w4 attn_bwd_dkdv 32 64 4 \
  "lp['insts'] <= 600;lp['shfl'] >= 4;lp['bar_sync'] <= 1;lp['cp_async'] >= 4;lp['st_shared'] == 0;k['spill_stores'] == 0;k['spill_loads'] == 0"
# the dQ tile a cuda library runs untuned (kernels-bert/attention.kiln: 64x64 spills with dropout)
check dq_dropout_64x32_w4 attn_bwd_dq 64 32 4 \
  "lp['bar_sync'] <= 1;lp['cp_async'] >= 4;lp['st_shared'] == 0;k['spill_stores'] == 0;k['spill_loads'] == 0"
# The backward on wgmma (the presets bwd_wgmma and bwd_wgmma_narrow), with dropout and without.
extra=(-D wgmma=1)
wg="lp['mma'] == 0;lp['ldmatrix'] == 0;lp['bar_sync'] == 1;lp['st_shared'] == 0;k['spill_stores'] == 0;k['spill_loads'] == 0"
for drop in 0 1; do
  check "dkdv_wgmma_drop${drop}_64x64_w4" attn_bwd_dkdv 64 64 4 "lp['wgmma'] == 16;$wg"
  check "dq_wgmma_drop${drop}_64x64_w4" attn_bwd_dq 64 64 4 "lp['wgmma'] == 12;$wg"
  check "dkdv_wgmma_drop${drop}_32x64_w4" attn_bwd_dkdv 32 64 4 "lp['wgmma'] == 12;$wg"
  check "dq_wgmma_drop${drop}_64x32_w4" attn_bwd_dq 64 32 4 "lp['wgmma'] == 10;$wg"
done
# dQ at its presets' block counts (bwd_wgmma three blocks per SM, bwd_wgmma_narrow four; the
# mma.sync default fa2 three): within the registers that many blocks of 4 warps leave (168,
# 128, 168), no spill, with dropout and without.
for drop in 0 1; do
  extra=(-D wgmma=1 -D min_blocks=3)
  check "dq_wgmma_drop${drop}_64x64_w4_3blocks" attn_bwd_dq 64 64 4 \
    "lp['wgmma'] == 12;k['registers'] <= 168;$wg"
  extra=(-D wgmma=1 -D min_blocks=4)
  check "dq_wgmma_drop${drop}_64x32_w4_4blocks" attn_bwd_dq 64 32 4 \
    "lp['wgmma'] == 10;k['registers'] <= 128;$wg"
  extra=(-D min_blocks=3)
  check "dq_drop${drop}_64x32_w4_3blocks" attn_bwd_dq 64 32 4 \
    "lp['mma'] >= 48;k['registers'] <= 168;k['spill_stores'] == 0;k['spill_loads'] == 0"
done
extra=(-D wgmma=1)
# The forward on wgmma (the preset fa2_wgmma: four blocks per SM promised), with dropout and
# without: 8 wgmma a KV block and the same shape of loop, within 128 registers without a spill
# (four blocks of 4 warps fit the register file), and s * scale2 - m contracted into one fma
# an element of the thread's 32 (the scale is applied to the row max, not to S).
extra=(-D wgmma=1 -D min_blocks=4)
for drop in 0 1; do
  check "fwd_wgmma_drop${drop}_64x64_w4" attn_fwd 64 64 4 \
    "lp['wgmma'] == 8;lp['fma'] >= 32;k['registers'] <= 128;$wg"
done
extra=()
[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all attention structure checks passed"
