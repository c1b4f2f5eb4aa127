"""What a CUDA kernel's template arguments say about the problem it ran.

MLX builds `qmm_sm80_kernel<group, T, Q, S, cute::tuple<cute::C<tile_m>, cute::C<tile_n>,
cute::C<tile_k>>>` with tile_m = max(16, min(64, next power of 2 of M)), M being the rows of
one product (mlx/backend/cuda/quantized/qmm/qmm_sm80.cu, make_cta_tiler). So the first tile
argument bounds the rows: 16 means at most 16 rows, the shape of one decode token's product.
"""

import re

_TILE = re.compile(r"cute::tuple<\s*cute::C<(\d+)>")
# tile_m is 16 for M <= 16: products of one token's rows, as at decode.
DECODE_TILE_M = 16


def tile_m(name: str) -> int | None:
    """The CTA tile's M of a cute-tiled MLX kernel, or None when the name does not carry it."""
    match = _TILE.search(name)
    return int(match.group(1)) if match else None
