#!/usr/bin/env bash
# Installs the Debian packages Kiln builds with, when any is missing. Sourced by the other
# scripts; safe to run again (it only calls apt-get when something is absent).
set -euo pipefail

KILN_DEBIAN_PACKAGES=(
  build-essential cmake ninja-build pkg-config python3
  flex bison libcjson-dev
  llvm-19-dev libmlir-19-dev mlir-19-tools llvm-19-tools
  clang-19 libclang-rt-19-dev
  clang-format-19
)

kiln_missing_packages() {
  local p missing=()
  for p in "${KILN_DEBIAN_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  echo "${missing[@]:-}"
}

kiln_install_deps() {
  local missing
  missing=$(kiln_missing_packages)
  [ -z "$missing" ] && return 0
  echo "kiln: installing Debian packages: $missing" >&2
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo=(sudo); else
      echo "kiln: error: missing packages ($missing) and not root; install them first" >&2
      return 2
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -q
  # shellcheck disable=SC2086
  "${sudo[@]}" apt-get install -y -q $missing
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then kiln_install_deps; fi
