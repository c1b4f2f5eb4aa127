#!/usr/bin/env bash
# Print the MLX commit the build pins (the GIT_TAG in src/lib/mlx-cpp/CMakeLists.txt).
set -euo pipefail
cd "$(dirname "$0")/../.."
sed -n 's/^ *GIT_TAG *\([0-9a-f]\{40\}\).*/\1/p' src/lib/mlx-cpp/CMakeLists.txt | head -n 1
