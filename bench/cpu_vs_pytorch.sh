#!/usr/bin/env bash
# bench/cpu_vs_pytorch.sh [--steps N] [--warmup N] [--models "yolov5n yolov5s"] [--build-dir DIR]
#
# yoloplan's CPU executor against the PyTorch reference (bench/reference/train_step_bench.py),
# side by side: batch 8, image 320, 2 threads, random data (images in [0, 1], ~8 boxes per
# image), N timed steps after the warm-up, a fresh process per model and per side. Also measures
# the machine's sgemm rate (bench/sgemm_rate.c) and prints, per model:
#   yoloplan img/s, PyTorch img/s (the faster of NCHW and channels_last, named), their ratio,
#   both peak RSS and their ratio, yoloplan's training GFLOP/s (3 x forward FLOPs x batch per
#   step) and its fraction of the sgemm rate, then PASS/MISS against the issue's targets
#   (img/s >= 1.3x PyTorch for yolov5s, >= 1.5x for yolov5n; peak RSS <= 0.5x PyTorch's).
#
# OpenBLAS: the first row set runs with the environment as it is (the core OpenBLAS picked is
# printed). When the CPU has avx512f and that core is not SkylakeX, a second row set runs every
# program (sgemm_rate, yoloplan and PyTorch alike) with OPENBLAS_CORETYPE=SkylakeX; it is only
# reported after checking that yoloplan's loss there is finite and within 1e-3 of the as-is
# run's (same seed, same steps) and that sgemm_rate's spot check passed. The environment
# of the tests and of CI is never changed: this script sets the variable for its own children.
# The check runs 3 steps (no warm-up) on both settings; the timed runs' last losses are shown too
# but differ more, as rounding differences between correct kernels grow with training.
#
# A benchmark, not a test: exits 0 whatever the figures (2 on bad usage; 1 when yoloplan and
# sgemm_rate cannot be built, or `yoloplan info` fails; a failed timed run shows as "failed"). Needs Debian's python3-torch for the PyTorch side
# (scripts/deps-reference.sh); without it only yoloplan's figures are printed.
# Takes about 5 minutes with the defaults on 2 cores (results stay in /tmp/cpu_vs_pytorch.*).
set -uo pipefail
cd "$(dirname "$0")/.."

