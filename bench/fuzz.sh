#!/usr/bin/env bash
# bench/fuzz.sh [SECONDS_PER_TARGET] [TARGET...] - fuzz each target of tests/fuzz/ with libFuzzer.
#
# Configures a clang build with -DYP_FUZZ=ON (CUDA off; every library instrumented, ASan + UBSan)
# in build-fuzz/ (FUZZ_BUILD=DIR for another), builds fuzz_<target> for each TARGET (default: all
# of them), and runs each for SECONDS_PER_TARGET (default 60) from its seeds, tests/fuzz/corpus/
# <target>/ (plus models/*.json for ir_load and models/*.yaml for yaml_import). FUZZ_JOBS=N runs
# N targets at a time (default 1). Prints one row per target: executions, exec/s, crashes (crash,
# leak, timeout = one input over 10 s, out-of-memory = over 4 GB) and the inputs libFuzzer added
# to the corpus. Each run starts from the seeds alone, so the figures compare run to run.
# Generated inputs go to DIR/fuzz/<target>/corpus, crash inputs to DIR/fuzz/<target>/artifacts,
# the log to DIR/fuzz/<target>/fuzz.log. Exits 1 on a crash or a failed build, 2 on bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."

all_targets=(ir_load yaml_import data_yaml labels image_decode plan_load checkpoint size_gpu)
usage() {
  echo "usage: bench/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]  (seconds a positive whole number, default 60;" >&2
  echo "       targets: ${all_targets[*]})" >&2
  exit 2
}
secs=60
if [ $# -gt 0 ] && [[ "$1" =~ ^[0-9]+$ ]]; then
  secs="$1"
  shift
fi
[ "$secs" -ge 1 ] || usage
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "fuzz.sh: unknown target '$t'" >&2; usage; }
done
jobs="${FUZZ_JOBS:-1}"
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: FUZZ_JOBS must be a positive whole number" >&2; exit 2; }
cc="${CC_FUZZ:-clang}"
if ! command -v "$cc" >/dev/null; then
  echo "fuzz.sh: $cc not found; run scripts/deps.sh (installs clang and libclang-rt-14-dev)" >&2
  exit 2
fi

build="${FUZZ_BUILD:-build-fuzz}"
mkdir -p "$build/fuzz"
cmake -S . -B "$build" -DCMAKE_C_COMPILER="$cc" -DYP_FUZZ=ON -DYP_CUDA=OFF \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build/fuzz/configure.log" 2>&1 \
  || { cat "$build/fuzz/configure.log" >&2; echo "fuzz.sh: configure failed" >&2; exit 1; }
cmake --build "$build" -j"$(nproc)" --target "${targets[@]/#/fuzz_}" >"$build/fuzz/build.log" 2>&1 \
  || { tail -50 "$build/fuzz/build.log" >&2; echo "fuzz.sh: build failed" >&2; exit 1; }

# The largest input libFuzzer makes, per target: well past the largest seed.
max_len() {
  case "$1" in
    ir_load) echo 262144 ;;    # model IRs are ~26 KB (yolov5s)
    size_gpu) echo 256 ;;
    labels|data_yaml) echo 16384 ;;
    *) echo 131072 ;;          # plan.json and checkpoint seeds ~32 KB, yamls ~2 KB, images < 1 KB
  esac
}

# fuzz_one TARGET: runs it; leaves DIR/fuzz/TARGET/{fuzz.log,rc}.
fuzz_one() {
  local t="$1" work="$build/fuzz/$1"
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/seeds" "$work/artifacts"
  cp tests/fuzz/corpus/"$t"/* "$work/seeds/"
  case "$t" in
    ir_load) cp models/*.json "$work/seeds/" 2>/dev/null || true ;;
    yaml_import) cp models/*.yaml "$work/seeds/" 2>/dev/null || true ;;
  esac
  set +e
  # -timeout: one input taking over 10 s is reported as a hang (a crash).
  "$build/tests/fuzz/fuzz_$t" "$work/corpus" "$work/seeds" -max_total_time="$secs" -max_len="$(max_len "$t")" \
      -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
      >"$work/fuzz.log" 2>&1
  echo $? >"$work/rc"
  set -e
}

echo "fuzz.sh: ${#targets[@]} target(s), ${secs}s each, $jobs at a time (logs in $build/fuzz/<target>/fuzz.log)"
running=0
for t in "${targets[@]}"; do
  fuzz_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait

total_crashes=0
printf '%-13s %12s %9s %8s %11s\n' target executions exec/s crashes new_corpus
for t in "${targets[@]}"; do
  work="$build/fuzz/$t"
  log="$work/fuzz.log"
  rc=$(cat "$work/rc" 2>/dev/null || echo 1)
  runs=$(grep -oE '^stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || true)
  eps=$(grep -oE '^stat::average_exec_per_sec: *[0-9]+' "$log" | grep -oE '[0-9]+$' || true)
  crashes=$(find "$work/artifacts" -type f | wc -l)
  [ "$rc" -eq 0 ] || [ "$crashes" -gt 0 ] || crashes=1  # died without leaving an artifact
  added=$(find "$work/corpus" -type f | wc -l)
  printf '%-13s %12s %9s %8s %11s\n' "$t" "${runs:-?}" "${eps:-?}" "$crashes" "$added"
  total_crashes=$((total_crashes + crashes))
done
if [ "$total_crashes" -gt 0 ]; then
  for t in "${targets[@]}"; do
    work="$build/fuzz/$t"
    if [ "$(find "$work/artifacts" -type f | wc -l)" -eq 0 ] && [ "$(cat "$work/rc" 2>/dev/null || echo 1)" -eq 0 ]; then
      continue
    fi
    echo "---- $t ($work/fuzz.log)" >&2
    grep -E 'ERROR|SUMMARY|fuzz_[a-z_]*:|Test unit written|#[0-9]+ 0x' "$work/fuzz.log" | head -20 >&2 || true
  done
  echo "fuzz.sh: FAIL ($total_crashes crash(es); inputs in $build/fuzz/<target>/artifacts)" >&2
  exit 1
fi
echo "fuzz.sh: OK, no crashes in ${secs}s per target"
