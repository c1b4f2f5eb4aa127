"""History across sweeps: testbeds, series ordered by the target's history, and their steps."""
