#!/usr/bin/env bash
# Checks that an installed Kiln is usable on its own: `cmake --install` into a fresh prefix, then
# the consumer project (consumer/: find_package(Kiln) + kiln_add_kernel_library(), libraries
# tuned at build time by the installed `kiln`) configured, built and run against that prefix
# once with the static and once with the shared runtime, on the cpu and emu devices; then the
# same programs compiled by hand with `pkg-config --cflags --libs kilnrt` (the shared runtime)
# and `pkg-config --static` (a prefix that holds only libkilnrt.a). The emu runs are the point:
# kernel modules resolve the emulator's kiln_emu_* at dlopen, from the runtime library or from
# the executable, which works only when the installed runtime carries the emulator and its
# users link the way the runtime asks (runtime/emu_device.c).
# Usage: install_test.sh BUILD_DIR WORK_DIR C_COMPILER GENERATOR MAKE_PROGRAM SANITIZE(1|0)
set -u
build=$1 work=$2 cc=$3 generator=$4 make_program=$5 sanitize=$6
here=$(cd "$(dirname "$0")" && pwd)
fails=0

fail() { echo "FAIL $*"; fails=$((fails + 1)); }
# step NAME CMD... : runs CMD with its output in $work/NAME.log, shown when it fails
step() {
  local name=$1 t0=$EPOCHREALTIME; shift
  "$@" >"$work/$name.log" 2>&1
  local rc=$?
  if [ $rc -eq 0 ]; then
    local us=$((${EPOCHREALTIME/./} - ${t0/./}))
    printf 'ok   %s (%d.%d s)\n' "$name" $((us / 1000000)) $((us / 100000 % 10)); return 0
  fi
  fail "$name (exit $rc):"; tail -40 "$work/$name.log" | sed 's/^/    /'; return 1
}

rm -rf "$work" && mkdir -p "$work" || exit 1
prefix=$work/prefix
step install cmake --install "$build" --prefix "$prefix" || exit 1

# What a user of the prefix needs, found under it (lib, or lib64 where the platform says so).
pc=$(find "$prefix" -name kilnrt.pc -path '*/pkgconfig/*' | head -1)
libdir=$(dirname "$(dirname "${pc:-$prefix/lib/pkgconfig/x}")")
for f in bin/kiln bin/kiln-tune-runner include/kiln/kilnrt.h; do
  [ -e "$prefix/$f" ] || fail "installed: $f missing"
done
for f in libkilnrt.a libkilnrt.so pkgconfig/kilnrt.pc cmake/Kiln/KilnConfig.cmake kiln/emu_exports.list; do
  [ -e "$libdir/$f" ] || fail "installed: ${libdir#"$prefix/"}/$f missing"
done
# Nothing a user reads from the prefix may point back into the source or build tree.
src=$(cd "$here/../.." && pwd) build_abs=$(cd "$build" && pwd)
if grep -rlF -e "$src/" -e "$build_abs/" "$libdir/cmake" "$libdir/pkgconfig" >"$work/refs.log"; then
  fail "installed files refer to the source or build tree: $(tr '\n' ' ' <"$work/refs.log")"
fi
# The installed programs run from the prefix (the runner's usage: exit 64).
step kiln-version "$prefix/bin/kiln" --version
"$prefix/bin/kiln-tune-runner" >"$work/runner.log" 2>&1
[ $? -eq 64 ] && grep -q 'usage: kiln-tune-runner' "$work/runner.log" ||
  fail "kiln-tune-runner: no usage from the installed program: $(head -3 "$work/runner.log")"

# In a sanitizer build the installed runtime and `kiln` are instrumented: their users must be too.
san_flags=()
if [ "$sanitize" = 1 ]; then
  san_flags=(-fsanitize=address,undefined -fno-omit-frame-pointer)
fi

# run NAME PROGRAM... : runs it, wants exit 0 and "matches" in its output
run() {
  local name=$1; shift
  step "$name" "$@" || return
  grep -q 'matches the C loop' "$work/$name.log" || fail "$name: no 'matches' line in its output"
}

# The static configuration tunes its libraries at build time; the shared one takes them from it.
gen=$work/consumer-static/gen
for rt in static shared; do
  dir=$work/consumer-$rt
  generated=
  [ $rt = shared ] && generated=$gen
  step "configure-$rt" cmake -S "$here/consumer" -B "$dir" -G "$generator" \
    -DCMAKE_MAKE_PROGRAM="$make_program" -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_C_FLAGS="${san_flags[*]}" -DKILN_CONSUMER_RUNTIME=$rt \
    -DKILN_CONSUMER_GENERATED="$generated" || continue
  step "build-$rt" cmake --build "$dir" -j 2 || continue
  for dev in cpu emu; do
    run "run-$rt-$dev" "$dir/consumer_$dev" 10007
  done
  # The shared programs load the installed libkilnrt.so; the static ones none at all.
  loads=$(ldd "$dir/consumer_emu" | grep 'libkilnrt\.so')
  if [ $rt = shared ]; then
    case "$loads" in
      *"=> $libdir/libkilnrt.so"*) ;;
      *) fail "link-shared: consumer_emu loads '${loads:-no libkilnrt.so}', not the prefix's" ;;
    esac
  elif [ -n "$loads" ]; then
    fail "link-static: consumer_emu loads $loads"
  fi
done

# pkg-config, with the libraries the static consumer build generated. The shared runtime first.
if [ -e "$gen/emu/saxpy_emu.c" ] && [ -e "$gen/cpu/saxpy_cpu.c" ]; then
  export PKG_CONFIG_PATH=$libdir/pkgconfig
  for dev in cpu emu; do
    step "pkg-config-shared-$dev-build" "$cc" "${san_flags[@]}" -o "$work/pc_shared_$dev" \
      "$here/consumer/main.c" "$gen/$dev/saxpy_$dev.c" -I"$gen/$dev" -DKERNELS=saxpy_$dev \
      -DDEVICE="\"$dev\"" $(pkg-config --cflags --libs kilnrt) \
      -Wl,-rpath,"$(pkg-config --variable=libdir kilnrt)" &&
      run "pkg-config-shared-$dev" "$work/pc_shared_$dev" 10007
  done
  # A prefix with the static archive only, as where no shared runtime is installed: -lkilnrt is
  # libkilnrt.a and `pkg-config --static` must bring everything it needs.
  sprefix=$work/static-prefix
  slibdir=$sprefix/${libdir#"$prefix/"}
  mkdir -p "$slibdir" && cp -r "$prefix/include" "$sprefix/" &&
    (cd "$libdir" && cp -r libkilnrt.a pkgconfig kiln "$slibdir/") || fail "static-prefix: copy failed"
  export PKG_CONFIG_PATH=$slibdir/pkgconfig
  for dev in cpu emu; do
    step "pkg-config-static-$dev-build" "$cc" "${san_flags[@]}" -o "$work/pc_static_$dev" \
      "$here/consumer/main.c" "$gen/$dev/saxpy_$dev.c" -I"$gen/$dev" -DKERNELS=saxpy_$dev \
      -DDEVICE="\"$dev\"" $(pkg-config --cflags --static --libs kilnrt) &&
      run "pkg-config-static-$dev" "$work/pc_static_$dev" 10007
  done
else
  fail "pkg-config: no generated libraries from the static consumer build"
fi

if [ "$fails" -ne 0 ]; then echo "$fails check(s) failed (logs in $work)"; exit 1; fi
echo "the installed Kiln works: cmake static/shared and pkg-config, cpu and emu"
rm -rf "$work"
