#!/usr/bin/env bash
# Prints this tree's MLX pin as 40 hex digits. The stand-in builds on the installed MLX wheel
# rather than an MLX commit, so the pin is sha1("mlx==<installed version>"): it changes exactly
# when the MLX version changes. It is not a commit in MLX's repository.
set -euo pipefail
python="${PYTHON:-python3}"
"$python" - 2>/dev/null <<'PY' || { echo "mlx_pinned_commit.sh: $python has no mlx; set PYTHON" >&2; exit 1; }
import hashlib
from importlib.metadata import version
print(hashlib.sha1(f"mlx=={version('mlx')}".encode()).hexdigest())
PY
