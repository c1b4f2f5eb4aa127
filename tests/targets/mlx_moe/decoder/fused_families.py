"""The families whose decode reaches the fused expert path (when MLXCEL_FUSED_MOE is on)."""

FUSED_FAMILIES = frozenset({"qwen3_moe", "deepseek_v4"})
