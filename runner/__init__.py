"""The coordinator the laptop runs: submit, status, record, demo and the worker command."""

# The package's version, read by `benchfleet --version` without importlib.metadata (which
# costs as much as the rest of that command); tests/runner/test_startup.py holds it equal to
# pyproject.toml's.
__version__ = "0.1.0"
VERSION_LINE = f"benchfleet, version {__version__}"
