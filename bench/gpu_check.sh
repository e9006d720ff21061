#!/usr/bin/env bash
# bench/gpu_check.sh - the one script for a lent GPU machine (issue 13). It builds the backends and
# yoloplan-bench (YP_GPU_BENCH: kernels/, graph/, planner/, executor/; no reports/) for the card's
# architecture, with the libraries the machine lacks unpacked from .gpudeps (scripts/gpu-deps.sh:
# oneDNN, cJSON, libyaml, libjpeg-turbo, libpng, zlib, pkgconf) and the cuDNN of the toolkit or of
# PyTorch's nvidia-cudnn package; runs every kernel test (each CUDA op against the CPU backend, fp32,
# fp16 and bf16); then trains yolov5s at 640 on the card for 30 steps twice, with the planner's
# choice (`--batch auto`: the fastest plan that fits the card's free memory) and with batch 64
# AMP-fp16, each beside the PyTorch reference at the same batch and precision
# (bench/reference/train_step_bench.py: the same model, autocast fp16 + GradScaler, channels_last),
# then the same 10 steps of batch 4 on the CPU executor and on the card in fp32 and AMP-fp16 (one
# seed: the same batches and weights, so the loss curves compare), and prints one table: yoloplan's
# predicted arena + fixed cost against the device memory the run took (cudaMemGetInfo), PyTorch's
# max_memory_reserved, images/s of each, and the ratios; the loss curves' largest relative
# difference to the CPU's.
# Last, train.py's loop (bench/pytorch_mem_check.py: the reference model, AMP, SGD, EMA, validation
# at 2x batch) for a few models, sizes and batches, its memory_reserved beside yoloplan --target
# pytorch's prediction (made here beforehand: this build has no yoloplan).
# Prepare here with `bash scripts/gpu-deps.sh` and
#   /usr/bin/python3 bench/pytorch_mem_check.py --yoloplan build/yoloplan --gpu h200 \
#     --write-predictions .gpudeps/torch_predictions.json
# then run it there with both carried:
#   bash bench/gpu_check.sh [--arch 90] [--out DIR] [--steps 30]
# (with the device tool: carry [".gpudeps/debs", ".gpudeps/torch_predictions.json"], command
# `bash bench/gpu_check.sh --out $OUT`)
# Partial results survive an interruption: each stage's log and JSON go to DIR (default $OUT or
# build-gpu/) as it runs, and the table is printed from what finished (also on SIGINT/SIGTERM).
# Without a GPU (CI's dry run) everything builds, the CUDA tests skip and the training runs say
# why they cannot run; the exit status is the build's and the tests'.
set -uo pipefail
cd "$(dirname "$0")/.."

