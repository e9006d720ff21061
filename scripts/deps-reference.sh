#!/usr/bin/env bash
# scripts/deps-reference.sh - the PyTorch side of yoloplan's references: Debian's python3-torch
# (for /usr/bin/python3) and numpy. Needed only to regenerate test fixtures (tests/ref/*.py,
# bench/reference/*.py) and to run the side-by-side CPU benchmark (bench/cpu_vs_pytorch.sh);
# the test suite reads the committed fixtures and does not need it. Idempotent.
set -euo pipefail
packages=(python3-torch python3-numpy)
missing=()
for p in "${packages[@]}"; do
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" = "install ok installed" ] || missing+=("$p")
done
[ "${#missing[@]}" -eq 0 ] && { echo "deps-reference.sh: installed"; exit 0; }
sudo=()
[ "$(id -u)" -ne 0 ] && sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq "${missing[@]}"
