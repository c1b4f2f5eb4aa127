"""A small mixture-of-experts decoder on mlx.core with mlxcel's command-line surface."""
