#!/usr/bin/env bash
# The files `kiln tune` and `kiln lib` read and write, under hostile conditions: one case per
# run (docs/testing.md lists what each checks).
#   outputs   an output that is an input (a source, the cache) is refused before any work
# Usage: files_test.sh KILN KERNEL_DIR CASE
set -u
kiln=$1 kdir=$2 case=$3
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
fails=0
src=$kdir/scale_add.kiln
args='n=4096; a=2.5; x: f32[n]; y: f32[n]; out: f32[n]; grid=cdiv(n, BLOCK)'

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

unchanged() { # unchanged FILE SUM
  [ "$(cksum <"$1")" = "$2" ] || fail "$1 was changed"
}

case_outputs() {
  cp "$src" "$tmp/k.kiln"
  ln -s k.kiln "$tmp/link.json"
  local sum; sum=$(cksum <"$tmp/k.kiln")
  run tune-cache 64 "$kiln" tune "$tmp/k.kiln" --cache "$tmp/k.kiln" --args "$args" &&
    says tune-cache "'$tmp/k.kiln' \(--cache\) is the same file as '$tmp/k.kiln' \(input file\)"
  run tune-cache-link 64 "$kiln" tune "$tmp/k.kiln" --cache "$tmp/link.json" --args "$args"
  run tune-svg 64 "$kiln" tune "$tmp/k.kiln" --report-svg "$tmp/./k.kiln" --args "$args"
  cp "$src" "$tmp/kernels.h"
  local hsum; hsum=$(cksum <"$tmp/kernels.h")
  run lib-header 64 "$kiln" lib "$tmp/kernels.h" -o "$tmp" --args "$args" && says lib-header '\(-o\)'
  mkdir -p "$tmp/out" && echo '{}' >"$tmp/out/lib.c"
  run lib-cache 64 "$kiln" lib "$tmp/k.kiln" --cache "$tmp/out/lib.c" -o "$tmp/out" --lib-name lib --args "$args"
  [ "$(cat "$tmp/out/lib.c")" = '{}' ] || fail "lib-cache: the cache was replaced"
  unchanged "$tmp/k.kiln" "$sum"
  unchanged "$tmp/kernels.h" "$hsum"
  [ -L "$tmp/link.json" ] || fail "the link was replaced"
  [ -z "$(find "$tmp" -name '*.corrupt-*')" ] || fail "an input was moved aside"
}

case "$case" in
outputs) case_outputs ;;
*) echo "unknown case $case"; exit 64 ;;
esac
if [ "$fails" -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "ok $case"
