"""The recipe catalogue loader: the shipped file by default, another by setting, and a file
that cannot serve (unreadable, or naming a parser no one wrote) is a located sentence."""

from pathlib import Path

import pytest

from jobs.errors import SpecError, UserError
from workers.shared.catalogue import SHIPPED, load_catalogue


def test_the_shipped_catalogue_loads_and_names_the_mlxcel_recipes() -> None:
    catalogue = load_catalogue(None)
    assert SHIPPED.is_file()
    assert {"mlxcel-build-cuda", "mlxcel-bench-decode", "mlxcel-cupti-kernels",
            "bench-mlxlm"} <= set(catalogue.recipes)


def test_another_file_is_read_when_named(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text("recipes:\n  hello:\n    kind: bench\n    parser: mlxcel-bench-decode\n"
                    "    command: ['{build}/hello']\n")
    assert list(load_catalogue(path).recipes) == ["hello"]


def test_an_unknown_parser_is_located(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("recipes:\n  hello:\n    kind: bench\n    parser: no-such-parser\n"
                    "    command: ['{build}/hello']\n")
    with pytest.raises(SpecError) as caught:
        load_catalogue(path)
    assert caught.value.problems == [
        f"{path}:4: recipes.hello.parser: unknown bench parser 'no-such-parser'; known: "
        "bench-mlxlm, mlxcel-bench-decode"]


def test_an_unreadable_file_says_which_setting(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot read the recipe catalogue .* check "
                                        "BENCHFLEET_CATALOGUE"):
        load_catalogue(tmp_path / "none.yaml")
