#!/usr/bin/env bash
# Checks `kiln stat`: its report of a real kernel (vector_add for sm_90: 128-bit global loads
# and stores, valid JSON with the occupancy and roofline sections), the same report from the
# kernel's PTX file, and its answers to bad input (exit codes of docs/cli.md, never a crash).
# Usage: stat_cli_test.sh KILN EXAMPLES_DIR
set -u
kiln=$1 kdir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

check() { # check NAME EXPECTED_RC CMD... ; output in $tmp/out
  local name=$1 want=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL $name: exit $rc, expected $want"; sed 's/^/    /' "$tmp/out" "$tmp/err" | head -20
    fails=$((fails + 1)); return 1
  fi
  echo "ok   $name"
}

contains() { # contains NAME PATTERN FILE
  if ! grep -qE -- "$2" "$3"; then
    echo "FAIL $1: $(basename "$3") lacks /$2/"; sed 's/^/    /' "$3" | head -20
    fails=$((fails + 1)); return 1
  fi
}

va=(--kernel vector_add -D BLOCK=1024 -D num_warps=4)
check help 0 "$kiln" stat --help && contains help 'usage: kiln stat' "$tmp/out"
check text 0 "$kiln" stat "$kdir/vector_add.kiln" "${va[@]}" --flops 1048576 --bytes 12582912 &&
  contains text 'kernel vector_add: 128 threads' "$tmp/out" &&
  contains text 'global loads .*128b:[1-9]' "$tmp/out" &&
  contains text 'memory-bound' "$tmp/out"
# JSON: parses, and the counts say what the text said (vector_add has no loop and no barrier)
check json 0 "$kiln" stat "$kdir/vector_add.kiln" "${va[@]}" --json -o "$tmp/va.json" &&
  python3 - "$tmp/va.json" <<'PY' || { echo "FAIL json: content"; fails=$((fails + 1)); }
import json, sys
d = json.load(open(sys.argv[1]))
k = d["kernels"][0]
assert d["arch"] == "sm_90" and k["name"] == "vector_add" and k["threads"] == 128, k
t = k["total"]
assert t["ld_global_bits"]["128"] >= 2 and t["st_global_bits"]["128"] >= 1, t
assert t["bar_sync"] == 0 and t["mma"] == 0 and k["loops"] == [], k
assert 0 < k["occupancy"]["occupancy"] <= 1, k["occupancy"]
PY
"$kiln" compile "$kdir/vector_add.kiln" "${va[@]}" --target sm_90 --emit ptx -o "$tmp/va.ptx"
check ptx-file 0 "$kiln" stat "$tmp/va.ptx" && contains ptx-file 'global loads .*128b:[1-9]' "$tmp/out"

check missing-file 2 "$kiln" stat "$tmp/nope.ptx" && contains missing-file 'cannot read' "$tmp/err"
printf 'hello\n' >"$tmp/junk.ptx"
check not-ptx 1 "$kiln" stat "$tmp/junk.ptx" && contains not-ptx 'no .entry' "$tmp/err"
check no-kernel 64 "$kiln" stat "$kdir/vector_add.kiln"
check cpu-target 64 "$kiln" stat "$kdir/vector_add.kiln" "${va[@]}" --target emu
check bad-flops 64 "$kiln" stat "$tmp/va.ptx" --flops lots
check unknown-kernel 1 "$kiln" stat "$kdir/vector_add.kiln" --kernel nope

# The f16 GEMM's pipeline at 4 stages, 128x128x32: the inner loop waits with 2 groups in flight
# (wait_group 2) and copies 4 cp.async per thread per iteration; the 4 buffers of 16 KiB are a
# 64 KiB dynamic arena that the report reads from the PTX. At 3 stages: wait_group 1, 48 KiB
# static. A ring over the target's limit is refused with the reason: 256x256x64 at 4 stages
# (256 KiB) everywhere, 128x256x64 at 4 stages (192 KiB) on sm_80 (163 KiB) but not sm_90.
mm=(--kernel matmul_f16 -D num_warps=8 --specialize sak=1 --specialize sbn=1
    --multiple-of sam=8 --multiple-of sbk=8)
