#!/usr/bin/env bash
# `preset NAME for DEVICE` (dsl/reference.md, "Tune blocks"): a default-mode candidate on that
# device kind only. A block with a preset for every device, one for cuda and one for emu:
#   - cpu times (here: bundles) the one for every device only, emu that one and its own;
#   - a block whose presets are all for another device falls back to the spread configs (up
#     to four) there;
#   - `kiln lib` without a cache (an untuned library) takes the preset for every device as its
#     default, not the cuda one listed first;
#   - a preset for a device that does not exist is a located error, exit 1;
#   - `preset NAME where COND`: a candidate, and the untuned default, only where COND holds for
#     the pinned values: `-D T=f32` tunes and defaults to the f32 preset, `-D T=f16` (and the
#     block's own T) to the one before it; a condition on a name the block has no value for is
#     a located error, exit 1.
# Usage: device_presets_test.sh KILN
set -u
kiln=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

cat >"$tmp/k.kiln" <<'K'
kernel twice(x: *f32, n: i32, const BLOCK: i32) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(x + offs, load(x + offs, offs < n, 0.0) * 2.0, offs < n);
}
tune twice {
    BLOCK in [64, 128, 256, 512, 1024];
    num_warps in [1, 2];
    preset gpu_big for cuda { BLOCK = 1024; num_warps = 2; }
    preset every { BLOCK = 256; num_warps = 1; }
    preset emu_small for emu { BLOCK = 64; num_warps = 2; }
}
kernel thrice(x: *f32, n: i32, const BLOCK: i32) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(x + offs, load(x + offs, offs < n, 0.0) * 3.0, offs < n);
}
tune thrice {
    BLOCK in [64, 128, 256, 512, 1024];
    preset only_gpu for cuda { BLOCK = 1024; }
}
K
args='n=4096; x: f32[n]; grid=cdiv(n, BLOCK)'

bundled() { # DEVICE KERNEL -> "N of M" from the bundle line
  "$kiln" tune "$tmp/k.kiln" --kernel "$2" --device "$1" --mode default --emit-bundle \
    "$tmp/b-$1-$2" --args "$args" 2>&1 | sed -n 's/.*: \([0-9]* of [0-9]*\) candidates built.*/\1/p'
}
got=$(bundled cpu twice)
[ "$got" = "1 of 1" ] || fail "cpu bundles $got candidates of twice, expected the preset for every device only"
got=$(bundled emu twice)
[ "$got" = "2 of 2" ] || fail "emu bundles $got candidates of twice, expected 2 (every + emu_small)"
grep -q "BLOCK=64" "$tmp/b-emu-twice/manifest.txt" 2>/dev/null ||
  fail "the emu bundle lacks emu_small (BLOCK=64): $(cat "$tmp/b-emu-twice/manifest.txt" 2>/dev/null)"
grep -q "BLOCK=1024" "$tmp/b-emu-twice/manifest.txt" 2>/dev/null &&
  fail "the emu bundle has the cuda preset (BLOCK=1024)"
got=$(bundled cpu thrice)
[ "$got" = "4 of 4" ] || fail "cpu bundles $got candidates of thrice, expected the 4 spread configs"

# an untuned library's default is the preset for every device
mkdir -p "$tmp/lib"
echo '{"format": "kiln-tune-cache", "version": 2, "records": []}' >"$tmp/empty.json"
if "$kiln" lib "$tmp/k.kiln" --kernel twice --cache "$tmp/empty.json" -o "$tmp/lib" --device cpu \
     --args "$args" >"$tmp/lib.log" 2>&1; then
  grep -q "default config BLOCK=256,num_warps=1" "$tmp/lib.log" ||
    fail "the untuned default is not 'every' (BLOCK=256, 1 warp): $(cat "$tmp/lib.log")"
else
  fail "kiln lib: $(cat "$tmp/lib.log")"
fi

