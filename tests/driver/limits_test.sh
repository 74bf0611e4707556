#!/usr/bin/env bash
# Every reader of a user's file in tools/ stops at a named limit (runtime/base/kiln_base.h):
# `kiln compile` and `kiln check` at KILN_MAX_SOURCE_BYTES, `kiln stat FILE.ptx` at
# KILN_MAX_PTX_BYTES, `kiln-opt` at KILN_MAX_MLIR_BYTES.  Each gets /dev/zero (no size to look
# at: refused once the limit is read) and a sparse file of 1 TiB (refused from its size before a
# byte is read); each must exit 1 with a message naming the file and the limit.  They used to
# read until memory ran out.  ulimit -v makes a runaway read fail fast here instead of taking the
# machine's memory; not under ASan, whose shadow memory needs terabytes of address space (there
# the messages are still checked).
# Usage: limits_test.sh KILN KILN_OPT
set -u
kiln=$1 opt=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# refused NAME LIMIT CMD...: exit 1, and a message naming the limit and "refused"
refused() {
  local name=$1 limit=$2; shift 2
  "$@" >"$tmp/$name.out" 2>&1
  local rc=$?
  if [ "$rc" -ne 1 ]; then
    fail "$name: exit $rc, expected 1"; sed 's/^/    /' "$tmp/$name.out" | head -5; return
  fi
  grep -qE -- "larger than $limit \([0-9]+ MiB\); refused" "$tmp/$name.out" ||
    { fail "$name: output lacks the limit $limit"; sed 's/^/    /' "$tmp/$name.out" | head -5; return; }
  echo "ok   $name"
}

truncate -s 1T "$tmp/huge.kiln" 2>/dev/null || truncate -s 100G "$tmp/huge.kiln"
cp --sparse=always "$tmp/huge.kiln" "$tmp/huge.ptx" 2>/dev/null || truncate -s 100G "$tmp/huge.ptx"
truncate -s 100G "$tmp/huge.mlir"
ln -s /dev/zero "$tmp/zero.ptx" # kiln stat takes a .ptx name as PTX

vlimit=2000000
if ldd "$kiln" 2>/dev/null | grep -q libasan; then vlimit=unlimited; fi
( ulimit -v "$vlimit"
  for src in /dev/zero "$tmp/huge.kiln"; do
    tag=$(basename "$src")
    refused "compile-$tag" KILN_MAX_SOURCE_BYTES "$kiln" compile "$src" --kernel k
    refused "check-$tag" KILN_MAX_SOURCE_BYTES "$kiln" check "$src"
  done
  refused stat-zero KILN_MAX_PTX_BYTES "$kiln" stat "$tmp/zero.ptx"
  refused stat-huge KILN_MAX_PTX_BYTES "$kiln" stat "$tmp/huge.ptx"
  refused opt-zero KILN_MAX_MLIR_BYTES "$opt" /dev/zero
  refused opt-huge KILN_MAX_MLIR_BYTES "$opt" "$tmp/huge.mlir"
  refused opt-stdin KILN_MAX_MLIR_BYTES "$opt" - </dev/zero
  exit $fails ) || fails=$((fails + $?))

[ "$fails" -eq 0 ] && echo "ok   all"
exit $((fails > 0))
