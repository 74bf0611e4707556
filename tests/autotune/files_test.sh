#!/usr/bin/env bash
# The files `kiln tune` and `kiln lib` read and write, under hostile conditions: one case per
# run (docs/testing.md lists what each checks).
#   outputs        an output that is an input (a source, the cache) is refused before any work
#   records        records naming configs the tune block does not list are never shipped
#   edited_block   records of an edited tune block (a new `where`) are not used; a change of
#                  layout or comments keeps them
# Hostile inputs are in caches/ (caches/README.md).
# Usage: files_test.sh KILN KERNEL_DIR CASE
set -u
kiln=$1 kdir=$2 case=$3
caches=$(dirname "$0")/caches
tmp=$(mktemp -d)
[ -n "${KEEP:-}" ] || trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
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

# fill FILE.in OUT: the template with the identity of scale_add's records on this machine, from
# a cache tuned here ($tmp/real.json)
fill() {
  local line; line=$(grep -m1 '"kernel": "scale_add"' "$tmp/real.json")
  field() { printf '%s' "$line" | sed -E "s/.*\"$1\": \"([^\"]*)\".*/\1/"; }
  sed -e "s/@SOURCE_HASH@/$(field source_hash)/g" -e "s/@TUNE_HASH@/$(field tune_hash)/g" \
      -e "s|@DEVICE@|$(field device)|g" -e "s/@VERSION@/$(field kiln_version)/g" "$1" >"$2"
}

tune_real() { # the real identity of this machine's records, in $tmp/real.json
  run tune-real 0 "$kiln" tune "$src" --reps 1 --cache "$tmp/real.json" --args "$args"
}

# shipped FILE.c: the configs of the tuned variants ("BLOCK num_warps num_stages" per line)
shipped() {
  sed -nE 's/.*\{([0-9-]+)LL, ([0-9]+), ([0-9]+), "[^"]*"\}\}, \/\* tuned .*/\1 \2 \3/p' "$1"
}

case_records() {
  tune_real
  fill "$caches/huge_block.json.in" "$tmp/c.json"
  run lib 0 "$kiln" lib "$src" --cache "$tmp/c.json" -o "$tmp/lib" --args "$args" || return
  [ "$(shipped "$tmp/lib/kernels.c")" = "256 1 2" ] || fail "shipped: $(shipped "$tmp/lib/kernels.c" | tr '\n' ';')"
  grep -q 16777216 "$tmp/lib/kernels.c" && fail "BLOCK=16777216 is in the library"
  [ "$(grep -c 'does not list that config' "$tmp/lib.out")" -eq 3 ] || fail "want 3 notes"
}

case_edited_block() {
  cp "$src" "$tmp/k.kiln"
  local ka="$args"
  run tune 0 "$kiln" tune "$tmp/k.kiln" --reps 1 --cache "$tmp/c.json" --args "$ka" || return
  # BLOCK=1024 the clear winner, then a where that excludes it
  sed -i -E '/BLOCK=1024,num_warps=4/s/"(median|p25|p75|min)_ms": [^,]*/"\1_ms": 0.000001/g' "$tmp/c.json"
  sed -e 's/^    num_warps in \[1, 4\];/    num_warps   in [1,4];  \/\/ layout and comments only/' "$tmp/k.kiln" >"$tmp/k2.kiln"
  mv "$tmp/k2.kiln" "$tmp/k.kiln"
  run lib-layout 0 "$kiln" lib "$tmp/k.kiln" --cache "$tmp/c.json" -o "$tmp/lib1" --args "$ka" &&
    [ "$(shipped "$tmp/lib1/kernels.c")" = "1024 4 2" ] || fail "a layout change lost the records: $(shipped "$tmp/lib1/kernels.c")"
  sed -i 's/^    num_warps   in \[1,4\];.*/    num_warps in [1, 4];\n    where BLOCK != 1024;/' "$tmp/k.kiln"
  grep -q 'where BLOCK != 1024' "$tmp/k.kiln" || { fail "could not edit the block"; return; }
  run lib-edited 0 "$kiln" lib "$tmp/k.kiln" --cache "$tmp/c.json" -o "$tmp/lib2" --args "$ka" || return
  grep -q '{1024LL' "$tmp/lib2/kernels.c" && fail "the edited block's library has BLOCK=1024"
  says lib-edited 'another version of its tune block'
}

case "$case" in
outputs) case_outputs ;;
records) case_records ;;
edited_block) case_edited_block ;;
*) echo "unknown case $case"; exit 64 ;;
esac
if [ "$fails" -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "ok $case"
