#!/usr/bin/env bash
# scripts/test.sh - the README's test command (and CI's, through .ci/run).
#
#   1. scripts/deps.sh
#   2. build/: -DYP_WERROR=ON, plus -DYP_CUDA=ON wherever nvcc exists (PATH or /usr/local/cuda/bin),
#      so a CUDA backend that stops building fails here; checks the CUDA library was produced;
#      then every test (gpu tests skip themselves without a GPU).
#   3. build-asan/: -DYP_SANITIZE=ON (ASan + UBSan), CUDA off, the unit tests.
# Runs every stage it can, prints a summary line, and exits non-zero if any stage failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

jobs="$(nproc 2>/dev/null || echo 2)"
rm -f build/ctest.log build-asan/ctest.log # counts below come from this run only
failed=()
notes=()

# Runs "$@" under a stage name; records a failure and returns its status.
stage() {
  local name="$1"
  shift
  echo "==> $name: $*"
  if "$@"; then
    return 0
  fi
  echo "==> $name: FAILED" >&2
  failed+=("$name")
  return 1
}

# Prints ctest's "N% tests passed, F tests failed out of T" line from a log and the skipped count.
ctest_summary() {
  local line skipped
  line="$(grep -E 'tests passed|No tests were found' "$1" | tail -1)"
  skipped="$(grep -cE '\((Skipped|Not Run|Disabled)\)$' "$1")"
  echo "${line:-no summary}, $skipped skipped"
}

stage deps bash scripts/deps.sh || { echo "test.sh: FAIL (dependencies could not be installed)"; exit 1; }

# ---- main build ----
cuda_args=()
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  cuda_args=(-DYP_CUDA=ON)
  cuda_note="cuda: required (nvcc found) but not built"
else
  cuda_note="cuda: skipped (no nvcc)"
fi

if stage configure cmake -S . -B build -DYP_WERROR=ON "${cuda_args[@]}" &&
   stage build cmake --build build -j"$jobs"; then
  if [ "${#cuda_args[@]}" -gt 0 ]; then
    if [ -f build/kernels/libyp_kernels_cuda.a ]; then
      echo "==> cuda: build/kernels/libyp_kernels_cuda.a built"
      cuda_note="cuda: built"
    else
      echo "==> cuda: build/kernels/libyp_kernels_cuda.a is missing although YP_CUDA=ON" >&2
      failed+=(cuda-artifact)
    fi
  fi
  echo "==> ctest: ctest --test-dir build --output-on-failure"
  ctest --test-dir build --output-on-failure 2>&1 | tee build/ctest.log
  [ "${PIPESTATUS[0]}" -eq 0 ] || failed+=(ctest)
  notes+=("build: $(ctest_summary build/ctest.log)")
fi

# ---- sanitizers ----
if stage asan-configure cmake -S . -B build-asan -DYP_SANITIZE=ON -DYP_CUDA=OFF -DYP_WERROR=ON &&
   stage asan-build cmake --build build-asan -j"$jobs"; then
  echo "==> asan-ctest: ctest --test-dir build-asan -L unit --output-on-failure"
  # The tests that run the yoloplan binary (train draws its curves through PLplot, pango and
  # fontconfig) need the library suppressions of tests/lsan.supp in the child processes too, and
  # without LSan's "Suppressions used" table on their stderr (tests count its lines).
  LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}" \
    ctest --test-dir build-asan -L unit --output-on-failure 2>&1 | tee build-asan/ctest.log
  [ "${PIPESTATUS[0]}" -eq 0 ] || failed+=(asan-ctest)
  notes+=("asan unit: $(ctest_summary build-asan/ctest.log)")
fi

# One plain closing count over both test runs: "tests: N passed, N failed, N skipped".
read -r total nfail nskip < <(cat build/ctest.log build-asan/ctest.log 2>/dev/null | awk '
  /tests failed out of/ { for (i = 1; i <= NF; i++) { if ($i == "failed") f += $(i-2); if ($i == "of") t += $(i+1) } }
  /\((Skipped|Not Run|Disabled)\)$/ { s++ }
  END { print t + 0, f + 0, s + 0 }')

summary="$(printf '%s; ' "$cuda_note" "${notes[@]}")"
summary="${summary%; }"
echo "tests: $((total - nfail - nskip)) passed, $nfail failed, $nskip skipped"
if [ "${#failed[@]}" -eq 0 ]; then
  echo "test.sh: PASS ($summary)"
  exit 0
fi
echo "test.sh: FAIL in ${failed[*]} ($summary)"
exit 1
