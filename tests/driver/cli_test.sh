#!/usr/bin/env bash
# Checks the `kiln` command's contract: exit codes, diagnostics with a caret, every --emit
# output, -D bindings, --dump-after, that -o never leaves a half-written file and never
# replaces the input.
# Usage: cli_test.sh KILN KERNEL_DIR [MORE_KERNELS_DIR]   (KERNEL_DIR: dsl/examples, which holds
# vector_add, softmax_rows and matmul_f16; every kernel of both folders is checked)
set -u
kiln=$1 kdir=$2 edir=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

check() { # check NAME EXPECTED_RC CMD... ; output in $tmp/out
  local name=$1 want=$2; shift 2
  "$@" >"$tmp/out" 2>&1
  local rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL $name: exit $rc, expected $want"; sed 's/^/    /' "$tmp/out" | head -20
    fails=$((fails + 1)); return 1
  fi
  echo "ok   $name"
}

contains() { # contains NAME PATTERN (grep -E on $tmp/out)
  if ! grep -qE -- "$2" "$tmp/out"; then
    echo "FAIL $1: output lacks /$2/"; sed 's/^/    /' "$tmp/out" | head -20
    fails=$((fails + 1)); return 1
  fi
}

# --- usage and help
check help 0 "$kiln" --help && contains help 'usage: kiln'
check help-compile 0 "$kiln" compile --help && contains help-compile '--emit'
check version 0 "$kiln" --version && contains version '^kiln [0-9]+\.[0-9]+'
check no-args 64 "$kiln"
check unknown-command 64 "$kiln" frobnicate
check compile-no-kernel 64 "$kiln" compile "$kdir/vector_add.kiln"
check bad-define 64 "$kiln" compile "$kdir/vector_add.kiln" --kernel vector_add -D BLOCK=abc
check bad-target 64 "$kiln" compile "$kdir/vector_add.kiln" --kernel vector_add --target sm_10
check bad-emit 64 "$kiln" compile "$kdir/vector_add.kiln" --kernel vector_add --emit png

# --- environment failures
check missing-file 2 "$kiln" compile "$tmp/nope.kiln" --kernel k && contains missing-file 'cannot read'

# --- user errors: diagnostics with file:line:col and a caret
cat >"$tmp/bad.kiln" <<'K'
kernel bad(x: *f32, n: i32, const BLOCK: i32) {
    let offs = arange(0, BLOCK);
    let t = zeros([64, 32], f32) + zeros([32, 64], f32);
    store(x + offs, undefined_name, offs < n);
}
K
check bad-source 1 "$kiln" compile "$tmp/bad.kiln" --kernel bad -D BLOCK=64
contains bad-source-loc 'bad\.kiln:3:[0-9]+: error: '
contains bad-source-caret '^ *\^'
contains bad-source-second 'bad\.kiln:4:[0-9]+: error: '
check check-bad 1 "$kiln" check "$tmp/bad.kiln"
# kiln check -D binds const parameters over the tune block's first configuration
check check-define 0 "$kiln" check "$kdir/vector_add.kiln" -D BLOCK=4096 -D num_warps=8
check check-define-unknown 1 "$kiln" check "$kdir/vector_add.kiln" -DNOPE=3 && contains check-define-unknown "no kernel has a const parameter 'NOPE'"
check check-define-bad 64 "$kiln" check "$kdir/vector_add.kiln" -D BLOCK=x && contains check-define-bad "see 'kiln help check'"
check check-define-range 1 "$kiln" check "$kdir/vector_add.kiln" -D BLOCK=4294967296 && contains check-define-range 'does not fit in i32'
check check-no-file 64 "$kiln" check -D BLOCK=4
check help-check 0 "$kiln" help check && contains help-check 'kiln check FILE.*-D NAME=VALUE'