# presets chosen by the pinned element type
cat >"$tmp/typed.kiln" <<'K'
kernel scale(x: *T, n: i32, const T: type, const BLOCK: i32) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(x + offs, (load(x + offs, offs < n, 0.0) * 2.0) as T, offs < n);
}
tune scale {
    T in [f16];
    BLOCK in [64, 128, 256, 512, 1024];
    num_warps in [1, 2];
    preset halves where T != f32 { BLOCK = 1024; num_warps = 2; }
    preset singles where T == f32 { BLOCK = 512; num_warps = 1; }
    preset singles_gpu for cuda where T == f32 { BLOCK = 256; num_warps = 2; }
}
K
typed_args='n=4096; x: [n]; grid=cdiv(n, BLOCK)'
default_of() { # PIN... -> the default config kiln lib reports for an untuned library
  "$kiln" lib "$tmp/typed.kiln" --kernel scale "$@" --cache "$tmp/empty.json" -o "$tmp/tlib" \
    --device cpu --args "$typed_args" 2>&1 | sed -n 's/.*uses its default config \([^ ]*\).*/\1/p' | head -1
}
mkdir -p "$tmp/tlib"
got=$(default_of -D T=f32)
[ "$got" = "T=f32,BLOCK=512,num_warps=1,num_stages=2" ] ||
  fail "-D T=f32: the default is not 'singles' (BLOCK=512, 1 warp): '$got'"
got=$(default_of -D T=f16)
[ "$got" = "T=f16,BLOCK=1024,num_warps=2,num_stages=2" ] ||
  fail "-D T=f16: the default is not 'halves' (BLOCK=1024, 2 warps): '$got'"
got=$(default_of)
[ "$got" = "T=f16,BLOCK=1024,num_warps=2,num_stages=2" ] ||
  fail "T as listed (f16): the default is not 'halves': '$got'"
for pin in f32 bf16; do
  "$kiln" tune "$tmp/typed.kiln" --kernel scale -D T=$pin --device cpu --mode default \
    --emit-bundle "$tmp/b-typed-$pin" --args "$typed_args" >"$tmp/typed-$pin.log" 2>&1 ||
    fail "bundle -D T=$pin: $(cat "$tmp/typed-$pin.log")"
done
grep -q "BLOCK=512" "$tmp/b-typed-f32/manifest.txt" 2>/dev/null &&
  ! grep -q "BLOCK=1024" "$tmp/b-typed-f32/manifest.txt" ||
  fail "the f32 bundle is not 'singles' alone: $(cat "$tmp/b-typed-f32/manifest.txt" 2>/dev/null)"
grep -q "BLOCK=1024" "$tmp/b-typed-bf16/manifest.txt" 2>/dev/null &&
  ! grep -q "BLOCK=512" "$tmp/b-typed-bf16/manifest.txt" ||
  fail "the bf16 bundle is not 'halves' alone: $(cat "$tmp/b-typed-bf16/manifest.txt" 2>/dev/null)"

# a condition on something that is not a name of the tune block
cat >"$tmp/badcond.kiln" <<'K'
kernel k(x: *f32, n: i32, const BLOCK: i32) {
}
tune k {
    BLOCK in [64];
    preset p where BLOCK > 32 && WIDTH == 2 { BLOCK = 64; }
}
K
"$kiln" check "$tmp/badcond.kiln" >"$tmp/badcond.log" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "badcond.kiln:5:34: error: the condition of preset 'p' names 'WIDTH', which is not a parameter of this tune block" "$tmp/badcond.log" ||
  fail "preset condition on WIDTH: exit $rc: $(cat "$tmp/badcond.log")"

# a device that does not exist
cat >"$tmp/bad.kiln" <<'K'
kernel k(x: *f32, const BLOCK: i32) {
}
tune k {
    BLOCK in [64];
    preset p for tpu { BLOCK = 64; }
}
K
"$kiln" check "$tmp/bad.kiln" >"$tmp/bad.log" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "bad.kiln:5:18: error: preset 'p' is for device 'tpu': the devices are cpu, emu and cuda" "$tmp/bad.log" ||
  fail "preset for tpu: exit $rc: $(cat "$tmp/bad.log")"

[ $fails -eq 0 ] && echo "all passed" || echo "$fails failed"
exit $((fails != 0))
