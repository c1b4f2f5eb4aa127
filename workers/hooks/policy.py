"""Policy: a signed cell still has to fit this worker's own rules before anything of it runs —
a target repository in its allow-list (BENCHFLEET_ALLOWED_REPOS; an empty list builds
nothing), and every tag the cell requires. A cell that does not fit ends failed with the
reason, which `status` and the record show; fix the worker's settings and `rerun` it."""

import logging

from jobs.parsers.readings import Failure
from jobs.spec.confine import repo_allowed, repo_problem
from workers.hooks import Hook, Rejected
from workers.in_flight import Job
from workers.offer import Offering

log = logging.getLogger(__name__)


class Policy(Hook):
    def __init__(self, allowed_repos: list[str], offering: Offering) -> None:
        self.allowed, self.offering = list(allowed_repos), offering

    def before_cell(self, job: Job) -> None:
        why = self._repo(job.cell.repo) or self._tags(job.cell.route.missing(
            self.offering.tags()))
        if why:
            log.warning("cell %s not run: %s", job.cell.id, why)
            raise Rejected(Failure(kind="refused", reason=why))

    def _repo(self, repo: str) -> str | None:
        name = self.offering.name
        problem = repo_problem(repo)
        if problem:
            return f"worker {name} does not build it: {problem}"
        if repo_allowed(repo, self.allowed):
            return None
        if not self.allowed:
            return (f"worker {name} builds no repository: its BENCHFLEET_ALLOWED_REPOS is "
                    f"empty; add {repo} to it (deploy install --allow-repo) and rerun")
        return (f"repository {repo} is not in worker {name}'s allow-list "
                f"(BENCHFLEET_ALLOWED_REPOS); add it there and rerun")

    def _tags(self, missing: list[str]) -> str | None:
        if not missing:
            return None
        return (f"worker {self.offering.name} lacks tag{'s' if len(missing) > 1 else ''} "
                f"{', '.join(missing)}, which the cell requires")