# kiln check --target: what a GPU target cannot compile is a located error, exit 1 (kiln compile
# of the same kernel too, where the backend once failed with exit 2), each one reported; the cpu
# takes them all
cat >"$tmp/gpu.kiln" <<'K'
kernel np2(x: *f32, n: i32) {
    let offs = arange(0, 48);
    store(x + offs, load(x + offs, offs < n), offs < n);
}
kernel np2b(x: *i32, n: i32) {
    let offs = arange(0, 24);
    atomic_add(x + offs, 1, offs < n);
}
K
check check-target-cpu 0 "$kiln" check "$tmp/gpu.kiln" --target cpu
check check-target-gpu 1 "$kiln" check "$tmp/gpu.kiln" --target sm_90
contains check-target-tile 'gpu\.kiln:2:16: error: .*powers of two \(got 48\)'
contains check-target-tile2 'gpu\.kiln:6:16: error: .*powers of two \(got 24\)'
contains check-target-caret '^ *\^'
# i1 stores and loads (bytes) and atomics on 8- and 16-bit cells (a CAS loop on the word, f16/bf16
# add in one instruction where PTX has it) compile on every target; atomics on i1 cells are
# refused by the language itself, on every target
cat >"$tmp/narrow.kiln" <<'K'
kernel st1(x: *f32, flags: *i1, out: *i1, n: i32) {
    let offs = arange(0, 64);
    store(out + offs, (load(x + offs, offs < n) > 0.0) != load(flags + offs, offs < n), offs < n);
}
kernel at16(x: *f16, out: *f16, h: *i16, b: *bf16, c: *u8, n: i32) {
    let offs = arange(0, 64);
    atomic_add(out + offs, load(x + offs, offs < n), offs < n);
    atomic_max(h + offs % 4, offs as i16);
    atomic_add(b + offs % 2, 1.0);
    atomic_cas(c + offs, 0, 1);
}
K
for t in cpu emu sm_80 sm_90; do
  check check-target-narrow-$t 0 "$kiln" check "$tmp/narrow.kiln" --target $t
done
cat >"$tmp/atomic-i1.kiln" <<'K'
kernel ai1(flags: *i1) {
    atomic_xchg(flags + arange(0, 64), true);
}
K
check check-atomic-i1 1 "$kiln" check "$tmp/atomic-i1.kiln" --target cpu
contains check-atomic-i1 'atomic-i1\.kiln:2:17: error: atomic_xchg needs a pointer to integers or floats \(not i1\), got tile<64x\*i1>'
check check-target-sm80 1 "$kiln" check --target=sm_80 "$tmp/gpu.kiln"
check check-target-bad 64 "$kiln" check "$tmp/gpu.kiln" --target sm_10
check check-target-ok 0 "$kiln" check "$kdir/vector_add.kiln" --target sm_90
# the emu target compiles through its whole pipeline (it emits no PTX of its own), and refuses
# what the GPU lowering refuses
check check-target-emu-ok 0 "$kiln" check "$kdir/vector_add.kiln" --target emu
check check-target-emu 1 "$kiln" check "$tmp/gpu.kiln" --target emu
contains check-target-emu 'gpu\.kiln:2:16: error: .*powers of two \(got 48\)'
# device_print runs on every target: on sm_80/sm_90 as PTX's vprintf (the format a .global
# string), on emu as kiln_emu_vprintf
[ -n "$edir" ] && check check-target-print 0 "$kiln" check "$edir/device_print.kiln" --target sm_90
[ -n "$edir" ] && check check-target-print-ptx 0 "$kiln" compile "$edir/device_print.kiln" --kernel device_print --target sm_80 --emit ptx -o "$tmp/p.ptx"
[ -n "$edir" ] && cp "$tmp/p.ptx" "$tmp/out" && contains check-target-print-ptx '^\.extern \.func .*vprintf'
[ -n "$edir" ] && check check-target-print-emu 0 "$kiln" compile "$edir/device_print.kiln" --kernel device_print --target emu --emit obj -o "$tmp/p.o"
# 64-bit atomics (atomic_cas on i64 cells, add/max/min/xchg on i64, u64, f64) and unsigned
# max/min run on every target
[ -n "$edir" ] && check check-target-cas64 0 "$kiln" check "$edir/cas_i64.kiln" --target sm_90
[ -n "$edir" ] && check check-target-atomic64 0 "$kiln" check "$edir/atomic64.kiln" --target sm_80
[ -n "$edir" ] && check check-target-atomic64-emu 0 "$kiln" check "$edir/atomic64.kiln" --target emu
# f64 math functions run on every target: the GPU targets (emu included) have their own
# (lower_math_f64.c), free of approximate instructions
[ -n "$edir" ] && check check-target-f64 0 "$kiln" check "$edir/f64_math.kiln" --target sm_90
[ -n "$edir" ] && check check-target-f64-ptx 0 "$kiln" compile "$edir/f64_math.kiln" --kernel f64_math --target sm_80 --emit ptx -o "$tmp/f.ptx"
[ -n "$edir" ] && cp "$tmp/f.ptx" "$tmp/out" && contains check-target-f64-ptx 'div\.rn\.f64'
[ -n "$edir" ] && check check-target-f64-no-approx 1 grep -q approx "$tmp/f.ptx"
[ -n "$edir" ] && check check-target-f64-emu 0 "$kiln" compile "$edir/f64_math.kiln" --kernel f64_math --target emu --emit obj -o "$tmp/f.o"
check compile-target-restriction 1 "$kiln" compile "$tmp/gpu.kiln" --kernel np2 --target sm_90 --emit ptx

