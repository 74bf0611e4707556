#!/usr/bin/env bash
# kiln compile --time-passes: the table names every stage of the target's pipeline (as
# `kiln-opt --list-stages` lists them) and the front and code generation steps around them, its
# steps add up to its total, the JSON form says the same, and timing changes nothing in the
# output (the PTX and the object are byte-identical with and without it); kiln-opt's the same.
# Usage: time_passes_test.sh KILN KILN_OPT KERNEL_DIR   (KERNEL_DIR: dsl/examples)
set -u
kiln=$1 opt=$2 kdir=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
ok() { echo "ok   $*"; }

src="$kdir/matmul_f16.kiln" # a loop, masks (scf.if on the GPU) and a dot
compile() { "$kiln" compile "$src" --kernel matmul_f16 "$@"; }

# steps: the first column of the table's rows (between the header and "total")
steps_of() { awk '/^  step /{on=1; next} /^  total /{on=0} on {print $1}' "$1"; }

# check_steps NAME TABLE TARGET EXTRA...: every stage of TARGET and every EXTRA step is a row
check_steps() {
  local name=$1 table=$2 target=$3 missing=""
  shift 3
  steps_of "$table" >"$tmp/steps"
  "$opt" --list-stages --target="$target" >"$tmp/stages" || { fail "$name: kiln-opt --list-stages"; return; }
  [ -s "$tmp/stages" ] || { fail "$name: no stages listed"; return; }
  for s in $(cat "$tmp/stages") "$@"; do
    grep -qx -- "$s" "$tmp/steps" || missing="$missing $s"
  done
  if [ -n "$missing" ]; then fail "$name: no row for:$missing"; sed 's/^/    /' "$table"; else ok "$name"; fi
}

# check_sum NAME TABLE: the wall ms of the steps add up to the total within rounding (0.01 ms a row)
check_sum() {
  if awk '/^  step /{on=1; next} /^  total /{t=$2; on=0} on {s+=$2; n++}
          END { exit !(n > 0 && (s - t < 0.01 * n + 0.01) && (t - s < 0.01 * n + 0.01)) }' "$2"; then
    ok "$1"
  else
    fail "$1: the steps do not add up to the total"; sed 's/^/    /' "$2"
  fi
}

front="read parse sema mlir-context mlirgen"

# --- sm_90 PTX: byte-identical with and without, every stage and the NVPTX steps timed
compile --target sm_90 --emit ptx -o "$tmp/plain.ptx" || fail "sm_90 compile"
compile --target sm_90 --emit ptx -o "$tmp/timed.ptx" --time-passes 2>"$tmp/sm90.txt" || fail "sm_90 compile --time-passes"
cmp -s "$tmp/plain.ptx" "$tmp/timed.ptx" && ok "ptx identical" || fail "ptx differs with --time-passes"
grep -q '^=== time per step: matmul_f16 sm_90 ptx ===' "$tmp/sm90.txt" && ok "sm_90 title" || fail "sm_90 title"
check_steps "sm_90 steps" "$tmp/sm90.txt" sm_90 $front llvm-translate llvm-opt llvm-reread nvptx-codegen cleanup
check_sum "sm_90 total" "$tmp/sm90.txt"

# --- cpu and emu objects: the same, with host code generation
for t in cpu emu; do
  compile --target "$t" --emit obj -o "$tmp/plain-$t.o" || fail "$t compile"
  compile --target "$t" --emit obj -o "$tmp/timed-$t.o" --time-passes 2>"$tmp/$t.txt" || fail "$t compile --time-passes"
  cmp -s "$tmp/plain-$t.o" "$tmp/timed-$t.o" && ok "$t object identical" || fail "$t object differs with --time-passes"
  check_steps "$t steps" "$tmp/$t.txt" "$t" $front host-codegen
  check_sum "$t total" "$tmp/$t.txt"
done

# --- a cubin where ptxas is: its own row
if command -v "${KILN_PTXAS:-ptxas}" >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/ptxas ]; then
  [ -n "${KILN_PTXAS:-}" ] || { command -v ptxas >/dev/null 2>&1 || export KILN_PTXAS=/usr/local/cuda/bin/ptxas; }
  if compile --target sm_90 --emit cubin -o "$tmp/k.cubin" --time-passes 2>"$tmp/cubin.txt"; then
    steps_of "$tmp/cubin.txt" | grep -qx ptxas && ok "cubin ptxas row" || fail "cubin: no ptxas row"
  else
    fail "cubin compile --time-passes"
  fi
fi

# --- JSON: one object, every step of the table, the totals
compile --target sm_90 --emit ptx -o "$tmp/json.ptx" --time-passes=json 2>"$tmp/t.json" || fail "json compile"
missing=""
for s in $(steps_of "$tmp/sm90.txt"); do grep -q "\"step\": \"$s\"" "$tmp/t.json" || missing="$missing $s"; done
[ -z "$missing" ] && ok "json steps" || fail "json lacks:$missing"
grep -q '"total_cpu_ms": [0-9]' "$tmp/t.json" && grep -q '"complete": true}' "$tmp/t.json" &&
  grep -q '^{"title": "matmul_f16 sm_90 ptx", "steps": \[' "$tmp/t.json" && ok "json shape" ||
  { fail "json shape"; sed 's/^/    /' "$tmp/t.json"; }
if command -v python3 >/dev/null 2>&1; then
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["steps"] and d["total_wall_ms"] >= 0' \
    "$tmp/t.json" && ok "json parses" || fail "json does not parse"
fi

# --- kiln-opt --time-passes: the same rows for --full, the same output
compile --target sm_90 --emit mlir -o "$tmp/k.mlir" || fail "emit mlir"
"$opt" "$tmp/k.mlir" --full --target=sm_90 >"$tmp/opt-plain.mlir" || fail "kiln-opt --full"
"$opt" "$tmp/k.mlir" --full --target=sm_90 --time-passes >"$tmp/opt-timed.mlir" 2>"$tmp/opt.txt" ||
  fail "kiln-opt --full --time-passes"
cmp -s "$tmp/opt-plain.mlir" "$tmp/opt-timed.mlir" && ok "kiln-opt output identical" ||
  fail "kiln-opt output differs with --time-passes"
check_steps "kiln-opt steps" "$tmp/opt.txt" sm_90 mlir-context parse print
check_sum "kiln-opt total" "$tmp/opt.txt"

# --- bad option, and a failing compile still reports the steps that ran
compile --target sm_90 --emit ptx --time-passes=xml >/dev/null 2>"$tmp/bad.txt"
[ $? -eq 64 ] && ok "bad --time-passes value: usage error" || fail "bad --time-passes value: not exit 64"
printf 'kernel bad(x: *f32) {\n    store(x, nope);\n}\n' >"$tmp/bad.kiln"
"$kiln" compile "$tmp/bad.kiln" --kernel bad --time-passes >/dev/null 2>"$tmp/err.txt"
rc=$?
[ $rc -eq 1 ] && grep -q '^  parse ' "$tmp/err.txt" && grep -q '^  total ' "$tmp/err.txt" &&
  ok "user error: exit 1, steps so far" || { fail "user error with --time-passes (exit $rc)"; sed 's/^/    /' "$tmp/err.txt"; }

[ "$fails" -eq 0 ] && echo "all passed" || echo "$fails failed"
[ "$fails" -eq 0 ]
