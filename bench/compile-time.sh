#!/usr/bin/env bash
# Compile time of the BERT kernels: how long one kernel variant takes to reach PTX for sm_90 (no
# ptxas), which bounds how many variants a max-autotune run can try.  A benchmark, not a test:
# times are this machine's and change with its load.
#
# Every BERT kernel at the configuration an untuned library runs it with (bench/bert-sm90-configs.sh),
# then the largest attention variants (64x64 tiles, 4 warps, dropout on: the most code per
# variant), then host objects of the same (emu, and cpu, where attn_fwd at BN=16 was an
# outlier).
# Each compile runs REPEAT times (default 3) in a fresh process and the fastest is kept:
#   cpu ms      the process's user + system time (ptxas included where it runs), the number to
#               compare; a kiln without --time-passes (an older build) is measured the same way
#   wall ms     the process's wall time
#   compile ms  the CPU time of the compile itself (kiln compile --time-passes: from reading the
#               source to the output; without loading libLLVM and exiting), "-" without it
# Then the per-step table of the slowest variant to PTX.
#
# Usage: bench/compile-time.sh [BUILD_DIR] [OUT]   (default build, bench/results/compile-time.txt)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
out=${2:-$here/bench/results/compile-time.txt}
repeat=${REPEAT:-3}
kiln="$build/tools/kiln"
[ -x "$kiln" ] || { echo "compile-time: no $kiln (build the kiln target first)" >&2; exit 2; }

# shellcheck source=bert-sm90-configs.sh
. "$here/bench/bert-sm90-configs.sh"

big="-D T=f16 -D D=64 -D BM=64 -D BN=64 -D DROPOUT=1 -D num_warps=4"
# name | file | options | target | emit
extra=(
  "attn_fwd|attention.kiln|$big|sm_90|ptx"
  "attn_bwd_dq|attention.kiln|$big|sm_90|ptx"
  "attn_bwd_dkdv|attention.kiln|$big|sm_90|ptx"
  "attn_fwd|attention.kiln|$big|emu|obj"
  "attn_bwd_dq|attention.kiln|$big|emu|obj"
  "attn_bwd_dkdv|attention.kiln|$big|emu|obj"
  "attn_fwd|attention.kiln|-D T=f16 -D D=64 -D BM=64 -D BN=16 -D DROPOUT=1|cpu|obj"
  "attn_fwd|attention.kiln|-D T=f16 -D D=64 -D BM=64 -D BN=32 -D DROPOUT=1|cpu|obj"
  "attn_bwd_dkdv|attention.kiln|-D T=f16 -D D=64 -D BM=64 -D BN=64 -D DROPOUT=1|cpu|obj"
)

timed=0
"$kiln" help compile 2>/dev/null | grep -q -- --time-passes && timed=1
scratch=$(mktemp -d)

# The fastest of `repeat` compiles: "cpu wall compile" in ms; returns 1 when the compile fails.
time_one() {
  local file=$1 name=$2 target=$3 emit=$4
  shift 4
  local flag=() best="" t user sys real cpu compile
  [ "$timed" = 1 ] && flag=(--time-passes=json)
  for ((r = 0; r < repeat; r++)); do
    TIMEFORMAT='%3U %3S %3R'
    { time "$kiln" compile "$here/kernels-bert/$file" --kernel "$name" "$@" --target "$target" \
        --emit "$emit" -o - "${flag[@]}" >/dev/null 2>"$scratch/err"; } 2>"$scratch/time" || return 1
    read -r user sys real <"$scratch/time"
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.0f", (u + s) * 1000 }')
    compile=$(sed -n 's/.*"total_cpu_ms": \([0-9.]*\).*/\1/p' "$scratch/err")
    t="$cpu $(awk -v r="$real" 'BEGIN { printf "%.0f", r * 1000 }') ${compile:--}"
    if [ -z "$best" ] || [ "$cpu" -lt "${best%% *}" ]; then best=$t; fi
  done
  echo "$best"
}

row() { printf '%-22s %-6s %-5s %7s %8s %8s  %s\n' "$@"; }

slow_cpu=0 slow_args=()
failed=0
measure() {
  local name=$1 file=$2 target=$3 emit=$4 config=$5
  shift 5
  local t
  if ! t=$(time_one "$file" "$name" "$target" "$emit" "$@"); then
    echo "compile-time: kiln compile failed for $name ($config)" >&2
    failed=1
    return
  fi
  read -r cpu wall compile <<<"$t"
  [ "$compile" = - ] || compile=$(printf '%.0f' "$compile")
  row "$name" "$target" "$emit" "$cpu" "$wall" "$compile" "$config"
  if [ "$emit" = ptx ] && [ "$cpu" -gt "$slow_cpu" ]; then
    slow_cpu=$cpu
    slow_args=("$here/kernels-bert/$file" --kernel "$name" "$@" --target "$target" --emit "$emit")
  fi
}

tmp=$(mktemp "${out}.XXXXXX")
trap 'rm -rf "$tmp" "$scratch"' EXIT
{
  echo "# bench/compile-time.sh $* (REPEAT=$repeat)"
  echo "# $(date -u +%Y-%m-%dT%H:%MZ), $kiln (sources at $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')),"\
       "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# fastest of $repeat runs; cpu = the process's user+system ms, wall = its wall ms,"
  echo "# compile = CPU ms of the compile itself (--time-passes; '-': this kiln has none)"
  echo
  echo "## every BERT kernel to PTX (sm_90), at an untuned library's configuration"
  row kernel target emit "cpu ms" "wall ms" "compile" config
  for entry in "${kernels[@]}"; do
    IFS='|' read -r name file defines _flops _bytes _tensor _note opts <<<"$entry"
    args=()
    for d in $defines; do args+=(-D "$d"); done
    # shellcheck disable=SC2206 # the options are words by design
    args+=($opts)
    measure "$name" "$file" sm_90 ptx "$defines $opts" "${args[@]}"
  done
  echo
  echo "## the largest variants, and host objects"
  row kernel target emit "cpu ms" "wall ms" "compile" config
  for entry in "${extra[@]}"; do
    IFS='|' read -r name file opts target emit <<<"$entry"
    # shellcheck disable=SC2206
    args=($opts)
    measure "$name" "$file" "$target" "$emit" "$opts" "${args[@]}"
  done
  echo
  if [ "$timed" = 1 ] && [ ${#slow_args[@]} -gt 0 ]; then
    echo "## the slowest to PTX, step by step (one run)"
    { "$kiln" compile "${slow_args[@]}" -o - --time-passes >/dev/null; } 2>&1
  fi
} >"$tmp"
mv "$tmp" "$out"
rm -rf "$scratch"
trap - EXIT
cat "$out"
exit $failed
