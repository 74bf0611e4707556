# case_checks.sh — the checks files_test.sh and limits_test.sh share, sourced by both. They
# read the sourcing script's $tmp (where each command's output goes) and $case (the case run),
# and count failures in its $fails.

fail() { echo "FAIL $case: $*"; fails=$((fails + 1)); }

run() { # run NAME EXPECTED_RC CMD... ; output in $tmp/NAME.out
  local name=$1 want=$2; shift 2
  "$@" >"$tmp/$name.out" 2>&1
  local rc=$?
  [ "$rc" -eq "$want" ] || { fail "$name: exit $rc, expected $want"; sed 's/^/    /' "$tmp/$name.out" | head -20; return 1; }
}

says() { # says NAME PATTERN: grep -E in NAME's output
  grep -qE -- "$2" "$tmp/$1.out" || { fail "$1: output lacks /$2/"; sed 's/^/    /' "$tmp/$1.out" | head -20; return 1; }
}
