#!/usr/bin/env bash
# hostile_names.sh KILN CC INCLUDE_DIR — every name Kiln accepts gives a library that compiles
# (issue 15).
#
# A generated library once used the user's parameter names as C identifiers next to its own
# locals: `attn_fwd(q, k, v, o)` did not compile ("'v' redeclared"), and a key named `d` or `t`
# compiled but was shadowed by a local of the dispatch code. For each name of the table, one
# library holds four kernels that use it as the kernel's name, a buffer's, a key's (in a
# condition on the call too) and a const's (in the grid rule too), 16 names to a library; its
# header and source must
# compile with -std=c17 -Wall -Wextra -Werror (also with -DKILN_LIB_CHECKED, whose checks print
# the buffers' names and size rules), and the header with -std=gnu17 (where `linux` and
# `unix` are macros) and as C++. Names whose public functions would coincide are refused with
# exit 1, as are unsafe library names (exit 64). Run by ctest as autotune.hostile_names;
# tests/autotune/names_test.c runs a library whose keys are named d and t.
set -u
kiln=$1 cc=$2 inc=$3
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

names=(
  # C and C++ keywords and the standard headers' keyword macros (Kiln's own keywords aside)
  int float double char void static restrict register volatile extern struct union enum typedef
  sizeof switch case default goto do long short signed unsigned auto
  inline _Bool _Atomic _Noreturn _Generic bool nullptr typeof alignas static_assert
  thread_local constexpr class new delete template this namespace operator and or not
  # types and object-like macros of standard headers, predefined macros of GNU modes
  NULL errno stdin int64_t uint32_t size_t INT32_MAX INT64_C EOF EINVAL I linux unix offsetof
  # every local and parameter name of the generated code, and its statics
  v g g0 g1 fn st args lc cfg best best_d d t one d16 bad ck why msg w broken lib grid
  grid_user stream dev out user mu mods fns p0 p1 p2 p3 signature
  kiln_gen_table0 kiln_gen_ck kiln_gen_choose0 kiln_gen_fits0 kiln_gen_images KILN_GEN_UNUSED
  KILN_GEN_CK_ADD kiln_rt_launch kiln_out KilnRtStatus KilnRtStream KILN_RT_OK kiln KILN
  # the library's own names, reserved and library names
  hostile hostile_create hostile_kbuf hostile_kkey_pick main free calloc snprintf __x _X
)

# a kernel per role; @N@ is the name, @I@ its position in the table. The argument spec of each
# kernel is a comment line of its file (kiln lib takes 16 --args at most).
template='// kiln-tune-args: kernel=@N@; len=1000; src: f32[len]; dst: f32[len]; grid=cdiv(len, BLOCK)
// kiln-tune-args: kernel=kbuf@I@; len=1000; @N@: f32[len]; dst: f32[len]; grid=cdiv(len, BLOCK)
// kiln-tune-args: kernel=kkey@I@; @N@=1000; src: f32[@N@]; dst: f32[@N@]; grid=cdiv(@N@, BLOCK)
// kiln-tune-args: kernel=kconst@I@; len=1000; src: f32[len]; dst: f32[len]; grid=cdiv(len, @N@)
kernel @N@(src: *f32, dst: *f32, len: i32, const BLOCK: i32) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(dst + offs, 2.0 * load(src + offs, offs < len, 0.0), offs < len);
}
tune @N@ { key len; BLOCK in [64, 128]; }

kernel kbuf@I@(@N@: *f32, dst: *f32, len: i32, const BLOCK: i32) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(dst + offs, 2.0 * load(@N@ + offs, offs < len, 0.0), offs < len);
}
tune kbuf@I@ { key len; BLOCK in [64, 128]; }

kernel kconst@I@(src: *f32, dst: *f32, len: i32, const @N@: i32) {
    let offs = program_id(0) * @N@ + arange(0, @N@);
    store(dst + offs, 2.0 * load(src + offs, offs < len, 0.0), offs < len);
}
tune kconst@I@ { key len; @N@ in [64, 128]; }

