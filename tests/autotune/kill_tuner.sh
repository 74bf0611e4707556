#!/usr/bin/env bash
# A killed `kiln tune` leaves no child behind: the tuner times a kernel that spins (faulty.kiln,
# MODE 2) under a long time limit, is SIGKILLed once its timing child runs, and every process it
# had started must be gone a moment later (children die with the tuner).
# Usage: kill_tuner.sh KILN KERNEL_DIR
set -u
kiln=$1 kdir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$kiln" tune "$kdir/faulty.kiln" -D MODE=2 -D BLOCK=64 --timeout 600 --reps 1 \
  --args 'n=1000; x: f32[n]; out: f32[n]; grid=cdiv(n, BLOCK)' >"$tmp/out" 2>&1 &
tuner=$!
kids=""
for _ in $(seq 1 300); do # up to 30 s for the build to finish and the timing child to spin
  kids=$(pgrep -P "$tuner" | tr '\n' ' ')
  [ -n "$kids" ] && sleep 1 && kids=$(pgrep -P "$tuner" | tr '\n' ' ') && [ -n "$kids" ] && break
  sleep 0.1
done
[ -n "$kids" ] || { echo "FAIL: the tuner started no child"; cat "$tmp/out"; kill -9 "$tuner"; exit 1; }
kill -9 "$tuner"
wait "$tuner" 2>/dev/null
alive() { # alive PID: running or sleeping (a zombie waiting for its new parent to reap it is dead)
  local st
  st=$(sed -E 's/^[0-9]+ \(.*\) ([A-Za-z]).*/\1/' /proc/"$1"/stat 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}
for _ in 1 2 3; do # up to 3 s
  left=""
  for k in $kids; do alive "$k" && left="$left $k"; done
  [ -z "$left" ] && break
  sleep 1
done
if [ -n "$left" ]; then
  echo "FAIL: children of the killed tuner still run:$left"
  kill -9 $left 2>/dev/null
  exit 1
fi
echo "ok: children$kids ended with the tuner"
