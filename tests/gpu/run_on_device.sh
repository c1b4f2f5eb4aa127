#!/usr/bin/env bash
# The H200 record (issue #10): a private redis-server, one `cuda` worker and the coordinator on
# the lent GPU machine, the MLX payload at two commits, n = 5 per arm in rotating order, the
# CUPTI kernel-sum profile cell, then `record` and `check --artifacts`. The record, its raw
# data and every attempt's artifacts come back as one tar.gz in $OUT.
#
#   bash tests/gpu/run_on_device.sh install   # on the device: wheels from .carry-a/.carry-b
#   bash tests/gpu/run_on_device.sh start     # keys, payload repo, models, Redis, worker, submit
#   bash tests/gpu/run_on_device.sh finish    # wait (up to WAIT_S), record, check, tar to $OUT
#   MODE=cpu bash tests/gpu/run_on_device.sh all   # the same on this machine's CPU, tiny widths
#   bash tests/gpu/run_on_device.sh probe     # only the DeepSeek-V4-like model's load, on the GPU
#
# The machine has no network: docs/gpu-run.md says what is carried and how.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
mode=${MODE:-gpu}
work=${WORK:-/tmp/bf-gpu}
out=${OUT:-$work/out}
wait_s=${WAIT_S:-500}
site=/tmp/site
mkdir -p "$work" "$out"
export PYTHONUNBUFFERED=1

if [ "$mode" = gpu ]; then
  python=${PYTHON:-python3}  # the image's, which holds torch (CUPTI)
  export PYTHONPATH="$site:$root"
  width=real; layers=${LAYERS:-2}; profile=mlxcel-cupti-kernels
  # mlx-cuda-13 finds the CUDA libraries the image's Python packages ship.
  nvidia=$("$python" -c 'import nvidia, os; print(os.path.dirname(nvidia.__path__[0]))' \
    2>/dev/null || true)
  if [ -n "$nvidia" ]; then
    LD_LIBRARY_PATH=$(find "$nvidia/nvidia" -maxdepth 2 -name lib -type d | paste -sd:)
    export LD_LIBRARY_PATH="${LD_LIBRARY_PATH}${LD_LIBRARY_PATH:+:}${LD_LIBRARY_PATH_EXTRA:-}"
  fi
  redis_server=/tmp/carry/redis/redis-server  # carried in the first call (.carry-a)
  redis_libs=/tmp/carry/redis/lib
else
  python=${PYTHON:-$root/.venv/bin/python}
  export PYTHONPATH="$root"
  width=tiny; layers=${LAYERS:-2}; profile=mlxcel-nsys-kernels
  export PATH="$root/tests/tools:$(dirname "$python"):$PATH"  # the nsys stand-in
  redis_server=$(command -v redis-server); redis_libs=""
fi
bf() { "$python" -m runner.cli "$@"; }
env_file=$work/env.sh

