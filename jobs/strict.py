"""The base every spec model shares: strict, so an unknown or misspelt key is an error."""

from typing import Any, Self

from pydantic import BaseModel, ConfigDict

# Values a recipe parameter may take in YAML.
Scalar = bool | int | float | str


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# One set of field names for every model given the same fields (see `Lean`).
_FIELD_SETS: dict[frozenset[str], set[str]] = {}
_LAST: dict[type, set[str]] = {}  # each class's last shared set


class Lean(Strict):
    """A model a record holds once per cell or run, by the hundred thousand.

    pydantic keeps, beside each instance's values, its own set of the fields it was given:
    2.2 KB for a measurement's 43 fields, more than its values: 70 of the 170 MiB a
    10,000-cell record's models held. Frozen, a model never changes that set,
    so every instance given the same fields shares one; `model_copy` copies it, so a copy
    kept by the hundred thousand is made with `copy_with` instead. `model_fields_set` is
    that shared set: read it, never change it.
    """

    def model_post_init(self, context: Any, /) -> None:
        self._share_fields_set()

    def copy_with(self, **values: Any) -> Self:
        """`model_copy(update=values)`, its set of fields shared."""
        copy = self.model_copy(update=values)
        copy._share_fields_set()
        return copy

    def _share_fields_set(self) -> None:
        given = self.__pydantic_fields_set__
        shared = _LAST.get(type(self))
        if shared is None or shared != given:  # most instances of a class repeat the last set
            # A copy registered: `given` may be a caller's own (model_construct's _fields_set).
            shared = _LAST[type(self)] = _FIELD_SETS.setdefault(frozenset(given), set(given))
        object.__setattr__(self, "__pydantic_fields_set__", shared)
