#!/usr/bin/env bash
# bench/fuzz_ir.sh [SECONDS] - fuzz the IR loader (tests/fuzz/fuzz_ir_load.c) with libFuzzer:
# bench/fuzz.sh SECONDS ir_load (default 60 s), kept for the commands that call it.
#
# Seeds: tests/fuzz/corpus/ir_load/ and models/*.json. Prints fuzz.sh's row for ir_load
# (executions, exec/s, crashes, inputs added). Exits non-zero on a crash or a failed build.
# Generated inputs go to build-fuzz/fuzz/ir_load/corpus, crash inputs to
# build-fuzz/fuzz/ir_load/artifacts.
set -euo pipefail
cd "$(dirname "$0")/.."

secs="${1:-60}"
if ! [[ "$secs" =~ ^[0-9]+$ ]] || [ "$secs" -lt 1 ]; then
  echo "usage: bench/fuzz_ir.sh [SECONDS]  (a positive whole number; default 60)" >&2
  exit 2
fi
exec bench/fuzz.sh "$secs" ir_load
