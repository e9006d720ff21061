#!/usr/bin/env bash
# bench/train_vs_pytorch.sh [--steps 50] [--images 64] [--classes 3] [--img 128] [--batch 8] [--seed 0]
#                           [--epochs 100] [--threads 2] [--build-dir DIR] [--control] [--out DIR]
#
# yoloplan's training loop against PyTorch running YOLOv5 train.py's loop, on the same batches
# from the same initial weights (issue 12's "Matches PyTorch" benchmark): with --no-augment, the
# first N optimizer steps (default 50, warm-up included) must give losses within 1 %.
#
#  1. `yoloplan synth`: a small dataset (--images train images, --classes, --img px);
#  2. bench/reference/train_ref.py init: the reference model (bench/reference/yolov5.py) with the
#     data's nc, after torch.manual_seed(--seed): its state dict is both sides' initial weights;
#  3. build/bench/train_trace: yoloplan's yp_train_run from those weights (yolov5n, CPU, fp32, SGD,
#     EMA, augmentation off, no validation) for as many micro-batches as the schedule needs for N
#     optimizer steps (the warm-up's accumulation grows from 1 to 64/batch: 50 steps at batch 8
#     take 251 micro-batches); it writes every micro-batch's loss and knobs (losses.tsv) and the
#     exact uint8 batches it trained on (batches.bin);
#  4. train_ref.py train: train.py's loop in PyTorch on batches.bin (warm-up, LambdaLR, three SGD
#     groups, nesterov, accumulation, clip_grad_norm_(10), ModelEMA, train.py's loss gains);
#  5. the table: per optimizer step the micro-batches it accumulated, each side's loss (the mean
#     over those micro-batches of box + obj + cls, train.py's loss items), their relative
#     difference, and both gradient norms before clipping. Then: whether both sides ran the same
#     schedule (every micro-batch's three lr, momentum, accumulation and step decision, computed
#     independently on each side), the first micro-batch where the losses part by more than 1e-4,
#     the largest single micro-batch difference (for information), and the verdict: the largest
#     per-step difference against 1 %.
#
# --control also runs the reference a second time in channels_last (the same arithmetic through
# other oneDNN kernels, rounded differently) and adds its loss and difference from the NCHW run:
# how far PyTorch drifts from itself over the same steps. The loss has kinks (CIoU's min/max of the
# box edges), where a rounding difference changes the gradient by a finite amount, so two correct
# implementations agree to ~1e-6 for the first steps and then part by a fraction of a percent.
#
# Exits 0 on PASS, 1 on FAIL or when something fails to build or run, 2 on bad usage. Needs
# Debian's python3-torch (scripts/deps-reference.sh). Takes 1.5 minutes with the defaults on an
# idle 2-core machine (yoloplan ~1, PyTorch ~0.5; --control adds the PyTorch run again), up to
# 15-20 when the machine is shared; files stay in the /tmp/train_vs_pytorch.* folder it names
# (or --out DIR).
set -uo pipefail
cd "$(dirname "$0")/.."

steps=50
images=64
classes=3
img=128
batch=8
seed=0
epochs=100
threads=2
build=build
control=0
out=""
usage() {
  echo "usage: bench/train_vs_pytorch.sh [--steps 50] [--images 64] [--classes 3] [--img 128] [--batch 8]" \
       "[--seed 0] [--epochs 100] [--threads 2] [--build-dir DIR] [--control] [--out DIR]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) [ $# -ge 2 ] || usage; steps="$2"; shift 2 ;;
    --images) [ $# -ge 2 ] || usage; images="$2"; shift 2 ;;
    --classes) [ $# -ge 2 ] || usage; classes="$2"; shift 2 ;;
    --img) [ $# -ge 2 ] || usage; img="$2"; shift 2 ;;
    --batch) [ $# -ge 2 ] || usage; batch="$2"; shift 2 ;;
    --seed) [ $# -ge 2 ] || usage; seed="$2"; shift 2 ;;
    --epochs) [ $# -ge 2 ] || usage; epochs="$2"; shift 2 ;;
    --threads) [ $# -ge 2 ] || usage; threads="$2"; shift 2 ;;
    --build-dir) [ $# -ge 2 ] || usage; build="$2"; shift 2 ;;
    --out) [ $# -ge 2 ] || usage; out="$2"; shift 2 ;;
    --control) control=1; shift ;;
    -h|--help) sed -n '2,37p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage ;;
  esac
