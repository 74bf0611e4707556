#!/usr/bin/env bash
# A further --args layout of a kernel that does not fit it is an error (exit 1, naming the
# kernel and the spec) and no library is written: one missing a scalar, one giving a buffer
# the kernel lacks. Usage: layout_errors_test.sh KILN GEMM_KILN
set -u
kiln=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bufs="a: f16[M*K]; b: f16[K*N]; c: f16[M*N]; bias: f16[N]?; res: f16[M*N]?; grid=cdiv(M, BM), cdiv(N, BN)"
fwd="kernel=gemm; M=128; N=64; K=64; sam=K; sak=1; sbk=1; sbn=K; scm=N; scn=1; splits=1; $bufs"
# case NAME SPEC2 EXPECTED-TEXT
case_() {
  local name=$1 spec=$2 want=$3 rc
  "$kiln" lib "$src" --kernel gemm --device cpu -D T=f16 -D EPI=0 -o "$tmp/$name" \
    --lib-name lay --args "$fwd" --args "$spec" 2>"$tmp/$name.err"
  rc=$?
  if [ "$rc" -eq 1 ] && grep -qF "$want" "$tmp/$name.err" && [ ! -e "$tmp/$name/lay.c" ]; then
    echo "ok   $name: $(head -1 "$tmp/$name.err")"
  else
    echo "FAIL $name: exit $rc, wanted 1 and '$want'"; sed 's/^/    /' "$tmp/$name.err" | head -5
    fails=$((fails + 1))
  fi
}
case_ missing "kernel=gemm; M=128; N=64; K=64; sam=K; sbk=N; sbn=1; scm=N; scn=1; splits=1; $bufs" \
  "'gemm': its spec 2 (a further layout): --args gives no value for parameter 'sak'"
# (a scalar entry naming no parameter is a helper name, docs/tuning.md; a buffer is an error)
case_ unknown "kernel=gemm; M=128; N=64; K=64; sam=K; sak=1; sbk=N; sbn=1; scm=N; scn=1; splits=1; zz: f16[4]; $bufs" \
  "'gemm': its spec 2 (a further layout): --args gives a buffer 'zz', which is not a parameter"
[ "$fails" -eq 0 ] || exit 1
echo "all ok"
