#!/usr/bin/env bash
# The files `kiln tune` and `kiln lib` read and write, under hostile conditions: one case per
# run (docs/testing.md lists what each checks).
#   outputs        an output that is an input (a source, the cache) is refused before any work
#   records        records naming configs the tune block does not list are never shipped
#   edited_block   records of an edited tune block (a new `where`) are not used; a change of
#                  layout or comments keeps them
#   other_compiler records made by another build of Kiln (another compiler identity) are neither
#                  shipped nor reused, not even as poison; tuning again times this build's code
#                  and leaves the other build's records in place
#   bad_medians    infinite, negative medians and spreads are ignored on load, never written back
#   reader         `kiln lib` never moves, locks or writes a cache: a corrupt one is its error,
#                  a newer format is refused (by `kiln tune` too) and left where it is
#   symlink        a symlinked cache stays a link; its target gets the records
#   kill           a SIGKILLed `kiln tune` keeps the records of the kernels it finished
#   interrupt      SIGINT/SIGTERM during `kiln tune`: no temp directory or file left, the cache whole
#   modes          new outputs get 0666 less the umask, replaced ones keep their mode
#   output_dirs    the folders of outputs are created (--cache, --emit-lib, --report-svg, -o,
#                  --emit-bundle); one that cannot be (a file in the path; a read-only folder
#                  when not root) is an error before anything is built or timed
# Hostile inputs are in caches/ (caches/README.md).
# Usage: files_test.sh KILN KERNEL_DIR CASE   (KEEP=1 keeps the temp dir for a look)
set -u
kiln=$1 kdir=$2 case=$3
caches=$(dirname "$0")/caches
tmp=$(mktemp -d)
[ -n "${KEEP:-}" ] || trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
fails=0
src=$kdir/scale_add.kiln
args='n=4096; a=2.5; x: f32[n]; y: f32[n]; out: f32[n]; grid=cdiv(n, BLOCK)'

# fail, run, says
. "$(dirname "$0")/case_checks.sh"

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
  sed -nE 's/.*BLOCK=([0-9-]+),num_warps=([0-9]+),num_stages=([0-9]+).*"\}, \/\* tuned .*/\1 \2 \3/p' "$1"
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
  run tune 0 "$kiln" tune "$tmp/k.kiln" --reps 1 --cache "$tmp/c.json" --args "$args" || return
  # BLOCK=1024 the clear winner, then a where that excludes it
  sed -i -E '/BLOCK=1024,num_warps=4/s/"(median|p25|p75|min)_ms": [^,]*/"\1_ms": 0.000001/g' "$tmp/c.json"
  sed -e 's/^    num_warps in \[1, 4\];/    num_warps   in [1,4];  \/\/ layout and comments only/' "$tmp/k.kiln" >"$tmp/k2.kiln"
  mv "$tmp/k2.kiln" "$tmp/k.kiln"
  run lib-layout 0 "$kiln" lib "$tmp/k.kiln" --cache "$tmp/c.json" -o "$tmp/lib1" --args "$args" &&
    [ "$(shipped "$tmp/lib1/kernels.c")" = "1024 4 2" ] || fail "a layout change lost the records: $(shipped "$tmp/lib1/kernels.c")"
  sed -i 's/^    num_warps   in \[1,4\];.*/    num_warps in [1, 4];\n    where BLOCK != 1024;/' "$tmp/k.kiln"
  grep -q 'where BLOCK != 1024' "$tmp/k.kiln" || { fail "could not edit the block"; return; }
  run lib-edited 0 "$kiln" lib "$tmp/k.kiln" --cache "$tmp/c.json" -o "$tmp/lib2" --args "$args" || return
  grep -q '{1024LL' "$tmp/lib2/kernels.c" && fail "the edited block's library has BLOCK=1024"
  says lib-edited 'another version of its tune block'
}