check unknown-kernel 1 "$kiln" compile "$kdir/vector_add.kiln" --kernel nope && contains unknown-kernel 'vector_add'
printf 'kernel k(x: *f32) { let a = ; }\n\x00\xff garbage' >"$tmp/garbage.kiln"
check garbage 1 "$kiln" check "$tmp/garbage.kiln"

# --- every kernel checks, and compiles to kiln MLIR at its default config
for f in "$kdir"/*.kiln ${edir:+"$edir"/*.kiln}; do
  [ -f "$f" ] || continue
  check "check $(basename "$f")" 0 "$kiln" check "$f"
  for k in $(sed -n 's/^kernel \([A-Za-z_][A-Za-z0-9_]*\).*/\1/p' "$f"); do
    check "mlir $(basename "$f"):$k" 0 "$kiln" compile "$f" --kernel "$k" --emit mlir &&
      contains "mlir $k has kiln ops" '"?kiln\.(load|store|dot|reduce|rand|atomic_rmw)'
  done
done

# --- a loop carrying many vars (builders once had a fixed cap) compiles and lowers
{
  echo 'kernel many(x: *f32, n: i32) {'
  for i in $(seq 0 69); do echo "    var v$i = 0.0;"; done
  echo '    for k in range(0, n) {'
  for i in $(seq 0 69); do echo "        v$i = v$i + load(x + k);"; done
  echo '    }'
  printf '    store(x, v0'; for i in $(seq 1 69); do printf ' + v%s' "$i"; done; echo ');'
  echo '}'
} >"$tmp/many.kiln"
check many-carried 0 "$kiln" compile "$tmp/many.kiln" --kernel many --emit obj -o "$tmp/many.o"

# --- many values alive across a trans/dot: the CPU lowering's value map grows while a lowering
# holds an entry (once a use-after-free, seen under ASan)
{
  echo 'kernel grow(a: *f32, o: *f32) {'
  echo '    let r = arange(0, 16);'
  echo '    let x0 = load(a + r);'
  for i in $(seq 1 110); do echo "    let x$i = x$((i - 1)) + 1.0;"; done
  echo '    let t = trans(x110[:, None] + x0[None, :]);'
  echo '    store(o + r[:, None] * 16 + r[None, :], t);'
  echo '}'
} >"$tmp/grow.kiln"
check map-grow 0 "$kiln" compile "$tmp/grow.kiln" --kernel grow --emit obj -o "$tmp/grow.o"

