#!/usr/bin/env bash
# The code of the BERT gemm's backward copies, read by `kiln stat`: `kiln lib` on gemm.kiln
# (f16, EPI=0, no cache) with the three layouts the BERT libraries declare (forward, dX = dY W,
# dW = dY^T X; runtime/bert/CMakeLists.txt) notes the default config and the promises of each
# copy. This test compiles the dX and dW copies at that config for sm_90, as a cuda library
# would, and requires cp.async, only 128-bit global loads and stores, no shared store in the K
# loop (the copies promise M, N and K multiples of 16, so a vector past a tail is a zero-filling
# cp.async, not element-by-element loads), and 0 spill bytes: the trainer's backward calls ran
# the generic copy (16-bit loads, no cp.async) before the layouts.
# It also requires the generic copy to be compiled with min_blocks = 1 and not to spill (at the
# preset's min_blocks = 2 ptxas spilled it: 264/260 bytes at 128 registers), and the forward
# copy's K loop to have no division or remainder (below), and the f32 gemm's copies on the FMA
# path to read their operands from the cp.async ring (last).
# Skipped (exit 77) without ptxas. Usage: layout_stat_test.sh KILN KERNELS_BERT_DIR PTXAS
source "$(dirname "$0")/stat_prelude.sh"

bufs="a: f16[M*K]; b: f16[K*N]; c: f16[M*N]; bias: f16[N]?; res: f16[M*N]?; grid=cdiv(M, BM), cdiv(N, BN)"
if ! "$kiln" lib "$kdir/gemm.kiln" --kernel gemm --device emu -D T=f16 -D EPI=0 -o "$tmp/lib" \
    --lib-name layouts \
    --args "kernel=gemm; M=256; N=128; K=128; sam=K; sak=1; sbk=1; sbn=K; scm=N; scn=1; splits=1; $bufs" \
    --args "kernel=gemm; M=256; N=128; K=128; sam=K; sak=1; sbk=N; sbn=1; scm=N; scn=1; splits=1; $bufs" \
    --args "kernel=gemm; M=256; N=128; K=128; sam=1; sak=M; sbk=N; sbn=1; scm=N; scn=1; splits=1; $bufs" \
    2>"$tmp/lib.txt"; then
  echo "FAIL: kiln lib failed"; sed 's/^/    /' "$tmp/lib.txt" | head -20
  exit 1
fi

config=$(sed -n "s/.*no timing of 'gemm' .* default config \([^ ]*\) (untuned).*/\1/p" "$tmp/lib.txt")
defs=()
IFS=, read -ra pairs <<<"$config"
for p in "${pairs[@]}"; do defs+=(-D "$p"); done
if [ ${#defs[@]} -eq 0 ]; then
  echo "FAIL: no default config in the notes"; sed 's/^/    /' "$tmp/lib.txt"; exit 1
fi

# stat NAME SIGNATURE [-D min_blocks=1]: kiln stat of the copy promising SIGNATURE ("" for the
# generic one) at the library's config, as JSON in $tmp/NAME.json.
stat() {
  local name=$1 sig=$2; shift 2
  local promise=() item
  IFS=, read -ra items <<<"$sig"
  for item in "${items[@]}"; do
    case $item in
      *=1) promise+=(--specialize "$item") ;;
      *%16) promise+=(--multiple-of "${item%\%16}=16") ;;
      *%8) promise+=(--multiple-of "${item%\%8}=8") ;;
    esac
  done
  if ! "$kiln" stat "$kdir/gemm.kiln" --kernel gemm "${defs[@]}" "$@" "${promise[@]}" \
      --target sm_90 --json -o "$tmp/$name.json" >"$tmp/err" 2>&1; then
    echo "FAIL $name: kiln stat failed"; sed 's/^/    /' "$tmp/err" | head -20
    fails=$((fails + 1)); return 1
  fi
}

