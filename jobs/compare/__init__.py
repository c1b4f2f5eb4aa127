"""Across sweeps and commits: two records side by side, and bisect's plan and record."""