pipe_check() { # pipe_check NAME JSON STAGES WAIT DYN STATIC
  python3 - "$2" "$3" "$4" "$5" "$6" <<'PY' || { echo "FAIL $1: content"; fails=$((fails + 1)); }
import json, sys
d = json.load(open(sys.argv[1])); stages, wait, dyn, static = map(int, sys.argv[2:])
k = d["kernels"][0]
inner = [l for l in k["loops"] if l["inner"]]
assert len(inner) == 1, k["loops"]
L = inner[0]
assert L["wait_group_max"] == wait and L["cp_async"] == 4 and L["mma"] == 32 and L["bar_sync"] == 1, L
assert k["dyn_smem_bytes"] == dyn and k["smem_dynamic"] == (dyn > 0), k
assert k["total"]["cp_async"] == 4 * stages, k["total"]  # a prologue copy per prefetched stage
if "registers" in k:
    assert k["smem_static"] == static and k["spill_stores"] == 0, k
PY
}
check pipe-s4 0 "$kiln" stat "$kdir/matmul_f16.kiln" "${mm[@]}" -D BM=128 -D BN=128 -D BK=32 \
  --num-stages 4 --json -o "$tmp/s4.json" && pipe_check pipe-s4 "$tmp/s4.json" 4 2 65536 0
check pipe-s3 0 "$kiln" stat "$kdir/matmul_f16.kiln" "${mm[@]}" -D BM=128 -D BN=128 -D BK=32 \
  --num-stages 3 --json -o "$tmp/s3.json" && pipe_check pipe-s3 "$tmp/s3.json" 3 1 0 49152
# The same tile on sm_90's wgmma (-D wgmma=1): the inner loop issues 2 wgmma m64n128k16 (each
# warp's share: 16 m16n8k16 each) and no mma.sync or ldmatrix; at 4 stages one group stays in
# flight (wgmma.wait_group 1 in the loop; the copies run 2 iterations ahead: wait_group 1).
check wgmma-s4 0 "$kiln" stat "$kdir/matmul_f16.kiln" "${mm[@]}" -D BM=128 -D BN=128 -D BK=32 \
  --num-stages 4 -D wgmma=1 --target sm_90 --json -o "$tmp/wg.json" &&
  python3 - "$tmp/wg.json" <<'PY' || { echo "FAIL wgmma-s4: content"; fails=$((fails + 1)); }
import json, sys
k = json.load(open(sys.argv[1]))["kernels"][0]
L = [l for l in k["loops"] if l["inner"]][0]
assert L["wgmma"] == 2 and L["wgmma_k16"] == 32 and L["mma"] == 0 and L["ldmatrix"] == 0, L
assert L["wait_group_max"] == 1 and L["bar_sync"] == 1, L
PY
# tf32 on wgmma: the BERT gemm's wgmma_tf32 tile (f32, TF32=1, 128x128x32 on 8 warps) in the
# forward layout issues 4 wgmma m64n128k8 a K step, each warp's share 8 m16n8k16 each (N / 16:
# 32 in all, as the 64 mma.sync m16n8k8 of the tf32_cores tile), no mma.sync or ldmatrix.
check wgmma-tf32 0 "$kiln" stat "$kdir/../../kernels-bert/gemm.kiln" --kernel gemm -D T=f32 \
  -D TF32=1 -D EPI=0 -D BM=128 -D BN=128 -D BK=32 -D num_warps=8 -D num_stages=3 -D wgmma=1 \
  --specialize sak=1 --specialize sbk=1 --multiple-of sam=16 --multiple-of sbn=16 \
  --target sm_90 --json -o "$tmp/tf.json" &&
  python3 - "$tmp/tf.json" <<'PY' || { echo "FAIL wgmma-tf32: content"; fails=$((fails + 1)); }
import json, sys
k = json.load(open(sys.argv[1]))["kernels"][0]
L = [l for l in k["loops"] if l["inner"]][0]
assert L["wgmma"] == 4 and L["wgmma_k16"] == 32 and L["mma"] == 0 and L["ldmatrix"] == 0, L
PY
check ring-too-big 1 "$kiln" stat "$kdir/matmul_f16.kiln" "${mm[@]}" -D BM=256 -D BN=256 -D BK=64 \
  --num-stages 4 && contains ring-too-big 'limit: shared memory: the 4-stage pipeline .* 262144 bytes, more than the 232448' "$tmp/err"
check ring-sm80 1 "$kiln" stat "$kdir/matmul_f16.kiln" "${mm[@]}" -D BM=128 -D BN=256 -D BK=64 \
  --num-stages 4 --target sm_80 && contains ring-sm80 'more than the 166912' "$tmp/err"
check ring-sm90 0 "$kiln" stat "$kdir/matmul_f16.kiln" "${mm[@]}" -D BM=128 -D BN=256 -D BK=64 \
  --num-stages 4 --target sm_90

[ "$fails" -eq 0 ] && echo "stat cli: all checks passed"
exit $((fails > 0))
