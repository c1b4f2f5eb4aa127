"""What a non-zero exit means, by mlxcel's conventions (see ../shared/MLXCEL-FACTS.md)."""

import re

from jobs.parsers.readings import Failure, RunOutput

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# mlxcel's own harness (scripts/bench_decode.sh, is_oom_failure) counts a failure as OOM when
# its output matches any of these, case-insensitively; the Metal ones matter as much as CUDA's.
OOM_PATTERNS = (
    r"out of memory",
    r"bad_alloc",
    r"memory allocation of [0-9]",
    r"greater than the maximum allowed buffer size",
    r"metal::malloc",
    r"CUDA_ERROR_OUT_OF_MEMORY",
    r"cudaErrorMemoryAllocation",
    r"cuMemAlloc failed",
)
_OOM = re.compile("|".join(f"(?:{p})" for p in OOM_PATTERNS), re.IGNORECASE)
SIGKILL_EXIT = 137
TIMEOUT_EXIT = 124


def plain(text: str) -> str:
    """Output without ANSI colour codes and carriage returns."""
    return _ANSI.sub("", text).replace("\r", "")


def both(run: RunOutput) -> str:
    """stdout and stderr read together: which stream mlxcel's `[...]` lines take is not settled."""
    return plain(run.stdout + "\n" + run.stderr)


def failed_exit(run: RunOutput, error_prefix: str = "Error:") -> Failure | None:
    """The failure a run's exit status stands for, or None when it exited 0.

    124 is a timeout and never OOM; 137 (SIGKILL) is an OOM kill; other codes are OOM only
    when the output says so.
    """
    if run.timed_out or run.exit_code == TIMEOUT_EXIT:
        limit = f" after {run.timeout_s:g} s" if run.timeout_s else ""
        return Failure(kind="timeout", reason=f"timed out{limit} (exit {TIMEOUT_EXIT})")
    if run.exit_code == 0:
        return None
    if run.exit_code == SIGKILL_EXIT:
        return Failure(kind="oom", reason="killed by SIGKILL (exit 137): out of memory")
    text = both(run)
    oom = oom_line(text)
    if oom:
        return Failure(kind="oom", reason=f"out of memory: {oom} (exit {run.exit_code})")
    error = _line_starting(plain(run.stderr), error_prefix) or _line_starting(
        plain(run.stdout), error_prefix)
    if error:
        return Failure(kind="error", reason=f"{error} (exit {run.exit_code})")
    last = last_line(plain(run.stderr))
    detail = f": {last}" if last else " with nothing on stderr"
    return Failure(kind="error", reason=f"exited with code {run.exit_code}{detail}")


def oom_line(text: str) -> str:
    """The first line matching one of the OOM patterns, or '' when none does."""
    for line in text.splitlines():
        if _OOM.search(line):
            return line.strip()[:300]
    return ""


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def _line_starting(text: str, prefix: str) -> str:
    for line in text.splitlines():
        if line.strip().startswith(prefix):
            return line.strip()[:300]
    return ""


def is_oom(run: RunOutput) -> bool:
    """The retry classes' test: a SIGKILL (137) or one of mlxcel's OOM patterns."""
    return run.exit_code == SIGKILL_EXIT or bool(
        oom_line(plain(run.stdout[-65536:] + "\n" + run.stderr[-65536:])))
