#!/usr/bin/env bash
# bench/decode_rate.sh - image decode rates, side by side on the same files.
# JPEG: yoloplan's decoder (yp_image_decode_into through build/bench/decode_rate, from memory, into
# reused buffers), libjpeg-turbo's tjbench (TurboJPEG, from memory, RGB out, its defaults: accurate
# DCT, fancy upsampling, as ours and OpenCV's) and djpeg (one process per file, reading the file,
# output thrown away), then ours / tjbench. tjbench times one file at a time; its per-file rates
# are combined as ours is counted, all pixels over all the time (a harmonic mean: an arithmetic
# mean of per-file rates weights the small, fast files up and reads about 25 % high on this set).
# Other formats (when /usr/bin/python3 has cv2, scripts/deps-reference.sh): the same images
# re-encoded as PNG, BMP, TIFF (LZW), WebP (lossy) and PFM by bench/decode_rate.py, decoded by
# ours and by OpenCV's cv2.imdecode (what YOLOv5's loader calls), both from memory on one thread.
# The files are a fresh `yoloplan synth` set, its JPEGs only, or with --dir the first N JPEGs of a
# folder (bench/loader_vs_opencv.sh passes the loader benchmark's images); --rounds R repeats the
# JPEG comparison R times (the machine may be shared: compare the ratios).
# Needs djpeg and tjbench: Debian's libjpeg-turbo-progs (scripts/deps.sh installs it).
#   bash bench/decode_rate.sh [--img S] [--images N] [--seconds T] [--dir D] [--rounds R] [--no-formats]
set -euo pipefail
cd "$(dirname "$0")/.."

img=640 images=30 seconds=2 dir= rounds=1 formats=1
while [ $# -gt 0 ]; do
  case "$1" in
    --img) img="$2"; shift 2 ;;
    --images) images="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --no-formats) formats=0; shift ;;
    *) echo "usage: bash bench/decode_rate.sh [--img S] [--images N] [--seconds T] [--dir D] [--rounds R]" \
            "[--no-formats]" >&2; exit 2 ;;
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
printf '%-44s %9s %9s\n' "decoder" "Mpixel/s" "images/s"
per_file="$(awk -v s="$seconds" -v n="$n" 'BEGIN { t = s / n; print (t < 0.2 ? 0.2 : t) }')"
for round in $(seq "$rounds"); do
  ours="$(./build/bench/decode_rate --seconds "$seconds" "${files[@]}")"
  echo "$ours"
  # tjbench: its decompression rate (Mpixels/s, the last field of its -quiet row) per file; the
  # time per pixel summed over the files (they share one size), so the rate is pixels over time.
  inv_sum=0
  for f in "${files[@]}"; do
    r="$(tjbench "$f" -rgb -quiet -benchtime "$per_file" -warmup 0.1 2>/dev/null |
      awk 'NF { last = $NF } END { print last }')"
    inv_sum="$(awk -v a="$inv_sum" -v b="$r" 'BEGIN { print a + 1 / b }')"
  done
  tj="$(awk -v s="$inv_sum" -v n="$n" 'BEGIN { printf "%.1f", n / s }')"
  awk -v m="$tj" -v p="$pixels" \
    'BEGIN { printf "%-44s %9.1f %9.1f\n", "tjbench (TurboJPEG, in memory)", m, m * 1e6 / p }'
  awk -v o="$(echo "$ours" | awk '{ print $(NF - 7) }')" -v t="$tj" -v r="$round" \
    'BEGIN { printf "%-44s %8.1f%%\n", "round " r ": ours / tjbench", 100 * o / t }'
done

# djpeg: every file once per round, as many rounds as fit in the time.
start="$(date +%s.%N)" rounds=0
while :; do
  for f in "${files[@]}"; do djpeg -outfile /dev/null "$f"; done
  rounds=$((rounds + 1))
  el="$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')"
  awk -v e="$el" -v s="$seconds" 'BEGIN { exit !(e >= s) }' && break
done
awk -v r="$rounds" -v n="$n" -v e="$el" -v p="$pixels" \
  'BEGIN { i = r * n / e
    printf "%-44s %9.1f %9.1f   (a process per file)\n", "djpeg (libjpeg-turbo, file to /dev/null)", i * p / 1e6, i }'

# The other formats: ours and OpenCV's imdecode on the same re-encoded files.
[ "$formats" = 1 ] || exit 0
if ! /usr/bin/python3 -c "import cv2" 2>/dev/null; then
  echo "decode_rate.sh: no cv2 for /usr/bin/python3 (bash scripts/deps-reference.sh); other formats skipped"
  exit 0
fi
/usr/bin/python3 bench/decode_rate.py write "$tmp/fmt" "${files[@]}"
echo
echo "Decode rate per format, Mpixel/s: the same $n images re-encoded (bench/decode_rate.py), from memory, one thread"
printf '%-36s %10s %10s %8s\n' "format" "yoloplan" "cv2.imdecode" "ours/cv2"
for ext in jpg png bmp tif webp pfm; do
  if [ "$ext" = jpg ]; then set -- "${files[@]}"; label="JPEG (the files above)"; else set -- "$tmp"/fmt/*."$ext"; fi
  case "$ext" in png) label="PNG (OpenCV's zlib level 1)" ;; bmp) label="BMP (24-bit)" ;; tif) label="TIFF (LZW)" ;;
    webp) label="WebP (lossy, quality 90)" ;; pfm) label="PFM (32-bit float RGB)" ;; esac
  o="$(./build/bench/decode_rate --seconds "$seconds" "$@" | awk '{ print $(NF - 7) }')"
  c="$(/usr/bin/python3 bench/decode_rate.py rate "$seconds" "$@" | awk '{ print $1 }')"
  awk -v l="$label" -v o="$o" -v c="$c" 'BEGIN { printf "%-36s %10.1f %10.1f %7.0f%%\n", l, o, c, 100 * o / c }'
done
