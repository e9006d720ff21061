#!/usr/bin/env bash
# bench/cpu_vs_pytorch.sh [--steps N] [--warmup N] [--models "yolov5n yolov5s"] [--build-dir DIR]
#                         [--policy yoloplan|yoloplan+cat|pytorch] [--rounds R] [--ema on|off]
#
# yoloplan's CPU executor against the PyTorch reference (bench/reference/train_step_bench.py),
# side by side: batch 8, image 320, 2 threads, random data (images in [0, 1], ~8 boxes per
# image), N timed steps after the warm-up, a fresh process per model and per side. yoloplan runs
# `bench-step --policy P` (default yoloplan+cat: the fastest saving policy whose peak RSS stays
# well inside the target below); its convolutions run through oneDNN. Also measures
# the machine's sgemm rate (bench/sgemm_rate.c, oneDNN's dnnl_sgemm) and prints, per model:
#   yoloplan img/s, PyTorch img/s (the faster of NCHW and channels_last, named), their ratio,
#   both peak RSS and their ratio, yoloplan's training GFLOP/s (3 x forward FLOPs x batch per
#   step) and its fraction of the 2048^3 sgemm rate, then PASS/MISS against the issue's targets
#   (img/s >= 1.3x PyTorch for yolov5s, >= 1.5x for yolov5n; peak RSS <= 0.5x PyTorch's).
# The machine is a shared virtual machine whose speed drifts by tens of percent from minute to
# minute, so each side runs R rounds (default 4) taken in turn (yoloplan, PyTorch NCHW, PyTorch
# channels_last, then again). img/s is batch over the median of the rounds' median step times
# (the mean is printed beside it). The ratio is the median over the rounds of each round's
# ratio (yoloplan against PyTorch's faster format in the same round, a minute apart), which
# cancels most of the drift; its range is printed too, and the verdict uses that median. The
# ratio of the two sides' fastest steps over all rounds is printed beside it (interference only
# adds time, so the minimum is each side's least disturbed figure).
#
# Both sides update the weights' EMA after every optimizer step, as YOLOv5's train.py does
# (--ema off leaves it out of both: bench-step --no-ema, the reference without --ema).
#
# A benchmark, not a test: exits 0 whatever the figures (2 on bad usage; 1 when yoloplan and
# sgemm_rate cannot be built, or `yoloplan info` fails; a failed timed run shows as "failed").
# Needs Debian's python3-torch for the PyTorch side (scripts/deps-reference.sh); without it only
# yoloplan's figures are printed. Takes a few minutes with the defaults on 2 cores (results stay
# in /tmp/cpu_vs_pytorch.*).
set -uo pipefail
cd "$(dirname "$0")/.."

steps=8
warmup=2
models="yolov5n yolov5s"
build=build
policy=yoloplan+cat
batch=8
img=320
threads=2
rounds=4
ema=on
usage() {
  echo "usage: bench/cpu_vs_pytorch.sh [--steps N] [--warmup N] [--models \"yolov5n yolov5s\"] [--build-dir DIR]" \
       "[--policy yoloplan|yoloplan+cat|pytorch] [--rounds R] [--ema on|off]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) [ $# -ge 2 ] || usage; steps="$2"; shift 2 ;;
    --warmup) [ $# -ge 2 ] || usage; warmup="$2"; shift 2 ;;
    --models) [ $# -ge 2 ] || usage; models="$2"; shift 2 ;;
    --build-dir) [ $# -ge 2 ] || usage; build="$2"; shift 2 ;;
    --policy) [ $# -ge 2 ] || usage; policy="$2"; shift 2 ;;
    --rounds) [ $# -ge 2 ] || usage; rounds="$2"; shift 2 ;;
    --ema) [ $# -ge 2 ] || usage; ema="$2"; shift 2 ;;
    -h|--help) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage ;;
  esac
done
[[ "$steps" =~ ^[1-9][0-9]*$ ]] || usage
[[ "$warmup" =~ ^[0-9]+$ ]] || usage
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || usage
[ "$ema" = on ] || [ "$ema" = off ] || usage
yp_ema=(); pt_ema=(--ema)
[ "$ema" = on ] || { yp_ema=(--no-ema); pt_ema=(); }
[ -n "${models// /}" ] || usage
case "$policy" in yoloplan|yoloplan+cat|pytorch) ;; *) usage ;; esac

