#!/usr/bin/env bash
# Makes .carry-a/ and .carry-b/ for tests/gpu/run_on_device.sh (docs/gpu-run.md): the wheels the
# GPU machine's python3 (3.12) lacks, benchfleet's own wheel, mlx-cuda-13 in two parts (one
# call carries at most 64 MiB), and this machine's redis-server with the libraries it links.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
python=${PYTHON:-$root/.venv/bin/python}
mlx=$(grep -A1 '^name = "mlx"$' uv.lock | sed -n 's/^version = "\(.*\)"/\1/p')
# What the lock pins and the GPU image lacks (KINDS.md lists what it has).
carried="amqp annotated-types billiard celery cffi click-didyoumean click-plugins click-repl
cryptography hiredis kombu orjson prompt-toolkit pycparser pydantic pydantic-core
pydantic-settings python-dotenv redis tenacity typing-extensions typing-inspection tzlocal vine
wcwidth"
pins=$(.uv/bin/uv export --no-hashes --no-dev --frozen --no-emit-project | sed 's/ ;.*//' |
  grep -E "^($(echo $carried | tr ' ' '|'))==" | sort -u)
rm -rf .carry-a .carry-b; mkdir -p .carry-a/redis/lib .carry-b/wheels
platforms=""
for p in manylinux_2_39_x86_64 manylinux_2_35_x86_64 manylinux_2_34_x86_64 manylinux_2_28_x86_64 \
         manylinux_2_17_x86_64 manylinux2014_x86_64; do platforms="$platforms --platform $p"; done
# shellcheck disable=SC2086
"$python" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp $platforms -d .carry-b/wheels $pins "mlx==$mlx"
# shellcheck disable=SC2086
"$python" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp $platforms -d /tmp/bf-carry "mlx-cuda-13==$mlx"
"$python" -m pip wheel -q --no-deps -w .carry-b/wheels .
wheel=$(ls /tmp/bf-carry/mlx_cuda_13-"$mlx"-*.whl)
split -b 45000000 "$wheel" /tmp/bf-carry/part.
mv /tmp/bf-carry/part.aa .carry-a/; mv /tmp/bf-carry/part.ab .carry-b/
server=$(command -v redis-server)
cp "$server" .carry-a/redis/redis-server
ldd "$server" | awk '/=> \//{print $3}' | grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux)[.-]' |
  xargs -I{} cp {} .carry-a/redis/lib/
du -sh .carry-a .carry-b
echo "the wheel is $(basename "$wheel")"
