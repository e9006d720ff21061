#!/usr/bin/env bash
# bench/loader_vs_opencv.sh [--img S|WxH] [--images N] [--epochs E] [--rounds R] [--build-dir DIR]
#                           [--no-decode] [--jpeg-only]
#
# The training loader's speed, side by side on the same images: yoloplan's (build/bench/loader_rate:
# yp_loader's worker threads, decode + mosaic + random_perspective + HSV + flip, batch 16 at 640,
# hyp.scratch-low) and the Python + OpenCV reference of the same pipeline as Ultralytics writes it
# (bench/reference/loader_ref.py: LoadImagesAndLabels.__getitem__ on a torch DataLoader with worker
# processes). Both with 2 workers (the goal: yoloplan >= 1.5x the reference) and with 1, on a fresh
# `yoloplan synth` set (N images of S, JPEG and PNG mixed as synth makes them, about a third PNG;
# --jpeg-only: N JPEGs, as in COCO and most detection sets; 640x640 by default, so load_image does
# not resize, as for most of COCO at 640), E epochs of whole batches per run,
# the first batch of each worker a warm-up. Threads pinned alike: OMP_NUM_THREADS=1 for both,
# OpenCV's own threads off (cv2.setNumThreads(0)) and torch at 1 thread in each worker.
#
# The machine is shared and its speed drifts from minute to minute, so both sides run R rounds
# (default 3) in turn; img/s is the median over the rounds, the ratio the median of each round's
# ratio (the two sides seconds apart), and the verdict uses it. Then the decode step alone on
# this set's files (yp_image_decode against cv2.imdecode, JPEG and PNG apart, from memory, one
# thread) and bench/decode_rate.sh --dir on 30 of its JPEGs (the JPEG decoder against
# libjpeg-turbo's tjbench and djpeg: the limit of that step), unless --no-decode.
#
# A benchmark, not a test: exits 0 whatever the figures (2 on bad usage, 1 when the build, synth
# or a side fails). Needs python3-opencv and python3-torch for the reference
# (scripts/deps-reference.sh; without torch the reference uses a multiprocessing Pool and says so)
# and libjpeg-turbo-progs for decode_rate.sh (scripts/deps.sh). About 4 minutes with the defaults
# on 2 cores.
set -uo pipefail
cd "$(dirname "$0")/.."

img=640 images=200 epochs=2 rounds=3 build=build decode=1 jpeg_only=0
usage() {
  echo "usage: bench/loader_vs_opencv.sh [--img S|WxH] [--images N] [--epochs E] [--rounds R] [--build-dir DIR]" \
       "[--no-decode] [--jpeg-only]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --img) [ $# -ge 2 ] || usage; img="$2"; shift 2 ;;
    --images) [ $# -ge 2 ] || usage; images="$2"; shift 2 ;;
    --epochs) [ $# -ge 2 ] || usage; epochs="$2"; shift 2 ;;
    --rounds) [ $# -ge 2 ] || usage; rounds="$2"; shift 2 ;;
    --build-dir) [ $# -ge 2 ] || usage; build="$2"; shift 2 ;;
    --no-decode) decode=0; shift ;;
    --jpeg-only) jpeg_only=1; shift ;;
    -h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage ;;
  esac
done
[[ "$img" =~ ^[1-9][0-9]*(x[1-9][0-9]*)?$ ]] || usage
[[ "$images" =~ ^[1-9][0-9]*$ ]] && [ "$images" -ge 48 ] || { echo "loader_vs_opencv.sh: --images must be >= 48 (3 batches of 16)" >&2; exit 2; }
[[ "$epochs" =~ ^[1-9][0-9]*$ ]] || usage
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || usage
py=/usr/bin/python3
"$py" -c 'import cv2' 2>/dev/null || { echo "loader_vs_opencv.sh: $py has no cv2; bash scripts/deps-reference.sh" >&2; exit 1; }

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" >/dev/null || { echo "loader_vs_opencv.sh: configure failed" >&2; exit 1; }
fi
cmake --build "$build" --target yoloplan loader_rate decode_rate -j2 >/dev/null ||
  { echo "loader_vs_opencv.sh: build failed (cmake --build $build --target loader_rate)" >&2; exit 1; }

tmp="$(mktemp -d /tmp/loader_vs_opencv.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
n_synth="$images"
[ "$jpeg_only" = 1 ] && n_synth=$((images * 3 / 2 + 16)) # synth makes about a third PNG
"$build/yoloplan" synth --out "$tmp/d" --images "$n_synth" --val 0 --classes 10 --img "$img" --seed 1 >"$tmp/synth.txt" ||
  { echo "loader_vs_opencv.sh: yoloplan synth failed" >&2; exit 1; }
if [ "$jpeg_only" = 1 ]; then # drop the PNGs, then JPEGs beyond N, with their label files
  find "$tmp/d/images/train" -name '*.png' | sort >"$tmp/drop"
  find "$tmp/d/images/train" -name '*.jpg' | sort | tail -n +$((images + 1)) >>"$tmp/drop"
  while read -r f; do
    b="$(basename "${f%.*}")"
    rm -f "$f" "$tmp/d/labels/train/$b.txt"
  done <"$tmp/drop"
