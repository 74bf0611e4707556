#!/usr/bin/env bash
# Whole-model tuning of the BERT trainer in one command, for the device given:
#   1. `kiln-bert tune` times every kernel call of one training and one eval step at the
#      model's exact shapes into a cache (OUT/bert-tune.json; a second run goes on from it) and
#      prints its table (also in OUT/tune.txt);
#   2. `kiln lib` makes every trainer kernel library again from that cache, each with its own
#      arguments as the build gives them (BUILD/runtime/bert/kernel-libs.jsonl), for the cpu
#      device (every trainer has the cpu copy) and the device tuned for (OUT/libs/DEVICE);
#   3. a runtime-only build (no compiler, as on a GPU machine) compiles kiln-bert against those
#      libraries: OUT/build/tools/kiln-bert, the tuned trainer.
# A call the tuning did not reach (`--budget`) keeps its library's default config; each
# library's notes say which kernels are untuned (OUT/libs/DEVICE/NAME.lib.txt).
# The other way to the same libraries, which rebuilds them in BUILD itself, is to configure
# BUILD with -DKILN_TUNE_CACHE=OUT/bert-tune.json (docs/trainer.md, "kiln-bert tune").
#
# Usage: scripts/bert-tune.sh [--build DIR] [--out DIR] KILN-BERT-TUNE-OPTIONS...
#   e.g. scripts/bert-tune.sh --out build/bert-tuned --model tiny --precision fp32 --batch 8 \
#          --seq-len 128 --padding dynamic --device cpu --budget 600
# BUILD (default build) is a build with the compiler; OUT defaults to BUILD/bert-tuned.
# Exit: 0 done, 1 a step failed (its output says which; a call that could not be tuned keeps
# its default, and the trainer is still built), 2 a usage error.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)

build=build
out=
args=()
device=cpu
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=${2:?--build needs a folder}; shift 2 ;;
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --cache) echo "bert-tune.sh: the cache is OUT/bert-tune.json (--out chooses OUT)" >&2; exit 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --device) device=${2:?--device needs a device}; args+=("$1" "$2"); shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
out=${out:-$build/bert-tuned}
if ! build=$(cd "$build" 2>/dev/null && pwd); then
  echo "bert-tune.sh: no build folder $build" >&2
  exit 2
fi
kb="$build/tools/kiln-bert"
kiln="$build/tools/kiln"
jsonl="$build/runtime/bert/kernel-libs.jsonl"
for f in "$kb" "$kiln" "$jsonl"; do
  if [ ! -e "$f" ]; then
    echo "bert-tune.sh: no $f: build Kiln with its compiler first (cmake --build $build)" >&2
    exit 2
  fi
done
kind=${device%%:*}
case "$kind" in
  cpu | emu | cuda) ;;
  *) echo "bert-tune.sh: --device $device: one of cpu, emu, cuda[:N]" >&2; exit 2 ;;
esac
mkdir -p "$out"
out=$(cd "$out" && pwd)
cache="$out/bert-tune.json"
jobs=$(nproc 2>/dev/null || echo 2)

echo "== kiln-bert tune (${args[*]}) ==" >&2
t0=$(date +%s)
# A call the tuner could not tune (its variants all failed: the table says why) keeps its
# default config: the libraries and the trainer are still made, and the script exits 1 at the
# end. A wrong command line (kiln-bert's 64) stops here.
set +e
"$kb" tune "${args[@]}" --cache "$cache" | tee "$out/tune.txt"
tune_rc=${PIPESTATUS[0]}
set -e
if [ "$tune_rc" = 64 ]; then exit 2; fi
if [ "$tune_rc" != 0 ] && [ ! -s "$cache" ]; then
  echo "bert-tune.sh: kiln-bert tune failed (exit $tune_rc) and wrote no cache" >&2
  exit 1
fi
t1=$(date +%s)

# Step 2: one `kiln lib` command line a library, run $jobs at a time. The lines are written by
# Python from the JSON list (shlex-quoted: the specs hold `;` and spaces); one that fails shows
# the end of its notes, since the folder they are in is removed.
sets=(cpu)
[ "$kind" = cpu ] || sets+=("$kind")
for set in "${sets[@]}"; do
  dir="$out/libs/$set"
  rm -rf "$dir.tmp"
  mkdir -p "$dir.tmp"
  cmds="$out/lib-commands-$set.txt"
  python3 - "$jsonl" "$kiln" "$src/kernels-bert" "$cache" "$set" "$dir.tmp" >"$cmds" <<'PY'
import json, shlex, sys
jsonl, kiln, kdir, cache, device, outdir = sys.argv[1:]
with open(jsonl) as f:
    for line in f:
        e = json.loads(line)
        cmd = [kiln, "lib", f"{kdir}/{e['file']}", *e["pins"], "--cache", cache,
               "--device", device, "-o", outdir, "--lib-name", e["name"]]
        for spec in e["specs"]:
            cmd += ["--args", spec]
        notes = shlex.quote(f"{outdir}/{e['name']}.lib.txt")
        failed = f"tail -n 20 {notes} >&2; echo \"kiln lib {e['name']} failed (above)\" >&2; exit 1"
        print(f"{shlex.join(cmd)} 2> {notes} || {{ {failed}; }}")
PY
  n=$(wc -l <"$cmds")
  echo "== kiln lib: $n trainer libraries for $set from the cache ==" >&2
  if ! xargs -d '\n' -n 1 -P "$jobs" bash -c <"$cmds"; then
    echo "bert-tune.sh: a library failed (above); the previous $dir is kept" >&2
    rm -rf "$dir.tmp"
    exit 1
  fi
  # the whole set replaces the previous one at once: a failed run never leaves half a set
  rm -rf "$dir.old"
  [ -d "$dir" ] && mv "$dir" "$dir.old"
  mv "$dir.tmp" "$dir"
  rm -rf "$dir.old"
done
t2=$(date +%s)

echo "== kiln-bert against the tuned libraries (runtime-only build in $out/build) ==" >&2
cmake -S "$src" -B "$out/build" -G Ninja -DKILN_RUNTIME_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
  -DKILN_BERT_LIBS="$(cd "$out/libs" && pwd)" >/dev/null
cmake --build "$out/build" -j "$jobs" --target kiln-bert
t3=$(date +%s)

echo "tuned trainer: $out/build/tools/kiln-bert (tuning $((t1 - t0)) s," \
  "libraries $((t2 - t1)) s, build $((t3 - t2)) s)" >&2
if [ "$tune_rc" != 0 ]; then
  echo "bert-tune.sh: some calls could not be tuned (kiln-bert tune exit $tune_rc, the table" \
    "above); their libraries keep the default configs" >&2
  exit 1
fi
