"""The backends a host probe can find, and what a worker started for some other backend is
warned about: a build recipe with per-backend variants builds only those backends; one without
builds every backend, so a typo such as `--backend tpu` is caught by the probe's list instead."""

from jobs.spec.recipes import Catalogue

# What workers/probe.py `backends()` can find on a host; each has its build variants.
KNOWN = ("cpu", "cuda", "metal")


def backend_warning(backend: str, catalogue: Catalogue) -> str | None:
    """Why a worker for `backend` may never build a cell (None when nothing is amiss)."""
    builds = sorted(n for n, r in catalogue.recipes.items()
                    if r.kind == "build" and r.serves(backend))
    if not builds:
        return (f"no build recipe in the catalogue serves backend {backend}, so every cell "
                f"this worker takes fails to build; check --backend, or add a `{backend}` "
                "variant to a build recipe (docs/recipes.md)")
    if backend not in KNOWN:
        return (f"backend {backend} is none the host probe knows ({', '.join(KNOWN)}); only "
                f"recipes that build for any backend ({', '.join(builds)}) serve it; check "
                "--backend for a typo")
    return None
