#!/usr/bin/env bash
# The static performance report of every BERT kernel (kernels-bert/) for sm_90, without a GPU:
# `kiln stat --json` of each kernel at the configuration an untuned BERT library runs it with,
# with the work of one call at BERT-large shapes for the roofline bound on an H200 (the list,
# its configurations and shapes: bench/bert-sm90-configs.sh).  The bound is optimistic: the
# FLOPs and bytes are the minimum a call must do.  Without ptxas the report still has the PTX
# half (and a warning).
#
# Usage: bench/static-report.sh [BUILD_DIR] [OUT]   (default build, bench/results/static-sm90.json)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
out=${2:-$here/bench/results/static-sm90.json}
kiln="$build/tools/kiln"
[ -x "$kiln" ] || { echo "static-report: no $kiln (build the kiln target first)" >&2; exit 2; }

# shellcheck source=bert-sm90-configs.sh
. "$here/bench/bert-sm90-configs.sh"

tmp=$(mktemp "${out}.XXXXXX")
trap 'rm -f "$tmp"' EXIT
failed=0
{
  printf '{"arch": "sm_90", "shapes": "BERT-large: batch %d x %d tokens, hidden %d, %d heads of %d, FFN %d, %d parameters",\n' \
    "$B" "$S" "$HID" "$HEADS" "$HD" "$FFN" "$PARAMS"
  printf ' "config": "an untuned cuda library'"'"'s: the default preset on cuda (else the first point) of each tune block with the promises of its most specialized copy for the call (each entry'"'"'s options), T=f16 where the kernel has an element type",\n'
  printf ' "kernels": ['
  sep=""
  for entry in "${kernels[@]}"; do
    IFS='|' read -r name file defines flops bytes tensor note opts <<<"$entry"
    args=()
    for d in $defines; do args+=(-D "$d"); done
    # shellcheck disable=SC2206 # the options are words by design
    args+=($opts)
    [ "$tensor" = 1 ] && args+=(--tensor)
    if report=$("$kiln" stat "$here/kernels-bert/$file" --kernel "$name" "${args[@]}" \
                  --target sm_90 --flops "$flops" --bytes "$bytes" --json); then
      printf '%s\n  {"kernel": "%s", "file": "%s", "defines": "%s", "options": "%s", "shape": "%s",\n   "stat": %s}' \
        "$sep" "$name" "$file" "$defines" "$opts" "$note" "$report"
      sep=","
    else
      echo "static-report: kiln stat failed for $name ($file $defines)" >&2
      failed=1
    fi
  done
  printf '\n]}\n'
} >"$tmp"
mv "$tmp" "$out"
trap - EXIT
echo "static-report: wrote $out" >&2
exit $failed