install() {
  [ "$mode" = gpu ] || return 0
  mkdir -p /tmp/carry "$site"
  local wheel
  wheel=/tmp/carry/mlx_cuda_13-0.32.4-py3-none-manylinux_2_35_x86_64.whl
  [ -f "$wheel" ] || cat /tmp/carry/part.aa "$root/.carry-b/part.ab" > "$wheel"
  "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$site" "$wheel" "$root"/.carry-b/wheels/*.whl
  "$python" - <<'PY'
import importlib.util, sys, mlx.core as mx, torch
absent = [m for m in ("celery", "pydantic", "redis") if importlib.util.find_spec(m) is None]
print("python", sys.version.split()[0], "mlx", mx.__version__, "cuda", mx.cuda.is_available(),
      mx.default_device(), "torch", torch.__version__, torch.cuda.is_available(),
      "not carried:", absent or "none")
a = mx.random.normal((512, 512)); print("mlx matmul ok", float((a @ a).sum()) != 0.0)
PY
}

# The payload repository, its models and repo.json under $work/state (the standard library
# only: the probe runs where nothing but mlx was carried).
fresh_state() {
  rm -rf "$work/state"; mkdir -p "$work/state"
  "$python" - "$work/state" "$width" "$layers" <<'PY'
import json, sys
from pathlib import Path
from tests.targets.mlx_repo import make_payload_repo, write_models
state, width, layers = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
repo = make_payload_repo(state / "payload")
write_models(state / "models", width, layers)
(state / "repo.json").write_text(json.dumps({"repo": str(repo.path), "first": repo.first,
                                             "second": repo.second}))
PY
}

start() {
  fresh_state
  cd "$work/state"
  "$python" -c 'import sys; from pathlib import Path; from workers.shared.signing import generate
keys = Path(sys.argv[1]); generate(keys / "coordinator.pem", keys / "coordinator.pub")' \
    "$work/state/keys"
  probe_models
  local port repo first second
  port=$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  repo=$("$python" -c "import json; print(json.load(open('repo.json'))['repo'])")
  first=$("$python" -c "import json; print(json.load(open('repo.json'))['first'])")
  second=$("$python" -c "import json; print(json.load(open('repo.json'))['second'])")
  mkdir -p redis logs
  LD_LIBRARY_PATH=$redis_libs setsid "$redis_server" --port "$port" --bind 127.0.0.1 \
    --save "" --appendonly yes --dir "$work/state/redis" --logfile "$work/state/redis/redis.log" \
    --daemonize yes
  cat > "$env_file" <<ENV
export BENCHFLEET_REDIS_URL=redis://127.0.0.1:$port/0
export BENCHFLEET_ARTIFACTS=$work/state/artifacts
export BENCHFLEET_WORKSPACE=$work/state/workspace
export BENCHFLEET_MODELS_DIR=$work/state/models
export BENCHFLEET_SIGNING_KEY=$work/state/keys/coordinator.pem
export BENCHFLEET_VERIFY_KEY=$work/state/keys/coordinator.pub
export BENCHFLEET_HOST_LOCK=$work/state/host.lock
export BENCHFLEET_HOST=$( [ "$mode" = gpu ] && echo h200 || echo cpu-dry-run )
export BENCHFLEET_ALLOWED_REPOS="[\"$repo\"]"
export BENCHFLEET_IDLE_LOAD1=${IDLE_LOAD1:-4.0}
export BENCHFLEET_IDLE_MAX_WAIT_S=${IDLE_MAX_WAIT_S:-20}
export BENCHFLEET_IDLE_INTERVAL_S=2
ENV
  # shellcheck disable=SC1090
  . "$env_file"
  "$python" -c "import redis,os,time
for _ in range(100):
    try: redis.Redis.from_url(os.environ['BENCHFLEET_REDIS_URL']).ping(); break
    except redis.ConnectionError: time.sleep(0.1)"
  setsid nohup "$python" -m runner.cli worker --backend cuda --name h200-cuda \
    > logs/worker.log 2>&1 < /dev/null &
  local build=mlxcel-build-cuda
  command -v make >/dev/null || build=tinymoe-build  # the payload's build.py, without make
  "$python" -m tests.gpu.sweep --repo "$repo" --commits "$first" "$second" \
    --out "$work/state/sweep.yaml" --profile "$profile" --build "$build"
  # The worker above is still starting (its lease comes within seconds): queue the sweep for it.
  bf submit --wait-for-worker "$work/state/sweep.yaml" | tail -n 1 > sweep_id
  echo "submitted $(cat sweep_id): $(grep -c . logs/worker.log) worker log lines so far"
}

# MLX's CUDA backend refused the DeepSeek-V4-like model at its full widths on an H200
# (cudaGraphAddKernelNode: invalid argument) in this run's first tries: find the nearest
# configuration that runs, say which, and keep it for the sweep.
probe_models() {
  [ "$mode" = gpu ] || return 0
  local model=$work/state/models/deepseek-v4-flash-4bit variant
  (cd "$work/state/payload" && MLX_CUDA_ARCHITECTURES=90a make -s release-cuda \
     PYTHON="$python" CARGO_TARGET_DIR="$work/state/probe-target" >/dev/null)
  for variant in as-configured hidden-2048 hidden-2048-64-experts; do
    "$python" - "$model/config.json" "$variant" <<'PY'
import json, sys
path, variant = sys.argv[1], sys.argv[2]
config = json.load(open(path))
original = config.setdefault("probe_original", {k: config.get(k) for k in
                                                 ("hidden_size", "n_routed_experts")})
config["hidden_size"] = original["hidden_size"]
config["n_routed_experts"] = original["n_routed_experts"]
if "hidden-2048" in variant:
    config["hidden_size"] = 2048
if "64" in variant:
    config["n_routed_experts"] = 64
config["probe_variant"] = variant
json.dump(config, open(path, "w"), indent=2)
PY
    if MLXMOE_TRACEBACK=1 "$work/state/probe-target/release/mlxcel-bench-decode" -m "$model" \
         -p x --prompt-tokens 64 -n 8 --warmup-tokens 2 --ignore-eos --no-chat-template \
         > "$work/state/probe-$variant.txt" 2>&1; then
      echo "deepseek-v4-flash-4bit runs as: $variant" | tee "$work/state/models.txt"
      return 0
    fi
    echo "deepseek-v4-flash-4bit fails as $variant:"; tail -n 12 "$work/state/probe-$variant.txt"
  done
  echo "deepseek-v4-flash-4bit: no variant runs" | tee "$work/state/models.txt"
}

finish() {
  # shellcheck disable=SC1090
  . "$env_file"
  cd "$work/state"
  local id deadline
  id=$(cat sweep_id)
  deadline=$(( $(date +%s) + wait_s ))
  "$python" - "$id" "$deadline" <<'PY' || echo "the sweep has not finished: a record of what ran"
import os, sys, time
from jobs.record.attempts import FINAL
from workers.shared.state import Store
store, sweep_id, deadline = Store.connect(os.environ["BENCHFLEET_REDIS_URL"]), sys.argv[1], float(sys.argv[2])
events = store.events(sweep_id, timeout_s=30)
while True:
    states = store.states(sweep_id)
    done = sum(s.status in FINAL for s in states.values())
    print(f"{time.strftime('%H:%M:%S')} {done} of {len(states)} cells final", flush=True)
    if done == len(states) or time.time() > deadline:
        break
    next(events)
sys.exit(0 if done == len(states) else 3)
PY
  bf status "$id" > status.txt || true
  tail -n 5 status.txt
  bf record "$id" -o "$work/state/record" | tee record.txt || true
  bf check "$work/state/record/$id.json" --artifacts "$BENCHFLEET_ARTIFACTS" | tee check.txt \
    || true
  nvidia-smi > nvidia-smi.txt 2>&1 || true
  "$python" -c 'import mlx.core as mx, torch; print("mlx", mx.__version__, "| torch", torch.__version__)' \
    > versions.txt 2>&1 || true
  tar -czf "$out/h200-moe-decode.tar.gz" record artifacts logs sweep.yaml status.txt record.txt \
    check.txt nvidia-smi.txt versions.txt redis/redis.log models $(ls probe-*.txt models.txt \
    2>/dev/null)
  cp "record/$id.md" "$out/record.md" 2>/dev/null || true
  ls -la "$out"
}

# Only the DeepSeek-V4-like model's load and a short decode, on the GPU: what a session with a
# few device minutes left can check (the wheels of .carry-b may then be mlx's alone).
probe() {
  fresh_state
  probe_models
  cp "$work/state"/probe-*.txt "$work/state/models.txt" "$out"/
}

case "${1:-all}" in
  install) install ;;
  probe) probe ;;
  start) start ;;
  finish) finish ;;
  all) install; start; finish ;;
  *) echo "usage: run_on_device.sh install|start|finish|all|probe" >&2; exit 2 ;;
esac