fi
njpg=$(find "$tmp/d/images/train" -name '*.jpg' | wc -l)
npng=$(find "$tmp/d/images/train" -name '*.png' | wc -l)
export OMP_NUM_THREADS=1
side="$("$py" -c 'import torch; print("torch DataLoader")' 2>/dev/null || echo "multiprocessing Pool")"
echo "loader speed: $((njpg + npng)) synthetic images of $img ($njpg JPEG, $npng PNG), batch 16, img 640, hyp.scratch-low"
echo "  (mosaic 1, perspective: translate 0.1 scale 0.5, HSV, fliplr 0.5), $epochs epochs of whole batches per run,"
echo "  $rounds rounds; yoloplan: yp_loader threads; reference: Python + OpenCV $("$py" -c 'import cv2; print(cv2.__version__)') on a $side"
echo "  (worker processes); OMP_NUM_THREADS=1, cv2.setNumThreads(0), $(getconf _NPROCESSORS_ONLN) CPUs"

# rates[side,workers,round]
declare -A rate
for r in $(seq 1 "$rounds"); do
  out="$("$build/bench/loader_rate" --data "$tmp/d/data.yaml" --img 640 --batch 16 --epochs "$epochs" --workers 2,1 2>&1)" ||
    { echo "$out" >&2; echo "loader_vs_opencv.sh: loader_rate failed" >&2; exit 1; }
  while read -r _ _ w _ _ _ _ _ v _; do rate[yp,$w,$r]="$v"; done < <(grep '^loader_rate workers' <<<"$out")
  for w in 2 1; do
    o="$("$py" bench/reference/loader_ref.py --data "$tmp/d/data.yaml" --img 640 --batch 16 --epochs "$epochs" --workers "$w" 2>&1)" ||
      { echo "$o" >&2; echo "loader_vs_opencv.sh: loader_ref.py failed" >&2; exit 1; }
    rate[ref,$w,$r]="$(awk '/^loader_ref workers/ { print $9 }' <<<"$o")"
  done
  printf '  round %d: yoloplan %s / %s img/s (2 / 1 workers), reference %s / %s\n' "$r" "${rate[yp,2,$r]}" "${rate[yp,1,$r]}" \
    "${rate[ref,2,$r]}" "${rate[ref,1,$r]}"
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
echo
printf '%-8s %16s %22s %8s   %s\n' workers "yoloplan img/s" "Python+OpenCV img/s" ratio "ratio by round"
for w in 2 1; do
  ys="" rs="" qs=""
  for r in $(seq 1 "$rounds"); do
    ys+=" ${rate[yp,$w,$r]}" rs+=" ${rate[ref,$w,$r]}"
    qs+=" $(awk -v a="${rate[yp,$w,$r]}" -v b="${rate[ref,$w,$r]}" 'BEGIN { printf "%.3f", a / b }')"
  done
  y="$(median <<<"$ys")" ref="$(median <<<"$rs")" q="$(median <<<"$qs")"
  printf '%-8s %16.1f %22.1f %7.2fx  %s\n' "$w" "$y" "$ref" "$q" "$(for x in $qs; do printf '%.2fx ' "$x"; done)"
  [ "$w" = 2 ] && q2="$q"
done
awk -v q="$q2" 'BEGIN { v = (q >= 1.5) ? "PASS" : "FAIL"; printf "loader speed at 2 workers: %.2fx the Python + OpenCV reference (target >= 1.5x): %s\n", q, v }'

[ "$decode" = 1 ] || exit 0
echo
echo "decode alone, one thread, from memory, this set's files (the reference decodes with cv2.imread):"
printf '%-40s %9s %9s\n' "decoder" "Mpixel/s" "images/s"
for ext in jpg png; do # decode_rate's line: a 40-column name, then the figures
  compgen -G "$tmp/d/images/train/*.$ext" >/dev/null || continue
  "$build/bench/decode_rate" --seconds 2 "$tmp"/d/images/train/*."$ext" |
    awk -v n="yoloplan yp_image_decode, ${ext^^}" '{ printf "%-40s%s\n", n, substr($0, 41) }'
done
"$py" - "$tmp/d/images/train" <<'EOF'
import glob, os, sys, time
import cv2, numpy as np
cv2.setNumThreads(0)
for ext in ("jpg", "png"):
    blobs = [np.fromfile(f, np.uint8) for f in sorted(glob.glob(os.path.join(sys.argv[1], "*." + ext)))]
    if not blobs:
        continue
    n = px = 0
    t0 = t = time.monotonic()
    while t - t0 < 2:
        for b in blobs:
            im = cv2.imdecode(b, cv2.IMREAD_COLOR)
            n, px = n + 1, px + im.shape[0] * im.shape[1]
        t = time.monotonic()
    name = "OpenCV cv2.imdecode, " + ext.upper()
    print(f"{name:<40} {px / (t - t0) / 1e6:9.1f} {n / (t - t0):9.1f}   ({len(blobs)} files, {n} decodes, {t - t0:.2f} s)")
EOF
echo
bash bench/decode_rate.sh --dir "$tmp/d/images/train" --images 30
