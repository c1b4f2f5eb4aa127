"""Sample makers shared by the rooms' tests: the shipped catalogue and a small sweep."""

from pathlib import Path

ROOT = Path(__file__).parents[2]
TESTS = ROOT / "tests"
# Outputs in the exact formats of MLXCEL-FACTS.md, and real captures (each says how it was made).
SAMPLES = TESTS / "samples"
# Stand-ins for nsys, xcrun and cargo that read the kernel-log contract (docs/kernel-log.md).
TOOLS = TESTS / "tools"
SHIPPED = ROOT / "workers" / "catalogues" / "default.yaml"

SWEEP = """\
name: unit
target:
  repo: /srv/git/tinymoe
  commits: [main, v2]
models: [tinymoe-a3, tinymoe-b5]
backends:
  cuda: {build: tinymoe-build}
  metal: {build: tinymoe-build}
arms:
  - name: gather
    recipe: tinymoe-bench-decode
    baseline: true
    env: {MLXCEL_FUSED_MOE: "0"}
  - name: fused
    recipe: tinymoe-bench-decode
  - name: long
    recipe: tinymoe-bench-decode
    params: {prompt_tokens: 1024}
    models: [tinymoe-b5]
n: 3
warmup: 1
"""

# Every kind of value a cell takes: a host, tags, adaptive and A/A repeats, a profile (whose
# parameters reuse the names of a cell's identity, which its id must keep apart).
EVERY_KIND_SWEEP = SWEEP.replace(
    "cuda: {build: tinymoe-build}",
    'cuda: {build: tinymoe-build, host: gb10, requires: [gpu=gb10, "model:{model}"]}') + """\
adaptive: {max_n: 5}
aa: true
profiles: {cuda: {recipe: nsys-kernels, params: {repeat: -1, repo: x}}}
"""
