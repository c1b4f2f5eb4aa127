"""Load a recipe catalogue file: the shipped one unless BENCHFLEET_CATALOGUE names another."""

from pathlib import Path

from jobs.errors import SpecError, UserError
from jobs.parsers import PARSERS, PROFILE_PARSERS
from jobs.spec.recipes import Catalogue
from jobs.spec.specfile import load, located

SHIPPED = Path(__file__).parents[1] / "catalogues" / "default.yaml"


def load_catalogue(path: Path | None) -> Catalogue:
    path = path or SHIPPED
    try:
        text = path.read_text()
    except OSError as error:
        raise UserError(f"cannot read the recipe catalogue {path} ({error.strerror}); "
                        "check BENCHFLEET_CATALOGUE") from None
    catalogue, root = load(Catalogue, text, str(path))
    unknown = []
    for name, recipe in catalogue.recipes.items():
        known = PROFILE_PARSERS if recipe.kind == "profile" else PARSERS
        if recipe.parser and recipe.parser not in known:
            unknown.append((("recipes", name, "parser"), f"unknown {recipe.kind} parser "
                            f"{recipe.parser!r}; known: {', '.join(sorted(known))}"))
    if unknown:
        raise SpecError(located(str(path), root, unknown))
    return catalogue