steps=10
warmup=2
models="yolov5n yolov5s"
build=build
batch=8
img=320
threads=2
check_steps=3
usage() { echo "usage: bench/cpu_vs_pytorch.sh [--steps N] [--warmup N] [--models \"yolov5n yolov5s\"] [--build-dir DIR]" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) [ $# -ge 2 ] || usage; steps="$2"; shift 2 ;;
    --warmup) [ $# -ge 2 ] || usage; warmup="$2"; shift 2 ;;
    --models) [ $# -ge 2 ] || usage; models="$2"; shift 2 ;;
    --build-dir) [ $# -ge 2 ] || usage; build="$2"; shift 2 ;;
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage ;;
  esac
done
[[ "$steps" =~ ^[1-9][0-9]*$ ]] || usage
[[ "$warmup" =~ ^[0-9]+$ ]] || usage
[ -n "${models// /}" ] || usage

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

# ---- the OpenBLAS settings to run under ----
envs=(asis)
"$sgemm" --threads "$threads" --reps 5 --json >"$out/sgemm.asis.json" 2>"$out/sgemm.asis.err" \
  || { cat "$out/sgemm.asis.err" >&2; echo "cpu_vs_pytorch.sh: sgemm_rate failed" >&2; }
asis_core="$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["core"])' "$out/sgemm.asis.json" 2>/dev/null || echo '?')"
avx512=0
grep -qw avx512f /proc/cpuinfo 2>/dev/null && avx512=1
if [ "$avx512" = 1 ] && [ "$asis_core" != SkylakeX ]; then
  envs+=(skx)
fi
echo "OpenBLAS as-is: core $asis_core (OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}, OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-unset}); avx512f: $([ "$avx512" = 1 ] && echo yes || echo no)"
echo "steps: $steps timed + $warmup warm-up; batch $batch, image $img, $threads threads; results in $out"

with_env() {  # with_env ENV CMD...: run CMD under the OpenBLAS setting ENV
  local e="$1"; shift
  if [ "$e" = skx ]; then OPENBLAS_CORETYPE=SkylakeX "$@"; else "$@"; fi
}

field() {  # field FILE KEY [FORMAT]: one value of a JSON object, formatted
  "$py" -c 'import json,sys
try: print(format(json.load(open(sys.argv[1]))[sys.argv[2]], sys.argv[3]))
except Exception: print("n/a")' "$1" "$2" "${3:-}"; }

for e in "${envs[@]}"; do
  if [ "$e" = skx ]; then
    with_env "$e" "$sgemm" --threads "$threads" --reps 5 --json >"$out/sgemm.$e.json" 2>"$out/sgemm.$e.err" \
      || cat "$out/sgemm.$e.err" >&2
  fi
  echo "[$e] sgemm_rate: $("$py" -c 'import json,sys
try:
    s = json.load(open(sys.argv[1]))
    print("core %s, 2048^3 %.1f GFLOP/s, 6400x64x576 %.1f GFLOP/s" % (s["core"], s["square"]["gflops"], s["conv"]["gflops"]))
except Exception: print("n/a")' "$out/sgemm.$e.json")"
  for m in $models; do
    "$yp" info --model "$m" --img "$img" --json >"$out/info.$m.json" 2>"$out/info.$m.err" \
      || { cat "$out/info.$m.err" >&2; echo "cpu_vs_pytorch.sh: yoloplan info --model $m failed" >&2; exit 1; }
    with_env "$e" "$yp" bench-step --model "$m" --batch "$batch" --img "$img" --steps "$steps" --warmup "$warmup" \
      --threads "$threads" --json >"$out/yp.$e.$m.json" 2>"$out/yp.$e.$m.err" \
      || { cat "$out/yp.$e.$m.err" >&2; echo "cpu_vs_pytorch.sh: yoloplan bench-step --model $m failed ($e)" >&2; }
    if [ "${#envs[@]}" -gt 1 ]; then  # the numerics check: 3 steps from the same start, no warm-up
      with_env "$e" "$yp" bench-step --model "$m" --batch "$batch" --img "$img" --steps "$check_steps" --warmup 0 \
        --threads "$threads" --json >"$out/check.$e.$m.json" 2>"$out/check.$e.$m.err" || cat "$out/check.$e.$m.err" >&2
    fi
    echo "[$e] yoloplan $m: $(field "$out/yp.$e.$m.json" images_per_s .2f) img/s," \
         "peak RSS $(field "$out/yp.$e.$m.json" peak_rss_bytes .0f) B, last loss $(field "$out/yp.$e.$m.json" last_loss .6f)"
    [ "$have_torch" = 1 ] || continue
    if [ "$e" = asis ]; then
      formats="default channels_last"
    else  # the format that won as-is (PyTorch's convs run in oneDNN, which OpenBLAS does not touch)
      formats="$("$py" - "$out/pt.asis.$m.default.json" "$out/pt.asis.$m.channels_last.json" <<'EOF'
import json, sys
best = ("default", 0.0)
for path, fmt in zip(sys.argv[1:], ("default", "channels_last")):
    try:
        v = json.load(open(path))["images_per_s"]
    except Exception:
        continue
    if v > best[1]:
        best = (fmt, v)
print(best[0])
EOF
)"
    fi
    for f in $formats; do
      with_env "$e" "$py" bench/reference/train_step_bench.py --model "$m" --batch "$batch" --img "$img" \
        --steps "$steps" --warmup "$warmup" --threads "$threads" --memory-format "$f" \
        >"$out/pt.$e.$m.$f.json" 2>"$out/pt.$e.$m.$f.err" \
        || { tail -5 "$out/pt.$e.$m.$f.err" >&2; echo "cpu_vs_pytorch.sh: PyTorch $m $f failed ($e)" >&2; }
      echo "[$e] PyTorch $m $f: $(field "$out/pt.$e.$m.$f.json" images_per_s .2f) img/s," \
           "peak RSS $(field "$out/pt.$e.$m.$f.json" peak_rss_bytes .0f) B"
    done
  done
done

# ---- the table ----
echo
"$py" - "$out" "$batch" "$img" "$threads" "$steps" "$warmup" "$models" "${envs[*]}" "$check_steps" <<'EOF'
import json, math, os, sys

out, batch, img, threads, steps, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), \
    int(sys.argv[5]), int(sys.argv[6])