case_other_compiler() {
  run version 0 "$kiln" --version || return
  local id; id=$(sed -nE 's/^kiln [0-9.]+ \(compiler ([0-9]+\.[0-9]+\.[0-9]+\+[0-9a-f]{16})\)$/\1/p' "$tmp/version.out")
  [ -n "$id" ] || { fail "kiln --version names no compiler identity: $(cat "$tmp/version.out")"; return; }
  run tune 0 "$kiln" tune "$src" --reps 1 --cache "$tmp/c.json" --args "$args" || return
  local n; n=$(grep -c '"kernel": "scale_add"' "$tmp/c.json")
  [ "$n" -gt 1 ] || { fail "want several records, got $n"; return; }
  [ "$(grep -c "\"kiln_version\": \"$id\"" "$tmp/c.json")" -eq "$n" ] || fail "records do not name $id"
  # another build's records: BLOCK=1024 the clear winner, BLOCK=256 with one warp a crash
  local other=0.1.0+0000000000000000
  sed -i -E -e "s/\"kiln_version\": \"[^\"]*\"/\"kiln_version\": \"$other\"/" \
    -e '/BLOCK=1024,num_warps=4/s/"(median|p25|p75|min)_ms": [^,]*/"\1_ms": 0.000001/g' \
    -e '/BLOCK=256,num_warps=1,/s/"status": "ok"/"status": "crash"/' "$tmp/c.json"
  grep -q '"status": "crash"' "$tmp/c.json" || fail "no BLOCK=256 one-warp record to make a crash"
  local ok; ok=$(grep -c '"status": "ok"' "$tmp/c.json")
  run lib-other 0 "$kiln" lib "$src" --cache "$tmp/c.json" -o "$tmp/lib1" --args "$args" || return
  says lib-other "$ok timing\\(s\\) of 'scale_add' were made with another build of Kiln"
  [ -z "$(shipped "$tmp/lib1/kernels.c")" ] || fail "another build's winner was shipped: $(shipped "$tmp/lib1/kernels.c")"
  run retune 0 "$kiln" tune "$src" --reps 1 --cache "$tmp/c.json" --args "$args" || return
  [ "$(grep -c "\"kiln_version\": \"$id\"" "$tmp/c.json")" -eq "$n" ] || fail "this build's configs were not all timed again"
  [ "$(grep -c "\"kiln_version\": \"$other\"" "$tmp/c.json")" -eq "$n" ] || fail "the other build's records were not kept"
  grep "\"kiln_version\": \"$id\"" "$tmp/c.json" | grep -q '"status": "crash"' && fail "another build's crash poisoned a config"
  run lib-again 0 "$kiln" lib "$src" --cache "$tmp/c.json" -o "$tmp/lib2" --args "$args" || return
  [ -n "$(shipped "$tmp/lib2/kernels.c")" ] || fail "this build's timings shipped nothing"
  grep -q 'another build of Kiln' "$tmp/lib-again.out" || fail "no note of the other build's records"
}

