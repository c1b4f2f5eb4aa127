"""What a worker started for a backend is warned about: no build recipe serves it, or the host
probe does not know it (a typo such as tpu, which backend-agnostic builds would still serve)."""

from jobs.spec.backends import backend_warning
from jobs.spec.recipes import Catalogue


def test_the_probes_backends_are_served_by_the_shipped_catalogue(catalogue: Catalogue) -> None:
    assert [backend_warning(b, catalogue) for b in ("cpu", "cuda", "metal")] == [None] * 3


def test_a_backend_the_probe_does_not_know_is_named_with_what_would_build_it(
        catalogue: Catalogue) -> None:
    assert backend_warning("tpu", catalogue) == (
        "backend tpu is none the host probe knows (cpu, cuda, metal); only recipes that build "
        "for any backend (tinymoe-build) serve it; check --backend for a typo")


def test_builds_with_variants_serve_only_their_backends(catalogue: Catalogue) -> None:
    # Without the backend-agnostic stand-in build, cpu has no build recipe at all.
    only_variants = catalogue.model_copy(update={"recipes": {
        n: r for n, r in catalogue.recipes.items() if n != "tinymoe-build"}})
    assert backend_warning("cuda", only_variants) is None
    assert backend_warning("cpu", only_variants) == (
        "no build recipe in the catalogue serves backend cpu, so every cell this worker takes "
        "fails to build; check --backend, or add a `cpu` variant to a build recipe "
        "(docs/recipes.md)")
