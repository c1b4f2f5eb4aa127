"""Where a cell may run: a worker of its backend, optionally on one host, offering every
capability tag the cell requires. One rule, read by the queue names (workers/shared/queues.py),
by each worker before it takes a cell, and by `status` when it says why cells wait.
"""

import re

from jobs.strict import Strict

# A capability tag: `gpu=gb10`, `model:deepseek-v4-flash-4bit`, `arch=aarch64`. No ',' or '@'
# (queue names use them to join tags to a backend) and no spaces.
_TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:=/+-]*$")
# In a sweep's `requires`, this stands for each group's own model.
MODEL_PLACEHOLDER = "{model}"
MODEL_TAG = "model:"


def tag_problem(tag: str) -> str | None:
    if len(tag) > 200 or not _TAG.fullmatch(tag.replace(MODEL_PLACEHOLDER, "m")):
        return (f"tag {tag[:80]!r} must start with a letter or digit and hold only letters, "
                "digits and . _ : = / + - (no spaces, commas or '@')")
    return None


def requirements(requires: list[str], model: str) -> list[str]:
    """A group's requirements: `{model}` filled in, each tag once, sorted."""
    return sorted({r.replace(MODEL_PLACEHOLDER, model) for r in requires})


class Offer(Strict):
    """What one live worker offers, as it publishes it in its lease record."""

    name: str
    host: str
    backend: str
    tags: list[str] = []


class Route(Strict):
    """What a cell asks of the worker that runs it."""

    backend: str
    host: str | None = None
    requires: list[str] = []

    def fits(self, offer: Offer) -> bool:
        return (offer.backend == self.backend and self.on(offer)
                and not self.missing(offer.tags))

    def on(self, offer: Offer) -> bool:
        """A host pin names a host identity or a worker name."""
        return self.host is None or self.host in (offer.host, offer.name)

    def missing(self, tags: list[str]) -> list[str]:
        return [t for t in self.requires if t not in tags]


def why_waiting(route: Route, offers: list[Offer]) -> str | None:
    """Why no live worker can take a cell of this route (None when one can)."""
    serving = [o for o in offers if o.backend == route.backend]
    if not serving:
        return f"no live worker serves backend {route.backend}"
    where = f" on host {route.host}" if route.host else ""
    serving = [o for o in serving if route.on(o)]
    if not serving:
        return f"no live worker{where} serves backend {route.backend}"
    if any(route.fits(o) for o in serving):
        return None
    offered = {t for o in serving for t in o.tags}
    lacking = [t for t in route.requires if t not in offered]
    if lacking:
        return (f"no live worker{where} of backend {route.backend} has tag"
                f"{'s' if len(lacking) > 1 else ''} {', '.join(lacking)}")
    return (f"no live worker{where} of backend {route.backend} has all of "
            f"{', '.join(route.requires)} (each has some)")


def auto_tags(checkpoints: list[str], arch: str, system: str) -> list[str]:
    """Tags every worker offers from its probe: each checkpoint in MODELS_DIR, its machine
    architecture and its system (`platform.system()`: Linux, Darwin)."""
    name = {"darwin": "macos"}.get(system.lower(), system.lower())
    return ([f"{MODEL_TAG}{c}" for c in checkpoints if tag_problem(c) is None]
            + [f"arch={arch}", f"os={name}"])
