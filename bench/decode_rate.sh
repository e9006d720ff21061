#!/usr/bin/env bash
# bench/decode_rate.sh - JPEG decode rate, side by side on the same files: yoloplan's decoder
# (yp_image_decode through build/bench/decode_rate, from memory), libjpeg-turbo's tjbench
# (TurboJPEG, from memory, RGB out) and djpeg (one process per file, reading the file, output
# thrown away). The files are a fresh `yoloplan synth` set, its JPEGs only, or with --dir the
# first N JPEGs of a folder (bench/loader_vs_opencv.sh passes the loader benchmark's images).
# Needs djpeg and tjbench: Debian's libjpeg-turbo-progs (scripts/deps.sh installs it).
#   bash bench/decode_rate.sh [--img S] [--images N] [--seconds T] [--dir D]
set -euo pipefail
cd "$(dirname "$0")/.."

img=640 images=30 seconds=2 dir=
while [ $# -gt 0 ]; do
  case "$1" in
    --img) img="$2"; shift 2 ;;
    --images) images="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    *) echo "usage: bash bench/decode_rate.sh [--img S] [--images N] [--seconds T] [--dir D]" >&2; exit 2 ;;
  esac
done
for tool in djpeg tjbench; do
  command -v "$tool" >/dev/null || { echo "decode_rate.sh: $tool not found; apt-get install libjpeg-turbo-progs" >&2; exit 1; }
done

[ -f build/CMakeCache.txt ] || cmake -S . -B build >/dev/null
cmake --build build -j"$(nproc)" --target yoloplan decode_rate >/dev/null

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if [ -n "$dir" ]; then
  mapfile -t files < <(find "$dir" -maxdepth 1 -name '*.jpg' | sort | head -n "$images")
  [ "${#files[@]}" -gt 0 ] || { echo "decode_rate.sh: no .jpg in $dir" >&2; exit 1; }
  size="$(./build/bench/decode_rate --size "${files[0]}")" # "W H" of the first; the set must share it
  img="${size% *}"; pixels=$((${size% *} * ${size#* }))
  what="JPEGs of ${size/ /x} from $dir"
else
  ./build/yoloplan synth --out "$tmp/d" --images "$images" --val 0 --classes 10 --img "$img" --seed 1 >/dev/null
  files=("$tmp"/d/images/train/*.jpg)
  pixels=$((img * img))
  what="synthetic JPEGs of ${img}x${img} (quality 70-95, 4:2:0 below 90, 4:4:4 from 90)"
fi
n="${#files[@]}"

echo "JPEG decode rate: $n $what"
printf '%-40s %9s %9s\n' "decoder" "Mpixel/s" "images/s"
./build/bench/decode_rate --seconds "$seconds" "${files[@]}"

# tjbench: its decompression rate (Mpixels/s, the last field of its -quiet row) per file, averaged.
per_file="$(awk -v s="$seconds" -v n="$n" 'BEGIN { t = s / n; print (t < 0.2 ? 0.2 : t) }')"
tj_sum=0
for f in "${files[@]}"; do
  r="$(tjbench "$f" -rgb -quiet -benchtime "$per_file" -warmup 0.1 2>/dev/null | awk 'NF { last = $NF } END { print last }')"
  tj_sum="$(awk -v a="$tj_sum" -v b="$r" 'BEGIN { print a + b }')"
done
awk -v s="$tj_sum" -v n="$n" -v p="$pixels" \
  'BEGIN { m = s / n; printf "%-40s %9.1f %9.1f\n", "tjbench (TurboJPEG, in memory)", m, m * 1e6 / p }'

# djpeg: every file once per round, as many rounds as fit in the time.
start="$(date +%s.%N)" rounds=0
while :; do
  for f in "${files[@]}"; do djpeg -outfile /dev/null "$f"; done
  rounds=$((rounds + 1))
  el="$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')"
  awk -v e="$el" -v s="$seconds" 'BEGIN { exit !(e >= s) }' && break
done
awk -v r="$rounds" -v n="$n" -v e="$el" -v p="$pixels" \
  'BEGIN { i = r * n / e; printf "%-40s %9.1f %9.1f   (a process per file)\n", "djpeg (libjpeg-turbo, file to /dev/null)", i * p / 1e6, i }'