arch=90 out="${OUT:-build-gpu}" steps=30
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) arch="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    *) echo "usage: bash bench/gpu_check.sh [--arch N] [--out DIR] [--steps N]" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out="$(cd "$out" && pwd)"
root="$PWD/build-gpu/deps-root"
ls .gpudeps/debs/*.deb > /dev/null 2>&1 ||
  { echo "gpu_check.sh: no .gpudeps/debs: run bash scripts/gpu-deps.sh here and carry .gpudeps/debs" >&2; exit 2; }
rm -rf "$root"
mkdir -p "$root"
for d in .gpudeps/debs/*.deb; do dpkg -x "$d" "$root" || { echo "gpu_check.sh: dpkg -x $d failed" >&2; exit 2; }; done
lib="$root/usr/lib/x86_64-linux-gnu"
export CMAKE_PREFIX_PATH="$root/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export LD_LIBRARY_PATH="$lib:$root/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CPATH="$root/usr/include${CPATH:+:$CPATH}"
# pkg-config sees only the unpacked .pc files, their /usr paths under the unpacked tree
export PKG_CONFIG_LIBDIR="$lib/pkgconfig:$root/usr/share/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root"
pkgconfig="$(command -v pkg-config || echo "$root/usr/bin/pkgconf")"
dep_args=(-DPKG_CONFIG_EXECUTABLE="$pkgconfig"
          -DJPEG_INCLUDE_DIR="$root/usr/include" -DJPEG_LIBRARY="$lib/libjpeg.so"
          -DPNG_PNG_INCLUDE_DIR="$root/usr/include" -DPNG_LIBRARY="$lib/libpng16.so"
          -DZLIB_INCLUDE_DIR="$root/usr/include" -DZLIB_LIBRARY="$root/lib/x86_64-linux-gnu/libz.so.1")

# cuDNN: the toolkit's when it has one, else the nvidia-cudnn Python package PyTorch uses.
py="$(command -v python3)"
"$py" -c 'import torch' 2>/dev/null || { [ -x /usr/bin/python3 ] && py=/usr/bin/python3; }
cudnn_args=()
if [ ! -f /usr/local/cuda/include/cudnn.h ]; then
  cudnn="$("$py" -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) if nvidia.cudnn.__file__ else list(nvidia.cudnn.__path__)[0])' 2>/dev/null)"
  clib="$(ls "$cudnn"/lib/libcudnn.so* 2>/dev/null | head -1)"
  [ -n "$clib" ] && [ -f "$cudnn/include/cudnn.h" ] ||
    { echo "gpu_check.sh: cuDNN not found (toolkit or python3's nvidia.cudnn)" >&2; exit 2; }
  cudnn_args=(-DYP_CUDNN_INCLUDE_DIR="$cudnn/include" -DYP_CUDNN_LIBRARY="$clib")
  export LD_LIBRARY_PATH="$cudnn/lib:$LD_LIBRARY_PATH"
fi

# The table, from whatever finished (the stages' files in $out).
table() {
  "$py" - "$out" "$arch" <<'PY'
import json, os, sys
out, arch = sys.argv[1], sys.argv[2]
def text(name, default=""):
    p = os.path.join(out, name)
    return open(p).read().strip() if os.path.exists(p) else default
def load(name):
    try:
        return json.loads(text(name, "null"))
    except ValueError:
        return None
print("| stage | result | seconds |")
print("| --- | --- | --- |")
print(f"| GPU | {text('gpu.txt', 'unknown')} | |")
for stage in ("configure", "build", "ctest"):
    r = text(stage + ".result")
    if r:
        res, _, secs = r.partition("\t")
        print(f"| {stage}{' (sm_' + arch + ')' if stage == 'configure' else ''} | {res} | {secs} |")
tests = text("ctest.rows")
if tests:
    print(tests)
rows = []
for run in ("auto", "b64"):
    yp, pt = load(f"yp_{run}.json"), load(f"pt_{run}.json")
    if yp is None and pt is None:
        note = text(f"yp_{run}.note")
        if note:
            print(f"\n{run}: {note}")
        continue
    rows.append((run, yp, pt))
if rows:
    gib = 1024.0 ** 3
    print("\n| yolov5s 640 | batch | precision | predicted arena + fixed (GiB) | taken, cudaMemGetInfo (GiB) | taken / predicted"
          " | PyTorch max reserved (GiB) | yoloplan / PyTorch memory | yoloplan img/s | PyTorch img/s | speed ratio |")
    print("| --- |" + " --- |" * 10)
    for run, yp, pt in rows:
        name = "planner's choice" if run == "auto" else "batch 64 AMP-fp16"
        b = yp["batch"] if yp else (pt["batch"] if pt else "?")
        prec = yp.get("precision", "?") if yp else ("amp-fp16" if pt and pt.get("amp") else "fp32")
        pred = (yp["arena_bytes"] + yp["fixed_bytes"]) / gib if yp else None
        took = (yp["fixed_bytes"] + yp["device_taken_bytes"]) / gib if yp and yp.get("device_taken_bytes", -1) >= 0 else None
        res = pt["max_memory_reserved_bytes"] / gib if pt else None
        f = lambda v, fmt="{:.3f}": fmt.format(v) if v is not None else "-"
        ratio = lambda a, c: f"{a / c:.3f}" if a is not None and c else "-"
        ips, pips = (yp["images_per_s"] if yp else None), (pt["images_per_s"] if pt else None)
        graphs = " (CUDA graphs)" if yp and yp.get("cuda_graphs") else ""
        print(f"| {name}{graphs} | {b} | {prec} | {f(pred)} | {f(took)} | {ratio(took, pred)} | {f(res)} |"
              f" {ratio(pred, res)} | {f(ips, '{:.1f}')} | {f(pips, '{:.1f}')} | {ratio(ips, pips)} |")
mem = text("torch_mem.md")
if mem:
    print("\nPyTorch target (bench/pytorch_mem_check.py): train.py's loop on the card vs yoloplan --target pytorch\n")
    print(mem)
cpu = load("curve_cpu.json")
if cpu:
    ref = cpu.get("losses", [])
    print(f"\n| loss curve: yolov5s 640, batch 4, {len(ref)} steps | first | last | max relative difference to the CPU |")
    print("| --- | --- | --- | --- |")
    print(f"| CPU executor, fp32 | {ref[0]:.5f} | {ref[-1]:.5f} | |" if ref else "| CPU executor | - | - | |")
    for name, f in (("CUDA fp32", "curve_fp32.json"), ("CUDA AMP-fp16", "curve_amp.json")):
        c = load(f)
        got = c.get("losses", []) if c else []
        if got and ref and len(got) == len(ref):
            diff = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(got, ref))
            print(f"| {name} | {got[0]:.5f} | {got[-1]:.5f} | {diff:.2e} |")
        else:
            print(f"| {name} | - | - | not run |")
PY
}
trap 'echo "gpu_check.sh: interrupted; what finished:"; table; exit 130' INT TERM

stage() { printf '%s\t%s\n' "$2" "$3" > "$out/$1.result"; }
t0=$(date +%s)
gpu=0
if command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$out/gpu.txt" 2>&1; then
  gpu=1
else
  echo "none (no working nvidia-smi: no GPU driver on this machine; the CUDA tests will skip)" > "$out/gpu.txt"
fi
build=build-gpu/bench
cmake -S . -B "$build" -DYP_GPU_BENCH=ON -DYP_CUDA=ON -DYP_WERROR=ON -DYP_NATIVE=OFF -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES="$arch" "${cudnn_args[@]}" "${dep_args[@]}" > "$out/configure.log" 2>&1
cfg=$?
stage configure "$([ $cfg -eq 0 ] && echo ok || echo "FAILED: $(tail -3 "$out/configure.log" | tr '\n' ' ')")" ""
bld=1
if [ $cfg -eq 0 ]; then
  cmake --build "$build" -j"$(nproc)" > "$out/build.log" 2>&1
  bld=$?
fi
t1=$(date +%s)
stage build "$([ $bld -eq 0 ] && echo ok || echo "FAILED: $(grep -m3 -E 'error' "$out/build.log" | tr '\n' ' ')")" $((t1 - t0))
tests_ok=0
if [ $bld -eq 0 ]; then
  ( cd "$build" && ctest --output-on-failure -j4 ) > "$out/ctest.log" 2>&1
  grep -q "100% tests passed" "$out/ctest.log" && tests_ok=1
  grep -E '^ *[0-9]+/[0-9]+ Test' "$out/ctest.log" |
    sed -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([a-z_0-9]+) [. ]*\**([A-Za-z]+).* ([0-9.]+) sec$/| \1 | \2 | \3 |/' > "$out/ctest.rows"
  stage ctest "$(grep -E 'tests passed|tests failed' "$out/ctest.log" | tail -1)" $(($(date +%s) - t1))
fi

# The training runs: yoloplan-bench then the reference, per configuration.
runs_ok=1
if [ $bld -eq 0 ] && [ $gpu -eq 1 ]; then
  bench="$build/yoloplan-bench"
  common=(--device cuda --model yolov5s --img 640 --steps "$steps" --warmup 3 --json)
  ref=(bench/reference/train_step_bench.py --device cuda --memory-format channels_last --model yolov5s --img 640
       --steps "$steps" --warmup 3 --threads "$(nproc)")
  for run in auto b64; do
    args=(--batch auto)
    [ $run = b64 ] && args=(--batch 64 --precision amp-fp16)
    if timeout 240 "$bench" "${common[@]}" "${args[@]}" > "$out/yp_$run.json" 2> "$out/yp_$run.log"; then
      b=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["batch"])' "$out/yp_$run.json")
      amp=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["precision"] != "fp32")' "$out/yp_$run.json")
    else
      runs_ok=0
      rm -f "$out/yp_$run.json"
      echo "yoloplan-bench failed: $(tail -2 "$out/yp_$run.log" | tr '\n' ' ')" > "$out/yp_$run.note"
      b=64 amp=True
    fi
    amp_arg=()
    [ "$amp" = True ] && amp_arg=(--amp)
    timeout 240 "$py" "${ref[@]}" --batch "$b" "${amp_arg[@]}" > "$out/pt_$run.json" 2> "$out/pt_$run.log" ||
      { runs_ok=0; rm -f "$out/pt_$run.json"; }
  done
  # the loss curve: the same 10 steps (same seed: the same batches and initial weights) on the CPU
  # executor and on the card in fp32 and AMP-fp16
  curve=(--model yolov5s --img 640 --batch 4 --steps 10 --warmup 0 --json)
  timeout 300 "$bench" --device cpu --threads "$(nproc)" "${curve[@]}" > "$out/curve_cpu.json" 2> "$out/curve_cpu.log" &&
    timeout 120 "$bench" --device cuda "${curve[@]}" > "$out/curve_fp32.json" 2> "$out/curve_fp32.log" &&
    timeout 120 "$bench" --device cuda --precision amp-fp16 "${curve[@]}" > "$out/curve_amp.json" 2> "$out/curve_amp.log" ||
    runs_ok=0
  # the PyTorch target: train.py's loop (the reference model) measured beside yoloplan --target
  # pytorch's predictions, made before the call (this build has no yoloplan; see the header)
  if [ -f .gpudeps/torch_predictions.json ]; then
    timeout 300 "$py" bench/pytorch_mem_check.py --predictions .gpudeps/torch_predictions.json \
      > "$out/torch_mem.md" 2> "$out/torch_mem.log" || runs_ok=0
  else
    echo "not run: no .gpudeps/torch_predictions.json (make it before the call; see gpu_check.sh's header)" \
      > "$out/torch_mem.md"
  fi
elif [ $bld -eq 0 ]; then
  for run in auto b64; do echo "not run: no GPU on this machine" > "$out/yp_$run.note"; done
fi
table
[ $bld -eq 0 ] && [ $tests_ok -eq 1 ] && { [ $gpu -eq 0 ] || [ $runs_ok -eq 1 ]; }
