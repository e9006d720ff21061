#!/usr/bin/env bash
# scripts/deps.sh - installs the Debian packages that building and testing yoloplan need.
# Idempotent: when dpkg says every package is installed it touches nothing (no apt-get, no sudo).
# Otherwise runs apt-get update + install of the missing ones, through sudo unless already root.
# CUDA and cuDNN are not Debian packages here; cmake/cuda.cmake finds them where NVIDIA installs
# them (/usr/local/cuda) and builds CPU-only without them.
set -euo pipefail

packages=(
  build-essential cmake pkg-config   # compiler, build
  libcjson-dev libyaml-dev           # graph/: IR JSON, model yaml
  libgraphviz-dev graphviz           # reports/: timelines
  libplplot-dev plplot-driver-cairo  # reports/: training curves (results.png/.svg); the driver is
                                     # a module PLplot loads at run time (pngcairo, svgcairo)
  libdnnl-dev                        # kernels/cpu: convolutions (oneDNN, OpenMP)
  ocl-icd-opencl-dev                 # oneDNN's CMake package (dnnl-config.cmake) requires OpenCL;
                                     # libdnnl-dev only Recommends it, and we skip Recommends
  libjpeg62-turbo-dev libpng-dev     # executor/: dataset images (JPEG, PNG,
  libtiff-dev libwebp-dev            # TIFF and DNG, WebP)
  libzip-dev                         # executor/io: PyTorch .pt files (zip archives)
  libjpeg-turbo-progs                # bench/decode_rate.sh: djpeg, tjbench
  time                               # bench/host_memory.sh: /usr/bin/time -v (peak RSS)
  clang libclang-rt-14-dev           # fuzz targets (libFuzzer)
  python3                            # test fixtures and scripts
)

missing=()
for p in "${packages[@]}"; do
  if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "deps.sh: all ${#packages[@]} packages installed"
  exit 0
fi

echo "deps.sh: installing ${missing[*]}"
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "deps.sh: not root and no sudo; as root run: apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