# check NAME PATTERN: the copy whose promises match PATTERN (grep -E) must have cp.async,
# only 128-bit stores, 128-bit loads and no spill.
check() {
  local name=$1 pattern=$2 sig
  sig=$(sed -n "s/.*'gemm' also gets its default config specialized on \([^ ]*\) (calls.*/\1/p" \
        "$tmp/lib.txt" | grep -E "$pattern" | head -1)
  if [ -z "$sig" ]; then
    echo "FAIL $name: the library has no copy promising $pattern"; sed 's/^/    /' "$tmp/lib.txt"
    fails=$((fails + 1)); return
  fi
  stat "$name" "$sig" || return
  if python3 - "$tmp/$name.json" "$name" "$sig" <<'PY'; then
import json, sys
k = json.load(open(sys.argv[1]))["kernels"][0]
t = k["total"]
ld = {w: n for w, n in t["ld_global_bits"].items() if n}
st = {w: n for w, n in t["st_global_bits"].items() if n}
print(f"    {sys.argv[2]} ({sys.argv[3]}): cp.async {t['cp_async']}, loads {ld}, stores {st}, "
      f"{k['registers']} registers, spills {k['spill_stores']}/{k['spill_loads']}")
inner = [l for l in k["loops"] if l["inner"]]
print(f"    inner loop: st.shared {[l['st_shared'] for l in inner]}, "
      f"cp.async {[l['cp_async'] for l in inner]}, insts {[l['insts'] for l in inner]}")
# every global load 128 bits (the copies included): with M, N and K promised, a vector past a
# tail is a zero-filling cp.async, never element-by-element loads through registers
ok = (t["cp_async"] > 0 and set(ld) == {"128"} and set(st) == {"128"}
      and len(inner) == 1 and inner[0]["st_shared"] == 0
      and k["spill_stores"] == 0 and k["spill_loads"] == 0)
sys.exit(0 if ok else 1)
PY
    echo "ok   $name"
  else
    echo "FAIL $name"
    fails=$((fails + 1))
  fi
}

check dX 'sam%16,sak=1,sbk%16,sbn=1'
check dW 'sam=1,sak%16,sbk%16,sbn=1'

# the generic copy: min_blocks = 1 (kiln lib's note), then no spill at it
if grep -q "'gemm': its generic copy is compiled with min_blocks = 1" "$tmp/lib.txt" &&
    stat generic "" -D min_blocks=1; then
  if python3 - "$tmp/generic.json" <<'PY'; then
import json, sys
k = json.load(open(sys.argv[1]))["kernels"][0]
print(f"    generic (min_blocks {k['min_blocks']}): {k['registers']} registers, spills "
      f"{k['spill_stores']}/{k['spill_loads']}")
sys.exit(0 if k["min_blocks"] == 1 and k["spill_stores"] == 0 and k["spill_loads"] == 0 else 1)
PY
    echo "ok   generic"
  else
    echo "FAIL generic"; fails=$((fails + 1))
  fi
else
  echo "FAIL generic: no min_blocks = 1 note, or kiln stat failed"; fails=$((fails + 1))
fi
# The forward copy at the static report's config (bench/bert-sm90-configs.sh: 128x128x32, 8
# warps, 3 stages, min_blocks 2, the FFN-up call's promises): the pipelined K loop carries its
# ring slots as counters, so it has no division or remainder (the slot as (iv - lb) / step mod 3
# was a mul.hi and 5 more instructions: 115 in the loop, 111 without them); its epilogue stores
# the f16 accumulator by stmatrix (32 st.shared.b32 before, 8 stmatrix.x4).
fwd=(-D T=f16 -D EPI=0 -D BM=128 -D BN=128 -D BK=32 -D num_warps=8 -D num_stages=3 -D min_blocks=2
     --multiple-of M=16 --multiple-of N=16 --multiple-of K=16 --multiple-of sam=16
     --specialize sak=1 --specialize sbk=1 --multiple-of sbn=16 --multiple-of scm=16
     --specialize scn=1)
if "$kiln" stat "$kdir/gemm.kiln" --kernel gemm "${fwd[@]}" --target sm_90 --json \
      -o "$tmp/fwd.json" >"$tmp/err" 2>&1 &&
    "$kiln" compile "$kdir/gemm.kiln" --kernel gemm "${fwd[@]}" --target sm_90 --emit ptx \
      -o "$tmp/fwd.ptx" >"$tmp/err" 2>&1; then
  if python3 - "$tmp/fwd.json" "$tmp/fwd.ptx" <<'PY'; then
