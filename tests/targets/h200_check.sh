#!/usr/bin/env bash
# The payload and cupti-kernsum on a real NVIDIA GPU (written for the lent H200): the payload
# decodes on MLX's CUDA backend at the real checkpoints' widths, unprofiled for tok/s, then under
# cupti-kernsum at two token counts; kernel_deltas.py prints per-token launches and time per kernel
# and checks the expert kernels MLXCEL-FACTS.md names. Everything lands in $OUT as one tar.gz
# plus the summary.
#
# From the benchfleet checkout's root, with mlx (CUDA) importable by $PYTHON (default python3,
# which holds torch on the H200):
#   OUT=/some/dir [MODELS="qwen3-30b-a3b-4bit deepseek-v4-flash-4bit"] [SHORT=32 LONG=64] \
#     bash tests/targets/h200_check.sh
# WIDTH=tiny runs the same steps at CI widths (the CPU test of this script uses it); WORK names
# the scratch folder (default: a new one under /tmp).
set -euo pipefail
python="$(command -v "${PYTHON:-python3}")"
python="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")"  # absolute, links kept
out="${OUT:?set OUT to the folder the results go to}"
models="${MODELS:-qwen3-30b-a3b-4bit deepseek-v4-flash-4bit}"
short="${SHORT:-32}"
long="${LONG:-64}"
width="${WIDTH:-real}"
work="${WORK:-$(mktemp -d /tmp/h200-check.XXXXXX)}"
mkdir -p "$work" "$out"
summary="$work/summary.txt"
export PYTHONUNBUFFERED=1

{
  nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv \
    || echo "nvidia-smi is not available here"
  "$python" - <<'PY'
import sys, torch, mlx.core as mx
print("python", sys.version.split()[0], "| torch", torch.__version__, torch.cuda.is_available())
print("mlx", mx.__version__, "| cuda", mx.cuda.is_available(), "|", mx.default_device(),
      mx.device_info())
PY
} 2>&1 | tee "$summary"

"$python" -m tests.targets.mlx_repo --repo "$work/repo" --models "$work/models" --width "$width"
MLX_CUDA_ARCHITECTURES=90a make -C "$work/repo" release-cuda PYTHON="$python" \
  CARGO_TARGET_DIR="$work/target"
bench="$work/target/release/mlxcel-bench-decode"
shape=(-p x --prompt-tokens 512 --warmup-tokens 20 --ignore-eos --no-chat-template)

for model in $models; do
  for fused in 1 0; do
    run="$model.fused$fused"
    start=$(date +%s)
    MLXCEL_FUSED_MOE=$fused MLXCEL_TRACE_ARCH=1 "$bench" -m "$work/models/$model" "${shape[@]}" \
      -n 128 >"$work/$run.bench.txt" 2>&1 || echo "bench $run failed: $?" | tee -a "$summary"
    for tokens in "$long" "$short"; do
      MLXCEL_FUSED_MOE=$fused "$python" -m workers.tools.cupti_kernsum \
        --csv "$work/$run.kern$tokens.csv" -- "$bench" -m "$work/models/$model" "${shape[@]}" \
        -n "$tokens" >"$work/$run.profile$tokens.txt" 2>&1 \
        || echo "profile $run at $tokens failed: $?" | tee -a "$summary"
    done
    echo "$run: $(( $(date +%s) - start )) s" | tee -a "$summary"
  done
done

"$python" tests/targets/kernel_deltas.py "$work" "$long" "$short" 2>&1 | tee -a "$summary"
tar -czf "$out/h200-check.tar.gz" -C "$work" --exclude=./repo --exclude=./target .
cp "$summary" "$out/h200-summary.txt"
