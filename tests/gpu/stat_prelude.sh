# stat_prelude.sh — the start every `kiln stat` test script here shares, sourced with the
# script's own arguments (KILN KERNELS_BERT_DIR PTXAS): a skip (exit 77) without ptxas, which
# the register and spill counts need; KILN_PTXAS for kiln; a temp folder `tmp` removed on exit;
# the failure count `fails`.
set -u
kiln=$1 kdir=$2 ptxas=$3
if [ ! -x "$ptxas" ]; then
  echo "skip: no ptxas ($ptxas)"
  exit 77
fi
export KILN_PTXAS=$ptxas
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