case_bad_medians() {
  tune_real
  fill "$caches/bad_medians.json.in" "$tmp/c.json"
  run lib 0 "$kiln" lib "$src" --cache "$tmp/c.json" -o "$tmp/lib" --args "$args" || return
  [ "$(shipped "$tmp/lib/kernels.c")" = "1024 4 2" ] || fail "shipped: $(shipped "$tmp/lib/kernels.c" | tr '\n' ';')"
  [ "$(grep -c 'not finite and non-negative' "$tmp/lib.out")" -eq 3 ] || fail "want 3 notes"
  # a writer (another key) rewrites the file: the bad records must not come back as 0
  run tune 0 "$kiln" tune "$src" --reps 1 --cache "$tmp/c.json" --args "${args/n=4096/n=100000}" || return
  grep -E '"key": "n=4096[^"]*".*"median_ms": (0|-1)[,.]' "$tmp/c.json" | grep -v '"median_ms": 0\.' &&
    fail "a bad median was written back"
  [ "$(grep -c '"key": "n=4096' "$tmp/c.json")" -eq 1 ] || fail "bad records kept: $(grep -c '"key": "n=4096' "$tmp/c.json")"
}

case_reader() {
  tune_real
  rm -f "$tmp/real.json.lock"
  run lib-real 0 "$kiln" lib "$src" --cache "$tmp/real.json" -o "$tmp/lib" --args "$args"
  [ -e "$tmp/real.json.lock" ] && fail "kiln lib created a lock file"
  for c in truncated newer_version; do
    cp "$caches/$c.json" "$tmp/$c.json"
    local sum; sum=$(cksum <"$tmp/$c.json")
    run "lib-$c" 1 "$kiln" lib "$src" --cache "$tmp/$c.json" -o "$tmp/lib-$c" --args "$args"
    unchanged "$tmp/$c.json" "$sum"
    [ -e "$tmp/lib-$c/kernels.c" ] && fail "$c: a library was made"
  done
  says lib-truncated 'not a valid Kiln tuning cache'
  says lib-newer_version 'format version 99, written by a newer Kiln'
  local sum; sum=$(cksum <"$tmp/newer_version.json")
  run tune-newer 1 "$kiln" tune "$src" --reps 1 --cache "$tmp/newer_version.json" --args "$args"
  unchanged "$tmp/newer_version.json" "$sum"
  [ -z "$(find "$tmp" -name '*.corrupt-*')" ] || fail "a cache was moved aside"
  if [ "$(id -u)" -ne 0 ]; then # root writes anywhere: the read-only directory only tells as a user
    mkdir "$tmp/ro" && cp "$tmp/real.json" "$tmp/ro/c.json" && chmod a-w "$tmp/ro"
    run lib-readonly 0 "$kiln" lib "$src" --cache "$tmp/ro/c.json" -o "$tmp/lib-ro" --args "$args"
    grep -q '/\* tuned' "$tmp/lib-ro/kernels.c" || fail "the read-only cache was not used"
  fi
}

case_symlink() {
  mkdir "$tmp/real"
  ln -s real/c.json "$tmp/link.json" # dangling until the first write
  run tune-1 0 "$kiln" tune "$src" --reps 1 --cache "$tmp/link.json" --args "$args"
  run tune-2 0 "$kiln" tune "$src" --reps 1 --cache "$tmp/link.json" --args "${args/n=4096/n=100000}"
  [ -L "$tmp/link.json" ] || fail "the link was replaced by a file"
  [ "$(grep -c '"kernel": "scale_add"' "$tmp/real/c.json" 2>/dev/null)" -eq 4 ] ||
    fail "the link's target lacks the records"
  run lib 0 "$kiln" lib "$src" --cache "$tmp/link.json" -o "$tmp/lib" --args "$args" &&
    grep -q '/\* tuned' "$tmp/lib/kernels.c" || fail "the library through the link is untuned"
  # a chain of relative links through another directory; the output library through a link too
  mkdir "$tmp/sub" "$tmp/out"
  ln -s ../link.json "$tmp/sub/hop.json"
  ln -s sub/hop.json "$tmp/chain.json"
  ln -s ../real-lib.c "$tmp/out/kernels.c"
  run tune-3 0 "$kiln" tune "$src" --reps 1 --cache "$tmp/chain.json" --emit-lib "$tmp/out" \
    --args "${args/n=4096/n=300000}"
  [ -L "$tmp/chain.json" ] && [ -L "$tmp/sub/hop.json" ] && [ -L "$tmp/link.json" ] &&
    [ -L "$tmp/out/kernels.c" ] || fail "a link of the chain was replaced"
  [ "$(grep -c '"kernel": "scale_add"' "$tmp/real/c.json")" -eq 6 ] || fail "the chain's target lacks the records"
  grep -q 'scale_add' "$tmp/real-lib.c" 2>/dev/null || fail "the library was not written through its link"
}

case_kill() {
  # scale_add (quick), then faulty at MODE 2 (spins far longer than the test waits)
  cat "$src" "$kdir/faulty.kiln" >"$tmp/two.kiln"
  setsid "$kiln" tune "$tmp/two.kiln" --reps 1 --timeout 100 -D MODE=2 --cache "$tmp/c.json" \
    --args 'kernel=faulty; n=1000; x: f32[n]; out: f32[n]; grid=cdiv(n, BLOCK)' >"$tmp/kill.out" 2>&1 &
  local pid=$! waited=0
  until grep -q '"kernel": "scale_add"' "$tmp/c.json" 2>/dev/null || [ $waited -ge 60 ]; do
    sleep 1; waited=$((waited + 1))
  done
  kill -KILL -- "-$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  [ "$(grep -c '"kernel": "scale_add"' "$tmp/c.json" 2>/dev/null)" -ge 2 ] ||
    fail "the finished kernel's records were lost (waited ${waited}s)"
  grep -q '"kernel": "faulty"' "$tmp/c.json" && fail "the killed kernel has records"
}

case_interrupt() {
  # SIGINT, then SIGTERM, to a tune that is building or timing (faulty at MODE 2 spins): the
  # tuner dies of the signal, its temp directory (TMPDIR/kiln-tune-*) and every temp file of
  # the atomic writer are gone, and the cache is the complete old one (the kernel's records are
  # saved only once it is tuned).
  run first 0 "$kiln" tune "$src" --reps 1 --cache "$tmp/c.json" --args "$args" || return
  local before sig
  before=$(cksum <"$tmp/c.json")
  mkdir -p "$tmp/t"
  for sig in INT TERM; do
    # A non-interactive shell starts background jobs with SIGINT ignored; a Ctrl-C reaches a
    # foreground tuner with the default action, which `env --default-signal` restores here.
    TMPDIR="$tmp/t" env --default-signal=INT "$kiln" tune "$kdir/faulty.kiln" --reps 1 --timeout 100 -D MODE=2 \
      --cache "$tmp/c.json" --args 'n=1000; x: f32[n]; out: f32[n]; grid=cdiv(n, BLOCK)' \
      >"$tmp/int.out" 2>&1 &
    local pid=$! waited=0
    until [ -n "$(find "$tmp/t" -name 'v*.o' 2>/dev/null)" ] || [ $waited -ge 600 ]; do
      sleep 0.1; waited=$((waited + 1))
    done
    [ $waited -lt 600 ] || fail "SIG$sig: the tuner built nothing in 60 s"
    kill -"$sig" "$pid"
    wait "$pid"
    local rc=$?
    [ $rc -eq $((128 + $(kill -l "$sig"))) ] || fail "SIG$sig: exit $rc, want death by the signal"
    [ -z "$(ls -A "$tmp/t")" ] || fail "SIG$sig: left in TMPDIR: $(ls -A "$tmp/t")"
    [ -z "$(find "$tmp" -maxdepth 1 -name '*.tmp.*')" ] || fail "SIG$sig: a temp file was left"
    unchanged "$tmp/c.json" "$before"
  done
}

case_modes() {
  umask 022
  run tune-1 0 "$kiln" tune "$src" --reps 1 --cache "$tmp/c.json" --report-svg "$tmp/r.svg" \
    --emit-lib "$tmp/lib" --args "$args" || return
  "$kiln" compile "$src" --kernel scale_add --emit obj -o "$tmp/k.o" || fail "compile"
  for f in c.json r.svg lib/kernels.c lib/kernels.h k.o; do
    [ "$(stat -c %a "$tmp/$f")" = 644 ] || fail "$f is $(stat -c %a "$tmp/$f"), want 644"
  done
  chmod 640 "$tmp/c.json" "$tmp/lib/kernels.c" "$tmp/k.o"
  run tune-2 0 "$kiln" tune "$src" --reps 1 --cache "$tmp/c.json" --emit-lib "$tmp/lib" \
    --args "${args/n=4096/n=100000}" || return
  "$kiln" compile "$src" --kernel scale_add --emit obj -o "$tmp/k.o" || fail "compile"
  for f in c.json lib/kernels.c k.o; do
    [ "$(stat -c %a "$tmp/$f")" = 640 ] || fail "replaced $f is $(stat -c %a "$tmp/$f"), want 640"
  done
}

case_output_dirs() {
  run nested 0 "$kiln" tune "$src" --reps 1 --cache "$tmp/a/b/c.json" --report-svg "$tmp/s/r.svg" \
    --emit-lib "$tmp/l/m" --args "$args" || return
  for f in a/b/c.json s/r.svg l/m/kernels.c l/m/kernels.h; do [ -f "$tmp/$f" ] || fail "no $f"; done
  run lib-nested 0 "$kiln" lib "$src" -o "$tmp/o/p" --args "$args" && [ -f "$tmp/o/p/kernels.c" ] ||
    fail "kiln lib -o made no nested folder"
  run bundle-nested 0 "$kiln" tune "$src" --device cpu --emit-bundle "$tmp/bu/nd" --args "$args" &&
    [ -f "$tmp/bu/nd/manifest.txt" ] || fail "--emit-bundle made no nested folder"
  touch "$tmp/file"
  # each refused at once: no build ran, no cache or library appeared
  run in-file 2 "$kiln" tune "$src" --reps 1 --cache "$tmp/file/c.json" --args "$args" &&
    says in-file "--cache '$tmp/file/c.json': cannot write in '$tmp/file': Not a directory"
  ! grep -q winner "$tmp/in-file.out" || fail "in-file: it tuned before refusing"
  run lib-in-file 2 "$kiln" tune "$src" --reps 1 --cache "$tmp/c2.json" --emit-lib "$tmp/file/lib" --args "$args" &&
    says lib-in-file "--emit-lib '$tmp/file/lib'"
  [ ! -e "$tmp/c2.json" ] || fail "lib-in-file: the cache was written before the refusal"
  run svg-in-file 2 "$kiln" tune "$src" --reps 1 --report-svg "$tmp/file/r.svg" --args "$args"
  if [ "$(id -u)" -ne 0 ]; then # root writes in read-only folders
    mkdir "$tmp/ro" && chmod 555 "$tmp/ro"
    run read-only 2 "$kiln" tune "$src" --reps 1 --cache "$tmp/ro/c.json" --args "$args" &&
      says read-only "cannot write in '$tmp/ro'"
  fi
  [ -z "$(find "$tmp" -name '.kiln-write-probe-*')" ] || fail "a probe file was left"
}

case "$case" in
outputs) case_outputs ;;
output_dirs) case_output_dirs ;;
records) case_records ;;
edited_block) case_edited_block ;;
other_compiler) case_other_compiler ;;
bad_medians) case_bad_medians ;;
reader) case_reader ;;
symlink) case_symlink ;;
kill) case_kill ;;
interrupt) case_interrupt ;;
modes) case_modes ;;
*) echo "unknown case $case"; exit 64 ;;
esac
if [ "$fails" -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "ok $case"
