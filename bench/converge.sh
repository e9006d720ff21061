#!/usr/bin/env bash
# bench/converge.sh - does `yoloplan train` learn? yolov5n from scratch on a `yoloplan synth`
# dataset (3 classes, 512 train + 128 val images at 256 px) on the CPU, then the epoch-by-epoch
# curve from the run's results.csv, the wall time and PASS/FAIL against mAP@0.5 >= 0.6 (issue 12).
#   bash bench/converge.sh [--epochs E] [--batch B] [--threads T] [--workers N] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

epochs=150 batch=16 threads="$(nproc)" workers=2 out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --epochs) epochs="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --workers) workers="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: bash bench/converge.sh [--epochs E] [--batch B] [--threads T] [--workers N] [--out DIR]" >&2; exit 2 ;;
  esac
done
[ -x build/yoloplan ] || { cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j"$(nproc)" --target yoloplan >/dev/null; }
work="${out:-$(mktemp -d)}"
mkdir -p "$work"
build/yoloplan synth --out "$work/synth" --images 512 --val 128 --classes 3 --img 256 --seed 1 >/dev/null
t0=$(date +%s)
build/yoloplan train --data "$work/synth/data.yaml" --model yolov5n --img 256 --batch "$batch" --epochs "$epochs" \
  --workers "$workers" --threads "$threads" --project "$work/runs" --name converge --patience 0 > "$work/train.log"
t1=$(date +%s)
csv="$work/runs/converge/results.csv"
echo "yolov5n, synth 3 classes, 512 train + 128 val at 256 px, batch $batch, $threads threads, $epochs epochs"
awk -F, 'NR == 1 { next } { printf "epoch %3d  box %.4f obj %.4f cls %.4f  P %.3f R %.3f  mAP50 %.3f  mAP50-95 %.3f\n", $1, $2, $3, $4, $5, $6, $7, $8 }' "$csv"
best=$(awk -F, 'NR > 1 && $7 + 0 > m { m = $7 + 0 } END { printf "%.3f", m }' "$csv")
echo "wall time $((t1 - t0)) s; best mAP@0.5 $best (goal >= 0.6): $(awk -v b="$best" 'BEGIN { print (b >= 0.6 ? "PASS" : "FAIL") }')"
echo "run folder: $work/runs/converge"
