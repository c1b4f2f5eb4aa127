from pathlib import Path

import pytest

from jobs.spec.recipes import Catalogue
from jobs.spec.specfile import load

SHIPPED = Path(__file__).parents[2] / "workers" / "catalogues" / "default.yaml"

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


@pytest.fixture
def catalogue() -> Catalogue:
    return load(Catalogue, SHIPPED.read_text(), str(SHIPPED))[0]
