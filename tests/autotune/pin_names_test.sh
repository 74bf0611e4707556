#!/usr/bin/env bash
# A type pin (`-D T=f16`) is shown by its type's name in what `kiln lib` says and writes for
# people: the note or warning naming the config it uses, each variant's text in the generated
# library (the message of a refused call), and `kiln tune`'s table (its rows and its winner). The cache and the library's config struct keep the
# number (a record's identity must not change), so only the text is checked here: "T=f16" where a
# config is shown, never "T=5".
# Usage: pin_names_test.sh KILN ACT_KILN
set -u
kiln=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# no cache: an untuned library, whose warning names its default config
if ! "$kiln" lib "$src" -D T=f16 -D OP=2 -o "$tmp/out" --lib-name pn \
    --args "n=5000; a=1.5; grid=cdiv(n, BLOCK); x: f16[n]; y: f16[n]" 2>"$tmp/err"; then
  fail "kiln lib exited nonzero"
  cat "$tmp/err"
fi
grep -q "default config T=f16,BLOCK=" "$tmp/err" || fail "the warning does not name T=f16: $(cat "$tmp/err")"
grep -q "T=5" "$tmp/err" && fail "the warning shows the type's number: $(cat "$tmp/err")"
grep -q ' T=f16,BLOCK=' "$tmp/out/pn.c" || fail "the library's variant text does not name T=f16"
grep -q 'T=5,' "$tmp/out/pn.c" && fail "the library's variant text shows the type's number"
# an integer pin stays a number
grep -q 'OP=2' "$tmp/out/pn.c" || fail "the library's variant text lost OP=2"

# kiln tune's table: every config row and the winner name the type
if ! "$kiln" tune "$src" -D T=f16 -D OP=2 --device cpu --mode default --reps 1 \
    --args "n=5000; a=1.5; grid=cdiv(n, BLOCK); x: f16[n]; y: f16[n]" >"$tmp/table" 2>"$tmp/err"; then
  fail "kiln tune exited nonzero: $(cat "$tmp/err")"
fi
grep -q "winner: T=f16,BLOCK=" "$tmp/table" || fail "the table's winner does not name T=f16: $(cat "$tmp/table")"
grep -q "T=5" "$tmp/table" && fail "the table shows the type's number: $(cat "$tmp/table")"

if [ "$fails" -ne 0 ]; then
  echo "$fails failure(s)"
  exit 1
fi
echo "pin_names: ok"
