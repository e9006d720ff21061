#!/usr/bin/env bash
# bench/gpu_check.sh - the one script for a lent GPU machine (issue 13): builds the backends
# (kernels/, YP_KERNELS_ONLY: the CPU backend with oneDNN from .gpudeps, the CUDA backend with the
# toolkit there and the cuDNN of its nvidia-cudnn Python package) for the card's architecture and
# runs every CUDA op test against the CPU backend, then prints one table. Prepare here with
# `bash scripts/gpu-deps.sh`, then run it there with .gpudeps carried:
#   bash bench/gpu_check.sh [--arch 90] [--out DIR]
# (with the device tool: carry [".gpudeps/debs"], command `bash bench/gpu_check.sh --out $OUT`)
# Partial results survive an interruption: each stage's log goes to DIR (default $OUT or
# build-gpu/) as it runs, and the table is printed from what finished.
# Not yet in it: the 30 yolov5s training steps (`yoloplan bench-step --device cuda`, which needs
# the whole build, not only kernels/: cJSON, libjpeg and libpng too) against the PyTorch reference
# and the arena-vs-cudaMemGetInfo row.
set -uo pipefail
cd "$(dirname "$0")/.."

arch=90 out="${OUT:-build-gpu}"
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) arch="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: bash bench/gpu_check.sh [--arch N] [--out DIR]" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
root="$PWD/build-gpu/deps-root"
ls .gpudeps/debs/*.deb > /dev/null 2>&1 ||
  { echo "gpu_check.sh: no .gpudeps/debs: run bash scripts/gpu-deps.sh here and carry .gpudeps/debs" >&2; exit 2; }
mkdir -p "$root"
for d in .gpudeps/debs/*.deb; do dpkg -x "$d" "$root" || { echo "gpu_check.sh: dpkg -x $d failed" >&2; exit 2; }; done
export CMAKE_PREFIX_PATH="$root/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export LD_LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CPATH="$root/usr/include${CPATH:+:$CPATH}"

# cuDNN: the toolkit's when it has one, else the nvidia-cudnn Python package PyTorch uses.
cudnn_args=()
if [ ! -f /usr/local/cuda/include/cudnn.h ]; then
  py="$(command -v python3)"
  cudnn="$("$py" -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) if nvidia.cudnn.__file__ else list(nvidia.cudnn.__path__)[0])' 2>/dev/null)"
  lib="$(ls "$cudnn"/lib/libcudnn.so* 2>/dev/null | head -1)"
  [ -n "$lib" ] && [ -f "$cudnn/include/cudnn.h" ] ||
    { echo "gpu_check.sh: cuDNN not found (toolkit or python3's nvidia.cudnn)" >&2; exit 2; }
  cudnn_args=(-DYP_CUDNN_INCLUDE_DIR="$cudnn/include" -DYP_CUDNN_LIBRARY="$lib")
  export LD_LIBRARY_PATH="$cudnn/lib:$LD_LIBRARY_PATH"
fi

t0=$(date +%s)
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$out/gpu.txt" 2>&1 || true
else
  echo "none (no nvidia-smi: no GPU driver on this machine; the CUDA tests will skip)" > "$out/gpu.txt"
fi
build=build-gpu/kernels
cmake -S . -B "$build" -DYP_KERNELS_ONLY=ON -DYP_CUDA=ON -DYP_WERROR=ON -DYP_NATIVE=OFF \
  -DCMAKE_CUDA_ARCHITECTURES="$arch" "${cudnn_args[@]}" > "$out/configure.log" 2>&1
cfg=$?
bld=1
if [ $cfg -eq 0 ]; then
  cmake --build "$build" -j"$(nproc)" > "$out/build.log" 2>&1
  bld=$?
fi
t1=$(date +%s)
if [ $bld -eq 0 ]; then
  ( cd "$build" && ctest --output-on-failure -j4 ) > "$out/ctest.log" 2>&1
fi
t2=$(date +%s)

echo "| stage | result | seconds |"
echo "| --- | --- | --- |"
echo "| GPU | $(tr -d '\n' < "$out/gpu.txt") | |"
echo "| configure (sm_$arch) | $([ $cfg -eq 0 ] && echo ok || echo "FAILED: $(tail -3 "$out/configure.log" | tr '\n' ' ')") | |"
echo "| build | $([ $bld -eq 0 ] && echo ok || echo "FAILED: $(grep -m3 -E 'error' "$out/build.log" | tr '\n' ' ')") | $((t1 - t0)) |"
if [ -f "$out/ctest.log" ]; then
  grep -E '^ *[0-9]+/[0-9]+ Test' "$out/ctest.log" | sed -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([a-z_0-9]+) [. ]*\**([A-Za-z]+).* ([0-9.]+) sec$/| \1 | \2 | \3 |/'
  echo "| ctest | $(grep -E 'tests passed|tests failed' "$out/ctest.log" | tail -1) | $((t2 - t1)) |"
fi
[ $bld -eq 0 ] && grep -q "100% tests passed" "$out/ctest.log" 2>/dev/null
