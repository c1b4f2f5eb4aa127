"""Is a failed command worth running again? Transient or deterministic, by a recipe's policy."""

import re

from jobs.parsers.exits import SIGKILL_EXIT, TIMEOUT_EXIT, is_oom, plain
from jobs.parsers.readings import RunOutput
from jobs.spec.recipes import RetryPolicy


def transient(run: RunOutput, policy: RetryPolicy, ooms_so_far: int) -> bool:
    """True when this failure may pass if the command runs again."""
    if run.exit_code == 0 or run.timed_out or run.exit_code == TIMEOUT_EXIT:
        return False
    if run.exit_code == SIGKILL_EXIT or is_oom(run):
        return ooms_so_far < policy.oom_retries
    if run.exit_code in policy.transient_exits:
        return True
    text = plain(run.stdout[-65536:] + "\n" + run.stderr[-65536:])
    return any(re.search(p, text, re.IGNORECASE) for p in policy.transient_patterns)
