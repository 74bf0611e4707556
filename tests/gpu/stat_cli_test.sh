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

[ "$fails" -eq 0 ] && echo "stat cli: all checks passed"
exit $((fails > 0))
