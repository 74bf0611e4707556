#!/usr/bin/env bash
# Host objects need nothing a machine may lack: every numeric test kernel and every BERT kernel
# (in f32, and in f16 and bf16 where the kernel takes an element type T), compiled for the cpu
# and emu targets at the portable CPU target `generic` (where LLVM calls a runtime library for
# each conversion the CPU cannot do), may leave undefined only C library and libm functions
# that every glibc has, the emulator's kiln_emu_* and the cpu kernels' device_assert hook
# kiln_cpu_assert_fail (both from libkilnrt, emu_exports.list). A compiler-runtime
# symbol such as __truncsfbf2 (not in Debian 12's libgcc) fails the test. A kernel file whose first
# line is `// cpu target only` (f64 math beyond what PTX has exactly: the GPU targets refuse it) is
# compiled for cpu only; printf is allowed (device_print).
# Usage: host_symbols.sh KILN NM KERNEL_DIR...
set -euo pipefail
kiln=$1 nm=$2
shift 2
# (f64 kernels call the double versions of the same libm functions, as old as the float ones;
# fmaxf/fminf are a 16-bit float atomic max/min's compare on the cpu target)
allowed='^(memcpy|memmove|memset|printf|(exp|exp2|log|log2|erf|tanh|fma|pow|sqrt|fabs|floor|ceil|round|trunc|fmod|sin|cos|fmax|fmin)f?|kiln_emu_.*|kiln_cpu_assert_fail)$'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
compiled=0 bad=0
for dir in "$@"; do
  for f in "$dir"/*.kiln; do
    for k in $(grep -oP '^kernel \K\w+' "$f"); do
      types=("")
      # a kernel with an element type parameter is also built for the 16-bit float types
      if tr '\n' ' ' <"$f" | grep -qP "kernel $k\([^)]*const T: type"; then types=("" f16 bf16); fi
      targets=(cpu emu)
      [ "$(head -n 1 "$f")" = "// cpu target only" ] && targets=(cpu)
      for target in "${targets[@]}"; do
        for t in "${types[@]}"; do
          def=()
          [ -n "$t" ] && def=(-D "T=$t")
          if ! "$kiln" compile "$f" --kernel "$k" "${def[@]}" --target "$target" --cpu generic \
                 --emit obj -o "$tmp/k.o" 2>"$tmp/err"; then
            echo "FAIL: $k ($target ${t:-default}) does not compile:"; cat "$tmp/err"; bad=1; continue
          fi
          compiled=$((compiled + 1))
          for s in $("$nm" -u "$tmp/k.o" | awk '{print $NF}'); do
            if ! [[ $s =~ $allowed ]]; then
              echo "FAIL: $k ($target ${t:-default}) needs '$s'"; bad=1
            fi
          done
        done
      done
    done
  done
done
echo "$compiled host objects checked"
[ "$compiled" -gt 40 ] || { echo "FAIL: too few kernels found ($compiled)"; bad=1; }
exit $bad
