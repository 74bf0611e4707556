#!/usr/bin/env bash
# The reserved tune name `wgmma` (0 or 1; dsl/reference.md) as a config binding through the
# tuner on the cpu device, where it changes no code (only the sm_90 lowering reads it), so every
# step that handles min_blocks must handle it alike:
#   - `kiln tune` of a block with `wgmma in [0, 1]` times both values: the cache holds a record
#     per config, wgmma=0 and wgmma=1 apart;
#   - `kiln tune -D wgmma=1` pins it: only wgmma=1 configs are timed; -D wgmma=2 (or -1) is an
#     error naming the range, exit 1, before anything is built;
#   - `kiln lib` (from the whole cache, and `-D wgmma=1 --require-tuned`) writes the variant
#     records with their wgmma; the generated C compiles with -Wall -Wextra -Werror, links
#     against the runtime, and computes y = 2 x exactly at n = 4096 (the tuned key) and at
#     n = 1000 (the generic copy).
# Usage: wgmma_knob_test.sh KILN KILNRT_LIB RUNTIME_INCLUDE_DIR CC [SANITIZE(1|0)]
set -u
kiln=$1 kilnrt=$2 inc=$3 cc=$4 sanitize=${5:-0}
# an instrumented runtime (a sanitizer build) needs its users instrumented too
san_flags=()
[ "$sanitize" = 1 ] && san_flags=(-fsanitize=address,undefined -fno-omit-frame-pointer)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

cat >"$tmp/k.kiln" <<'K'
kernel twice(x: *f32, y: *f32, n: i32, const BLOCK: i32) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(y + offs, load(x + offs, offs < n, 0.0) * 2.0, offs < n);
}
tune twice {
    key n;
    BLOCK in [64, 128];
    wgmma in [0, 1];
    min_blocks in [1];
    preset hopper for cuda { BLOCK = 128; wgmma = 1; }
}
K
args='n=4096; x: f32[n]; y: f32[n]; grid=cdiv(n, BLOCK)'

# configs CACHE: the cache's config strings, sorted
configs() { grep -o '"config": "[^"]*"' "$1" | sed 's/"config": "//; s/"$//' | sort; }

# the whole space: 4 configs, both wgmma values
if "$kiln" tune "$tmp/k.kiln" --device cpu --reps 3 --cache "$tmp/all.json" --args "$args" \
     >"$tmp/tune-all.txt" 2>&1; then
  want=$(printf '%s\n' BLOCK=128,wgmma=0 BLOCK=128,wgmma=1 BLOCK=64,wgmma=0 BLOCK=64,wgmma=1 |
    sed 's/$/,min_blocks=1,num_warps=4,num_stages=2/')
  got=$(configs "$tmp/all.json")
  [ "$got" = "$want" ] || fail "the cache of the whole space holds: $got"
else
  fail "kiln tune: $(cat "$tmp/tune-all.txt")"
fi

# pinned: only wgmma=1
if "$kiln" tune "$tmp/k.kiln" --device cpu --reps 3 -D wgmma=1 --cache "$tmp/on.json" \
     --args "$args" >"$tmp/tune-on.txt" 2>&1; then
  got=$(configs "$tmp/on.json" | tr '\n' ' ')
  want=$(printf '%s\n' BLOCK=128 BLOCK=64 | sed 's/$/,wgmma=1,min_blocks=1,num_warps=4,num_stages=2/')
  got=$(configs "$tmp/on.json")
  [ "$got" = "$want" ] || fail "kiln tune -D wgmma=1 timed: $got"
else
  fail "kiln tune -D wgmma=1: $(cat "$tmp/tune-on.txt")"
fi

# out of range: a clear error, exit 1, no cache written
for v in 2 -1; do
  out=$("$kiln" tune "$tmp/k.kiln" --device cpu -D wgmma=$v --cache "$tmp/bad.json" \
    --args "$args" 2>&1)
  rc=$?
  [ $rc -eq 1 ] && printf '%s' "$out" | grep -q -- "-D wgmma expects an integer in 0..1" ||
    fail "kiln tune -D wgmma=$v -> rc $rc: $out"
