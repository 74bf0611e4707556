#!/usr/bin/env bash
# The tuner's former silent caps, each now a growable array or a named limit with a diagnostic
# (autotune/plan.h): one case per run.
#   many_kernels   65 tuned kernels in one file all reach the library (the run used to stop
#                  at 64 with exit 1 and no message)
#   many_files     the 65th file given is read (files after the 64th used to be ignored)
#   huge_space     a tune block of 10^6 configs is refused, naming TUNE_MAX_SPACE (it used to be
#                  cut to its first 100,000 configs without a word); with -D A=1 it fits
#   long_name      a kernel name of more than 63 characters is refused, naming TUNE_MAX_NAME
#                  (records and libraries used to hold it truncated)
#   dev_zero       /dev/zero as a source or a cache is refused at TUNE_MAX_SOURCE_BYTES /
#                  TUNE_MAX_CACHE_BYTES (it used to be read until memory ran out)
#   options        --jobs past TUNE_MAX_JOBS_PER_CPU per CPU, an --arch list past its 63
#                  characters: exit 64 with a message (the list used to be cut)
#   long_spec      a kiln-tune-args line past 1023 characters is ignored with a warning (it
#                  used to be cut)
#   args_memory    --args buffers past what the tuner may hold (TUNE_MAX_ARG_BYTES, the host's
#                  memory over TUNE_HOST_COPIES, the device's memory or KILN_DEVICE_MEMORY) are
#                  refused before anything is allocated (2^34 elements used to be accepted)
# Usage: limits_test.sh KILN CASE   (KEEP=1 keeps the temp dir for a look)
set -u
kiln=$1 case=$2
tmp=$(mktemp -d)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$tmp"' EXIT
fails=0

# fail, run, says
. "$(dirname "$0")/case_checks.sh"

# kernel NAME [TUNE_BODY]: a small kernel, with a tune block when TUNE_BODY is given
kernel() {
  printf 'kernel %s(x: *f32, n: i32, const BLOCK: i32) {\n' "$1"
  printf '    let offs = arange(0, BLOCK);\n'
  printf '    store(x + offs, load(x + offs, offs < n, 0.0) * 2.0, offs < n);\n}\n'
  [ $# -lt 2 ] || printf 'tune %s { %s }\n' "$1" "$2"
}

args='n=64; x: f32[n]; grid=1'

case $case in
many_kernels)
  for i in $(seq 0 64); do kernel "k$i" 'BLOCK in [64];'; done >"$tmp/many.kiln"
  run lib 0 "$kiln" lib "$tmp/many.kiln" -o "$tmp/lib" --args "$args" &&
    for k in k0 k63 k64; do
      grep -q "kernels_${k}(" "$tmp/lib/kernels.h" || fail "the library lacks $k"
    done
  ;;
many_files)
  files=()
  for i in $(seq 0 63); do # kernels without a tune block: read, checked, not tuned
    printf 'kernel plain%d(x: *f32) {\n    store(x, load(x) + 1.0);\n}\n' "$i" >"$tmp/f$i.kiln"
    files+=("$tmp/f$i.kiln")
  done
  kernel last 'BLOCK in [64];' >"$tmp/last.kiln"
  files+=("$tmp/last.kiln")
  run lib 0 "$kiln" lib "${files[@]}" -o "$tmp/lib" --args "$args" &&
    { grep -q 'kernels_last(' "$tmp/lib/kernels.h" || fail "the 65th file's kernel is missing"; }
  ;;
huge_space)
  list=$(seq -s, 1 100)
  kernel huge "BLOCK in [64]; A in [$list]; B in [$list]; C in [$list];" |
    sed 's/const BLOCK: i32/const BLOCK: i32, const A: i32, const B: i32, const C: i32/' >"$tmp/huge.kiln"
  run lib 1 "$kiln" lib "$tmp/huge.kiln" -o "$tmp/lib" --args "$args" &&
    says lib "1000000 configs.*TUNE_MAX_SPACE"
  [ ! -e "$tmp/lib/kernels.h" ] || fail "a library was written"
  run tune 1 "$kiln" tune "$tmp/huge.kiln" --args "$args" && says tune "TUNE_MAX_SPACE"
  # held by -D at one value of A, the space is 10^4 configs: within the limit
  run pinned 0 "$kiln" lib "$tmp/huge.kiln" -o "$tmp/lib" --args "$args" -D A=1 &&
    { [ -e "$tmp/lib/kernels.h" ] || fail "pinned: no library"; }
  ;;
long_name)
  name=k_$(printf 'x%.0s' $(seq 1 70))
  kernel "$name" 'BLOCK in [64];' >"$tmp/long.kiln"
  run lib 1 "$kiln" lib "$tmp/long.kiln" -o "$tmp/lib" --args "$args" &&
    says lib "72 characters.*TUNE_MAX_NAME"
  run tune 1 "$kiln" tune "$tmp/long.kiln" --args "$args" && says tune "TUNE_MAX_NAME"
  ;;
