"""Targets only tests and the GPU run use: the MLX MoE payload and its repository builder."""