kernel kkey@I@(src: *f32, dst: *f32, @N@: i32, const BLOCK: i32) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(dst + offs, 2.0 * load(src + offs, offs < @N@, 0.0), offs < @N@);
}
tune kkey@I@ { key @N@; BLOCK in [64, 128]; where BLOCK * 1000 >= @N@; }
'

compile() { # $1: dir; the library hostile in it compiles every way it is meant to
  local dir=$1 flags="-Wall -Wextra -Werror -I$inc -I$dir"
  "$cc" -std=c17 $flags -c "$dir/hostile.c" -o "$dir/hostile.o" 2> "$dir/cc.err" &&
    "$cc" -std=c17 $flags -DKILN_LIB_CHECKED -c "$dir/hostile.c" -o "$dir/checked.o" 2>> "$dir/cc.err" &&
    printf '#include "hostile.h"\nint main(void) { return 0; }\n' > "$dir/use.c" &&
    "$cc" -std=gnu17 $flags -c "$dir/use.c" -o "$dir/use.o" 2>> "$dir/cc.err" &&
    { ! command -v c++ > /dev/null || c++ -x c++ -std=c++17 $flags -c "$dir/use.c" -o "$dir/usexx.o" 2>> "$dir/cc.err"; }
}

# 16 names (64 kernels, what one kiln lib takes) per library
for ((c = 0; c < ${#names[@]}; c += 16)); do
  dir=$d/chunk$c
  mkdir -p "$dir"
  files=()
  for ((i = c; i < c + 16 && i < ${#names[@]}; i++)); do
    n=${names[i]} text=${template//@N@/${names[i]}}
    text=${text//@I@/$i}
    if [ "$n" = grid ]; then # `grid=` is the spec's grid rule: no scalar may be named grid
      text=${text%%kernel kkey*}
      text=$(printf '%s' "$text" | grep -v "kernel=kkey")
    fi
    printf '%s\n' "$text" > "$dir/k$i.kiln"
    files+=("$dir/k$i.kiln")
  done
  if ! "$kiln" lib "${files[@]}" -o "$dir" --lib-name hostile > "$dir/lib.out" 2>&1; then
    fail "kiln lib, names ${names[*]:c:16}: $(grep -v 'warning: no timing' "$dir/lib.out" | head -3)"
  elif ! compile "$dir"; then
    fail "names ${names[*]:c:16}: $(head -4 "$dir/cc.err")"
  fi
done

# refused: kernels whose public names coincide (exit 1) and unsafe library names (exit 64)
refuse() { # want, pattern, lib name, kernel name
  local dir=$d/refuse-$4-$3 text=${template//@N@/$4}
  mkdir -p "$dir"
  printf '%s\n' "${text//@I@/}" > "$dir/k.kiln"
  "$kiln" lib "$dir/k.kiln" -o "$dir" --lib-name "$3" > "$dir/out" 2>&1
  local rc=$?
  if [ $rc -ne "$1" ] || ! grep -q -- "$2" "$dir/out"; then fail "lib $3, kernel $4: rc $rc: $(cat "$dir/out")"; fi
  [ ! -e "$dir/$3.h" ] || fail "lib $3, kernel $4: wrote a header"
}
refuse 1 "would be the library's own hostile_create" hostile create
refuse 1 "would be the library's own hostile_destroy" hostile destroy
refuse 1 "kernels 'kbuf_pick' and 'kbuf' would both define 'hostile_kbuf_pick'" hostile kbuf_pick
refuse 1 "kernels 'kkey_config' and 'kkey' would both define 'hostile_kkey_config'" hostile kkey_config
for L in int kiln_lib KilnLib _lib int64_t NULL pthread free dev lib; do
  refuse 64 "library name '$L'" "$L" fine
done

[ $fails -eq 0 ] && echo "ok: ${#names[@]} names"
exit $((fails != 0))
