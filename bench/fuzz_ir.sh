#!/usr/bin/env bash
# bench/fuzz_ir.sh [SECONDS] - fuzz the IR loader (tests/fuzz/fuzz_ir_load.c) with libFuzzer.
#
# Configures build-fuzz/ with clang and -DYP_FUZZ=ON (CUDA off), builds fuzz_ir_load, seeds it with
# tests/fuzz/corpus/*.json and models/*.json (when they exist), runs it for SECONDS (default 60),
# and prints executions, exec/s and the number of crashes. Exits non-zero on a crash or a failed
# build. Generated inputs go to build-fuzz/fuzz/corpus, crash inputs to build-fuzz/fuzz/artifacts.
set -euo pipefail
cd "$(dirname "$0")/.."

secs="${1:-60}"
if ! [[ "$secs" =~ ^[0-9]+$ ]] || [ "$secs" -lt 1 ]; then
  echo "usage: bench/fuzz_ir.sh [SECONDS]  (a positive whole number; default 60)" >&2
  exit 2
fi
cc="${CC_FUZZ:-clang}"
if ! command -v "$cc" >/dev/null; then
  echo "fuzz_ir.sh: $cc not found; run scripts/deps.sh (installs clang and libclang-rt-14-dev)" >&2
  exit 2
fi

build="build-fuzz"
work="$build/fuzz"
mkdir -p "$work"
cmake -S . -B "$build" -DCMAKE_C_COMPILER="$cc" -DYP_FUZZ=ON -DYP_CUDA=OFF \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$work/configure.log" 2>&1 \
  || { cat "$work/configure.log" >&2; echo "fuzz_ir.sh: configure failed" >&2; exit 1; }
cmake --build "$build" --target fuzz_ir_load -j"$(nproc)" >"$work/build.log" 2>&1 \
  || { tail -50 "$work/build.log" >&2; echo "fuzz_ir.sh: build failed" >&2; exit 1; }
bin="$build/tests/fuzz/fuzz_ir_load"

# Seeds are copied so that libFuzzer only ever writes into the build tree.
rm -rf "$work/seeds" "$work/artifacts"
mkdir -p "$work/corpus" "$work/seeds" "$work/artifacts"
cp tests/fuzz/corpus/* "$work/seeds/"
n_models=0
for f in models/*.json; do
  [ -e "$f" ] || continue
  cp "$f" "$work/seeds/"
  n_models=$((n_models + 1))
done
[ "$n_models" -gt 0 ] || echo "fuzz_ir.sh: no models/*.json yet; seeding from tests/fuzz/corpus only" >&2
log="$work/fuzz.log"
echo "fuzz_ir.sh: fuzzing yp_ir_load_buffer for ${secs}s ($(find "$work/seeds" -type f | wc -l) seeds, log $log)"

set +e
# -max_len: model IRs are ~26 KB (yolov5s); let mutations grow well past that. -timeout: one input
# taking over 10 s is reported as a hang (a crash).
"$bin" "$work/corpus" "$work/seeds" -max_total_time="$secs" -max_len=262144 -timeout=10 \
       -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$work/artifacts/" >"$log" 2>&1
rc=$?
set -e

runs=$(grep -oE '^stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || true)
eps=$(grep -oE '^stat::average_exec_per_sec: *[0-9]+' "$log" | grep -oE '[0-9]+$' || true)
crashes=$(find "$work/artifacts" -type f | wc -l)
[ "$rc" -eq 0 ] || [ "$crashes" -gt 0 ] || crashes=1  # died without leaving an artifact

echo "executions: ${runs:-unknown}"
echo "exec/s:     ${eps:-unknown}"
echo "crashes:    $crashes"
if [ "$crashes" -gt 0 ]; then
  grep -E 'ERROR|SUMMARY|fuzz_ir_load:|Test unit written' "$log" | head -20 >&2 || true
  echo "fuzz_ir.sh: FAIL (libFuzzer exit $rc; inputs in $work/artifacts, log $log)" >&2
  exit 1
fi
echo "fuzz_ir.sh: OK, no crashes in ${secs}s"
