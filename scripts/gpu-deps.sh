#!/usr/bin/env bash
# scripts/gpu-deps.sh - fills .gpudeps/ (ignored by git) with what bench/gpu_check.sh needs on a
# bare GPU machine that has nvcc, cmake, a C compiler, PyTorch and cuDNN (inside the nvidia-cudnn
# Python package) but no apt and no network: the Debian packages of oneDNN (the CPU backend, the
# reference every CUDA op is checked against) and the OpenCL headers and loader its CMake package
# asks for; cJSON, libyaml (graph/), libjpeg-turbo, libpng and zlib (executor/), which
# yoloplan-bench links; pkgconf, for a machine without pkg-config. Fetched with `apt-get download`
# (nothing installed here) into .gpudeps/debs (about 10 MB), and unpacked with `dpkg -x` into
# .gpudeps/root to check them (gpu_check.sh unpacks the .debs itself, so only .gpudeps/debs need
# travel). Run it here, then carry .gpudeps/debs.
#   bash scripts/gpu-deps.sh
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(libdnnl2 libdnnl-dev ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers opencl-clhpp-headers
          libcjson1 libcjson-dev libyaml-0-2 libyaml-dev libjpeg62-turbo libjpeg62-turbo-dev libpng16-16 libpng-dev
          zlib1g zlib1g-dev pkgconf pkgconf-bin libpkgconf3)
deps=.gpudeps
mkdir -p "$deps/debs"
rm -rf "$deps/root"
mkdir -p "$deps/root"
# _apt cannot write into a folder it does not own: download where it can, then move.
tmp="$(mktemp -d)"
chmod 777 "$tmp"
( cd "$tmp" && apt-get download "${packages[@]}" >/dev/null )
mv "$tmp"/*.deb "$deps/debs/"
rmdir "$tmp"
for d in "$deps"/debs/*.deb; do dpkg -x "$d" "$deps/root"; done
# Debian's dnnl-config.cmake finds the library relative to itself, so the unpacked tree works in
# place; the loader's and oneDNN's .so links point within the tree too. The .pc files say
# prefix=/usr: gpu_check.sh reads them with the unpacked tree as pkg-config's sysroot.
for f in lib/x86_64-linux-gnu/cmake/dnnl/dnnl-config.cmake lib/x86_64-linux-gnu/pkgconfig/libcjson.pc \
         lib/x86_64-linux-gnu/pkgconfig/yaml-0.1.pc include/jpeglib.h include/png.h include/zlib.h bin/pkgconf; do
  test -e "$deps/root/usr/$f" || { echo "gpu-deps.sh: no usr/$f under $deps/root" >&2; exit 1; }
done
echo "gpu-deps.sh: ${#packages[@]} packages in $deps/debs ($(du -sh "$deps/debs" | cut -f1)); carry $deps/debs"