py=/usr/bin/python3
[ -x "$py" ] || py="$(command -v python3 || true)"
[ -n "$py" ] || { echo "cpu_vs_pytorch.sh: python3 is needed (for the table)" >&2; exit 1; }

# ---- build (a no-op when up to date) ----
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" >/dev/null || { echo "cpu_vs_pytorch.sh: configure failed" >&2; exit 1; }
fi
if ! cmake --build "$build" --target yoloplan sgemm_rate -j2 >/tmp/cpu_vs_pytorch.build.$$ 2>&1; then
  tail -20 /tmp/cpu_vs_pytorch.build.$$ >&2
  if [ -x "$build/yoloplan" ] && [ -x "$build/bench/sgemm_rate" ]; then
    echo "cpu_vs_pytorch.sh: WARNING: the build failed; measuring the binaries already in $build" >&2
  else
    rm -f /tmp/cpu_vs_pytorch.build.$$
    echo "cpu_vs_pytorch.sh: build failed" >&2
    exit 1
  fi
fi
rm -f /tmp/cpu_vs_pytorch.build.$$
yp="$build/yoloplan"
sgemm="$build/bench/sgemm_rate"

out="$(mktemp -d /tmp/cpu_vs_pytorch.XXXXXX)"
have_torch=1
"$py" -c "import torch" 2>/dev/null || have_torch=0
[ "$have_torch" = 1 ] || echo "cpu_vs_pytorch.sh: no PyTorch for $py (bash scripts/deps-reference.sh): yoloplan only" >&2

field() {  # field FILE KEY [FORMAT]: one value of a JSON object, formatted
  "$py" -c 'import json,sys
try: print(format(json.load(open(sys.argv[1]))[sys.argv[2]], sys.argv[3]))
except Exception: print("n/a")' "$1" "$2" "${3:-}"; }

echo "steps: $steps timed + $warmup warm-up, $rounds rounds; batch $batch, image $img, $threads threads;" \
     "yoloplan policy $policy; EMA $ema; results in $out"

# ---- the sgemm rate ----
"$sgemm" --threads "$threads" --reps 5 --json >"$out/sgemm.json" 2>"$out/sgemm.err" \
  || { cat "$out/sgemm.err" >&2; echo "cpu_vs_pytorch.sh: sgemm_rate failed" >&2; }
echo "$("$py" -c 'import json,sys
try:
    s = json.load(open(sys.argv[1]))
    print("oneDNN sgemm (isa %s): 2048^3 %.1f GFLOP/s, 6400x64x576 %.1f GFLOP/s"
          % (s["isa"], s["square"]["gflops"], s["conv"]["gflops"]))
except Exception: print("oneDNN sgemm: n/a")' "$out/sgemm.json")"

# ---- the runs ----
for m in $models; do
  "$yp" info --model "$m" --img "$img" --json >"$out/info.$m.json" 2>"$out/info.$m.err" \
    || { cat "$out/info.$m.err" >&2; echo "cpu_vs_pytorch.sh: yoloplan info --model $m failed" >&2; exit 1; }
  for r in $(seq 1 "$rounds"); do
    "$yp" bench-step --model "$m" --batch "$batch" --img "$img" --steps "$steps" --warmup "$warmup" \
      --threads "$threads" --policy "$policy" "${yp_ema[@]}" --json >"$out/yp.$m.$r.json" 2>"$out/yp.$m.$r.err" \
      || { cat "$out/yp.$m.$r.err" >&2; echo "cpu_vs_pytorch.sh: yoloplan bench-step --model $m failed" >&2; }
    echo "[round $r] yoloplan $m: $(field "$out/yp.$m.$r.json" images_per_s .2f) img/s" \
         "(median step $(field "$out/yp.$m.$r.json" ms_per_step_median .0f) ms)," \
         "peak RSS $(field "$out/yp.$m.$r.json" peak_rss_bytes .0f) B, last loss $(field "$out/yp.$m.$r.json" last_loss .6f)"
    [ "$have_torch" = 1 ] || continue
    for f in default channels_last; do
      "$py" bench/reference/train_step_bench.py --model "$m" --batch "$batch" --img "$img" \
        --steps "$steps" --warmup "$warmup" --threads "$threads" --memory-format "$f" "${pt_ema[@]}" \
        >"$out/pt.$m.$f.$r.json" 2>"$out/pt.$m.$f.$r.err" \
        || { tail -5 "$out/pt.$m.$f.$r.err" >&2; echo "cpu_vs_pytorch.sh: PyTorch $m $f failed" >&2; }
      echo "[round $r] PyTorch $m $f: $(field "$out/pt.$m.$f.$r.json" images_per_s .2f) img/s" \
           "(median step $(field "$out/pt.$m.$f.$r.json" ms_per_step_median .0f) ms)," \
           "peak RSS $(field "$out/pt.$m.$f.$r.json" peak_rss_bytes .0f) B"
    done
  done
done

# ---- the table ----
echo
"$py" - "$out" "$batch" "$img" "$threads" "$steps" "$warmup" "$models" "$policy" "$rounds" "$ema" <<'EOF'
import json, os, statistics, sys

out, batch, img, threads, steps, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), \
    int(sys.argv[5]), int(sys.argv[6])
