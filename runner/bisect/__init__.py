"""The bisect coordinator: the target's first-parent history and the rounds that measure it."""
