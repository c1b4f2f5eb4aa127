"""The coordinator the laptop runs: submit, status, record, demo and the worker command."""