models, policy, rounds, ema = sys.argv[7].split(), sys.argv[8], int(sys.argv[9]), sys.argv[10]
TARGET_IPS = {"yolov5s": 1.3, "yolov5n": 1.5}
TARGET_RSS = 0.5


def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def combined(prefix):
    """The rounds of one side as one record: img/s from the median of the rounds' median step
    times, the mean beside it, the largest peak RSS."""
    runs = [r for r in (load("%s.%d.json" % (prefix, i)) for i in range(1, rounds + 1)) if r]
    if not runs:
        return None
    c = dict(runs[-1])
    c["ms_median"] = statistics.median(r["ms_per_step_median"] for r in runs)
    c["ms_mean"] = statistics.mean(r["ms_per_step"] for r in runs)
    c["ms_min"] = min(r["ms_per_step_min"] for r in runs)
    c["images_per_s"] = batch * 1e3 / c["ms_median"]
    c["images_per_s_mean"] = batch * 1e3 / c["ms_mean"]
    c["peak_rss_bytes"] = max(r["peak_rss_bytes"] for r in runs)
    c["rounds"] = len(runs)
    c["round_ms"] = {i: r["ms_per_step_median"] for i, r in enumerate(
        (load("%s.%d.json" % (prefix, i)) for i in range(1, rounds + 1)), 1) if r}
    return c


def round_ratios(y, pt):
    """yoloplan's img/s over PyTorch's, round by round (rounds where both ran)."""
    return [pt["round_ms"][i] / y["round_ms"][i] for i in sorted(y["round_ms"]) if i in pt["round_ms"]]


def mib(b):
    return "%.0f MiB" % (b / 1048576.0) if b else "n/a"


def fmt_name(p):
    return "NCHW" if p["memory_format"] == "default" else "channels_last (NHWC)"


sg = load("sgemm.json")
rate = sg["square"]["gflops"] if sg else float("nan")
print("yoloplan vs PyTorch on the CPU: batch %d, image %d, %d threads, %d rounds of %d timed steps (+%d warm-up), "
      "random data, yoloplan policy %s, %s" % (batch, img, threads, rounds, steps, warmup, policy, "EMA on both sides" if ema == "on" else "no EMA"))
if sg:
    print("  oneDNN sgemm (isa %s): 2048^3 %.1f GFLOP/s, 6400x64x576 %.1f GFLOP/s"
          % (sg["isa"], sg["square"]["gflops"], sg["conv"]["gflops"]))
    if not sg.get("ok"):
        print("  WARNING: sgemm_rate's spot check FAILED (max rel err %.1e / %.1e)"
              % (sg["square"]["max_rel_err"], sg["conv"]["max_rel_err"]))
else:
    print("  oneDNN sgemm: n/a")

head = ("model", "yoloplan img/s", "(mean)", "PyTorch img/s", "(mean)", "ratio", "yoloplan RSS", "PyTorch RSS", "ratio",
        "train GFLOP/step", "yoloplan GFLOP/s", "of sgemm", "PyTorch GFLOP/s")
