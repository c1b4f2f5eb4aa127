"""Whether the live fleet can take a sweep's cells: read once at submit, so a sweep nobody
can run is said before it is saved, not found out from a queue that never moves."""

from collections.abc import Iterable

from jobs.spec.cells import Cell
from jobs.spec.recipes import Catalogue
from jobs.spec.routing import MODEL_TAG, Offer, Route, why_waiting


def unserved(cells: Iterable[Cell], offers: list[Offer], catalogue: Catalogue) -> list[str]:
    """Why no live worker could take some of these cells, each reason once (empty when every
    cell has one). A model counts only where the cell's run recipe needs its checkpoint."""
    asked = {(c.backend, c.host, tuple(c.requires),
              c.model if catalogue.recipes[c.run.recipe].needs_model else None)
             for c in cells}
    reasons = (_why(Route(backend=b, host=h, requires=list(r)), model, offers)
               for b, h, r, model in sorted(asked, key=str))
    return list(dict.fromkeys(why for why in reasons if why))


def _why(route: Route, model: str | None, offers: list[Offer]) -> str | None:
    why = why_waiting(route, offers)
    if why or model is None:
        return why
    if any(route.fits(o) and f"{MODEL_TAG}{model}" in o.tags for o in offers):
        return None
    return (f"no live worker of backend {route.backend} offers model {model} (none has it in "
            "its MODELS_DIR)")
