#!/usr/bin/env bash
# hostile_lib.sh KILN CC INCLUDE_DIR — user text must never become generated C (issue 17).
#
# A generated library is C made from parsed values; the inputs below once reached it as text:
#   - a multi-line `where` whose Kiln comment holds `*/` (hostile/where_comment.kiln): its first
#     line went into a header comment, and what followed `*/` was live C;
#   - grid rules of --args and of a `// kiln-tune-args:` line, which `kiln lib` with a cache
#     winner never parsed and pasted into the header comment and, with names rewritten, into
#     the source (`cdiv(--n, BLOCK)` became a pre-decrement of n).
# Every library that is made must compile with -Werror and, preprocessed (comments gone), hold
# none of the injected text; a grid rule that does not parse must make `kiln lib` fail (exit 1)
# and write nothing. Run by ctest as autotune.hostile_injection.
set -u
kiln=$1 cc=$2 inc=$3
here=$(cd "$(dirname "$0")" && pwd)
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# The library in $1/$2.{h,c} compiles, and its preprocessed text holds none of $3 (a regex).
check_lib() {
  local dir=$1 name=$2 bad=$3
  for f in "$dir/$name.h" "$dir/$name.c"; do
    [ -f "$f" ] || { fail "$f was not written"; return; }
    "$cc" -std=c17 -Wall -Wextra -Werror -I"$inc" -I"$dir" -E -P -x c "$f" -o "$d/pp.c" 2> "$d/cc.err" ||
      fail "$f does not preprocess: $(cat "$d/cc.err")"
    if grep -Eq -- "$bad" "$d/pp.c"; then fail "$f holds injected code: $(grep -E -- "$bad" "$d/pp.c" | head -3)"; fi
  done
  "$cc" -std=c17 -Wall -Wextra -Werror -I"$inc" -I"$dir" -c "$dir/$name.c" -o "$d/$name.o" 2> "$d/cc.err" ||
    fail "$name.c does not compile: $(head -5 "$d/cc.err")"
}

# 1. the where comment: the header shows `where BLOCK >= cols`, re-printed from the tree
"$kiln" lib "$here/hostile/where_comment.kiln" -o "$d/where" --lib-name wherelib \
  --args "cols=60; x: f32[8*cols]; out: f32[8]; grid=8" 2> "$d/where.err" ||
  fail "kiln lib on where_comment.kiln: $(cat "$d/where.err")"
check_lib "$d/where" wherelib 'kiln_injected|constructor'
grep -q 'where BLOCK >= cols' "$d/where/wherelib.h" || fail "wherelib.h does not show the condition"

# a cache with a winner for the grid tests (kiln lib then never times, so never evaluates a grid)
k=$here/hostile/grid_comment.kiln
args='n=1000; x: f32[n]; y: f32[n]'
"$kiln" tune "$k" --reps 1 --cache "$d/c.json" --args "$args; grid=cdiv(n, BLOCK)" > "$d/tune.txt" 2>&1 ||
  fail "kiln tune: $(cat "$d/tune.txt")"

# 2. cdiv(--n, BLOCK) is cdiv(- -n, BLOCK) for the tuner: the library computes the same, with
#    no pre-decrement anywhere in its code
"$kiln" lib "$k" --cache "$d/c.json" --require-tuned -o "$d/neg" --lib-name neglib \
  --args "$args; grid=cdiv(--n, BLOCK)" 2> "$d/neg.err" || fail "kiln lib cdiv(--n, BLOCK): $(cat "$d/neg.err")"
check_lib "$d/neg" neglib '--'

# 3. grid rules that do not parse are refused, from --args and from a kiln-tune-args line
for grid in 'cdiv(n, BLOCK) */ static int kiln_injected /*' 'cdiv(n, BLOCK))' 'n ?\?/ 2' 'cdiv(n, nope)'; do
  rm -rf "$d/bad"
  "$kiln" lib "$k" --cache "$d/c.json" -o "$d/bad" --lib-name badlib --args "$args; grid=$grid" \
    > "$d/bad.out" 2>&1
  rc=$?
  [ $rc -eq 1 ] || fail "kiln lib with grid '$grid' exited $rc (want 1): $(cat "$d/bad.out")"
  grep -q "grid rule of 'twice'\|--args" "$d/bad.out" || fail "no grid error for '$grid': $(cat "$d/bad.out")"
  [ ! -e "$d/bad/badlib.h" ] || fail "kiln lib with grid '$grid' wrote badlib.h"
done
rm -rf "$d/bad"
"$kiln" lib "$k" --cache "$d/c.json" -o "$d/bad" --lib-name badlib > "$d/bad.out" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "kiln lib with the kiln-tune-args line exited $rc (want 1): $(cat "$d/bad.out")"
grep -q "grid rule of 'twice' (axis 0) does not parse" "$d/bad.out" || fail "no grid error: $(cat "$d/bad.out")"
[ ! -e "$d/bad/badlib.h" ] || fail "kiln lib with the kiln-tune-args line wrote badlib.h"

[ $fails -eq 0 ] && echo ok
exit $((fails != 0))