done
for v in "$steps" "$images" "$classes" "$img" "$batch" "$epochs" "$threads"; do
  [[ "$v" =~ ^[1-9][0-9]*$ ]] || usage
done
[[ "$seed" =~ ^[0-9]+$ ]] || usage
[ $((img % 32)) = 0 ] || { echo "train_vs_pytorch.sh: --img $img: give a multiple of 32" >&2; exit 2; }
[ "$batch" -le "$images" ] || { echo "train_vs_pytorch.sh: --batch $batch is more than --images $images" >&2; exit 2; }

py=/usr/bin/python3
"$py" -c "import torch, numpy" 2>/dev/null \
  || { echo "train_vs_pytorch.sh: no PyTorch for $py (bash scripts/deps-reference.sh)" >&2; exit 1; }

# ---- build (a no-op when up to date) ----
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" >/dev/null || { echo "train_vs_pytorch.sh: configure failed" >&2; exit 1; }
fi
log="$(mktemp /tmp/train_vs_pytorch.build.XXXXXX)"
if ! cmake --build "$build" --target yoloplan train_trace -j2 >"$log" 2>&1; then
  tail -20 "$log" >&2; rm -f "$log"
  echo "train_vs_pytorch.sh: build failed" >&2; exit 1
fi
rm -f "$log"

if [ -n "$out" ]; then mkdir -p "$out" || exit 1; else out="$(mktemp -d /tmp/train_vs_pytorch.XXXXXX)"; fi
ref=bench/reference/train_ref.py
echo "yolov5n, $images images of ${img}px, $classes classes, batch $batch, $steps optimizer steps, seed $seed," \
     "$epochs epochs (for lf), $threads threads; files in $out"

fail() { echo "train_vs_pytorch.sh: $1 failed (log: $2)" >&2; tail -5 "$2" >&2; exit 1; }
t0=$SECONDS
rm -rf "$out/data"
"$build/yoloplan" synth --out "$out/data" --images "$images" --val 0 --classes "$classes" --img "$img" --seed "$seed" \
  >"$out/synth.log" 2>&1 || fail "yoloplan synth" "$out/synth.log"
"$py" "$ref" init --data "$out/data/data.yaml" --model yolov5n --seed "$seed" --out "$out/init.safetensors" \
  >"$out/init.log" 2>&1 || fail "train_ref.py init" "$out/init.log"
mkdir -p "$out/yoloplan"
"$build/bench/train_trace" --data "$out/data/data.yaml" --model yolov5n --img "$img" --batch "$batch" --seed "$seed" \
  --epochs "$epochs" --threads "$threads" --weights "$out/init.safetensors" --out "$out/yoloplan" --opt-steps "$steps" \
  >"$out/yoloplan.log" 2>&1 || fail "train_trace" "$out/yoloplan.log"
t1=$SECONDS
"$py" "$ref" train --weights "$out/init.safetensors" --batches "$out/yoloplan/batches.bin" --epochs "$epochs" \
  --threads "$threads" --out "$out/pytorch.tsv" >"$out/pytorch.log" 2>&1 || fail "train_ref.py train" "$out/pytorch.log"
t2=$SECONDS
ctl=""
if [ "$control" = 1 ]; then
  "$py" "$ref" train --weights "$out/init.safetensors" --batches "$out/yoloplan/batches.bin" --epochs "$epochs" \
    --threads "$threads" --channels-last --out "$out/pytorch_cl.tsv" >"$out/pytorch_cl.log" 2>&1 \
    || fail "train_ref.py train --channels-last" "$out/pytorch_cl.log"
  ctl="$out/pytorch_cl.tsv"
