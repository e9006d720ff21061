#!/usr/bin/env bash
# bench/host_memory.sh [--train N] [--val M] [--synth-img S] [--epochs E] [--build-dir DIR] [--keep]
#
# The host-memory figure of `yoloplan train`'s plan against the measured peak RSS of the run:
# synthesizes a dataset (N train + M val images of S, default 256 + 64 at 320), then trains
# yolov5n on it for E epochs (default 1) on 2 loader workers and 2 compute threads in two
# configurations, each under /usr/bin/time -v (GNU time: the process's peak resident set,
# wait4's ru_maxrss):
#   A  --img 320, the plan's batch (the largest that fits, up to the nominal 64)
#   B  --img 416 --batch 32
# and prints, per configuration, the plan line's figures in GiB (executor/train/yp_train_host.h's terms:
# the arena, exact from the run's plan.json; the data pipeline; the process: the baseline
# yp_exec_init measured before touching the arena plus the runtime allowance; their sum "host
# memory", printed to 0.01 GiB), the measured peak RSS, the relative error (plan - measured) /
# measured and PASS/FAIL at 10 %.
# A benchmark, not a test: exits 0 whatever the figures (2 on bad usage, 1 when the build, synth
# or a run fails). Needs GNU time (Debian's `time`, scripts/deps.sh). About 2 minutes on 2 cores.
set -uo pipefail
cd "$(dirname "$0")/.."

ntrain=256 nval=64 simg=320 epochs=1 build=build keep=0
usage() {
  echo "usage: bench/host_memory.sh [--train N] [--val M] [--synth-img S] [--epochs E] [--build-dir DIR] [--keep]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --train) [ $# -ge 2 ] || usage; ntrain="$2"; shift 2 ;;
    --val) [ $# -ge 2 ] || usage; nval="$2"; shift 2 ;;
    --synth-img) [ $# -ge 2 ] || usage; simg="$2"; shift 2 ;;
    --epochs) [ $# -ge 2 ] || usage; epochs="$2"; shift 2 ;;
    --build-dir) [ $# -ge 2 ] || usage; build="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage ;;
  esac
done
for v in "$ntrain" "$nval" "$simg" "$epochs"; do [[ "$v" =~ ^[1-9][0-9]*$ ]] || usage; done
[ -x /usr/bin/time ] || { echo "host_memory.sh: /usr/bin/time not found; apt-get install time (scripts/deps.sh)" >&2; exit 1; }

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" >/dev/null || { echo "host_memory.sh: configure failed" >&2; exit 1; }
fi
cmake --build "$build" --target yoloplan -j2 >/dev/null ||
  { echo "host_memory.sh: build failed (cmake --build $build --target yoloplan)" >&2; exit 1; }

tmp="$(mktemp -d /tmp/host_memory.XXXXXX)"
[ "$keep" = 1 ] || trap 'rm -rf "$tmp"' EXIT
"$build/yoloplan" synth --out "$tmp/d" --images "$ntrain" --val "$nval" --classes 3 --img "$simg" --seed 1 >/dev/null ||
  { echo "host_memory.sh: yoloplan synth failed" >&2; exit 1; }
echo "host memory: yolov5n on $ntrain train + $nval val synthetic images of $simg, $epochs epoch(s), --workers 2 --threads 2, CPU"

gib() { awk -v b="$1" 'BEGIN { printf "%.3f", b / 1073741824 }'; }
printf '%-28s %6s %8s %9s %8s %8s %9s %8s\n' configuration batch "arena" "pipeline" "process" "plan" "peak RSS" "error"
rows=()
for cfg in "A|--img 320" "B|--img 416 --batch 32"; do
  name="${cfg%%|*}" args="${cfg#*|}"
  # shellcheck disable=SC2086
  /usr/bin/time -v -o "$tmp/time.$name" "$build/yoloplan" train --data "$tmp/d/data.yaml" --model yolov5n $args \
    --epochs "$epochs" --workers 2 --threads 2 --project "$tmp/runs" --name "$name" >"$tmp/out.$name" 2>&1 ||
    { cat "$tmp/out.$name" >&2; echo "host_memory.sh: configuration $name failed (output above)" >&2; exit 1; }
  plan="$(grep -m1 '^plan:' "$tmp/out.$name")"
  batch="$(sed -n 's/.*, batch \([0-9]*\),.*/\1/p' <<<"$plan")"
  host="$(sed -n 's/.*host memory \([0-9.]*\) GiB.*/\1/p' <<<"$plan")"
  pipe="$(sed -n 's/.* \([0-9.]*\) GiB data pipeline.*/\1/p' <<<"$plan")"
  proc="$(sed -n 's/.* \([0-9.]*\) GiB process).*/\1/p' <<<"$plan")"
  arena_b="$("${PY:-/usr/bin/python3}" -c 'import json,sys; print(json.load(open(sys.argv[1]))["arena_bytes"])' \
    "$tmp/runs/$name/plan.json" 2>/dev/null || echo "")"
  rss_kb="$(awk -F: '/Maximum resident set size/ { gsub(/ /, "", $2); print $2 }' "$tmp/time.$name")"
  [ -n "$host" ] && [ -n "$rss_kb" ] || { echo "host_memory.sh: no plan line or no RSS for $name" >&2; exit 1; }
  arena="$( [ -n "$arena_b" ] && gib "$arena_b" || sed -n 's/.*arena \([0-9.]*\) GiB.*/\1/p' <<<"$plan")"
  rss="$(gib $((rss_kb * 1024)))"
  err="$(awk -v p="$host" -v m="$rss" 'BEGIN { printf "%+.1f%%", 100 * (p - m) / m }')"
  verdict="$(awk -v p="$host" -v m="$rss" 'BEGIN { e = (p - m) / m; if (e < 0) e = -e; v = (e <= 0.10) ? "PASS" : "FAIL"; print v }')"
  printf '%-28s %6s %8s %9s %8s %8s %9s %8s  %s\n' "$name: $args" "$batch" "$arena" "${pipe:-?}" "${proc:-?}" "$host" \
    "$rss" "$err" "$verdict"
  rows+=("$name $verdict $err")
  echo "    $plan" | cut -c1-220
done
echo
for r in "${rows[@]}"; do
  set -- $r
  echo "host memory $1: plan within 10 % of the measured peak RSS: $2 ($3)"
done
[ "$keep" = 1 ] && echo "runs and logs kept in $tmp"
exit 0
