#!/usr/bin/env bash
# The tuner's former silent caps, each now a growable array or a named limit with a diagnostic
# (autotune/plan.h): one case per run.
#   many_kernels   65 tuned kernels in one file all reach the library (the run used to stop
#                  at 64 with exit 1 and no message)
#   many_files     the 65th file given is read (files after the 64th used to be ignored)
#   huge_space     a tune block of 10^6 configs is refused, naming TUNE_MAX_SPACE (it used to be
#                  cut to its first 100,000 configs without a word); with -D A=1 it fits
#   long_name      a kernel name of more than 63 characters is refused, naming TUNE_MAX_NAME
#                  (records and libraries used to hold it truncated)
# Usage: limits_test.sh KILN CASE   (KEEP=1 keeps the temp dir for a look)
set -u
kiln=$1 case=$2
tmp=$(mktemp -d)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$tmp"' EXIT
fails=0

fail() { echo "FAIL $case: $*"; fails=$((fails + 1)); }

run() { # run NAME EXPECTED_RC CMD... ; output in $tmp/NAME.out
  local name=$1 want=$2; shift 2
  "$@" >"$tmp/$name.out" 2>&1
  local rc=$?
  [ "$rc" -eq "$want" ] || { fail "$name: exit $rc, expected $want"; sed 's/^/    /' "$tmp/$name.out" | head -20; return 1; }
}

says() { # says NAME PATTERN: grep -E in NAME's output
  grep -qE -- "$2" "$tmp/$1.out" || { fail "$1: output lacks /$2/"; sed 's/^/    /' "$tmp/$1.out" | head -20; return 1; }
}

# kernel NAME [TUNE_BODY]: a small kernel, with a tune block when TUNE_BODY is given
kernel() {
  printf 'kernel %s(x: *f32, n: i32, const BLOCK: i32) {\n' "$1"
  printf '    let offs = arange(0, BLOCK);\n'
  printf '    store(x + offs, load(x + offs, offs < n, 0.0) * 2.0, offs < n);\n}\n'
  [ $# -lt 2 ] || printf 'tune %s { %s }\n' "$1" "$2"
}

args='n=64; x: f32[n]; grid=1'

case $case in
many_kernels)
  for i in $(seq 0 64); do kernel "k$i" 'BLOCK in [64];'; done >"$tmp/many.kiln"
  run lib 0 "$kiln" lib "$tmp/many.kiln" -o "$tmp/lib" --args "$args" &&
    for k in k0 k63 k64; do
      grep -q "kernels_${k}(" "$tmp/lib/kernels.h" || fail "the library lacks $k"
    done
  ;;
many_files)
  files=()
  for i in $(seq 0 63); do # kernels without a tune block: read, checked, not tuned
    printf 'kernel plain%d(x: *f32) {\n    store(x, load(x) + 1.0);\n}\n' "$i" >"$tmp/f$i.kiln"
    files+=("$tmp/f$i.kiln")
  done
  kernel last 'BLOCK in [64];' >"$tmp/last.kiln"
  files+=("$tmp/last.kiln")
  run lib 0 "$kiln" lib "${files[@]}" -o "$tmp/lib" --args "$args" &&
    { grep -q 'kernels_last(' "$tmp/lib/kernels.h" || fail "the 65th file's kernel is missing"; }
  ;;
huge_space)
  list=$(seq -s, 1 100)
  kernel huge "BLOCK in [64]; A in [$list]; B in [$list]; C in [$list];" |
    sed 's/const BLOCK: i32/const BLOCK: i32, const A: i32, const B: i32, const C: i32/' >"$tmp/huge.kiln"
  run lib 1 "$kiln" lib "$tmp/huge.kiln" -o "$tmp/lib" --args "$args" &&
    says lib "1000000 configs.*TUNE_MAX_SPACE"
  [ ! -e "$tmp/lib/kernels.h" ] || fail "a library was written"
  run tune 1 "$kiln" tune "$tmp/huge.kiln" --args "$args" && says tune "TUNE_MAX_SPACE"
  # held by -D at one value of A, the space is 10^4 configs: within the limit
  run pinned 0 "$kiln" lib "$tmp/huge.kiln" -o "$tmp/lib" --args "$args" -D A=1 &&
    { [ -e "$tmp/lib/kernels.h" ] || fail "pinned: no library"; }
  ;;
long_name)
  name=k_$(printf 'x%.0s' $(seq 1 70))
  kernel "$name" 'BLOCK in [64];' >"$tmp/long.kiln"
  run lib 1 "$kiln" lib "$tmp/long.kiln" -o "$tmp/lib" --args "$args" &&
    says lib "72 characters.*TUNE_MAX_NAME"
  run tune 1 "$kiln" tune "$tmp/long.kiln" --args "$args" && says tune "TUNE_MAX_NAME"
  ;;
*) fail "unknown case"; ;;
esac
[ "$fails" -eq 0 ] && echo "ok $case"
exit $((fails > 0))