models, envs, check_steps = sys.argv[7].split(), sys.argv[8].split(), int(sys.argv[9])
TARGET_IPS = {"yolov5s": 1.3, "yolov5n": 1.5}
TARGET_RSS = 0.5
LABEL = {"asis": "as-is", "skx": "OPENBLAS_CORETYPE=SkylakeX"}


def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def mib(b):
    return "%.0f MiB" % (b / 1048576.0) if b else "n/a"


sg = {e: load("sgemm.%s.json" % e) for e in envs}
best_rate = max((s["square"]["gflops"] for s in sg.values() if s), default=float("nan"))
print("yoloplan vs PyTorch on the CPU: batch %d, image %d, %d threads, %d timed steps (+%d warm-up), random data"
      % (batch, img, threads, steps, warmup))
for e in envs:
    s = sg[e]
    if s:
        print("  sgemm [%s]: core %s, 2048^3 %.1f GFLOP/s, 6400x64x576 %.1f GFLOP/s (spot check %s)"
              % (LABEL[e], s["core"], s["square"]["gflops"], s["conv"]["gflops"], "ok" if s["ok"] else "FAILED"))
    else:
        print("  sgemm [%s]: n/a" % LABEL[e])

# Verification of the other core's rows: yoloplan's loss after the same 3 steps from the same
# start (forward, backward and two SGD updates through that core's GEMMs) must be finite and within
# 1e-3 of the as-is run's, and sgemm_rate's spot check must pass. The timed runs' last losses (after
# warm-up + N steps) are shown too, for information: rounding differences between two correct GEMM
# kernels grow with every training step (~1e-7 after 3 steps, ~1e-4 after 6, ~1e-2 after 12 here,
# for Haswell against Prescott as well), so they are not the test.
verified = {"asis": True}
notes = []
for e in envs:
    if e == "asis":
        continue
    ok = bool(sg.get(e) and sg[e].get("ok"))
    why = [] if ok else ["sgemm_rate's spot check failed"]
    for m in models:
        a, b = load("check.asis.%s.json" % m), load("check.%s.%s.json" % (e, m))
        ta, tb = load("yp.asis.%s.json" % m), load("yp.%s.%s.json" % (e, m))
        if not a or not b:
            ok = False
            why.append("%s: no check result" % m)
            continue
        la, lb = a["last_loss"], b["last_loss"]
        good = math.isfinite(la) and math.isfinite(lb) and abs(la - lb) <= 1e-3
        if tb:
            good &= math.isfinite(tb["last_loss"])
        ok &= good
        txt = "%s loss after %d steps %.7f vs %.7f as-is (|diff| %.1e)%s" % (
            m, check_steps, lb, la, abs(lb - la), "" if good else " > 1e-3 or not finite")
        if ta and tb:
            txt += ", after %d: %.5f vs %.5f" % (steps + warmup, tb["last_loss"], ta["last_loss"])
        why.append(txt)
    verified[e] = ok
    notes.append("  %s: %s: %s" % (LABEL[e], "VERIFIED" if ok else "NOT VERIFIED, not reported", "; ".join(why)))

head = ("model", "OpenBLAS", "yoloplan img/s", "PyTorch img/s", "ratio", "yoloplan RSS", "PyTorch RSS", "ratio",
        "train GFLOP/step", "yoloplan GFLOP/s", "of sgemm", "of best sgemm", "PyTorch GFLOP/s")
