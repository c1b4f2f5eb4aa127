"""The target's first-parent history, oldest first, that history's series are ordered by."""

import subprocess

from jobs.errors import UserError
from runner.bisect.first_parents import (  # bisect's reading of a local or remote target
    _git,
    _readable,
)


def mainline(repo: str, branch: str = "HEAD") -> list[str]:
    """Every sha on `branch`'s first-parent line, oldest first."""
    try:
        with _readable(repo) as where:
            log = _git(where, "rev-list", "--first-parent", "--reverse", branch)
    except (subprocess.SubprocessError, OSError) as error:
        raise UserError(f"cannot read the history of {repo} ({error}); its points are kept "
                        "but not placed") from None
    return log.split()
