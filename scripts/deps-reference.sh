#!/usr/bin/env bash
# scripts/deps-reference.sh - the Python side of yoloplan's references: Debian's python3-torch
# (for /usr/bin/python3), numpy and python3-opencv (cv2, what Ultralytics' data loader resizes,
# warps and colours with), Pillow and libtiff-tools (tiffcp: tests/data/images/make_fixtures.py).
# Needed only to regenerate test fixtures (tests/ref/*.py, tests/data/images/*.py,
# bench/reference/*.py) and to run the side-by-side benchmarks (bench/cpu_vs_pytorch.sh,
# bench/loader_vs_opencv.sh); the test suite reads the committed fixtures and does not need it.
# Idempotent.
set -euo pipefail
packages=(python3-torch python3-numpy python3-opencv python3-pil libtiff-tools)
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