done
[ -e "$tmp/bad.json" ] && fail "kiln tune -D wgmma=2 wrote a cache"

cat >"$tmp/main.c" <<'C'
#include <stdio.h>
#include LIB_H

/* y = 2 x, exact in f32, at n (every element of y written once) */
static int run(LIB *lib, KilnRtDevice *dev, int n) {
  float *x, *y;
  if (kiln_rt_malloc(dev, (size_t)n * 4, (void **)&x) ||
      kiln_rt_malloc(dev, (size_t)n * 4, (void **)&y))
    return printf("FAIL malloc\n"), 1;
  for (int i = 0; i < n; i++) x[i] = (float)(i % 977) * 0.125f - 17.0f, y[i] = -1.0f;
  KilnRtStatus st = LAUNCH(lib, x, y, n, NULL, NULL, NULL);
  int bad = st != KILN_RT_OK;
  for (int i = 0; i < n && !bad; i++)
    if (y[i] != 2.0f * x[i])
      bad = printf("FAIL n=%d: y[%d] = %g, want %g\n", n, i, y[i], 2.0f * x[i]);
  printf("%s n=%d: status %s\n", bad ? "FAIL" : "ok", n, kiln_rt_status_name(st));
  kiln_rt_free(dev, x);
  kiln_rt_free(dev, y);
  return bad;
}

int main(void) {
  KilnRtDevice *dev;
  LIB *lib;
  if (kiln_rt_device_create("cpu", &dev) != KILN_RT_OK || CREATE(dev, &lib) != KILN_RT_OK)
    return printf("FAIL create\n"), 1;
  int bad = run(lib, dev, 4096) + run(lib, dev, 1000);
  DESTROY(lib);
  kiln_rt_device_destroy(dev);
  return bad != 0;
}
C

# library NAME CACHE WANT [kiln lib options]: generate, check the records' wgmma, build, run
library() {
  local name=$1 cache=$2 want=$3
  shift 3
  mkdir -p "$tmp/$name"
  if ! "$kiln" lib "$tmp/k.kiln" --cache "$cache" -o "$tmp/$name" --device cpu --lib-name "$name" \
       --args "$args" "$@" >"$tmp/$name.log" 2>&1; then
    fail "kiln lib $name: $(cat "$tmp/$name.log")"
    return
  fi
  local recs
  recs=$(grep -c "\"n=4096, BLOCK=[0-9]*,wgmma=$want,min_blocks=1," "$tmp/$name/$name.c")
  [ "$recs" -eq 2 ] ||
    fail "$name: $recs variant records with wgmma=$want, expected 2 (tuned, generic)"
  if ! "$cc" -std=c17 -Wall -Wextra -Werror "${san_flags[@]}" -I "$inc" -I "$tmp/$name" \
       -DLIB_H="\"$name.h\"" -DLIB="$name" -DLAUNCH="${name}_twice" -DCREATE="${name}_create" \
       -DDESTROY="${name}_destroy" "$tmp/main.c" "$tmp/$name/$name.c" "$kilnrt" \
       -lpthread -ldl -lm -o "$tmp/$name.exe" >"$tmp/$name.cc.log" 2>&1; then
    fail "$name does not build: $(head -20 "$tmp/$name.cc.log")"
    return
  fi
  "$tmp/$name.exe" || fail "$name computes wrong numbers"
}

# the whole cache: the winner's wgmma is whichever timed faster (either is y = 2 x)
win=$(sed -n 's/.*winner: BLOCK=[0-9]*,wgmma=\([01]\),.*/\1/p' "$tmp/tune-all.txt" | head -1)
[ -n "$win" ] || fail "no winner in: $(cat "$tmp/tune-all.txt")"
library twice_all "$tmp/all.json" "${win:-0}"
library twice_wgmma "$tmp/on.json" 1 -D wgmma=1 --require-tuned

[ $fails -eq 0 ] && echo "wgmma_knob: ok"
exit $((fails != 0))