rows, verdicts, notes = [], [], []
for m in models:
    y = combined("yp.%s" % m)
    info = load("info.%s.json" % m)
    pts = [p for p in (combined("pt.%s.%s" % (m, f)) for f in ("default", "channels_last")) if p]
    pt = max(pts, key=lambda p: p["images_per_s"]) if pts else None
    flops = 3.0 * info["totals"]["flops"] * batch if info else float("nan")
    if y:
        notes.append("  yoloplan %s: %.2f img/s (ms/step %.0f median, %.0f mean, %.0f fastest; %d rounds), %s, arena %s, "
                     "last loss %.6f" % (m, y["images_per_s"], y["ms_median"], y["ms_mean"], y["ms_min"], y["rounds"],
                                         mib(y["peak_rss_bytes"]), mib(y["arena_bytes"]), y["last_loss"]))
    for p in pts:
        notes.append("  PyTorch %s %s: %.2f img/s (ms/step %.0f median, %.0f mean, %.0f fastest; %d rounds), %s" % (
            m, fmt_name(p), p["images_per_s"], p["ms_median"], p["ms_mean"], p["ms_min"], p["rounds"],
            mib(p["peak_rss_bytes"])))
    if not y:
        rows.append((m, "failed") + ("",) * (len(head) - 2))
        continue
    gfs = flops / (y["ms_median"] * 1e-3) * 1e-9
    ratios = round_ratios(y, pt) if pt else []
    r_ips = statistics.median(ratios) if ratios else float("nan")
    if ratios:
        notes.append("  %s: yoloplan/PyTorch img/s round by round: %s (median %.2fx)"
                     % (m, ", ".join("%.2fx" % r for r in ratios), r_ips))
    # a second estimate: interference from other tenants only ever adds time, so the fastest
    # step of all rounds is each side's least disturbed figure
    r_min = pt["ms_min"] / y["ms_min"] if pt else float("nan")
    if pt:
        notes.append("  %s: fastest steps: yoloplan %.0f ms, PyTorch %.0f ms: %.2fx" % (m, y["ms_min"], pt["ms_min"], r_min))
    r_rss = y["peak_rss_bytes"] / pt["peak_rss_bytes"] if pt else float("nan")
    rows.append((m, "%.2f" % y["images_per_s"], "(%.2f)" % y["images_per_s_mean"],
                 "%.2f %s" % (pt["images_per_s"], "NCHW" if pt["memory_format"] == "default" else "NHWC")
                 if pt else "n/a", "(%.2f)" % pt["images_per_s_mean"] if pt else "", "%.2fx" % r_ips if pt else "n/a", mib(y["peak_rss_bytes"]),
                 mib(pt["peak_rss_bytes"]) if pt else "n/a", "%.2fx" % r_rss if pt else "n/a",
                 "%.1f" % (flops * 1e-9), "%.1f" % gfs, "%.1f%%" % (100 * gfs / rate),
                 "%.1f" % (flops / (pt["ms_median"] * 1e-3) * 1e-9) if pt else "n/a"))
    if pt:
        t = TARGET_IPS.get(m)
        v = []
        if t is not None:
            v.append("img/s %.2fx PyTorch (target >= %.1fx): %s (fastest steps: %.2fx)"
                     % (r_ips, t, "PASS" if r_ips >= t else "MISS", r_min))
        v.append("peak RSS %.2fx PyTorch (target <= %.1fx): %s" % (r_rss, TARGET_RSS,
                                                                   "PASS" if r_rss <= TARGET_RSS else "MISS"))
        verdicts.append((m, "; ".join(v)))

w = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
print()
print("  ".join(h.ljust(w[i]) if i < 1 else h.rjust(w[i]) for i, h in enumerate(head)))
print("  ".join("-" * x for x in w))
for r in rows:
    print("  ".join(str(c).ljust(w[i]) if i < 1 else str(c).rjust(w[i]) for i, c in enumerate(r)))
print()
print("img/s: batch / the median of the rounds' median step times ((mean): batch / the mean step time); ratio:")
print("the median of the per-round ratios (yoloplan and PyTorch a minute apart; listed under Runs); PyTorch:")
print("the faster of NCHW (default) and channels_last (NHWC); peak RSS: getrusage ru_maxrss, the largest of the rounds;")
print("train GFLOP/step = 3 x forward FLOPs (yoloplan info, batch 1) x batch; 'of sgemm': yoloplan's GFLOP/s over")
print("oneDNN's 2048^3 sgemm rate; 'PyTorch GFLOP/s': the same FLOPs over PyTorch's median step time.")
if notes:
    print()
    print("Runs:")
    for n in notes:
        print(n)
print()
print("Targets (yoloplan policy %s):" % policy)
for v in verdicts:
    print("  %-8s %s" % v)
if not verdicts:
    print("  none evaluated (no PyTorch figures)")
EOF
exit 0