# --- every --emit on one kernel
va="$kdir/vector_add.kiln"
check emit-ast 0 "$kiln" compile "$va" --kernel vector_add -D BLOCK=256 --emit ast && contains emit-ast 'tile<256xf32>|256'
check emit-mlir 0 "$kiln" compile "$va" --kernel vector_add -D BLOCK=256 --emit mlir &&
  contains emit-mlir 'tensor<256x!kiln\.ptr<f32>>' && contains emit-mlir-loc 'vector_add\.kiln'
check emit-lowered 0 "$kiln" compile "$va" --kernel vector_add --emit lowered-mlir && contains emit-lowered 'llvm\.func'
check emit-llvm 0 "$kiln" compile "$va" --kernel vector_add --emit llvm && contains emit-llvm 'define .*kiln_cpu_vector_add'
check emit-obj 0 "$kiln" compile "$va" --kernel vector_add --emit obj -o "$tmp/va.o"
if [ "$(head -c 4 "$tmp/va.o" | od -An -c | tr -d ' ')" != '177ELF' ]; then
  echo "FAIL emit-obj: not an ELF object"; fails=$((fails + 1)); fi
check dump-after 0 "$kiln" compile "$va" --kernel vector_add --emit obj -o "$tmp/va2.o" --dump-after convert-kiln-to-cpu
contains dump-after 'func|llvm'
check dump-after-bad 1 "$kiln" compile "$va" --kernel vector_add --emit obj -o "$tmp/va3.o" --dump-after no-such-stage

# --- GPU targets: kiln with layouts, PTX, and (where ptxas is installed) a cubin
sm="$kdir/softmax_rows.kiln"
for t in sm_80 sm_90; do
  check "gpu-mlir $t" 0 "$kiln" compile "$sm" --kernel softmax_rows --target $t --emit gpu-mlir &&
    contains "gpu-mlir $t layouts" 'blocked'
  check "ptx $t" 0 "$kiln" compile "$sm" --kernel softmax_rows --target $t --emit ptx &&
    contains "ptx $t target" "^\.target $t" && contains "ptx $t shfl" 'shfl\.sync\.bfly'
  if command -v "${KILN_PTXAS:-ptxas}" >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/ptxas ]; then
    check "cubin $t" 0 "$kiln" compile "$sm" --kernel softmax_rows --target $t --emit cubin -o "$tmp/sm.cubin"
    [ -s "$tmp/sm.cubin" ] || { echo "FAIL cubin $t: empty"; fails=$((fails + 1)); }
  fi
done
# --- a KILN_PTXAS whose cubin (a sparse 300 MiB file) or log (the same on its standard output)
# is past its bound: refused with the bound named, no output written (both used to be read whole)
printf '#!/bin/sh\n# called as: -v -arch=sm_XY -o OUT IN\ntruncate -s 300M "$4"\n' >"$tmp/fat-ptxas"
printf '#!/bin/sh\ntruncate -s 300M /dev/stdout\n' >"$tmp/loud-ptxas"
chmod +x "$tmp/fat-ptxas" "$tmp/loud-ptxas"
check ptxas-huge-cubin 2 env KILN_PTXAS="$tmp/fat-ptxas" "$kiln" compile "$sm" --kernel softmax_rows \
  --target sm_90 --emit cubin -o "$tmp/fat.cubin" &&
  contains ptxas-huge-cubin 'cubin ptxas wrote is larger than KILN_MAX_MODULE_BYTES \(256 MiB\); refused'
check ptxas-huge-log 2 env KILN_PTXAS="$tmp/loud-ptxas" "$kiln" compile "$sm" --kernel softmax_rows \
  --target sm_90 --emit cubin -o "$tmp/fat.cubin" &&
  contains ptxas-huge-log 'output of ptxas is larger than KILN_MAX_TOOL_LOG_BYTES \(16 MiB\); refused'
