#!/usr/bin/env bash
# How `kiln check` scales with the size of a program: kernels with many `let`s (one scope, each
# declaration checked against the names in sight) and files with many kernels (each name
# checked against the others, each tune block linked to its kernel). Doubling the size should
# about double the time; a quadratic step shows up as a ratio near 4. Generated sources only,
# written to a temporary directory; prints one table (seconds of wall time, best of 3).
# Usage: bench/frontend-scale.sh BUILD_DIR
set -euo pipefail
build=${1:-build}
kiln="$build/tools/kiln"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

lets() { # N: one kernel, a chain of N lets
  echo 'kernel k(a: *f32, o: *f32) {'
  echo '    let x0 = load(a);'
  for ((i = 1; i < $1; i++)); do echo "    let x$i = x$((i - 1)) + 1.0;"; done
  echo "    store(o, x$(($1 - 1)));"
  echo '}'
}
kernels() { # N: N kernels, each with a tune block
  for ((i = 0; i < $1; i++)); do
    echo "kernel k$i(a: *f32, o: *f32, const B: i32) { store(o, load(a) + 1.0); }"
    echo "tune k$i { B in [1]; }"
  done
}
best_of_3() { # FILE: the best wall time of `kiln check FILE`, in seconds
  local best=
  for _ in 1 2 3; do
    local t0 t1
    t0=$(date +%s.%N)
    "$kiln" check "$1" >/dev/null
    t1=$(date +%s.%N)
    best=$(echo "$t0 $t1 ${best:-1e9}" | awk '{d = $2 - $1; print (d < $3 ? d : $3)}')
  done
  echo "$best"
}

printf '%-10s %8s %10s %8s\n' shape size seconds ratio
for shape in lets kernels; do
  prev=
  for n in 8000 16000 32000 64000; do
    "$shape" "$n" >"$tmp/$shape-$n.kiln"
    t=$(best_of_3 "$tmp/$shape-$n.kiln")
    ratio=$([ -n "$prev" ] && echo "$t $prev" | awk '{printf "%.2f", $1 / $2}' || echo -)
    printf '%-10s %8d %10.3f %8s\n' "$shape" "$n" "$t" "$ratio"
    prev=$t
  done
done
