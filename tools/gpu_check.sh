#!/usr/bin/env bash
# Runs the GPU checks from tools/gpu_bundle.sh's archive on a machine with a GPU, CUDA 13
# (cudart, cuBLAS, NCCL) and PyTorch: every CUDA test suite (each op and the model against
# the CPU backend, NCCL, GPU device actors), a short training run on the GPU whose loss must
# fall, and bench_gpt for the default model and for GPT-2 124M's shape (12 layers, d_model
# 768, context 1024: 86M parameters with the byte vocabulary) beside PyTorch eager. Logs go
# to OUT_DIR; the exit status is non-zero when a check fails.
#
#   tools/gpu_check.sh [ARCHIVE] [OUT_DIR]   (defaults: .gpu/bundle.tar.xz, $OUT or gpu-check)
set -uo pipefail

archive=${1:-.gpu/bundle.tar.xz}
out=${2:-${OUT:-gpu-check}}
[[ -f $archive ]] || { echo "gpu_check: no bundle at $archive (tools/gpu_bundle.sh makes it)" >&2; exit 2; }
mkdir -p "$out"
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
tar -C "$root" -xJf "$archive" || { echo "gpu_check: cannot unpack $archive" >&2; exit 2; }

# The GPU machine's own CUDA libraries, wherever its image keeps them.
cuda_dirs=()
for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
  found=$(find /usr/local /usr/lib /opt -name "$lib" -print -quit 2>/dev/null)
  [[ -n $found ]] || { echo "gpu_check: $lib not found under /usr/local, /usr/lib or /opt" >&2; exit 2; }
  cuda_dirs+=("$(dirname "$found")")
done
LD_LIBRARY_PATH="$root/lib:$(printf '%s\n' "${cuda_dirs[@]}" | sort -u | paste -sd:)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
if ldd "$root"/bin/* | grep 'not found'; then
  echo "gpu_check: libraries missing (above)" >&2
  exit 2
fi

failed=()
check() { # NAME COMMAND...: runs it, its output in OUT_DIR/NAME.log
  local name=$1
  shift
  echo "== $name: $*"
  "$@" 2>&1 | tee "$out/$name.log"
  local rc=${PIPESTATUS[0]}
  echo "== $name: exit $rc"
  ((rc == 0)) || failed+=("$name (exit $rc)")
}

nvidia-smi -L > "$out/gpu.log" 2>&1
cat "$out/gpu.log"
check test_cuda "$root/bin/test_cuda" --log_level=test_suite --report_level=short
if [[ ${failed[*]-} == "test_cuda (exit 77)" ]]; then
  echo "gpu_check: no CUDA GPU is visible here: nothing checked" >&2
  exit 2
fi
check train_cuda "$root/bin/deepcee" train --device cuda --steps 300 --data "$root/corpus" \
  --out "$out/train_cuda" --metrics csv
# Loss near ln 256 = 5.5 at first, 2.35 after 300 steps on the CPU: on the GPU below 2.7.
if ! awk -F, 'NR == 2 { first = $2 } NR > 1 { last = $2 }
              END { printf "train_cuda: loss %.3f -> %.3f\n", first, last; exit !(last < 2.7) }' \
    "$out/train_cuda/metrics.csv" 2>/dev/null; then
  failed+=("train_cuda (the loss did not fall below 2.7)")
fi
check bench_small "$root/bin/bench_gpt" --device cuda --python python3 --torch bench/torch_gpt.py
check bench_gpt2 "$root/bin/bench_gpt" --device cuda --python python3 --torch bench/torch_gpt.py \
  --layers 12 --d-model 768 --heads 12 --context 1024 --batch 8
check bench_gpt2_bf16 "$root/bin/bench_gpt" --device cuda --bf16 --no-torch \
  --layers 12 --d-model 768 --heads 12 --context 1024 --batch 8

if ((${#failed[@]})); then
  echo "gpu_check: failed: ${failed[*]}"
  exit 1
fi
echo "gpu_check: every check passed; logs in $out"
