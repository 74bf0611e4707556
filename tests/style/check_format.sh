#!/usr/bin/env bash
# check_format.sh SOURCE_DIR - fails when a C file of a formatted folder differs from what
# clang-format 19 makes of it with the root's .clang-format (docs/internals.md, "Formatting").
#
# Why a test: the style is written down once and applied by the tool, so a change that drifts
# from it is caught here rather than reformatted in bulk later. The folders below are all that
# hold C; clang-format's output differs between major versions, so only
# version 19 (the Debian package clang-format-19, next to LLVM 19) is used: without it the test
# is skipped (exit 77), never passed.
set -uo pipefail
src=${1:?usage: check_format.sh SOURCE_DIR}
# Every folder that holds C: the whole tree is formatted.
folders=(frontend mlir-dialect runtime autotune kernels-bert tools bench examples tests)

tool=
for t in clang-format-19 clang-format; do
  if command -v "$t" >/dev/null 2>&1 && "$t" --version | grep -q 'version 19\.'; then
    tool=$t
    break
  fi
done
if [ -z "$tool" ]; then
  echo "check_format: clang-format 19 not found (apt-get install clang-format-19): skipped"
  exit 77
fi

cd "$src" || exit 2
# The tracked files in a git checkout (ignored folders such as the GPU bundle hold copies of
# other projects' sources); every file of the folders otherwise.
list_sources() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z -- "${folders[@]}" | grep -zE '\.(c|h)$'
  else
    find "${folders[@]}" -type f \( -name '*.c' -o -name '*.h' \) -print0 | sort -z
  fi
}
bad=0
count=0
while IFS= read -r -d '' f; do
  count=$((count + 1))
  if ! "$tool" --style=file --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f (clang-format-19 -i $f)"
    bad=$((bad + 1))
  fi
done < <(list_sources)
if [ "$count" -eq 0 ]; then
  echo "check_format: no C files found under ${folders[*]}"
  exit 1
fi
echo "check_format: $count files, $bad not formatted"
[ "$bad" -eq 0 ]
