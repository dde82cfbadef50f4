#!/usr/bin/env bash
# Installs every build and test dependency from Debian 12 / Ubuntu packages. Needs root (or sudo).
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config git
  libopenblas-dev libdnnl-dev nlohmann-json3-dev libcli11-dev libfmt-dev zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-numpy
  clang libclang-rt-14-dev
  chromium
)
as_root=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root or install sudo" >&2; exit 1; }
  as_root=(sudo)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
"${as_root[@]}" apt-get update
DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
