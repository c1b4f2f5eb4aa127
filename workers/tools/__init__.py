"""Tools a worker runs around a measured command (profilers that work where nsys does not)."""