rows, verdicts = [], []
for e in envs:
    for m in models:
        y = load("yp.%s.%s.json" % (e, m))
        info = load("info.%s.json" % m)
        pts = [p for p in (load("pt.%s.%s.%s.json" % (e, m, f)) for f in ("default", "channels_last")) if p]
        pt = max(pts, key=lambda p: p["images_per_s"]) if pts else None
        core = sg[e]["core"] if sg.get(e) else "?"
        tag = "%s (%s)" % (LABEL[e], core)
        if not verified[e]:
            rows.append((m, tag, "not verified") + ("",) * 10)
            continue
        if not y:
            rows.append((m, tag, "failed") + ("",) * 10)
            continue
        flops = 3.0 * info["totals"]["flops"] * batch if info else float("nan")
        gfs = flops / (y["ms_per_step"] * 1e-3) * 1e-9
        rate = sg[e]["square"]["gflops"] if sg.get(e) else float("nan")
        r_ips = y["images_per_s"] / pt["images_per_s"] if pt else float("nan")
        r_rss = y["peak_rss_bytes"] / pt["peak_rss_bytes"] if pt else float("nan")
        rows.append((m, tag, "%.2f" % y["images_per_s"],
                     "%.2f %s" % (pt["images_per_s"], "NCHW" if pt["memory_format"] == "default" else "NHWC")
                     if pt else "n/a", "%.2fx" % r_ips if pt else "n/a", mib(y["peak_rss_bytes"]),
                     mib(pt["peak_rss_bytes"]) if pt else "n/a", "%.2fx" % r_rss if pt else "n/a",
                     "%.1f" % (flops * 1e-9), "%.1f" % gfs, "%.1f%%" % (100 * gfs / rate),
                     "%.1f%%" % (100 * gfs / best_rate),
                     "%.1f" % (flops / (pt["ms_per_step"] * 1e-3) * 1e-9) if pt else "n/a"))
        if pt:
            t = TARGET_IPS.get(m)
            v = []
            if t is not None:
                v.append("img/s %.2fx PyTorch (target >= %.1fx): %s" % (r_ips, t, "PASS" if r_ips >= t else "MISS"))
            v.append("peak RSS %.2fx PyTorch (target <= %.1fx): %s" % (r_rss, TARGET_RSS,
                                                                       "PASS" if r_rss <= TARGET_RSS else "MISS"))
            verdicts.append((m, tag, "; ".join(v)))
        for p in pts:
            notes.append("  PyTorch %s %s %s: %.2f img/s (%.0f ms/step mean, %.0f median, %.0f fastest), %s" % (
                m, LABEL[e], "NCHW" if p["memory_format"] == "default" else "channels_last (NHWC)",
                p["images_per_s"], p["ms_per_step"], p["ms_per_step_median"], p["ms_per_step_min"],
                mib(p["peak_rss_bytes"])))

w = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
print()
print("  ".join(h.ljust(w[i]) if i < 2 else h.rjust(w[i]) for i, h in enumerate(head)))
print("  ".join("-" * x for x in w))
for r in rows:
    print("  ".join(str(c).ljust(w[i]) if i < 2 else str(c).rjust(w[i]) for i, c in enumerate(r)))
print()
print("PyTorch img/s: the faster of NCHW (default) and channels_last (NHWC); peak RSS: getrusage ru_maxrss of each")
print("process; train GFLOP/step = 3 x forward FLOPs (yoloplan info, batch 1) x batch; 'of sgemm': yoloplan's")
print("GFLOP/s over the 2048^3 sgemm rate under the same OpenBLAS core; 'of best sgemm': over the fastest core's;")
print("'PyTorch GFLOP/s': the same FLOPs over PyTorch's step time.")
if notes:
    print()
    print("Runs:")
    for n in notes:
        print(n)
print()
print("Targets:")
tw = max((len(v[1]) for v in verdicts), default=0)
for v in verdicts:
    print("  %-8s %-*s  %s" % (v[0], tw, v[1], v[2]))
if not verdicts:
    print("  none evaluated (no PyTorch figures)")
EOF
exit 0
