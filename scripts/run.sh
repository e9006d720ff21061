#!/usr/bin/env bash
# scripts/run.sh [ARGS...] - the README's main command: installs dependencies, configures and
# builds build/ (with the CUDA backend wherever nvcc exists, as scripts/test.sh does), then runs
# ./build/yoloplan ARGS (default: --gpu 8GB, the bundled yolov5s).
# Only yoloplan's own output goes to stdout; build progress goes to stderr, the full log to
# build/run-build.log (printed on failure).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/deps.sh >&2

cuda_args=()
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  cuda_args=(-DYP_CUDA=ON)
fi

mkdir -p build
log=build/run-build.log
echo "run.sh: building build/ (log: $log)" >&2
if ! { cmake -S . -B build "${cuda_args[@]}" && cmake --build build -j"$(nproc)"; } >"$log" 2>&1; then
  tail -40 "$log" >&2
  echo "run.sh: build failed; full log in $log" >&2
  exit 1
fi

if [ "$#" -eq 0 ]; then
  set -- --gpu 8GB
fi
exec ./build/yoloplan "$@"