dev_zero)
  # /dev/zero as the source and as the cache: refused once TUNE_MAX_SOURCE_BYTES /
  # TUNE_MAX_CACHE_BYTES are read (it used to read until memory ran out); ulimit -v makes a
  # runaway read fail fast here instead of taking the machine's memory (not under ASan, whose
  # shadow memory needs terabytes of address space: there the limits' messages are still checked)
  kernel ok 'BLOCK in [64];' >"$tmp/ok.kiln"
  vlimit=2000000
  if ldd "$kiln" 2>/dev/null | grep -q libasan; then vlimit=unlimited; fi
  ( ulimit -v "$vlimit"
    run src-tune 1 "$kiln" tune /dev/zero --args "$args" && says src-tune "TUNE_MAX_SOURCE_BYTES"
    run src-lib 1 "$kiln" lib /dev/zero -o "$tmp/lib" --args "$args" && says src-lib "TUNE_MAX_SOURCE_BYTES"
    run cache-lib 2 "$kiln" lib "$tmp/ok.kiln" -o "$tmp/lib" --cache /dev/zero --args "$args" &&
      says cache-lib "TUNE_MAX_CACHE_BYTES"
    run cache-tune 2 "$kiln" tune "$tmp/ok.kiln" --cache /dev/zero --args "$args" &&
      says cache-tune "TUNE_MAX_CACHE_BYTES"
    exit $fails ) || fails=$((fails + $?))
  [ ! -e "$tmp/lib/kernels.h" ] || fail "a library was written"
  ;;
options)
  # numbers and lists past what the machine or the field holds: exit 64 with a message
  kernel ok 'BLOCK in [64];' >"$tmp/ok.kiln"
  cpus=$(getconf _NPROCESSORS_ONLN)
  if [ $((4 * cpus + 1)) -le 256 ]; then
    run jobs 64 "$kiln" tune "$tmp/ok.kiln" --jobs $((4 * cpus + 1)) --args "$args" &&
      says jobs "TUNE_MAX_JOBS_PER_CPU"
  fi
  run jobs-ok 0 "$kiln" tune "$tmp/ok.kiln" --jobs "$cpus" --reps 1 --args "$args"
  long="sm_90$(printf ',sm_90%.0s' $(seq 1 12))" # 77 characters: every name valid
  run arch 64 "$kiln" lib "$tmp/ok.kiln" -o "$tmp/lib" --device cuda --arch "$long" --args "$args" &&
    says arch "longer than 63 characters"
  run arch-bad 64 "$kiln" lib "$tmp/ok.kiln" -o "$tmp/lib" --device cuda \
    --arch "sm_90$(printf ',%.0s' $(seq 1 60))bogus" --args "$args" && says arch-bad "longer than 63"
  ;;
long_spec)
  # a `// kiln-tune-args:` line longer than the spec buffer is ignored with a warning, never cut
  { printf '// kiln-tune-args: n=64; x: f32[n]; grid=1 %s\n' "$(printf ' %.0s' $(seq 1 1100))"
    kernel ok 'BLOCK in [64];'; } >"$tmp/spec.kiln"
  run spec 1 "$kiln" tune "$tmp/spec.kiln" --reps 1 && says spec "ignoring a kiln-tune-args line of [0-9]+ characters"
  ;;
args_memory)
  # sizes are checked before the malloc: ulimit -v shows nothing is allocated (not under ASan)
  kernel ok 'BLOCK in [64];' >"$tmp/ok.kiln"
  vlimit=2000000
  if ldd "$kiln" 2>/dev/null | grep -q libasan; then vlimit=unlimited; fi
  bound="more than (TUNE_MAX_ARG_BYTES|the host's memory)"
  ( ulimit -v "$vlimit"
    run huge-tune 1 "$kiln" tune "$tmp/ok.kiln" --args 'n=64; x: f32[17179869184]; grid=1' &&
      says huge-tune "buffer 'x' \(17179869184 f32 elements, 64.0 GiB\).*$bound"
    run huge-lib 1 "$kiln" lib "$tmp/ok.kiln" -o "$tmp/lib" --args 'n=64; x: f32[16384 * 1048576]; grid=1' &&
      says huge-lib "64.0 GiB.*$bound"
    run over-range 1 "$kiln" tune "$tmp/ok.kiln" --args 'n=64; x: f32[17179869185]; grid=1' &&
      says over-range "1 \.\. 2\^34"
    exit $fails ) || fails=$((fails + $?))
  # the device's memory: KILN_DEVICE_MEMORY stands in for it (a GPU's, or the host's on cpu)
  big='n=1048576; x: f32[n]; grid=cdiv(n, BLOCK)'
  KILN_DEVICE_MEMORY=1M run dev-small 1 "$kiln" tune "$tmp/ok.kiln" --args "$big" &&
    says dev-small "4.0 MiB, more than KILN_DEVICE_MEMORY \(1.0 MiB\)"
  KILN_DEVICE_MEMORY=4M run dev-fits 0 "$kiln" tune "$tmp/ok.kiln" --reps 1 --args "$big"
  KILN_DEVICE_MEMORY=lots run dev-bad 64 "$kiln" tune "$tmp/ok.kiln" --args "$big" &&
    says dev-bad "KILN_DEVICE_MEMORY=lots"
  [ ! -e "$tmp/lib/kernels.h" ] || fail "a library was written"
  ;;
*) fail "unknown case"; ;;
esac
[ "$fails" -eq 0 ] && echo "ok $case"
exit $((fails > 0))
