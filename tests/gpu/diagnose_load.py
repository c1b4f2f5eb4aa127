"""Which array of a payload model MLX cannot build: evaluate every weight of the first layer
one at a time and print each (name, shape, dtype, ok or the error). For a model that fails to
load on a GPU (`cudaGraphAddKernelNode ... invalid argument` on the H200 for deepseek_v4).

    python -m tests.gpu.diagnose_load MODEL_DIR
"""

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "targets" / "mlx_moe"))

import mlx.core as mx  # noqa: E402
from decoder.config import load_config  # noqa: E402
from decoder.model import Decoder  # noqa: E402
from decoder.moe_detail import MoeDetail  # noqa: E402


def named(value: object, prefix: str, seen: set[int]):  # type: ignore[no-untyped-def]
    if isinstance(value, mx.array):
        if id(value) not in seen:
            seen.add(id(value))
            yield prefix, value
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from named(item, f"{prefix}[{i}]", seen)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from named(item, f"{prefix}.{key}", seen)
    elif dataclasses.is_dataclass(value) or hasattr(value, "__dict__"):
        for key, item in vars(value).items():
            yield from named(item, f"{prefix}.{key}", seen)


def main() -> int:
    config = load_config(Path(sys.argv[1]))
    model = Decoder.build(config, mx.bfloat16, False, MoeDetail())
    failed = 0
    for name, array in named(model.layers[0], "layers[0]", set()):
        try:
            mx.eval(array)
            print(f"ok     {name} {array.shape} {array.dtype}", flush=True)
        except RuntimeError as error:
            failed += 1
            print(f"FAILED {name} {array.shape} {array.dtype}: {error}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