fi
echo "yoloplan $((t1 - t0)) s (synth, init, train_trace), PyTorch $((t2 - t1)) s$([ -n "$ctl" ] && echo ", control $((SECONDS - t2)) s")"
echo

"$py" - "$out/yoloplan/losses.tsv" "$out/pytorch.tsv" "$ctl" <<'EOF'
import csv
import sys

def read(path):
    with open(path) as f:
        return list(csv.DictReader(f, delimiter="\t"))

yp, pt = read(sys.argv[1]), read(sys.argv[2])
cl = read(sys.argv[3]) if sys.argv[3] else None
if len(yp) != len(pt) or (cl and len(cl) != len(pt)):
    sys.exit(f"train_vs_pytorch.sh: {len(yp)} yoloplan micro-batches, {len(pt)} PyTorch ones")
# the schedule: each side computed its own knobs; they must be the same
bad = []
for a, b in zip(yp, pt):
    same = all(abs(float(a[k]) - float(b[k])) <= 1e-12 * max(1.0, abs(float(b[k])))
               for k in ("lr0", "lr1", "lr2", "momentum"))
    same &= all(a[k] == b[k] for k in ("ni", "accumulate", "opt_step", "opt_steps"))
    if not same:
        bad.append(a["step"])

def rel(a, b):
    return abs(a - b) / abs(b) if b else abs(a - b)

hdr = "%5s %7s %14s %14s %9s %10s %10s" % ("step", "batches", "yoloplan loss", "PyTorch loss", "rel diff",
                                           "yp |g|", "PyTorch |g|")
if cl:
    hdr += " %14s %9s" % ("PyTorch NHWC", "rel diff")
print(hdr)
group, worst, worst_step, worst_ctl = [], 0.0, 0, 0.0
first_part, micro_worst, micro_at = None, 0.0, 0
for i, (a, b) in enumerate(zip(yp, pt)):
    ta, tb = float(a["total"]), float(b["total"])
    r = rel(ta, tb)
    if r > micro_worst:
        micro_worst, micro_at = r, i + 1
    if first_part is None and r > 1e-4:
        first_part = i + 1
    group.append(i)
    if a["opt_step"] != "1":
        continue
    ma = sum(float(yp[j]["total"]) for j in group) / len(group)
    mb = sum(float(pt[j]["total"]) for j in group) / len(group)
    r = rel(ma, mb)
    if r > worst:
        worst, worst_step = r, int(a["opt_steps"])
    line = "%5s %7d %14.6f %14.6f %8.3f%% %10.4f %10.4f" % (a["opt_steps"], len(group), ma, mb, 100 * r,
                                                            float(a["grad_norm"]), float(b["grad_norm"]))
    if cl:
        mc = sum(float(cl[j]["total"]) for j in group) / len(group)
        worst_ctl = max(worst_ctl, rel(mc, mb))
        line += " %14.6f %8.3f%%" % (mc, 100 * rel(mc, mb))
    print(line)
    group = []
n_steps = int(yp[-1]["opt_steps"])
print()
print("schedule (lr of the 3 groups, momentum, accumulate, step or not): " +
      ("identical on all %d micro-batches" % len(yp) if not bad else
       "DIFFERS at %d micro-batches (first: %s)" % (len(bad), bad[0])))
print("losses part by more than 1e-4 from micro-batch %s on; largest single micro-batch difference %.3f%% "
      "(micro-batch %d)" % (first_part if first_part else "- (never)", 100 * micro_worst, micro_at))
if cl:
    print("control: PyTorch channels_last against PyTorch NCHW: max per-step difference %.3f%%" % (100 * worst_ctl))
ok = worst <= 0.01 and not bad
print("max relative difference over %d optimizer steps: %.3f%% (step %d): %s (target <= 1%%)"
      % (n_steps, 100 * worst, worst_step, "PASS" if ok else "FAIL"))
sys.exit(0 if ok else 1)
EOF