import json, re, sys
k = json.load(open(sys.argv[1]))["kernels"][0]
lines = open(sys.argv[2]).read().split("\n")
inner = [l for l in k["loops"] if l["inner"]]
ok = len(inner) == 1
if ok:
    body = lines[inner[0]["first_line"] - 1:inner[0]["last_line"]]
    slow = [t.strip() for t in body if re.search(r"\b(rem|div|mul\.hi)\.", t)]
    t = k["total"]
    print(f"    fwd: inner loop {inner[0]['insts']} instructions, rem/div/mul.hi {slow}; "
          f"epilogue: st.shared {t['st_shared']}, stmatrix {t['stmatrix']}; "
          f"{k['registers']} registers")
    # the f16 accumulator to the epilogue's scratch by stmatrix (sm_90): 8 .x4 for the 32
    # 32-bit st.shared a thread had, none of those left
    ok = (not slow and inner[0]["insts"] <= 111 and t["stmatrix"] == 8 and t["st_shared"] == 0
          and k["spill_stores"] == 0)
sys.exit(0 if ok else 1)
PY
    echo "ok   fwd loop"
  else
    echo "FAIL fwd loop"; fails=$((fails + 1))
  fi
else
  echo "FAIL fwd: kiln stat or compile failed"; sed 's/^/    /' "$tmp/err" | head -20
  fails=$((fails + 1))
fi

# The f32 gemm on the FMA path at its default (fma_f32: 128x128x32, 8 warps, 2 stages, one block
# a SM) in the three layouts: A and B copied by cp.async into the pipeliner's fma ring and read
# there by the dot, so the K loop has one barrier and no shared store (staged through registers
# it had two barriers and 24-28 shared stores a step), its 2048 FMAs, and no spill.
f32=(-D T=f32 -D EPI=0 -D BM=128 -D BN=128 -D BK=32 -D num_warps=8 -D num_stages=2 -D min_blocks=1
     --multiple-of M=16 --multiple-of N=16 --multiple-of K=16 --multiple-of scm=16
     --specialize scn=1)
for layout in "fwd:--multiple-of sam=16 --specialize sak=1 --specialize sbk=1 --multiple-of sbn=16" \
              "dx:--multiple-of sam=16 --specialize sak=1 --multiple-of sbk=16 --specialize sbn=1" \
              "dw:--specialize sam=1 --multiple-of sak=16 --multiple-of sbk=16 --specialize sbn=1"; do
  name=${layout%%:*}
  read -r -a promise <<<"${layout#*:}"
  if "$kiln" stat "$kdir/gemm.kiln" --kernel gemm "${f32[@]}" "${promise[@]}" --target sm_90 \
        --json -o "$tmp/f32.json" >"$tmp/err" 2>&1 &&
      python3 - "$tmp/f32.json" "$name" <<'PY'; then
import json, sys
k = json.load(open(sys.argv[1]))["kernels"][0]
inner = [l for l in k["loops"] if l["inner"]]
ok = len(inner) == 1
if ok:
    l = inner[0]
    print(f"    f32 {sys.argv[2]}: inner loop {l['insts']} instructions, {l['fma']} fma, "
          f"bar.sync {l['bar_sync']}, st.shared {l['st_shared']}, cp.async {l['cp_async']}; "
          f"{k['registers']} registers, spills {k['spill_stores']}/{k['spill_loads']}")
    ok = (l["bar_sync"] == 1 and l["st_shared"] == 0 and l["cp_async"] > 0 and l["fma"] == 2048
          and k["spill_stores"] == 0 and k["spill_loads"] == 0)
sys.exit(0 if ok else 1)
PY
    echo "ok   f32 $name loop"
  else
    echo "FAIL f32 $name loop"; sed 's/^/    /' "$tmp/err" | head -20; fails=$((fails + 1))
  fi
done

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all layout checks passed"