[ -e "$tmp/fat.cubin" ] && { echo "FAIL ptxas-huge: $tmp/fat.cubin written"; fails=$((fails + 1)); }
# --- the GPU targets' own limit: a tile may give a thread at most 1024 elements (2^20 elements on
# one warp once grew the compile to gigabytes); refused with a located diagnostic, at once, as
# the user's error (exit 1: a located error of the lowering is the program's or config's)
for te in sm_90:ptx emu:obj; do
  t=${te%:*}
  check "elems-per-thread $t" 1 "$kiln" compile "$va" --kernel vector_add -D BLOCK=1048576 -D num_warps=1 \
    --target $t --emit ${te#*:} -o "$tmp/big.out" &&
    contains "elems-per-thread $t msg" 'vector_add\.kiln:[0-9]+:.*gives each of the 32 threads .*32768 elements.*at most 1024'
done
# --- promises about runtime parameters: --specialize turns a stride into a constant, and with
# --multiple-of the matmul's operand loads become 16-byte cp.async copies (3 stages)
mm="$kdir/matmul_f16.kiln"
check specialize-mlir 0 "$kiln" compile "$mm" --kernel matmul_f16 --specialize sak=1 --emit mlir &&
  contains specialize-mlir 'arith\.constant 1 : i32'
check specialize-ptx 0 "$kiln" compile "$mm" --kernel matmul_f16 --target sm_80 --emit ptx --num-stages 3 \
  --specialize sak=1 --specialize sbn=1 --multiple-of sam=8 --multiple-of sbk=8 &&
  contains specialize-ptx 'cp\.async\.cg\.shared\.global' && contains specialize-wait 'cp\.async\.wait_group 1'
check specialize-const 1 "$kiln" compile "$mm" --kernel matmul_f16 --specialize BM=64 &&
  contains specialize-const 'bound with -D'
check specialize-unknown 1 "$kiln" compile "$mm" --kernel matmul_f16 --specialize nope=1 &&
  contains specialize-unknown 'no runtime parameter'
check specialize-pointer 1 "$kiln" compile "$mm" --kernel matmul_f16 --specialize a=0 &&
  contains specialize-pointer 'only integer'
check multiple-of-zero 1 "$kiln" compile "$mm" --kernel matmul_f16 --multiple-of sam=0
check specialize-syntax 64 "$kiln" compile "$mm" --kernel matmul_f16 --specialize sak
check obj-on-gpu 1 "$kiln" compile "$sm" --kernel softmax_rows --target sm_80 --emit obj -o "$tmp/x.o"
check ptx-on-cpu 1 "$kiln" compile "$sm" --kernel softmax_rows --target cpu --emit ptx

# --- -o is atomic: a failing compile leaves an existing output untouched, and no temp files
echo precious >"$tmp/keep.o"
check keep-on-failure 1 "$kiln" compile "$tmp/bad.kiln" --kernel bad -D BLOCK=64 --emit obj -o "$tmp/keep.o"
[ "$(cat "$tmp/keep.o")" = precious ] || { echo "FAIL keep-on-failure: output overwritten"; fails=$((fails + 1)); }
leftovers=$(find "$tmp" -name '*.tmp.*' | wc -l)
[ "$leftovers" -eq 0 ] || { echo "FAIL temp files left behind: $leftovers"; fails=$((fails + 1)); }

# --- an output that is the input is refused before any work (by file, not by name: a symlink
# or another spelling of the path is the same file), and the input is left as it was
cp "$va" "$tmp/self.kiln"
ln -s self.kiln "$tmp/self-link.o"
sum=$(cksum <"$tmp/self.kiln")
check out-is-input 64 "$kiln" compile "$tmp/self.kiln" --kernel vector_add -o "$tmp/self.kiln" &&
  contains out-is-input "is the input file"
check out-is-input-spelled 64 "$kiln" compile "$tmp/self.kiln" --kernel vector_add --emit obj -o "$tmp/./self.kiln"
check out-is-input-symlink 64 "$kiln" compile "$tmp/self.kiln" --kernel vector_add --emit obj -o "$tmp/self-link.o"
[ "$(cksum <"$tmp/self.kiln")" = "$sum" ] && [ -L "$tmp/self-link.o" ] ||
  { echo "FAIL out-is-input: the input was replaced"; fails=$((fails + 1)); }

if [ "$fails" -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "all cli checks passed"
